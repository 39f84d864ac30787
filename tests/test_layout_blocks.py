"""rules/layout.Blocks: the FRE-block overlap check over columns reports exactly what sorting
(start, end, fde) tuples and comparing neighbours reports, and builds no tuple for a
table in table order or for gcc's .cold shape (blocks out of table order, disjoint)."""

from __future__ import annotations

from array import array

from hypothesis import given, settings
from hypothesis import strategies as st

from sfcheck.format import constants as C
from sfcheck.format.fde_table import block_ends_distinct
from sfcheck.format.model import Header
from sfcheck.rules import layout as L
from sfcheck.walk.context import SectionContext


def reference(blocks: list[tuple[int, int, int]]) -> list[tuple[int, int]]:
    """The tuple sort this check replaced: (fde, offset) of each FRE-overlap finding."""
    spans = sorted(blocks)
    return [(i2, s2) for (_s1, e1, _i1), (s2, _e2, i2) in zip(spans, spans[1:], strict=False)
            if s2 < e1]


def found(blocks: L.Blocks, next_start=None) -> list[tuple[int, int]]:
    ctx = SectionContext("x", ".sframe", 0, b"")
    L.check_overlaps(ctx, blocks, [], next_start)
    return [(f.location.fde, f.location.offset) for f in ctx.findings]


def fre_offsets_table(offs: list[int]) -> tuple[bytes, Header]:
    """A v2 little-endian FDE table whose FDEs' FRE offsets are `offs` (all block_ends_distinct
    reads)."""
    n = len(offs)
    h = Header(C.VERSION_2, C.F_FDE_SORTED, C.ABI_AMD64_LE, 0, 0, n, 0, 0, 0, n * 20, False)
    recs = b"".join(bytes(8) + o.to_bytes(4, "little") + bytes(h.fde_size - 12) for o in offs)
    return bytes(h.size) + recs, h


class _NoTuples(L.Blocks):
    def tuples(self):  # the point of the column tests: never reached for these shapes
        raise AssertionError("sorted tuples built")


def test_table_order_builds_no_tuples() -> None:
    b = _NoTuples()
    b.extend(0, [0, 10, 30], [10, 30, 31])
    b.add(40, 50, 3)
    assert found(b) == []
    assert b.fdes is None  # every block is its FDE's: no index column


def test_cold_shape_builds_no_tuples() -> None:
    # Hot parts in table order, each function's .cold part right after it in the FRE data
    # but at the end of the table (what gcc -freorder-blocks-and-partition makes).
    firsts = [0, 20, 40, 10, 30, 50]
    ends = [10, 30, 50, 20, 40, 60]
    b = _NoTuples()
    b.extend(0, firsts, ends)
    nxt = array("q", [10, 30, 50, 20, 40, 60])  # next greater start, limit 60 last
    assert found(b, nxt) == []


def test_cold_shape_with_overlap_reports_like_the_sort() -> None:
    firsts = [0, 20, 40, 10, 30, 50]
    ends = [10, 30, 50, 25, 40, 60]  # FDE 3's block runs into FDE 1's
    b = L.Blocks()
    b.extend(0, firsts, ends)
    nxt = array("q", [10, 30, 50, 20, 40, 60])
    assert found(b, nxt) == reference(list(zip(firsts, ends, range(6), strict=True))) == [(1, 20)]


def test_missing_blocks_keep_their_fde_numbers() -> None:
    b = L.Blocks()
    b.add(0, 10, 0)
    b.extend(2, [5, 20], [15, 30])  # FDE 1 has no block (its decode failed)
    b.add(25, 40, 5)
    assert list(b.fdes) == [0, 2, 3, 5]
    assert found(b) == reference([(0, 10, 0), (5, 15, 2), (20, 30, 3), (25, 40, 5)]) == [
        (2, 5), (5, 25)]


def test_shared_empty_starts_fall_back_to_the_sort() -> None:
    # v1/v2 FDEs without FREs have empty blocks that may share a start: not an overlap.
    b = L.Blocks()
    b.extend(0, [0, 0, 10, 0], [0, 0, 20, 10])
    assert found(b) == reference([(0, 0, 0), (0, 0, 1), (10, 20, 2), (0, 10, 3)]) == []


@settings(max_examples=300, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 64), st.integers(0, 12), st.booleans()),
                min_size=0, max_size=24),
       st.booleans())
def test_same_findings_as_the_tuple_sort(spec, with_next) -> None:
    """Random blocks (some FDEs without one), added one by one or in runs, with or without
    the next-start column: the same findings as sorting tuples."""
    b = L.Blocks()
    tuples = []
    run: list[tuple[int, int, int]] = []

    def flush() -> None:
        if run:
            b.extend(run[0][2], [r[0] for r in run], [r[1] for r in run])
            run.clear()

    for i, (first, length, present) in enumerate(spec):
        if not present:
            flush()
            continue
        tuples.append((first, first + length, i))
        if length % 2:
            flush()
            b.add(first, first + length, i)
        else:
            run.append((first, first + length, i))
    flush()
    nxt = None
    if with_next and spec:
        starts = [f for f, _n, _p in spec]
        if len(set(starts)) == len(starts):  # what block_ends_distinct promises
            srt = sorted(starts)
            after = dict(zip(srt, [*srt[1:], 10**6], strict=True))
            nxt = array("q", [after[f] for f in starts])
    assert found(b, nxt) == reference(tuples)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.integers(0, 1000), min_size=1, max_size=40))
def test_block_ends_and_distinct(offs) -> None:
    """block_ends_distinct: the next greater offset (fres_start added; `limit` for the greatest),
    and whether the offsets are distinct; None for offsets in table order."""
    data, h = fre_offsets_table(offs)
    limit = 10**6
    ends, distinct = block_ends_distinct(data, h, len(offs), limit)
    assert distinct == (len(set(offs)) == len(offs))
    if all(a < b for a, b in zip(offs, offs[1:], strict=False)):
        assert ends is None
        return
    assert ends is not None
    expect = [min((h.fres_start + o2 for o2 in offs if o2 > o), default=limit) for o in offs]
    assert list(ends) == expect


def test_block_ends_of_a_prefix() -> None:
    """block_ends reads only the first `readable` FDEs; the greatest offset's block ends at
    `limit`. Offsets 30, 0, 10 (FRE data at h.fres_start): ends 0x100, 10, 30 past it."""
    from sfcheck.format.fde_table import block_ends

    data, h = fre_offsets_table([30, 0, 10, 5])
    got = block_ends(data, h, 3, h.fres_start + 0x100)
    assert list(got) == [h.fres_start + 0x100, h.fres_start + 10, h.fres_start + 30]
    assert block_ends(data, h, 2, 0) is not None
    assert block_ends(*fre_offsets_table([0, 10]), 2, 99) is None
