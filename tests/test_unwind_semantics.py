"""The unwind step for each version, ABI and rule kind, on hand-built sections and stacks."""

from __future__ import annotations

import pytest

from sfcheck.format import constants as C
from sfcheck.format import make_fre
from sfcheck.unwind import Registers, SFrameTable, SparseMemory, StopReason, Unwinder

from unwind_build import SECTION_VMA, Func, chain, section_bytes, table

LE, BE = "little", "big"


def mem_words(words: dict[int, int], order: str = LE) -> SparseMemory:
    return SparseMemory({a: v.to_bytes(8, order) for a, v in words.items()})


@pytest.mark.parametrize("version", [2, 3])
def test_chain_to_outermost(version: int) -> None:
    tab, mem, regs, expected = chain(6, version=version)
    frames, stop = Unwinder([tab], mem).unwind(regs)
    assert [(f.pc, f.sp) for f in frames] == expected
    assert stop.reason is StopReason.OUTERMOST
    assert [f.fde for f in frames] == list(range(6))


def test_chain_v1_ends_in_code_without_sframe() -> None:
    tab, mem, regs, expected = chain(4, version=1, outermost=False)
    frames, stop = Unwinder([tab], mem).unwind(regs)
    assert [(f.pc, f.sp) for f in frames] == expected
    assert stop.reason is StopReason.NO_FDE and stop.pc == 0xDEAD0000
    assert not stop.reason.is_error


def test_frame_cap() -> None:
    tab, mem, regs, expected = chain(10)
    frames, stop = Unwinder([tab], mem, max_frames=4).unwind(regs)
    assert [(f.pc, f.sp) for f in frames] == expected[:4]
    assert stop.reason is StopReason.FRAME_CAP


def test_fp_based_cfa_and_saved_fp() -> None:
    # CFA = FP + 16, FP saved at CFA-16, RA at CFA-8 (fixed).
    f0 = Func(0x1000, 0x40, [make_fre(0, (16, -16), base_sp=False)])
    f1 = Func(0x1040, 0x40, [make_fre(0, ())])
    tab = table(3, C.ABI_AMD64_LE, [f0, f1])
    sp, fp = 0x8000, 0x8100  # a large frame: FP well above SP
    mem = mem_words({fp + 8: 0x1050, fp: 0x8300})
    frames, stop = Unwinder([tab], mem).unwind(Registers(0x1010, sp, fp))
    assert [(f.pc, f.sp, f.fp) for f in frames] == [(0x1010, sp, fp), (0x1050, fp + 16, 0x8300)]
    assert frames[0].cfa == fp + 16
    assert stop.reason is StopReason.OUTERMOST


def test_fp_below_sp_stops() -> None:
    f0 = Func(0x1000, 0x40, [make_fre(0, (16, -16), base_sp=False)])
    tab = table(3, C.ABI_AMD64_LE, [f0])
    frames, stop = Unwinder([tab], SparseMemory()).unwind(Registers(0x1010, 0x8000, 0x7000))
    assert stop.reason is StopReason.CFA_NOT_UP and "below SP" in stop.detail
    assert len(frames) == 1


@pytest.mark.parametrize("abi,order", [(C.ABI_AARCH64_LE, LE), (C.ABI_AARCH64_BE, BE)])
def test_aarch64_ra_and_fp_offsets_and_lr(abi: int, order: str) -> None:
    # f0: leaf, RA still in LR (1 word). f1: CFA=sp+32, RA at CFA-24, FP at CFA-32.
    f0 = Func(0x1000, 0x40, [make_fre(0, (0,))])
    f1 = Func(0x1040, 0x40, [make_fre(0, (32, -24, -32), mangled_ra=True)])
    f2 = Func(0x1080, 0x40, [make_fre(0, ())])
    tab = table(2, abi, [f0, f1, f2], fixed_ra=0)
    sp = 0x9000
    mem = mem_words({sp + 8: 0x1090, sp: 0x9200}, order)
    uw = Unwinder([tab], mem)
    frames, stop = uw.unwind(Registers(0x1004, sp, 0x9100, ra=0x1048))
    assert [(f.pc, f.sp, f.fp) for f in frames] == [
        (0x1004, sp, 0x9100), (0x1048, sp, 0x9100), (0x1090, sp + 32, 0x9200)]
    assert frames[1].ra_mangled and not frames[0].ra_mangled
    assert stop.reason is StopReason.OUTERMOST
    # Without the LR value, the leaf's RA cannot be known.
    frames, stop = uw.unwind(Registers(0x1004, sp, 0x9100))
    assert stop.reason is StopReason.REGISTER_UNAVAILABLE and len(frames) == 1


