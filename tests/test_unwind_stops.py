"""Why a walk stops, exactly: the reason, the message (it names the FDE and FRE), the PC,
the section and the offset of the malformed data, for each way one step can fail."""

from __future__ import annotations

import pytest

from sfcheck.format import FDE, build_section, decode, encode, fde_info, make_fre
from sfcheck.format import constants as C
from sfcheck.unwind import (
    Frame,
    Registers,
    SFrameTable,
    SparseMemory,
    Stop,
    StopReason,
    Unwinder,
)

from unwind_build import SECTION_VMA, Func, chain, section_bytes, table

PC, SP = 0x1010, 0x8000
OUTER = Func(0x1040, 0x40, [make_fre(0, ())])  # RA undefined: the outermost frame


def words(*pairs: tuple[int, int], order: str = "little") -> SparseMemory:
    return SparseMemory({a: v.to_bytes(8, order) for a, v in pairs})  # type: ignore[arg-type]


def walk(tab: SFrameTable, mem: SparseMemory, regs: Registers) -> tuple[list, Stop]:
    frames, stop = Unwinder([tab], mem).unwind(regs)
    return [(f.pc, f.sp, f.fp) for f in frames], stop


def test_v1_fre_without_data_words_is_malformed_at_its_offset() -> None:
    data = section_bytes(1, C.ABI_AMD64_LE, [Func(0x1000, 0x40, [make_fre(0, ())])],
                         pcrel=False)
    offset = decode(data).fdes[0].fres[0].offset
    _, stop = walk(SFrameTable(data, vma=SECTION_VMA), SparseMemory(), Registers(PC, SP, 0))
    assert stop == Stop(StopReason.MALFORMED,
                        ".sframe: FDE[0].FRE[0] has no data words (no CFA rule)", PC, ".sframe",
                        offset)
    assert str(stop) == ("malformed data: .sframe: FDE[0].FRE[0] has no data words "
                         "(no CFA rule)")


@pytest.mark.parametrize("version", [2, 3])
def test_fre_without_data_words_is_the_outermost_frame(version: int) -> None:
    tab = table(version, C.ABI_AMD64_LE, [Func(0x1000, 0x40, [make_fre(0, (16,))]), OUTER])
    frames, stop = walk(tab, words((SP + 8, 0x1050)), Registers(PC, SP, 0))
    assert frames == [(PC, SP, 0), (0x1050, SP + 16, 0)]
    assert stop == Stop(StopReason.OUTERMOST, "FDE[1].FRE[0]: RA undefined", 0x1050, ".sframe")


@pytest.mark.parametrize("fde_type", [2, 5, 31])  # the 5-bit field's values past FLEX
def test_v3_unknown_fde_type_is_malformed_at_the_fde(fde_type: int) -> None:
    fde = FDE(start=0x1000 - SECTION_VMA - C.HEADER_SIZE, size=0x40,
              info=fde_info(0, False, 0, False), fres=(make_fre(0, (16,)),), rep_size=0,
              info2=fde_type)
    data = encode(build_section(3, C.ABI_AMD64_LE, [fde],
                                flags=C.F_FDE_SORTED | C.F_FDE_FUNC_START_PCREL))
    offset = decode(data).fdes[0].offset
    _, stop = walk(SFrameTable(data, vma=SECTION_VMA), words((SP + 8, 0x1050)),
                   Registers(PC, SP, 0))
    assert stop == Stop(StopReason.MALFORMED, f".sframe: FDE[0] has unknown FDE type {fde_type}",
                        PC, ".sframe", offset)


@pytest.mark.parametrize("cfa,mem,stop", [
    (0, words((SP - 8, PC)),
     Stop(StopReason.CFA_NOT_UP, "FDE[0].FRE[0]: CFA 0x8000 is not above SP 0x8000", PC,
          ".sframe")),
    (12, SparseMemory(),
     Stop(StopReason.MISALIGNED_CFA, "FDE[0].FRE[0]: CFA 0x800c is not 8-byte aligned", PC,
          ".sframe")),
    (16, SparseMemory(),
     Stop(StopReason.UNREADABLE, "FDE[0].FRE[0]: cannot read the saved RA at 0x8008", PC,
          ".sframe")),
])
def test_step_failures_name_the_fre(cfa: int, mem: SparseMemory, stop: Stop) -> None:
    tab = table(3, C.ABI_AMD64_LE, [Func(0x1000, 0x40, [make_fre(0, (cfa,))])])
    assert walk(tab, mem, Registers(PC, SP, 0))[1] == stop


def test_saved_fp_unreadable() -> None:
    tab = table(3, C.ABI_AMD64_LE, [Func(0x1000, 0x40, [make_fre(0, (16, -16))])])
    _, stop = walk(tab, words((SP + 8, 0x1050)), Registers(PC, SP, 0))
    assert stop == Stop(StopReason.UNREADABLE,
                        "FDE[0].FRE[0]: cannot read the saved FP at 0x8000", PC, ".sframe")


def test_fp_based_cfa_with_fp_equal_to_sp_walks() -> None:
    """FP == SP (a frame that has pushed nothing below its FP yet) is not FP below SP."""
    f0 = Func(0x1000, 0x40, [make_fre(0, (16, -16), base_sp=False)])
    tab = table(3, C.ABI_AMD64_LE, [f0, OUTER])
    frames, stop = walk(tab, words((SP + 8, 0x1050), (SP, 0x9000)), Registers(PC, SP, SP))
    assert frames == [(PC, SP, SP), (0x1050, SP + 16, 0x9000)]
    assert stop.reason is StopReason.OUTERMOST


