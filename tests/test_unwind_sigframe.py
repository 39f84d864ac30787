"""Signal frames on synthetic stacks: the rt_sigreturn trampoline (by its bytes, or a v3
signal FDE) and the registers the kernel saved in the ucontext above it.

The layouts used here are written from the Linux UAPI headers (struct ucontext,
struct sigcontext) independently of sfcheck/unwind/sigframe.py; the gdb ground truth
for real signal frames is in tests/test_unwind_gdb.py.
"""

from __future__ import annotations

import pytest

from sfcheck.format import constants as C
from sfcheck.format import make_fre
from sfcheck.unwind import Registers, SparseMemory, StopReason, Unwinder

from unwind_build import Func, table

TRAMP = 0x5000  # __restore_rt: no FDE anywhere
HANDLER = 0x1000
INTERRUPTED = 0x2000  # the function the signal interrupted
CALLER = 0x3000
AMD64_TRAMP = bytes.fromhex("48c7c00f000000") + bytes.fromhex("0f05")


def _q(v: int) -> bytes:
    return v.to_bytes(8, "little")


def _amd64_sigframe(mem: SparseMemory, uc: int, rip: int, rsp: int, rbp: int,
                    rbx: int = 0) -> None:
    # struct ucontext: uc_flags, uc_link, stack_t (ss_sp, ss_flags + pad, ss_size): 40 bytes;
    # then struct sigcontext: r8..r15, rdi, rsi, rbp, rbx, rdx, rax, rcx, rsp, rip.
    regs = {"rbp": rbp, "rbx": rbx, "rsp": rsp, "rip": rip}
    order = ["r8", "r9", "r10", "r11", "r12", "r13", "r14", "r15", "rdi", "rsi", "rbp", "rbx",
             "rdx", "rax", "rcx", "rsp", "rip"]
    mem.add(uc, bytes(40) + b"".join(_q(regs.get(n, 0x1111)) for n in order))


@pytest.mark.parametrize("version", [2, 3])
def test_amd64_walks_through_restore_rt_by_its_bytes(version: int) -> None:
    funcs = [Func(HANDLER, 0x40, [make_fre(0, (8,))]),
             Func(INTERRUPTED, 0x40, [make_fre(0, (16,))]),
             Func(CALLER, 0x40, [make_fre(0, ())])]
    tab = table(version, C.ABI_AMD64_LE, funcs)
    mem = SparseMemory({TRAMP - 1: b"\x90" + AMD64_TRAMP})
    sp = 0x7000
    mem.add(sp, _q(TRAMP))  # the handler returns into the trampoline (pretcode)
    uc = sp + 8
    # Interrupted at the very first instruction of INTERRUPTED: PC-1 would be outside it.
    irsp = 0x7800
    _amd64_sigframe(mem, uc, rip=INTERRUPTED, rsp=irsp, rbp=0xABC0)
    mem.add(irsp + 8, _q(CALLER + 4))
    frames, stop = Unwinder([tab], mem, abi=C.ABI_AMD64_LE).unwind(
        Registers(HANDLER + 4, sp, 0))
    assert [(f.pc, f.sp, f.signal) for f in frames] == [
        (HANDLER + 4, sp, False), (TRAMP, uc, True), (INTERRUPTED, irsp, False),
        (CALLER + 4, irsp + 16, False)]
    assert frames[2].fp == 0xABC0
    assert stop.reason is StopReason.OUTERMOST


def test_amd64_v3_signal_fde_and_registers_of_the_interrupted_frame() -> None:
    """A v3 signal FDE marks the trampoline without looking at code; the interrupted frame
    has every register, so a flex rule based on RBX (DWARF 3) can be used there."""
    # flex words: CFA = RBX + 8 (control: reg << 3 | 1), RA at CFA-8 (control 2: deref
    # from the CFA), FP unchanged
    cfa_on_rbx = ((3 << 3) | 1, 8, 2, -8)
    funcs = [Func(HANDLER, 0x40, [make_fre(0, (8,))]),
             Func(INTERRUPTED, 0x40, [make_fre(0, cfa_on_rbx)],
                  flex=True),
             Func(TRAMP, 0x10, [], signal=True)]
    tab = table(3, C.ABI_AMD64_LE, funcs)
    sp = 0x7000
    mem = SparseMemory({sp: _q(TRAMP)})  # no trampoline code in memory at all
    rbx = 0x7900
    _amd64_sigframe(mem, sp + 8, rip=INTERRUPTED + 0x10, rsp=0x7800, rbp=0, rbx=rbx)
    mem.add(rbx, _q(0xDEAD0000))  # RA at CFA-8 = RBX
    frames, stop = Unwinder([tab], mem, abi=C.ABI_AMD64_LE).unwind(
        Registers(HANDLER + 4, sp, 0))
    assert [f.pc for f in frames] == [HANDLER + 4, TRAMP, INTERRUPTED + 0x10, 0xDEAD0000]
    assert frames[1].signal and frames[3].sp == rbx + 8
    assert stop.reason is StopReason.NO_FDE