def test_aarch64_pac_mask_strips_mangled_ra() -> None:
    f0 = Func(0x1000, 0x40, [make_fre(0, (16, -8), mangled_ra=True)])
    f1 = Func(0x1040, 0x40, [make_fre(0, ())])
    tab = table(2, C.ABI_AARCH64_LE, [f0, f1], fixed_ra=0)
    signed = 0x003A_0000_0000_1050
    mem = mem_words({0x9008: signed})
    frames, _ = Unwinder([tab], mem).unwind(Registers(0x1000, 0x9000, 0))
    assert frames[-1].pc == signed  # no mask: used as read
    frames, stop = Unwinder([tab], mem, pac_mask=0xFFFF_0000_0000_0000).unwind(
        Registers(0x1000, 0x9000, 0))
    assert frames[-1].pc == 0x1050 and stop.reason is StopReason.OUTERMOST


def test_s390x_v2_scaled_cfa_and_register_saved_ra() -> None:
    # CFA = sp + 160 (stored as 0); RA in DWARF register 17 (an FPR), encoded (17<<1)|1;
    # FP saved at CFA-72.
    f0 = Func(0x1000, 0x40, [make_fre(0, (0, (17 << 1) | 1, -72))])
    f1 = Func(0x1040, 0x40, [make_fre(0, (C.s390x_cfa_encode(176), 0, -80))])
    f2 = Func(0x1080, 0x40, [make_fre(0, ())])
    tab = table(2, C.ABI_S390X_BE, [f0, f1, f2], fixed_ra=0)
    sp = 0x10000
    mem = mem_words({sp + 160 - 72: 0x5555, sp + 160 + 176 - 80: 0x7777}, BE)
    frames, stop = Unwinder([tab], mem).unwind(
        Registers(0x1000, sp, 0x1111, ra=0x2222, others={17: 0x1048}))
    # The caller's SP is CFA - 160 (SFRAME_S390X_SP_VAL_OFFSET): a leaf that allocated no
    # frame leaves it as it was (checked against gdb on qemu cores in test_unwind_cross).
    assert [(f.pc, f.sp, f.fp) for f in frames] == [
        (0x1000, sp, 0x1111), (0x1048, sp, 0x5555)]
    # f1's RA word is 0 = "not saved" (padding): in r14, unknown in an outer frame.
    assert stop.reason is StopReason.REGISTER_UNAVAILABLE


def test_s390x_ra_padding_uses_r14_in_innermost_frame() -> None:
    f0 = Func(0x1000, 0x40, [make_fre(0, (0, 0, -72))])
    f1 = Func(0x1040, 0x40, [make_fre(0, ())])
    tab = table(3, C.ABI_S390X_BE, [f0, f1], fixed_ra=0)
    sp = 0x10000
    mem = mem_words({sp + 160 - 72: 0x4242}, BE)
    frames, stop = Unwinder([tab], mem).unwind(Registers(0x1000, sp, 0, ra=0x1044))
    assert [(f.pc, f.sp, f.fp) for f in frames] == [(0x1000, sp, 0), (0x1044, sp, 0x4242)]
    assert stop.reason is StopReason.OUTERMOST


def ctl(reg: int | None, deref: bool) -> int:
    return ((reg or 0) << 3) | (2 if deref else 0) | (1 if reg is not None else 0)


