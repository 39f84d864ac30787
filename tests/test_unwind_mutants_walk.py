"""Walks compared whole: every Frame (index, section, FDE and FRE index, function start,
mangled RA), the Stop (reason, detail, PC, section, offset), for the steps the other unwind
tests check only in part: signal frames found by a v3 FDE, a step that fails in an outer
frame, rules that read the link register or a register unknown there, the PAC mask, the
unwinder's defaults. Written against the unwind group's mutation survivors (issue 29)."""

from __future__ import annotations

from sfcheck.format import constants as C
from sfcheck.format import make_fre
from sfcheck.unwind import (
    Frame,
    Registers,
    SFrameTable,
    SparseMemory,
    Stop,
    StopReason,
    TableSet,
    Unwinder,
)

from unwind_build import SECTION_VMA, Func, chain, section_bytes

SP = 0x8000
HANDLER, TRAMP = 0x1000, 0x2000
AMD64_TRAMP = bytes.fromhex("48c7c00f000000" "0f05")  # mov $15, %rax; syscall


def _q(v: int, order: str = "little") -> bytes:
    return v.to_bytes(8, order)


def _named(version: int, abi: int, funcs: list[Func], name: str, **kw: object) -> SFrameTable:
    return SFrameTable(section_bytes(version, abi, funcs, **kw), vma=SECTION_VMA, name=name)


# -- signal frames found by a v3 signal FDE: the section is named -------------------------

def _signal_fde_walk(saved_rsp: int | None) -> tuple[list[Frame], Stop]:
    """The handler (CFA = SP + 8) returns to TRAMP, which a v3 signal FDE covers; the
    kernel's ucontext sits at the handler's CFA; `saved_rsp` None: not readable."""
    tab = _named(3, C.ABI_AMD64_LE, [Func(HANDLER, 0x40, [make_fre(0, (8,))]),
                                     Func(TRAMP, 0x10, [], signal=True)], ".sframe.sig")
    mem = SparseMemory({SP: _q(TRAMP)})
    if saved_rsp is not None:  # uc_mcontext 40 bytes in: r8..r15, rdi .. rcx, rsp, rip
        mem.add(SP + 8 + 40, b"".join(map(_q, [0] * 15 + [saved_rsp, 0x9999])))
    return Unwinder([tab], mem).unwind(Registers(HANDLER + 4, SP, 0))


HANDLER_FRAME = Frame(0, HANDLER + 4, SP, 0, SP + 8, ".sframe.sig", 0, 0, HANDLER)


def test_signal_fde_frame_unreadable_names_the_section() -> None:
    frames, stop = _signal_fde_walk(None)
    assert frames == [HANDLER_FRAME, Frame(1, TRAMP, SP + 8, 0, signal=True)]
    assert stop == Stop(StopReason.UNREADABLE, f"signal frame at {TRAMP:#x}: cannot read the "
                        f"saved registers above SP {SP + 8:#x}", TRAMP, ".sframe.sig")


def test_signal_fde_frame_not_moving_up_names_the_section() -> None:
    frames, stop = _signal_fde_walk(SP + 8)
    assert frames == [HANDLER_FRAME, Frame(1, TRAMP, SP + 8, 0, signal=True)]
    assert stop == Stop(StopReason.CFA_NOT_UP, f"signal frame at {TRAMP:#x}: the interrupted "
                        f"SP {SP + 8:#x} is not above SP {SP + 8:#x} (an alternate signal "
                        "stack?)", TRAMP, ".sframe.sig")


def test_signal_fde_frame_stepped_through_names_the_section() -> None:
    frames, stop = _signal_fde_walk(SP + 0x100)
    assert frames == [HANDLER_FRAME,
                      Frame(1, TRAMP, SP + 8, 0, cfa=SP + 0x100, section=".sframe.sig",
                            signal=True),
                      Frame(2, 0x9999, SP + 0x100, 0)]
    assert stop == Stop(StopReason.NO_FDE, "0x9999 is in no SFrame section's text", 0x9999)


