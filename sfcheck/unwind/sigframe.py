"""Signal frames: the kernel's sigreturn trampoline and the registers it restores.

A signal handler returns into a trampoline (x86-64: glibc's `__restore_rt`; aarch64: the
vDSO's `__kernel_rt_sigreturn`; s390x: an `svc`) whose only job is the `rt_sigreturn` (or
`sigreturn`) system call. The interrupted registers sit in the kernel's signal frame on
the stack, at a fixed place relative to the trampoline frame's SP. gdb recognises the
trampoline by its instruction bytes (amd64-, aarch64-, s390-linux-tdep.c) and so do we;
an SFrame v3 FDE with the signal flag says the same thing without the byte check.

Layouts (Linux UAPI, arch/*/include/uapi/asm/sigcontext.h, arch/*/kernel/signal.c):

* x86-64: the handler's `ret` pops `pretcode`, so the trampoline frame's SP is the
  address of `uc`; `uc_mcontext` is 40 bytes in (uc_flags, uc_link, stack_t), and holds
  r8..r15, rdi, rsi, rbp, rbx, rdx, rax, rcx, rsp, rip, one 8-byte word each.
* aarch64: SP is the address of the `rt_sigframe` (siginfo, 128 bytes, then the
  ucontext, whose `uc_mcontext` is 176 bytes in); sigcontext is fault_address, then
  x0..x30, sp, pc.
* s390x: SP (the handler's CFA - 160) is the address of the `sigframe` or `rt_sigframe`,
  told apart by the trampoline's `svc` number; see _S390X_SIGREGS.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..format import constants
from .abi import S390X_FPR_DWARF
from .memory import ADDR_MASK, Memory

# x86-64 `mov $15, %rax; syscall` (__NR_rt_sigreturn = 15).
_AMD64_TRAMP = bytes.fromhex("48c7c00f000000" "0f05")
# aarch64 `mov x8, #139; svc #0` (__NR_rt_sigreturn = 139), little-endian words.
_AARCH64_TRAMP = bytes.fromhex("681180d2" "010000d4")

_AMD64_MCONTEXT = 40
_AMD64_SLOTS = ("r8", "r9", "r10", "r11", "r12", "r13", "r14", "r15", "rdi", "rsi", "rbp",
                "rbx", "rdx", "rax", "rcx", "rsp", "rip")
_AMD64_DWARF = {"rax": 0, "rdx": 1, "rcx": 2, "rbx": 3, "rsi": 4, "rdi": 5, "rbp": 6,
                "rsp": 7, **{f"r{i}": i for i in range(8, 16)}}
_AARCH64_REGS = 128 + 176 + 8  # x0 in the sigcontext
# s390x: `svc 119` (sigreturn) and `svc 173` (rt_sigreturn). _sigregs follows the 160-byte
# callee save area and a struct sigcontext (16 bytes) in a sigframe; in an rt_sigframe it
# follows the save area, the 8-byte svc slot, siginfo (128) and 40 bytes of ucontext. It
# holds psw (mask, addr), r0..r15, 16 access registers (4 bytes), fpc (8 with padding), f0..f15.
_S390X_SIGRETURN, _S390X_RT_SIGRETURN = b"\x0a\x77", b"\x0a\xad"
_S390X_SIGREGS = {_S390X_SIGRETURN: 160 + 16, _S390X_RT_SIGRETURN: 160 + 8 + 128 + 40}


@dataclass(frozen=True, slots=True)
class Interrupted:
    """The registers of the frame a signal interrupted (all of them are known)."""

    pc: int
    sp: int
    fp: int
    ra: int | None
    others: dict[int, int]


def supported(abi: int) -> bool:
    return abi in (constants.ABI_AMD64_LE, constants.ABI_AARCH64_LE, constants.ABI_S390X_BE)


def is_trampoline(mem: Memory, abi: int, pc: int) -> bool:
    """Whether `pc` is at (or inside) the rt_sigreturn trampoline, by its bytes."""
    if abi == constants.ABI_S390X_BE:
        return mem.read(pc, 2) in _S390X_SIGREGS
    if abi == constants.ABI_AMD64_LE:
        code, inner = _AMD64_TRAMP, 7  # at the `mov`, or at the `syscall` after it
    elif abi == constants.ABI_AARCH64_LE:
        code, inner = _AARCH64_TRAMP, 4
    else:
        return False
    return any(start >= 0 and mem.read(start, len(code)) == code
               for start in (pc, pc - inner))


def _words(mem: Memory, addr: int, n: int, order: str) -> list[int] | None:
    if addr + 8 * n > ADDR_MASK + 1:
        return None
    raw = mem.read(addr, 8 * n)
    if raw is None or len(raw) != 8 * n:
        return None
    return [int.from_bytes(raw[i:i + 8], order) for i in range(0, 8 * n, 8)]  # type: ignore[arg-type]


def interrupted(mem: Memory, abi: int, sp: int, pc: int) -> Interrupted | None:
    """The registers saved in the signal frame whose trampoline frame has SP `sp` and PC
    `pc`, or None when they cannot be read (or the ABI's layout is not known here)."""
    if abi == constants.ABI_AMD64_LE:
        words = _words(mem, sp + _AMD64_MCONTEXT, len(_AMD64_SLOTS), "little")
        if words is None:
            return None
        named = dict(zip(_AMD64_SLOTS, words, strict=True))
        others = {num: named[name] for name, num in _AMD64_DWARF.items()}
        return Interrupted(named["rip"], named["rsp"], named["rbp"], None, others)
    if abi == constants.ABI_AARCH64_LE:
        words = _words(mem, sp + _AARCH64_REGS, 33, "little")
        if words is None:
            return None
        return Interrupted(words[32], words[31], words[29], words[30],
                           {i: words[i] for i in range(31)})
    if abi == constants.ABI_S390X_BE:
        # A v3 signal FDE without the code in memory: the rt frame (SA_SIGINFO, glibc's).
        base = sp + _S390X_SIGREGS.get(mem.read(pc, 2) or b"", _S390X_SIGREGS[
            _S390X_RT_SIGRETURN])
        words = _words(mem, base, 2 + 16, "big")
        fprs = _words(mem, base + 8 * 18 + 4 * 16 + 8, 16, "big")
        if words is None:
            return None
        gprs = words[2:]
        others = {i: gprs[i] for i in range(16)}
        if fprs is not None:
            others.update(zip(S390X_FPR_DWARF, fprs, strict=True))
        return Interrupted(words[1], gprs[15], gprs[11], gprs[14], others)
    return None
