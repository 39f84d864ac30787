"""Rules, registers and functions named as the cross-check's messages show them."""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Callable, Sequence

from ...dwarf.cfi import UNDEFINED
from ...elf.model import FuncSymbol
from ...format.abi import Abi
from ...format.fre_rules import RegRule

_X86_NAMES = ("rax", "rdx", "rcx", "rbx", "rsi", "rdi", "rbp", "rsp") + tuple(
    f"r{i}" for i in range(8, 16)) + ("rip",)
# s390x DWARF 16-31 are the FPRs in the ELF ABI's order (lzsabi, "DWARF Definition"; binutils
# gas/testsuite/gas/s390/cfi-regnames.d), not f0-f15 in turn
_S390X_FPRS = tuple(f"f{n}" for n in (0, 2, 4, 6, 1, 3, 5, 7, 8, 10, 12, 14, 9, 11, 13, 15))


def reg_name(abi: Abi, reg: int) -> str:
    if abi.name == "amd64":
        return _X86_NAMES[reg] if 0 <= reg < len(_X86_NAMES) else f"r{reg}"
    if abi.name.startswith("aarch64"):
        return "sp" if reg == 31 else f"x{reg}" if 0 <= reg < 31 else f"r{reg}"
    return f"r{reg}" if 0 <= reg < 16 else _S390X_FPRS[reg - 16] if 16 <= reg < 32 else f"r{reg}"


def show_cfa(abi: Abi, r: object) -> str:
    if isinstance(r, RegRule) and r.reg is not None:
        text = f"{reg_name(abi, r.reg)}{r.offset:+d}"
        return f"*({text})" if r.deref else text
    return str(r)


def show_slot(abi: Abi, r: object) -> str:
    """RA/FP rules in objdump's terms: c-8 (saved at CFA-8), u (not saved)."""
    if r is None:
        return "u (not saved)"
    if r is UNDEFINED:
        return "undefined (outermost frame)"
    if isinstance(r, RegRule):
        if r.reg is None:
            return f"c{r.offset:+d}" if r.deref else f"value c{r.offset:+d}"
        base = f"{reg_name(abi, r.reg)}{r.offset:+d}" if r.offset else reg_name(abi, r.reg)
        return f"*({base})" if r.deref else f"in {base}"
    return str(r)


def func_name(symbols: Sequence[FuncSymbol], addrs: list[int], pc: int,
              section_of: Callable[[int], str | None]) -> str:
    j = bisect_left(addrs, pc)  # symbols sort largest-first among equal addresses
    if j < len(addrs) and addrs[j] == pc:
        return symbols[j].name
    if j:
        sym = symbols[j - 1]
        if pc < sym.addr + sym.size:
            return f"{sym.name}+{pc - sym.addr:#x}"
    sec = section_of(pc)
    return f"code in {sec}" if sec else "an unnamed function"