def test_trampoline_bytes_under_an_outermost_fde_are_not_a_signal_frame() -> None:
    # Only a missing FDE or FRE lets the unwinder look at the code; an FDE that says
    # "outermost" ends the walk even where the bytes are rt_sigreturn's.
    tab = _named(3, C.ABI_AMD64_LE, [Func(TRAMP, 0x10, [])], ".sframe.o")
    mem = SparseMemory({TRAMP: AMD64_TRAMP})
    mem.add(SP + 40, b"".join(map(_q, [0] * 15 + [SP + 0x100, 0x9999])))
    frames, stop = Unwinder([tab], mem).unwind(Registers(TRAMP, SP, 0))
    assert frames == [Frame(0, TRAMP, SP, 0, section=".sframe.o", fde=0)]
    assert stop == Stop(StopReason.OUTERMOST, ".sframe.o: FDE[0] has no FREs", TRAMP,
                        ".sframe.o")


# -- a step that fails in an outer frame: its Frame whole -------------------------------

def test_failed_step_frame_whole_aarch64_ra_not_saved() -> None:
    """aarch64: frame 1's FRE leaves the RA in x30, unknown outside the innermost frame;
    the frame it stopped in keeps its section, FDE, FRE, function start and mangled bit."""
    f0 = Func(0x1000, 0x40, [make_fre(0, (16, -8))])
    f1 = Func(0x1100, 0x40, [make_fre(0, (0,)), make_fre(0x10, (32,), mangled_ra=True)],
              pauth_key=1)
    tab = _named(3, C.ABI_AARCH64_LE, [f0, f1], ".sframe.a")
    mem = SparseMemory({SP + 8: _q(0x1118)})
    frames, stop = Unwinder([tab], mem).unwind(Registers(0x1004, SP, 0x7000, ra=0x5555))
    assert frames == [
        Frame(0, 0x1004, SP, 0x7000, SP + 16, ".sframe.a", 0, 0, 0x1000),
        Frame(1, 0x1118, SP + 16, 0x7000, None, ".sframe.a", 1, 1, 0x1100, True)]
    assert stop == Stop(StopReason.REGISTER_UNAVAILABLE, "FDE[1].FRE[1]: RA was not saved "
                        "and its register is unknown in this frame", 0x1118, ".sframe.a")


def test_outer_frame_rule_on_an_unknown_register() -> None:
    # amd64 flex: frame 1's CFA is RBX (DWARF 3) + 16, known only in the innermost frame
    f0 = Func(0x1000, 0x40, [make_fre(0, (16,))])  # RA at CFA - 8 (amd64's fixed RA)
    f1 = Func(0x1100, 0x40, [make_fre(0, ((3 << 3) | 1, 16))], flex=True)
    tab = _named(3, C.ABI_AMD64_LE, [f0, f1], ".sframe.f")
    mem = SparseMemory({SP + 8: _q(0x1108)})
    frames, stop = Unwinder([tab], mem).unwind(
        Registers(0x1004, SP, 0, others={3: 0x9000}))
    assert frames == [Frame(0, 0x1004, SP, 0, SP + 16, ".sframe.f", 0, 0, 0x1000),
                      Frame(1, 0x1108, SP + 16, 0, None, ".sframe.f", 1, 0, 0x1100)]
    assert stop == Stop(StopReason.REGISTER_UNAVAILABLE, "FDE[1].FRE[0]: needs DWARF "
                        "register 3, unknown in this frame", 0x1108, ".sframe.f")


def test_dereferenced_cfa_unreadable() -> None:
    # flex CFA rule: load the word at SP + 0x10 (control word: reg 7 << 3 | deref | reg_p)
    f0 = Func(0x1000, 0x40, [make_fre(0, ((7 << 3) | 3, 0x10))], flex=True)
    tab = _named(3, C.ABI_AMD64_LE, [f0], ".sframe.d")
    frames, stop = Unwinder([tab], SparseMemory()).unwind(Registers(0x1004, SP, 0))
    assert frames == [Frame(0, 0x1004, SP, 0, None, ".sframe.d", 0, 0, 0x1000)]
    assert stop == Stop(StopReason.UNREADABLE, "FDE[0].FRE[0]: cannot read the CFA at "
                        f"{SP + 0x10:#x}", 0x1004, ".sframe.d")


