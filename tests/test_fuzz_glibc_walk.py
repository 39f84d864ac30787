"""glibc's SFrame walker (sysdeps/generic/sframe.c, built with the reader by
fuzz/get-glibc-sframe.sh) in the guarded worker, against sfcheck's reference unwinder, on
hand-made stacks whose outcome is known. Skipped where the library is not built (.ci/run
builds it); each test costs one worker start (~0.1 s)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from sfcheck.format import FDE, build_section, encode, fde_info, make_fre
from sfcheck.format import constants as C
from sfcheck.unwind import SFrameTable

ROOT = Path(__file__).resolve().parent.parent
REPRO = ROOT / "reports" / "fuzz-glibc-glibc-2.43-sframe-2026-11-23-repro"


@pytest.fixture(scope="module")
def glibc() -> Iterator[object]:
    libs = sorted((ROOT / ".toolchains" / "glibc-sframe").glob("libglibc-*-sframe.so"))
    if not libs:
        pytest.skip("glibc's SFrame reader not built (sh fuzz/get-glibc-sframe.sh)")
    from fuzz import glibc as harness
    harness.setup(str(libs[-1]))
    if not hasattr(__import__("ctypes").CDLL(str(libs[-1])), "__stacktrace_sframe"):
        pytest.skip("library built before the walker (rerun sh fuzz/get-glibc-sframe.sh)")
    yield harness
    if harness.WORKER is not None and harness.WORKER.proc is not None:
        harness.WORKER.proc.kill()


def fde(start: int, *fres: object) -> FDE:
    return FDE(start=start, size=0x20, info=fde_info(C.FRE_TYPE_ADDR1), fres=tuple(fres))


# A: CFA = SP + 8. B: CFA = SP + 16 from offset 4, FP saved at CFA - 16. C: no row before
# offset 4. D: CFA = FP + 16, FP at CFA - 16. E: CFA = SP + 0x7fff0000. F: CFA = SP + 16
# from offset 1 to its end, G (F's neighbour) CFA = SP + 8. H: CFA = SP + 16, FP word 0.
# RA at CFA - 8 (fixed).
SECTION = encode(build_section(2, C.ABI_AMD64_LE, [
    fde(0x100, make_fre(0, [8])),
    fde(0x200, make_fre(0, [8]), make_fre(4, [16, -16])),
    fde(0x300, make_fre(4, [8])),
    fde(0x400, make_fre(0, [16, -16], base_sp=False)),
    fde(0x500, make_fre(0, [0x7FFF0000])),
    fde(0x600, make_fre(0, [8]), make_fre(1, [16])),  # F: ends with a call (noreturn)
    fde(0x620, make_fre(0, [8])),  # G: right after F
    fde(0x700, make_fre(0, [16, 0])),  # H: an FP word of 0
]))


def walk(harness, pc: int, sp: int, fp: int, stack: dict[int, int]):  # type: ignore[no-untyped-def]
    """keys, glibc's (frames, return addresses) and the reference walk; PCs are
    section-relative, stack slots are byte offsets from the stack's start."""
    from fuzz import glibc_walk as gw
    sec = gw.SECTION_END - len(SECTION)
    words = [0] * gw.STACK_WORDS
    for off, value in stack.items():
        words[off // 8] = value
    table = SFrameTable(SECTION, vma=sec)
    scen = gw.Scenario(SECTION, table, sec + pc, gw.STACK + sp, fp, words)
    keys, reply, ref = harness.ask(SECTION, scen)
    return keys, reply[2] if reply else None, ref, sec


def test_sound_walk_to_outermost_agrees(glibc) -> None:  # type: ignore[no-untyped-def]
    """A -> B -> C: C has no row at its first byte and FP is 0, x86-64's outermost frame:
    glibc returns both return addresses, as the reference does."""
    from fuzz import glibc_walk as gw
    sec = gw.SECTION_END - len(SECTION)
    keys, got, ref, _ = walk(glibc, 0x104, 0x100, 0, {
        0x100: sec + 0x208, 0x108: 0, 0x110: sec + 0x300})
    assert got == (2, [sec + 0x208, sec + 0x300])
    assert ref is not None and ref.ras == got[1] and ref.in_text and ref.last_fp == 0
    assert keys == []


def test_frame_pointer_cycle_is_past_cfa_not_up(glibc) -> None:  # type: ignore[no-untyped-def]
    """D's saved FP points at itself: the CFA never moves up. The reference stops after one
    frame; glibc fills every slot backtrace() gave it with the same return address."""
    from fuzz import glibc_walk as gw
    sec = gw.SECTION_END - len(SECTION)
    keys, got, ref, _ = walk(glibc, 0x404, 0x100, gw.STACK + 0x200, {
        0x200: gw.STACK + 0x200, 0x208: sec + 0x404})
    assert got == (gw.COUNT, [sec + 0x404] * gw.COUNT)
    assert ref is not None and ref.ras == [sec + 0x404]
    assert keys == ["walk:past-cfa-not-up"]


def test_cfa_far_above_the_stack_faults_in_the_guard(glibc) -> None:  # type: ignore[no-untyped-def]
    """E's CFA is 2 GiB above SP: glibc reads the return address there without a check."""
    keys, got, ref, _ = walk(glibc, 0x504, 0x100, 0, {})
    assert keys == ["crash:SIGSEGV:call_walk:stack"]
    assert got is None and ref is None
    # The worker restarts: the next walk works again.
    assert walk(glibc, 0x104, 0x100, 0, {})[0] == []


def test_nonzero_freoff_gap_is_offsets_ignored(glibc) -> None:  # type: ignore[no-untyped-def]
    """The 2026-11-23 find:different-row and find:cfa-offset inputs: a zero gap between the
    FDEs and the FREs (sfh_freoff > num_fdes * 20), which glibc does not skip."""
    for name in ("find-different-row.bin", "find-cfa-offset.bin"):
        assert glibc.outcome((REPRO / name).read_bytes()) == ["find:offsets-ignored"]


def test_return_address_is_looked_up_itself_not_ra_minus_1(glibc) -> None:  # type: ignore[no-untyped-def]
    """F ends with a call that does not return (abort, __assert_fail, __stack_chk_fail): the
    return address is G's first byte. glibc looks the RA itself up and unwinds F's frame
    with G's row (CFA = SP + 8), reading F's return address from the wrong slot; a debugger,
    the DWARF unwinder (_Unwind_Find_FDE gets IP - 1) and sfcheck's default walk use the row
    of the call, F's (CFA = SP + 16)."""
    from fuzz import glibc_walk as gw
    from sfcheck.unwind import Registers, Unwinder
    sec = gw.SECTION_END - len(SECTION)
    # A's RA is F's end; F's RA is at 0x110 (C + 1), the slot below holds C + 0. Both end the
    # walk (C has no row before offset 4 and FP is 0).
    stack = {0x100: sec + 0x620, 0x108: sec + 0x300, 0x110: sec + 0x301}
    keys, got, ref, _ = walk(glibc, 0x104, 0x100, 0, stack)
    assert got == (2, [sec + 0x620, sec + 0x300])  # F's RA read from the wrong slot
    assert ref is not None and ref.ras == got[1]  # as the exact-PC reference does
    assert keys == ["walk:lookup-at-ra"]
    words = [0] * gw.STACK_WORDS
    for off, value in stack.items():
        words[off // 8] = value
    mem = gw.WalkMemory(b"".join(w.to_bytes(8, "little") for w in words), SECTION)
    frames, _stop = Unwinder([SFrameTable(SECTION, vma=sec)], mem).unwind(
        Registers(sec + 0x104, gw.STACK + 0x100, 0))
    assert [f.pc for f in frames[1:]] == [sec + 0x620, sec + 0x301]  # the right one


def test_walk_to_the_frame_cap_agrees(glibc) -> None:  # type: ignore[no-untyped-def]
    """A calls itself 15 times, then returns to 0: glibc stops at its 16 frames and never
    looks up the 17th PC, where the reference's walk ends (no object there)."""
    from fuzz import glibc_walk as gw
    sec = gw.SECTION_END - len(SECTION)
    stack = {0x100 + 8 * i: sec + 0x104 for i in range(gw.COUNT - 1)}
    keys, got, ref, _ = walk(glibc, 0x104, 0x100, 0, stack)
    assert got == (gw.COUNT, [sec + 0x104] * (gw.COUNT - 1) + [0])
    assert ref is not None and ref.ras == got[1] and not ref.in_text
    assert keys == []


def test_fp_word_zero_is_a_slot_to_glibc(glibc) -> None:  # type: ignore[no-untyped-def]
    """H's FP word is 0: glibc loads the FP from CFA + 0, the reference keeps it (0 is
    SFRAME_FRE_RA_OFFSET_INVALID, "not saved"); D, FP-based, then finds its RA in different
    slots."""
    from fuzz import glibc_walk as gw
    sec = gw.SECTION_END - len(SECTION)
    stack = {0x108: sec + 0x404, 0x110: gw.STACK + 0x200,  # H's RA, and CFA + 0
             0x208: sec + 0x301, 0x308: sec + 0x300}  # D's RA, for either FP
    keys, got, ref, _ = walk(glibc, 0x704, 0x100, gw.STACK + 0x300, stack)
    assert got == (2, [sec + 0x404, sec + 0x301])
    assert ref is not None and ref.ras == [sec + 0x404, sec + 0x300] and ref.zero_word
    assert keys == ["walk:zero-offset-word"]