def test_v3_flex_register_cfa_deref_and_padding() -> None:
    # f0: CFA = r3 + 16 (DRAP-like), RA pair padded away (fixed -8 applies), FP = *(CFA-16).
    # f1: CFA = *(sp + 8) (dereferenced), RA = *(CFA - 8), FP unchanged.
    f0 = Func(0x1000, 0x40, [make_fre(0, (ctl(3, False), 16, 0, ctl(None, True), -16))],
              flex=True)
    f1 = Func(0x1040, 0x40, [make_fre(0, (ctl(7, True), 8, ctl(None, True), -8))], flex=True)
    f2 = Func(0x1080, 0x40, [make_fre(0, ())])
    tab = table(3, C.ABI_AMD64_LE, [f0, f1, f2])
    sp, r3 = 0x8000, 0x8200
    cfa0 = r3 + 16
    cfa1 = 0x8800
    mem = mem_words({cfa0 - 8: 0x1050, cfa0 - 16: 0x8900, cfa0 + 8: cfa1, cfa1 - 8: 0x1090})
    frames, stop = Unwinder([tab], mem).unwind(Registers(0x1000, sp, 0x1, others={3: r3}))
    assert [(f.pc, f.sp, f.fp, f.cfa) for f in frames] == [
        (0x1000, sp, 1, cfa0), (0x1050, cfa0, 0x8900, cfa1), (0x1090, cfa1, 0x8900, None)]
    assert stop.reason is StopReason.OUTERMOST
    # The same register rule in an outer frame cannot be evaluated.
    frames, stop = Unwinder([tab], mem).unwind(Registers(0x1000, sp, 1))
    assert stop.reason is StopReason.REGISTER_UNAVAILABLE


@pytest.mark.parametrize("words,why", [
    ((ctl(None, False), 16), "not register-based"),
    ((ctl(7, False),), "needs 2"),
    ((ctl(7, False), 16, ctl(None, True), -8, 5), "left over"),
])
def test_v3_flex_malformed(words: tuple[int, ...], why: str) -> None:
    f0 = Func(0x1000, 0x40, [make_fre(0, words)], flex=True)
    frames, stop = Unwinder([table(3, C.ABI_AMD64_LE, [f0])], SparseMemory()).unwind(
        Registers(0x1000, 0x8000, 0))
    assert stop.reason is StopReason.MALFORMED and why in stop.detail
    assert stop.offset is not None and len(frames) == 1


@pytest.mark.parametrize("version", [1, 2, 3])
def test_pcmask_plt(version: int) -> None:
    # PLT-like: 4 blocks of 16 bytes; FRE 0 at +0 (sp+8), FRE 1 at +11 (sp+16).
    rep = 16
    plt = Func(0x2000, 4 * rep, [make_fre(0, (8,)), make_fre(11, (16,))], pcmask=True,
               rep_size=rep if version > 1 else 0)
    caller = Func(0x3000, 0x40, [make_fre(0, ())] if version > 1 else [make_fre(0, (8,))])
    tab = table(version, C.ABI_AMD64_LE, [plt, caller])
    sp = 0x8000
    for block, (off, cfa) in enumerate([(0, 8), (5, 8), (11, 16), (15, 16)]):
        pc = 0x2000 + block * rep + off
        mem = mem_words({sp + cfa - 8: 0x3010})
        frames, _ = Unwinder([tab], mem).unwind(Registers(pc, sp, 0))
        assert frames[0].fre == (0 if off < 11 else 1)
        assert frames[1].pc == 0x3010 and frames[1].sp == sp + cfa


def test_pcmask_rep_size_zero_is_malformed() -> None:
    plt = Func(0x2000, 64, [make_fre(0, (8,))], pcmask=True, rep_size=0)
    frames, stop = Unwinder([table(2, C.ABI_AMD64_LE, [plt])], SparseMemory()).unwind(
        Registers(0x2010, 0x8000, 0))
    assert stop.reason is StopReason.MALFORMED and "rep_size 0" in stop.detail


