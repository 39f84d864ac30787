"""walk/context.Ranges: the structure check's (pc, size, fde) column store reads as the
list of tuples it replaced, including values an int64 array cannot hold."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from sfcheck.walk.context import Ranges, SectionContext, range_columns


@settings(max_examples=300, deadline=None)
@given(st.lists(st.tuples(st.integers(-(1 << 63), (1 << 64) - 1), st.integers(0, (1 << 33)),
                          st.booleans(), st.booleans()), max_size=20))
def test_reads_as_the_list_of_tuples(spec) -> None:
    """Ranges added one by one or in runs, some FDEs skipped: the same tuples, length,
    items (negative indices too), slices, columns and equality as a list."""
    r = Ranges()
    expect: list[tuple[int, int, int]] = []
    run: list[tuple[int, int, int]] = []

    def flush() -> None:
        if run:
            r.extend(run[0][2], [x[0] for x in run], [x[1] for x in run])
            run.clear()

    for i, (pc, size, present, single) in enumerate(spec):
        if not present:
            flush()
            continue
        expect.append((pc, size, i))
        if single:
            flush()
            r.add(pc, size, i)
        else:
            run.append((pc, size, i))
    flush()
    assert list(r) == expect
    assert len(r) == len(expect) and bool(r) == bool(expect)
    assert r == expect and r == Ranges(expect)
    assert [r[k] for k in range(-len(r), len(r))] == [expect[k] for k in range(-len(r), len(r))]
    assert r[1:3] == expect[1:3]
    pcs, sizes = range_columns(r)
    assert (pcs, list(sizes)) == ([e[0] for e in expect], [e[1] for e in expect])
    assert range_columns(expect) == (pcs, list(sizes))


def test_no_fde_column_while_every_fde_has_its_range() -> None:
    r = Ranges()
    r.extend(0, [0x1000, 0x1010], [16, 16])
    r.add(0x1020, 8, 2)
    assert r.fdes is None
    r.add(0x1030, 8, 4)  # FDE 3 failed to decode
    assert list(r.fdes) == [0, 1, 2, 4]
    assert r[-1] == (0x1030, 8, 4)
    assert r != [(0x1000, 16, 0)]


def test_context_wraps_a_list() -> None:
    ctx = SectionContext("x", ".sframe", 0, b"", ranges=[(5, 1, 0), (7, 2, 1)])
    assert isinstance(ctx.ranges, Ranges) and ctx.ranges == [(5, 1, 0), (7, 2, 1)]
