"""The exact comparison (rules/semantic/compare.py) against the plainest reference: every
PC of the FDE compared on its own, in order. compare_fde compares one tile (a PCMASK
block's joint period with a periodic expression, or one period of the PLT expression after
each PCINC FRE start) and replays it only where it differs; the mismatches it reports
(first range, its FRE and rules, range and byte counts) must be the per-PC ones, whatever
the FDE's size."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from test_xcheck_fast import ABI, EXPRS, HEADER, pairs

from sfcheck.dwarf.cfi import CfiRow, EhFde, Opaque
from sfcheck.format import constants as C
from sfcheck.format.fre_rules import RegRule
from sfcheck.format.model import FDE, fde_info, make_fre
from sfcheck.rules.semantic import compare
from sfcheck.rules.semantic.compare import Budget, compare_fde

PLT = EXPRS[3]  # ld's .plt CFA: rsp+8, rsp+16 at bytes 11-15 of each 16-byte entry
RA = RegRule(None, -8, True)  # at CFA-8, as SFrame's fixed offset says


def _shown(mism: dict) -> dict:
    return {k: (v.first, v.fre, v.sframe, v.eh, v.ranges, v.nbytes) for k, v in mism.items()}


def fast(fde: FDE, eh: EhFde, start: int) -> tuple[dict, bool]:
    mism: dict = {}
    opaque: list[str] = []
    budget = Budget(1 << 30)
    compare_fde(0, start, fde.size, fde, HEADER, ABI, [eh], budget, mism, opaque)
    assert not budget.exhausted
    return _shown(mism), bool(opaque)


def per_pc(fde: FDE, eh: EhFde, start: int) -> tuple[dict, bool]:
    mism: dict = {}
    opaque: list[str] = []
    budget = Budget(1 << 30)
    rows = compare._sframe_rows(HEADER, fde, ABI, {})
    if rows:
        starts = [f.start for f in fde.fres]
        pcs = [r.pc for r in eh.rows]
        for pc in range(max(start, eh.start), min(start + fde.size, eh.end)):
            compare._compare_at(pc, pc + 1, 0, start, fde, HEADER, starts, rows, eh, pcs,
                                ABI.pc, budget, mism, opaque)
    return _shown(mism), bool(opaque)


@settings(max_examples=600, deadline=None)
@given(pair=pairs())
def test_generated_pairs_as_per_pc(pair: tuple[FDE, EhFde, int]) -> None:
    fde, eh, start = pair
    rel = tuple(sorted({r.pc: r for r in eh.rel}.values(), key=lambda r: r.pc))  # PC order
    eh = EhFde(eh.start, eh.end, rel, eh.offset)
    assert fast(fde, eh, start) == per_pc(fde, eh, start)


@settings(max_examples=200, deadline=None)
@given(rep=st.sampled_from([3, 5, 8, 16, 24]), entries=st.integers(1, 40),
       fres=st.lists(st.tuples(st.integers(0, 30), st.sampled_from([8, 16])), min_size=1,
                     max_size=4, unique_by=lambda f: f[0]),
       pcmask=st.booleans(), lead=st.integers(0, 40), tail=st.integers(-40, 40))
def test_plt_rows_of_any_length(rep: int, entries: int, fres: list[tuple[int, int]],
                                pcmask: bool, lead: int, tail: int) -> None:
    """The PLT expression over a long row (many tiles, a partial last one), the .eh_frame
    FDE starting `lead` bytes into the FDE and ending `tail` bytes off its end."""
    size = rep * entries
    fde = FDE(start=0, size=size, info=fde_info(C.FRE_TYPE_ADDR1, pcmask), rep_size=rep,
              fres=tuple(make_fre(s, (off,)) for s, off in sorted(fres)))
    start = 0x2000
    rel = (CfiRow(0, RegRule(7, 8, False), None, None), CfiRow(lead, PLT, None, None))
    eh = EhFde(start, max(start + lead + 1, start + size + tail), rel, 0)
    assert fast(fde, eh, start) == per_pc(fde, eh, start)


def test_a_large_plt_costs_two_copies() -> None:
    """20000 16-byte entries whose FRE switches one byte early: the counts are every
    entry's, and the work spent is of the tile (16 PCs) and of one copy compared PC by PC
    (the row holds whole entries: no partial last one), not of the 20000."""
    entries = 20000
    fde = FDE(start=0, size=16 * entries, info=fde_info(C.FRE_TYPE_ADDR1, True),
              rep_size=16, fres=(make_fre(0, (8,)), make_fre(10, (16,))))
    eh = EhFde(0x1000, 0x1000 + 16 * entries, (CfiRow(0, PLT, RA, None),), 0)
    mism: dict = {}
    budget = Budget(100)
    compare_fde(0, 0x1000, fde.size, fde, HEADER, ABI, [eh], budget, mism, [])
    assert not budget.exhausted and list(mism) == ["CFA"]
    cfa = mism["CFA"]
    assert (cfa.first, cfa.ranges, cfa.nbytes) == ((0x100a, 0x100b), entries, entries)
    assert budget.intervals == 100 - 2 * 16
    # FREs that agree (the switch at byte 11): the tile finds nothing, and is not replayed
    clean = FDE(start=0, size=16 * entries, info=fde_info(C.FRE_TYPE_ADDR1, True),
                rep_size=16, fres=(make_fre(0, (8,)), make_fre(11, (16,))))
    budget = Budget(16)
    compare_fde(0, 0x1000, clean.size, clean, HEADER, ABI, [eh], budget, mism := {}, [])
    assert (mism, budget.exhausted, budget.intervals) == ({}, False, 0)


def _compare(fde: FDE, eh: EhFde, start: int, intervals: int) -> tuple:
    """compare_fde's mismatches, notes and budget state under a bound of `intervals`."""
    mism: dict = {}
    opaque: list[str] = []
    budget = Budget(intervals)
    compare_fde(0, start, fde.size, fde, HEADER, ABI, [eh], budget, mism, opaque)
    return ({k: (v.ranges, v.nbytes) for k, v in mism.items()}, len(opaque), budget.exhausted,
            budget.intervals)