def test_v3_fde_without_fres_is_outermost_signal_fde_is_signal_frame() -> None:
    f0 = Func(0x1000, 0x40, [])
    f1 = Func(0x1040, 0x40, [], signal=True)
    tab = table(3, C.ABI_AMD64_LE, [f0, f1])
    _, stop = Unwinder([tab], SparseMemory()).unwind(Registers(0x1000, 0x8000, 0))
    assert stop.reason is StopReason.OUTERMOST
    # amd64: the walk goes into the kernel's signal frame (tests/test_unwind_sigframe.py);
    # with no stack there it stops on the unreadable saved registers.
    frames, stop = Unwinder([tab], SparseMemory()).unwind(Registers(0x1040, 0x8000, 0))
    assert stop.reason is StopReason.UNREADABLE and frames[-1].signal
    # aarch64 big-endian: no signal-frame layout here, so the walk stops at the trampoline.
    be = table(3, C.ABI_AARCH64_BE, [f1])
    _, stop = Unwinder([be], SparseMemory()).unwind(Registers(0x1040, 0x8000, 0))
    assert stop.reason is StopReason.SIGNAL_FRAME
    # v2: no FREs is just "no FRE".
    _, stop = Unwinder([table(2, C.ABI_AMD64_LE, [f0])], SparseMemory()).unwind(
        Registers(0x1000, 0x8000, 0))
    assert stop.reason is StopReason.NO_FRE


def test_no_fre_before_first_fre_and_non_increasing_fres() -> None:
    f0 = Func(0x1000, 0x40, [make_fre(4, (8,))])
    _, stop = Unwinder([table(2, C.ABI_AMD64_LE, [f0])], SparseMemory()).unwind(
        Registers(0x1002, 0x8000, 0))
    assert stop.reason is StopReason.NO_FRE
    f1 = Func(0x1000, 0x40, [make_fre(0, (8,)), make_fre(8, (16,)), make_fre(8, (24,))])
    _, stop = Unwinder([table(2, C.ABI_AMD64_LE, [f1])], SparseMemory()).unwind(
        Registers(0x1002, 0x8000, 0))
    assert stop.reason is StopReason.MALFORMED and "FRE 2" in stop.detail
    assert stop.offset is not None


def test_misaligned_cfa_and_unreadable_ra() -> None:
    f0 = Func(0x1000, 0x40, [make_fre(0, (12,))])
    _, stop = Unwinder([table(2, C.ABI_AMD64_LE, [f0])], SparseMemory()).unwind(
        Registers(0x1000, 0x8000, 0))
    assert stop.reason is StopReason.MISALIGNED_CFA
    f0 = Func(0x1000, 0x40, [make_fre(0, (16,))])
    _, stop = Unwinder([table(2, C.ABI_AMD64_LE, [f0])], mem_words({0x9000: 1})).unwind(
        Registers(0x1000, 0x8000, 0))
    assert stop.reason is StopReason.UNREADABLE and f"{0x8008:#x}" in stop.detail


def test_innermost_cfa_may_equal_sp_but_outer_may_not() -> None:
    # CFA = sp + 0 is allowed for the innermost frame only.
    f0 = Func(0x1000, 0x40, [make_fre(0, (0,))])  # fixed RA -8: RA at sp-8
    tab = table(2, C.ABI_AMD64_LE, [f0])
    mem = mem_words({0x7FF8: 0x1010})
    frames, stop = Unwinder([tab], mem).unwind(Registers(0x1000, 0x8000, 0))
    assert [(f.pc, f.sp) for f in frames] == [(0x1000, 0x8000), (0x1010, 0x8000)]
    assert stop.reason is StopReason.CFA_NOT_UP


def test_unsorted_table_claiming_sorted_still_finds_every_function() -> None:
    funcs = [Func(0x1000 + 0x40 * k, 0x40, [make_fre(0, (8 * (k + 1),))]) for k in range(7)]
    order = [3, 0, 6, 1, 5, 2, 4]
    for version in (1, 2, 3):
        tab = SFrameTable(section_bytes(version, C.ABI_AMD64_LE, funcs, order=order),
                          vma=SECTION_VMA)
        for k, f in enumerate(funcs):
            for pc in (f.addr, f.addr + 0x3F):
                row = tab.lookup(pc)
                assert getattr(row, "func_start", None) == f.addr
                assert row.fde_index == order.index(k)  # type: ignore[union-attr]
        assert tab.lookup(0x1000 + 0x40 * 7).kind == "no-fde"  # type: ignore[union-attr]
        assert tab.lookup(0xFFF).kind == "no-fde"  # type: ignore[union-attr]


