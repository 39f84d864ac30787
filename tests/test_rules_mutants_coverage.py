"""coverage.uncovered on the ranges it leaves out: a range of size 0 (or less) covers
nothing and must not split a gap, whatever its FDE index; a range of size 1 covers its
byte (the mutation run's survivors in uncovered and _plain)."""

from __future__ import annotations

import pytest

from sfcheck.rules.coverage import gap_summary, uncovered


@pytest.mark.parametrize(("ranges", "gaps"), [
    ([(10, 0, 0)], [(0, 100)]),                  # empty range, FDE 0: one gap
    ([(10, 0, 5)], [(0, 100)]),                  # the same as FDE 5 (the index is no size)
    ([(10, -4, 2)], [(0, 100)]),                 # a negative size covers nothing either
    ([(10, 1, 0), (50, 0, 1)], [(0, 10), (11, 100)]),  # size 1 covers one byte
    ([(10, 1, 3)], [(0, 10), (11, 100)]),
])
def test_empty_ranges_split_no_gap(ranges: list[tuple[int, int, int]],
                                   gaps: list[tuple[int, int]]) -> None:
    assert uncovered(0, 100, ranges) == gaps
    total = sum(b - a for a, b in gaps)
    assert gap_summary(0, 100, ranges, 8) == (total, len(gaps), gaps)
