"""The kinds of lookup miss that let the unwinder look at the code for a signal
trampoline (`Unwinder._sigtramp`): "no-fde" and "no-fre". Mutants of the "no-fre" literal
were hidden as message text by an older mutant classifier (a changed string taken for
wording), and no test had a "no-fre" miss on trampoline bytes. Here a PC whose FDE
has no usable FRE (a v2 FDE without FREs, a v3 flex FDE without FREs, a PC before the
first FRE) sits on rt_sigreturn's bytes, and the walk is compared whole: the signal frame
stepped through to the interrupted PC, not a stop at "no FRE". (Only a v3 DEFAULT FDE
without FREs, "outermost", ends the walk there: tests/test_unwind_mutants_walk.py.)"""

from __future__ import annotations

import pytest

from sfcheck.format import constants as C
from sfcheck.format import make_fre
from sfcheck.unwind import Frame, Registers, SFrameTable, SparseMemory, Stop, StopReason, Unwinder

from unwind_build import SECTION_VMA, Func, section_bytes

SP = 0x8000
HANDLER, TRAMP = 0x1000, 0x2000
INTERRUPTED_SP, INTERRUPTED_PC = SP + 0x100, 0x9999  # in no section's text
AMD64_TRAMP = bytes.fromhex("48c7c00f000000" "0f05")  # mov $15, %rax; syscall
NAME = ".sframe.nf"


def _q(v: int) -> bytes:
    return v.to_bytes(8, "little")


def _ucontext(mem: SparseMemory, uc: int) -> None:
    """The kernel's ucontext at `uc`: 40 bytes, then r8..r15, rdi .. rcx, rsp, rip."""
    mem.add(uc + 40, b"".join(map(_q, [0] * 15 + [INTERRUPTED_SP, INTERRUPTED_PC])))


def _walk(version: int, funcs: list[Func], regs: Registers, mem: SparseMemory
          ) -> tuple[list[Frame], Stop]:
    tab = SFrameTable(section_bytes(version, C.ABI_AMD64_LE, funcs), vma=SECTION_VMA,
                      name=NAME)
    mem.add(TRAMP, AMD64_TRAMP)
    return Unwinder([tab], mem).unwind(regs)


@pytest.mark.parametrize(("version", "tramp"), [
    (2, Func(TRAMP, 0x10, [])),  # "FDE[0] has no FREs"
    (3, Func(TRAMP, 0x10, [], flex=True)),  # flex without FREs: no FRE, not outermost
    (3, Func(TRAMP, 0x10, [make_fre(0x8, (8,))])),  # "first FRE starts at 0x8"
])
def test_no_fre_miss_on_trampoline_bytes_is_a_signal_frame(version: int, tramp: Func) -> None:
    mem = SparseMemory()
    _ucontext(mem, SP)
    frames, stop = _walk(version, [tramp], Registers(TRAMP, SP, 0), mem)
    assert frames == [
        Frame(0, TRAMP, SP, 0, cfa=INTERRUPTED_SP, section=NAME, signal=True),
        Frame(1, INTERRUPTED_PC, INTERRUPTED_SP, 0)]
    assert stop == Stop(StopReason.NO_FDE, f"{INTERRUPTED_PC:#x} is in no SFrame section's "
                        "text", INTERRUPTED_PC)


def test_handler_returning_before_the_first_fre() -> None:
    """The handler returns to TRAMP, looked up at TRAMP - 1: the FDE starts there and its
    first FRE only at 0x8, so "no FRE" at both TRAMP - 1 and TRAMP; the bytes decide."""
    funcs = [Func(HANDLER, 0x40, [make_fre(0, (8,))]),
             Func(TRAMP - 1, 0x10, [make_fre(0x8, (8,))])]
    mem = SparseMemory({SP: _q(TRAMP)})
    _ucontext(mem, SP + 8)
    frames, stop = _walk(3, funcs, Registers(HANDLER + 4, SP, 0), mem)
    assert frames == [
        Frame(0, HANDLER + 4, SP, 0, SP + 8, NAME, 0, 0, HANDLER),
        Frame(1, TRAMP, SP + 8, 0, cfa=INTERRUPTED_SP, section=NAME, signal=True),
        Frame(2, INTERRUPTED_PC, INTERRUPTED_SP, 0)]
    assert stop == Stop(StopReason.NO_FDE, f"{INTERRUPTED_PC:#x} is in no SFrame section's "
                        "text", INTERRUPTED_PC)