def test_truncated_section_stops_cleanly() -> None:
    f0 = Func(0x1000, 0x40, [make_fre(0, (8,)), make_fre(1, (16,))])
    data = section_bytes(3, C.ABI_AMD64_LE, [f0])
    for cut in range(len(data)):
        tab = SFrameTable(data[:cut], vma=SECTION_VMA, text_ranges=[(0x1000, 0x1040)])
        frames, stop = Unwinder([tab], SparseMemory()).unwind(Registers(0x1001, 0x8000, 0))
        assert stop.reason is StopReason.MALFORMED, cut
        assert len(frames) == 1


def test_s390x_fp_in_an_unknown_register_is_unknown_until_needed() -> None:
    """s390x -O0 leaf code saves the caller's FP in a floating-point register (DWARF 17):
    with that register unknown, the caller's FP is unknown (None), and the walk goes on
    until a rule needs the FP, as gdb does."""
    enc = C.s390x_cfa_encode
    leaf = Func(0x1000, 0x40, [make_fre(0, (ctl(15, False), enc(160), 0, ctl(17, False), 0))],
                flex=True)
    saves = Func(0x1040, 0x40, [make_fre(0, (ctl(15, False), enc(320), ctl(None, True), -48,
                                             ctl(None, True), -72))], flex=True)
    on_fp = Func(0x1040, 0x40, [make_fre(0, (ctl(11, False), enc(320), ctl(None, True), -48))],
                 flex=True)
    outer = Func(0x1080, 0x40, [make_fre(0, ())])
    sp = 0x10000
    cfa1 = sp + 320  # the leaf allocated nothing: its caller's SP is CFA - 160 = sp
    mem = mem_words({cfa1 - 48: 0x1084, cfa1 - 72: 0x7777}, BE)
    regs = Registers(0x1000, sp, 0x1111, ra=0x1044)
    frames, stop = Unwinder([table(3, C.ABI_S390X_BE, [leaf, saves, outer])], mem).unwind(regs)
    assert [(f.pc, f.sp, f.fp) for f in frames] == [
        (0x1000, sp, 0x1111), (0x1044, sp, None), (0x1084, cfa1 - 160, 0x7777)]
    assert stop.reason is StopReason.OUTERMOST
    # With the FP register's value known (a core with NT_PRFPREG), it is used.
    frames, _ = Unwinder([table(3, C.ABI_S390X_BE, [leaf, saves, outer])], mem).unwind(
        Registers(0x1000, sp, 0x1111, ra=0x1044, others={17: 0x2222}))
    assert frames[1].fp == 0x2222
    # A CFA based on the unknown FP stops the walk there.
    frames, stop = Unwinder([table(3, C.ABI_S390X_BE, [leaf, on_fp, outer])], mem).unwind(regs)
    assert len(frames) == 2 and stop.reason is StopReason.REGISTER_UNAVAILABLE
    assert "FP" in stop.detail


def test_caller_looked_up_at_return_address_minus_one() -> None:
    """A caller whose last instruction is a (noreturn) call has its return address at the
    next function's first byte: the caller's row is found at RA - 1, as a debugger does.
    Looked up at the RA itself, the next function's row (CFA = SP+32) would give another
    CFA and another caller."""
    f0 = Func(0x1000, 0x20, [make_fre(0, (8,))])      # innermost: CFA = SP+8
    f1 = Func(0x1040, 0x10, [make_fre(0, (16,))])     # ends in a call: RA = 0x1050
    f2 = Func(0x1050, 0x20, [make_fre(0, (32,))])     # starts right at that RA
    tab = table(3, C.ABI_AMD64_LE, [f0, f1, f2])
    sp = 0x8000
    mem = mem_words({sp: 0x1050, sp + 0x10: 0xDEAD0000, sp + 0x20: 0xBEEF0000})
    frames, stop = Unwinder([tab], mem).unwind(Registers(0x1004, sp, 0))
    assert [(f.pc, f.sp, f.fde) for f in frames[:2]] == [(0x1004, sp, 0), (0x1050, sp + 8, 1)]
    assert frames[1].cfa == sp + 0x18 and frames[2].pc == 0xDEAD0000
    assert stop.reason is StopReason.NO_FDE
    # Without the adjustment (what the kernel does) the RA's own row is used.
    frames, _ = Unwinder([tab], mem, caller_pc_adjust=False).unwind(Registers(0x1004, sp, 0))
    assert frames[1].fde == 2 and frames[2].pc == 0xBEEF0000