def test_signal_frame_must_move_up_and_be_readable() -> None:
    tab = table(2, C.ABI_AMD64_LE, [Func(HANDLER, 0x40, [make_fre(0, (8,))])])
    sp = 0x7000
    mem = SparseMemory({TRAMP: AMD64_TRAMP, sp: _q(TRAMP)})
    frames, stop = Unwinder([tab], mem).unwind(Registers(HANDLER, sp, 0))
    assert stop.reason is StopReason.UNREADABLE and frames[-1].signal
    _amd64_sigframe(mem, sp + 8, rip=HANDLER, rsp=sp - 0x100, rbp=0)  # below: a loop
    frames, stop = Unwinder([tab], mem).unwind(Registers(HANDLER, sp, 0))
    assert stop.reason is StopReason.CFA_NOT_UP and "alternate signal stack" in stop.detail
    assert len(frames) == 2


def test_aarch64_trampoline_in_the_vdso() -> None:
    # aarch64: the handler returns through LR into __kernel_rt_sigreturn; SP there is the
    # rt_sigframe: siginfo (128), ucontext (uc_mcontext at 176): fault_address, x0..x30,
    # sp, pc.
    handler = Func(HANDLER, 0x40, [make_fre(0, (0,))])  # leaf: CFA = SP, RA in LR
    interrupted = Func(INTERRUPTED, 0x40, [make_fre(0, (16, -8, -16))])
    tab = table(2, C.ABI_AARCH64_LE, [handler, interrupted])
    frame = 0x7000
    mem = SparseMemory({TRAMP: bytes.fromhex("681180d2010000d4")})
    xs = [0x100 + i for i in range(31)]
    xs[29] = 0x7F00
    xs[30] = 0xBAD  # LR of the interrupted frame: not used, its RA is on the stack
    isp = 0x7E00
    mem.add(frame + 128 + 176, _q(0) + b"".join(map(_q, xs)) + _q(isp) + _q(INTERRUPTED + 8))
    mem.add(isp + 8, _q(0xD000))  # saved RA at CFA-8
    mem.add(isp, _q(0x7FF0))  # saved FP at CFA-16
    frames, stop = Unwinder([tab], mem, abi=C.ABI_AARCH64_LE).unwind(
        Registers(HANDLER + 8, frame, 0, ra=TRAMP))
    assert [(f.pc, f.signal) for f in frames] == [
        (HANDLER + 8, False), (TRAMP, True), (INTERRUPTED + 8, False), (0xD000, False)]
    assert frames[2].sp == isp and frames[2].fp == 0x7F00 and frames[3].fp == 0x7FF0
    assert stop.reason is StopReason.NO_FDE


@pytest.mark.parametrize(("svc", "sigregs"), [(b"\x0a\x77", 160 + 16),
                                               (b"\x0a\xad", 160 + 8 + 128 + 40)])
def test_s390x_sigframe_and_rt_sigframe(svc: bytes, sigregs: int) -> None:
    """s390x: the handler returns (r14) to `svc 119` (sigframe) or `svc 173` (rt_sigframe);
    SP there (the handler's CFA - 160) is the frame, whose _sigregs hold psw and r0..r15,
    then access registers and the FPRs (f2 is DWARF 17)."""
    be = "big"
    handler = Func(HANDLER, 0x40, [make_fre(0, (C.s390x_cfa_encode(160),))])  # leaf
    interrupted = Func(INTERRUPTED, 0x40, [make_fre(0, (C.s390x_cfa_encode(160),))])
    tab = table(2, C.ABI_S390X_BE, [handler, interrupted], fixed_ra=0)
    frame = 0x7000
    mem = SparseMemory({TRAMP: svc})
    gprs = [0x100 + i for i in range(16)]
    gprs[15] = 0x7800
    fprs = [0x200 + i for i in range(16)]
    mem.add(frame + sigregs, b"".join(v.to_bytes(8, be) for v in
                                      [0x0705, INTERRUPTED + 6, *gprs]) + bytes(64 + 8)
            + b"".join(v.to_bytes(8, be) for v in fprs))
    frames, stop = Unwinder([tab], mem, abi=C.ABI_S390X_BE).unwind(
        Registers(HANDLER + 4, frame, 0, ra=TRAMP))
    assert [(f.pc, f.sp, f.signal) for f in frames] == [
        (HANDLER + 4, frame, False), (TRAMP, frame, True), (INTERRUPTED + 6, 0x7800, False),
        (gprs[14], 0x7800, False)]
    assert frames[2].fp == gprs[11]
    assert stop.reason is StopReason.NO_FDE