# Eight 5-byte PCMASK blocks, CFA rsp+8 then rsp+16 from byte 2 of each; .eh_frame says
# rsp+8 to S+3, rsp+16 to S+30, rsp+8 after. The windows cost 2 + 3 + 2 points; row 1's
# tile [S+3, S+8) differs, so it is replayed to S+30 (a copy of 3 points, copies 2-4
# counted, a partial last copy of 3 points), row 2's [S+30, S+35) once more (2 points).
BLOCKS = FDE(start=0, size=40, info=fde_info(C.FRE_TYPE_ADDR1, True), rep_size=5,
             fres=(make_fre(0, (8,)), make_fre(2, (16,))))
THREE_ROWS = EhFde(0x3000, 0x3028, (CfiRow(0, RegRule(7, 8, False), RA, None),
                                    CfiRow(3, RegRule(7, 16, False), RA, None),
                                    CfiRow(30, RegRule(7, 8, False), RA, None)), 0)


def test_replay_spends_the_bound_to_the_last_interval() -> None:
    assert fast(BLOCKS, THREE_ROWS, 0x3000) == per_pc(BLOCKS, THREE_ROWS, 0x3000)
    # 8 ranges, 17 bytes (as every PC compared on its own), 15 intervals spent
    assert _compare(BLOCKS, THREE_ROWS, 0x3000, 15) == ({"CFA": (8, 17)}, 0, False, 0)


def test_replay_stops_at_the_bound() -> None:
    """One interval short: row 2's copy is not compared (7 ranges, 14 bytes so far). Short
    of row 1's first copy (or of its last): the comparison stops there, row 2 is not
    compared at all."""
    assert _compare(BLOCKS, THREE_ROWS, 0x3000, 14) == ({"CFA": (7, 14)}, 0, True, -1)
    # short of row 1's partial last copy: neither it nor row 2 is compared
    assert _compare(BLOCKS, THREE_ROWS, 0x3000, 12) == ({"CFA": (6, 11)}, 0, True, -1)
    assert _compare(BLOCKS, THREE_ROWS, 0x3000, 9) == ({"CFA": (2, 3)}, 0, True, -1)


# Eight 5-byte PCMASK blocks, CFA rsp+8 throughout. .eh_frame gives the RA by an
# expression (opaque) to S+30: one note per block, the tile and its first copy a point
# each, the four notes after 4 intervals; from S+30 its CFA is rsp+16: a tile of a point
# and one copy. 2 + 1 + 4 + 1 = 8 intervals in all.
OPAQUE_RA = EhFde(0x3000, 0x3028, (CfiRow(0, RegRule(7, 8, False), Opaque("a test's"), None),
                                   CfiRow(30, RegRule(7, 16, False), RA, None)), 0)


@pytest.mark.parametrize(("intervals", "want"), [
    (8, ({"CFA": (1, 10)}, 6, False, 0)),
    (7, ({"CFA": (1, 5)}, 6, True, -1)),  # the last copy is not compared
    (6, ({}, 2, True, -1)),  # the four counted notes are not kept, nor is row 1 compared
])
def test_replayed_notes_are_charged(intervals: int, want: tuple) -> None:
    fde = FDE(start=0, size=40, info=fde_info(C.FRE_TYPE_ADDR1, True), rep_size=5,
              fres=(make_fre(0, (8,)),))
    assert _compare(fde, OPAQUE_RA, 0x3000, intervals) == want


def test_points_stay_inside_their_row() -> None:
    """An .eh_frame FDE from 8 bytes before the function, rows at S-8, S and S+8; SFrame's
    FRE at S+8 starts where .eh_frame's second row ends. The row before the function adds
    no window, and the FRE start is a point of the third row only: 2 intervals in all."""
    fde = FDE(start=0, size=16, info=fde_info(C.FRE_TYPE_ADDR1),
              fres=(make_fre(0, (8,)), make_fre(8, (16,))))
    eh = EhFde(0x2ff8, 0x3010, (CfiRow(0, RegRule(7, 8, False), RA, None),
                                CfiRow(8, RegRule(7, 8, False), RA, None),
                                CfiRow(16, RegRule(7, 16, False), RA, None)), 0)
    assert _compare(fde, eh, 0x3000, 2) == ({}, 0, False, 0)
    assert _compare(fde, eh, 0x3000, 1) == ({}, 0, True, -1)