def test_s390x_caller_sp_is_cfa_minus_160() -> None:
    """s390x: the CFA is the caller's SP + 160 (SFRAME_S390X_SP_VAL_OFFSET)."""
    f0 = Func(0x1000, 0x40, [make_fre(0, (C.s390x_cfa_encode(192),))])  # RA still in r14
    tab = table(3, C.ABI_S390X_BE, [f0, OUTER], fixed_ra=0)
    frames, stop = walk(tab, SparseMemory(), Registers(PC, SP, 0, ra=0x1050))
    assert frames == [(PC, SP, 0), (0x1050, SP + 192 - 160, 0)]
    assert stop == Stop(StopReason.OUTERMOST, "FDE[1].FRE[0]: RA undefined", 0x1050, ".sframe")
    # CFA = SP + 160: the caller's SP would equal this SP
    f0 = Func(0x1000, 0x40, [make_fre(0, (C.s390x_cfa_encode(160),))])
    tab = table(3, C.ABI_S390X_BE, [f0], fixed_ra=0)
    _, stop = walk(tab, SparseMemory(), Registers(PC, SP, 0, ra=0x1020))
    assert stop == Stop(StopReason.CFA_NOT_UP, "FDE[0].FRE[0]: the caller's SP "
                        "(CFA 0x80a0 -160) is not above SP 0x8000", 0x1020, ".sframe")


TRAMP = 0x5000  # outside every FDE: recognised by its bytes alone
AMD64_TRAMP = bytes.fromhex("48c7c00f000000" "0f05")


def _via_trampoline(saved_rsp: int | None) -> tuple[list[Frame], Stop]:
    """A handler (CFA = SP + 8) returning into the trampoline; the kernel's frame above
    holds `saved_rsp` (None: the frame is not readable)."""
    tab = table(3, C.ABI_AMD64_LE, [Func(0x1000, 0x40, [make_fre(0, (8,))])])
    mem = words((SP, TRAMP))
    mem.add(TRAMP, AMD64_TRAMP)
    if saved_rsp is not None:  # uc_mcontext 40 bytes into the ucontext: r8 ... rsp, rip
        mem.add(SP + 8 + 40, b"".join(v.to_bytes(8, "little")
                                      for v in [0] * 15 + [saved_rsp, 0x1234]))
    return Unwinder([tab], mem, abi=C.ABI_AMD64_LE).unwind(Registers(PC, SP, 0))


HANDLER = Frame(0, PC, SP, 0, SP + 8, ".sframe", 0, 0, 0x1000)


def test_signal_frame_unreadable() -> None:
    frames, stop = _via_trampoline(None)
    assert frames == [HANDLER, Frame(1, TRAMP, SP + 8, 0, signal=True)]
    assert stop == Stop(StopReason.UNREADABLE, f"signal frame at {TRAMP:#x}: cannot read the "
                        f"saved registers above SP {SP + 8:#x}", TRAMP, None)


def test_signal_frame_must_move_up() -> None:
    frames, stop = _via_trampoline(SP + 8)
    assert frames == [HANDLER, Frame(1, TRAMP, SP + 8, 0, signal=True)]
    assert stop == Stop(StopReason.CFA_NOT_UP, f"signal frame at {TRAMP:#x}: the interrupted "
                        f"SP {SP + 8:#x} is not above SP {SP + 8:#x} (an alternate signal "
                        "stack?)", TRAMP, None)
    frames, stop = _via_trampoline(SP + 0x100)
    assert frames == [HANDLER, Frame(1, TRAMP, SP + 8, 0, cfa=SP + 0x100, signal=True),
                      Frame(2, 0x1234, SP + 0x100, 0)]  # the interrupted PC, exact
    assert stop == Stop(StopReason.NO_FDE, "0x1234 is in no SFrame section's text", 0x1234)
    assert str(stop) == "no FDE for PC: 0x1234 is in no SFrame section's text"


def test_stop_without_detail_prints_its_reason() -> None:
    assert str(Stop(StopReason.FRAME_CAP, "", 0)) == "frame cap"


def test_every_frame_field_of_a_walk() -> None:
    """Frames compared whole: index, PC, SP, FP, CFA, section, FDE, FRE, function start;
    the caller is looked up at RA - 1, the last frame is one the walk stopped in."""
    f0 = Func(0x1000, 0x40, [make_fre(0, (16,)), make_fre(0x10, (32, -16))])
    f1 = Func(0x1040, 0x40, [make_fre(0x8, (16,))])  # nothing for its first 8 bytes
    tab = SFrameTable(section_bytes(3, C.ABI_AMD64_LE, [f0, f1]), vma=SECTION_VMA,
                      name=".sframe.t")
    mem = words((SP + 24, 0x1041), (SP + 16, 0x9000))  # RA and FP saved by f0
    frames, stop = Unwinder([tab], mem, max_frames=8).unwind(Registers(PC + 0x8, SP, 0x8800))
    assert frames == [
        Frame(0, PC + 0x8, SP, 0x8800, SP + 32, ".sframe.t", 0, 1, 0x1000),
        # RA 0x1041: looked up at 0x1040, before f1's first FRE
        Frame(1, 0x1041, SP + 32, 0x9000, None, ".sframe.t", 1)]
    assert stop == Stop(StopReason.NO_FRE, ".sframe.t: FDE[1]'s first FRE starts at 0x8, "
                        "after PC offset 0x0", 0x1041, ".sframe.t")


def test_frame_cap_stop() -> None:
    tab, mem, regs, expected = chain(5)
    frames, stop = Unwinder([tab], mem, max_frames=3).unwind(regs)
    assert [f.index for f in frames] == [0, 1, 2]
    assert stop == Stop(StopReason.FRAME_CAP, "stopped after 3 frames", expected[3][0])
    with pytest.raises(ValueError, match="^max_frames must be at least 1$"):
        Unwinder([tab], mem, max_frames=0)
