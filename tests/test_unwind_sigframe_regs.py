"""Signal frames, register by register: every slot of the kernel's saved registers lands in
the right place (pc, sp, fp, ra and the DWARF-numbered rest), per ABI, at the edges of
readable memory; and the trampolines are recognised at each of their instructions."""

from __future__ import annotations

import pytest

from sfcheck.format import constants as C
from sfcheck.unwind.abi import S390X_FPR_DWARF
from sfcheck.unwind.memory import ADDR_MASK, SparseMemory
from sfcheck.unwind.sigframe import Interrupted, interrupted, is_trampoline, supported

SP = 0x7000


def words(values: list[int], order: str) -> bytes:
    return b"".join(v.to_bytes(8, order) for v in values)  # type: ignore[arg-type]


def distinct(n: int) -> list[int]:
    return [0x1000 + 0x11 * i for i in range(n)]


def test_amd64_mcontext_slots() -> None:
    w = distinct(17)  # r8..r15, rdi, rsi, rbp, rbx, rdx, rax, rcx, rsp, rip
    mem = SparseMemory({SP + 40: words(w, "little")})
    got = interrupted(mem, C.ABI_AMD64_LE, SP, 0)
    dwarf = {8 + i: w[i] for i in range(8)} | {5: w[8], 4: w[9], 6: w[10], 3: w[11],
                                               1: w[12], 0: w[13], 2: w[14], 7: w[15]}
    assert got == Interrupted(pc=w[16], sp=w[15], fp=w[10], ra=None, others=dwarf)


def test_amd64_one_byte_short_is_unreadable() -> None:
    mem = SparseMemory({SP + 40: words(distinct(17), "little")[:-1]})
    assert interrupted(mem, C.ABI_AMD64_LE, SP, 0) is None


def test_amd64_frame_ending_at_the_top_of_the_address_space() -> None:
    sp = ADDR_MASK + 1 - 40 - 8 * 17
    w = distinct(17)
    got = interrupted(SparseMemory({sp + 40: words(w, "little")}), C.ABI_AMD64_LE, sp, 0)
    assert got is not None and (got.pc, got.sp) == (w[16], w[15])


def test_aarch64_sigcontext_slots() -> None:
    w = distinct(33)  # x0..x30, sp, pc
    mem = SparseMemory({SP + 128 + 176 + 8: words(w, "little")})
    got = interrupted(mem, C.ABI_AARCH64_LE, SP, 0)
    assert got == Interrupted(pc=w[32], sp=w[31], fp=w[29], ra=w[30],
                              others={i: w[i] for i in range(31)})
    short = SparseMemory({SP + 128 + 176 + 8: words(w, "little")[:-8]})
    assert interrupted(short, C.ABI_AARCH64_LE, SP, 0) is None


PC = 0x5000


@pytest.mark.parametrize("code,sigregs", [
    (b"\x0a\x77", 160 + 16),  # svc 119: sigframe
    (b"\x0a\xad", 160 + 8 + 128 + 40),  # svc 173: rt_sigframe
    (None, 160 + 8 + 128 + 40),  # no code readable (a v3 signal FDE): rt_sigframe
])
@pytest.mark.parametrize("with_fprs", [True, False])
def test_s390x_sigregs_slots(code: bytes | None, sigregs: int, with_fprs: bool) -> None:
    w = distinct(18)  # psw mask, psw addr, r0..r15
    fprs = [0x9000 + i for i in range(16)]
    base = SP + sigregs
    mem = SparseMemory({base: words(w, "big")})
    if with_fprs:  # after 16 access registers (4 bytes each) and fpc (8)
        mem.add(base + 8 * 18 + 4 * 16 + 8, words(fprs, "big"))
    if code is not None:
        mem.add(PC, code)
    got = interrupted(mem, C.ABI_S390X_BE, SP, PC)
    others = {i: w[2 + i] for i in range(16)}
    if with_fprs:
        others |= dict(zip(S390X_FPR_DWARF, fprs, strict=True))
    assert got == Interrupted(pc=w[1], sp=w[17], fp=w[13], ra=w[16], others=others)


def test_s390x_gprs_unreadable() -> None:
    mem = SparseMemory({SP + 160 + 16: words(distinct(17), "big"), PC: b"\x0a\x77"})
    assert interrupted(mem, C.ABI_S390X_BE, SP, PC) is None


def test_other_abis_have_no_layout() -> None:
    mem = SparseMemory({0: bytes(4096)})
    assert interrupted(mem, C.ABI_AARCH64_BE, 0x100, 0) is None
    assert [supported(a) for a in (C.ABI_AMD64_LE, C.ABI_AARCH64_LE, C.ABI_S390X_BE,
                                   C.ABI_AARCH64_BE)] == [True, True, True, False]


AMD64 = bytes.fromhex("48c7c00f000000" "0f05")  # mov $15, %rax; syscall
AARCH64 = bytes.fromhex("681180d2" "010000d4")  # mov x8, #139; svc #0


@pytest.mark.parametrize("abi,code,inner", [(C.ABI_AMD64_LE, AMD64, 7),
                                            (C.ABI_AARCH64_LE, AARCH64, 4)])
@pytest.mark.parametrize("at", [0, 0x400])  # the trampoline may start at address 0
def test_trampoline_at_each_instruction(abi: int, code: bytes, inner: int, at: int) -> None:
    mem = SparseMemory({at: code})
    assert [is_trampoline(mem, abi, at + d) for d in range(len(code))] == [
        d in (0, inner) for d in range(len(code))]
    other = C.ABI_AARCH64_LE if abi == C.ABI_AMD64_LE else C.ABI_AMD64_LE
    assert not is_trampoline(mem, other, at)
    assert not is_trampoline(mem, C.ABI_AARCH64_BE, at)


@pytest.mark.parametrize("code,expected", [(b"\x0a\x77", True), (b"\x0a\xad", True),
                                           (b"\x0a\x78", False), (b"\x0b\x77", False)])
def test_s390x_trampoline_by_its_svc(code: bytes, expected: bool) -> None:
    assert is_trampoline(SparseMemory({PC: code}), C.ABI_S390X_BE, PC) is expected
