"""Signal frames: the kernel's rt_sigreturn trampoline and the registers it restores.

A signal handler returns into a trampoline (x86-64: glibc's `__restore_rt`; aarch64: the
vDSO's `__kernel_rt_sigreturn`) whose only job is the `rt_sigreturn` system call. The
interrupted registers sit in the `ucontext` of the kernel's `rt_sigframe` on the stack,
at a fixed place relative to the trampoline frame's SP. gdb recognises the trampoline by
its instruction bytes (amd64-linux-tdep.c, aarch64-linux-tdep.c) and so do we; an SFrame
v3 FDE with the signal flag says the same thing without the byte check.

Layouts (Linux UAPI, arch/*/include/uapi/asm/sigcontext.h, arch/*/kernel/signal.c):

* x86-64: the handler's `ret` pops `pretcode`, so the trampoline frame's SP is the
  address of `uc`; `uc_mcontext` is 40 bytes in (uc_flags, uc_link, stack_t), and holds
  r8..r15, rdi, rsi, rbp, rbx, rdx, rax, rcx, rsp, rip, one 8-byte word each.
* aarch64: SP is the address of the `rt_sigframe` (siginfo, 128 bytes, then the
  ucontext, whose `uc_mcontext` is 176 bytes in); sigcontext is fault_address, then
  x0..x30, sp, pc.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..format import constants as C
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


@dataclass(frozen=True, slots=True)
class Interrupted:
    """The registers of the frame a signal interrupted (all of them are known)."""

    pc: int
    sp: int
    fp: int
    ra: int | None
    others: dict[int, int]


def supported(abi: int) -> bool:
    return abi in (C.ABI_AMD64_LE, C.ABI_AARCH64_LE)


def is_trampoline(mem: Memory, abi: int, pc: int) -> bool:
    """Whether `pc` is at (or inside) the rt_sigreturn trampoline, by its bytes."""
    if abi == C.ABI_AMD64_LE:
        code, inner = _AMD64_TRAMP, 7  # at the `mov`, or at the `syscall` after it
    elif abi == C.ABI_AARCH64_LE:
        code, inner = _AARCH64_TRAMP, 4
    else:
        return False
    return any(start >= 0 and mem.read(start, len(code)) == code
               for start in (pc, pc - inner))


def interrupted(mem: Memory, abi: int, sp: int) -> Interrupted | None:
    """The registers saved in the signal frame whose trampoline frame has SP `sp`, or
    None when they cannot be read (or the ABI's layout is not known here)."""
    if abi == C.ABI_AMD64_LE:
        base, n = sp + _AMD64_MCONTEXT, len(_AMD64_SLOTS)
    elif abi == C.ABI_AARCH64_LE:
        base, n = sp + _AARCH64_REGS, 33
    else:
        return None
    if base + 8 * n > ADDR_MASK + 1:
        return None
    raw = mem.read(base, 8 * n)
    if raw is None or len(raw) != 8 * n:
        return None
    words = [int.from_bytes(raw[i:i + 8], "little") for i in range(0, 8 * n, 8)]
    if abi == C.ABI_AMD64_LE:
        named = dict(zip(_AMD64_SLOTS, words, strict=True))
        others = {num: named[name] for name, num in _AMD64_DWARF.items()}
        return Interrupted(named["rip"], named["rsp"], named["rbp"], None, others)
    others = {i: words[i] for i in range(31)}
    return Interrupted(words[32], words[31], words[29], words[30], others)
