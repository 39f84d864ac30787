"""elf-text-coverage: executable bytes of each PF_X segment that no FDE covers."""

from __future__ import annotations

import re

from hypothesis import given
from hypothesis import strategies as st

from sfcheck.checker import check_elf
from sfcheck.elf.loader import load_elf
from sfcheck.rules.coverage import gap_summary, uncovered
from sfcheck.walk.context import Ranges

from helpers import CORPUS

ranges = st.lists(st.tuples(st.integers(0, 300), st.integers(0, 80), st.integers(0, 9)),
                  max_size=12)


@given(st.integers(0, 200), st.integers(0, 200), ranges)
def test_uncovered_is_exactly_the_complement(lo: int, span: int, rs) -> None:
    hi = lo + span
    gaps = uncovered(lo, hi, rs)
    covered = {x for pc, size, _ in rs for x in range(pc, pc + size)}
    expect = [x for x in range(lo, hi) if x not in covered]
    assert [x for a, b in gaps for x in range(a, b)] == expect
    assert all(a < b for a, b in gaps)  # non-empty, sorted, disjoint, not adjacent
    assert all(b1 < a2 for (_, b1), (a2, _) in zip(gaps, gaps[1:], strict=False))


@given(st.integers(0, 200), st.integers(0, 200), ranges, st.integers(0, 4), st.booleans())
def test_gap_summary_is_what_uncovered_lists(lo: int, span: int, rs, listed: int,
                                             as_columns: bool) -> None:
    """The report's figures (bytes, count, first gaps) come from columns without the list;
    they must be exactly those of the reference."""
    hi = lo + span
    gaps = uncovered(lo, hi, rs)
    got = gap_summary(lo, hi, Ranges(rs) if as_columns else rs, listed)
    assert got == (sum(b - a for a, b in gaps), len(gaps), gaps[:listed])


def test_unit_cases() -> None:
    assert uncovered(0x100, 0x200, []) == [(0x100, 0x200)]
    assert uncovered(0x100, 0x200, [(0x80, 0x200, 0)]) == []
    assert uncovered(0x100, 0x200, [(0x110, 0x10, 0), (0x118, 0x20, 1), (0x1f0, 0x40, 2)]) == [
        (0x100, 0x110), (0x138, 0x1f0)]


def test_corpus_pie_reports_per_segment() -> None:
    path = CORPUS / "v3" / "exe_pie"
    res = check_elf(path)
    found = [f for f in res.findings if f.rule == "elf-text-coverage"]
    info = load_elf(path)
    xsegs = [s for s in info.load_segments if s.flags & 1]
    assert len(found) == len(xsegs) == 1
    m = re.search(r"\[(0x[0-9a-f]+), (0x[0-9a-f]+)\): (\d+) of (\d+) executable", found[0].message)
    assert m and int(m.group(1), 16) == xsegs[0].vaddr and int(m.group(4)) == xsegs[0].memsz
    # The uncovered bytes are the segment minus the FDE ranges, computed independently.
    from sfcheck.format.decode import decode
    sec = decode(info.sections[0].data)
    spans = [(sec.func_start(i, info.sections[0].vma), f.size) for i, f in
             enumerate(sec.fdes)]
    lo, hi = xsegs[0].vaddr, xsegs[0].vaddr + xsegs[0].memsz
    covered = {x for s, n in spans for x in range(max(s, lo), min(s + n, hi))}
    assert int(m.group(3)) == hi - lo - len(covered)
    assert str(found[0].severity) == "info"


def test_not_for_relocatable_objects() -> None:
    res = check_elf(CORPUS / "v3" / "lib.o")
    assert not [f for f in res.findings if f.rule == "elf-text-coverage"]