# -- rules on the link register of the innermost frame ----------------------------------

def test_flex_ra_rule_reading_the_link_register() -> None:
    # aarch64 flex: CFA = SP + 16, RA = x30 (register 30, no deref): the innermost frame's LR
    f0 = Func(0x1000, 0x40, [make_fre(0, ((31 << 3) | 1, 16, (30 << 3) | 1, 0))], flex=True)
    tab = _named(3, C.ABI_AARCH64_LE, [f0], ".sframe.lr")
    frames, stop = Unwinder([tab], SparseMemory()).unwind(
        Registers(0x1004, SP, 0x7000, ra=0x4444))
    assert frames == [Frame(0, 0x1004, SP, 0x7000, SP + 16, ".sframe.lr", 0, 0, 0x1000),
                      Frame(1, 0x4444, SP + 16, 0x7000)]
    assert stop == Stop(StopReason.NO_FDE, "0x4444 is in no SFrame section's text", 0x4444)


# -- the PAC mask ----------------------------------------------------------------------------

PAC = 0xFF7F << 48


def _pac_walk(mangled: bool, **kw: int) -> list[Frame]:
    f0 = Func(0x1000, 0x40, [make_fre(0, (16, -8), mangled_ra=mangled)], pauth_key=1)
    tab = _named(3, C.ABI_AARCH64_LE, [f0], ".sframe.p")
    mem = SparseMemory({SP + 8: _q(0x0012_0000_0000_4445)})
    frames, stop = Unwinder([tab], mem, **kw).unwind(Registers(0x1004, SP, 0, ra=0))
    assert stop.reason is StopReason.NO_FDE
    assert frames[0] == Frame(0, 0x1004, SP, 0, SP + 16, ".sframe.p", 0, 0, 0x1000, mangled)
    return frames


def test_pac_mask_clears_only_mangled_return_addresses() -> None:
    assert _pac_walk(True, pac_mask=PAC)[1].pc == 0x4445
    assert _pac_walk(False, pac_mask=PAC)[1].pc == 0x0012_0000_0000_4445


def test_no_pac_mask_by_default() -> None:
    # mangled RAs are used as read (bit 0 included) and only flagged on the frame
    assert _pac_walk(True)[1].pc == 0x0012_0000_0000_4445
    assert Unwinder([], SparseMemory()).pac_mask == 0


# -- the unwinder's arguments ------------------------------------------------------------------

def test_tableset_is_used_as_given() -> None:
    tab, mem, regs, expected = chain(3)
    tables = TableSet([tab])
    unwinder = Unwinder(tables, mem)
    assert unwinder.tables is tables
    frames, stop = unwinder.unwind(regs)
    assert [(f.pc, f.sp) for f in frames] == expected
    assert stop.reason is StopReason.OUTERMOST


def test_unknown_abi_falls_back_to_amd64() -> None:
    tab, mem, regs, expected = chain(3)
    unwinder = Unwinder([tab], mem, abi=99)
    assert unwinder.abi_id == C.ABI_AMD64_LE and unwinder.abi.name == "amd64"
    frames, stop = unwinder.unwind(regs)
    assert [(f.pc, f.sp) for f in frames] == expected
    assert stop.reason is StopReason.OUTERMOST


def test_walk_stop_is_none_until_the_walk_ends() -> None:
    tab, mem, regs, expected = chain(3)
    walk = Unwinder([tab], mem).walk(regs)
    assert walk.stop is None and walk.frames == []
    first = next(walk)
    assert (first.pc, first.sp) == expected[0]
    assert walk.stop is None and walk.frames == [first]
    walk.run()
    assert walk.stop is not None and walk.stop.reason is StopReason.OUTERMOST
    assert [(f.pc, f.sp) for f in walk.frames] == expected
