"""coverage.check_text_coverage on hand-built ELF models and FDE ranges: each finding whole,
the returned byte totals over several PF_X segments, gaps of 0, 1 and N bytes, 8 ranges named
and one past; gap_summary and uncovered on unsorted ranges (the mutation run's survivors)."""

from __future__ import annotations

import pytest

from sfcheck.elf.model import ElfSFrameInfo, LoadSegment
from sfcheck.result import Severity
from sfcheck.rules.coverage import check_text_coverage, gap_summary, uncovered
from sfcheck.walk.context import SectionContext

PF_X, PF_R = 0x1, 0x4


def load(index: int, vaddr: int, memsz: int, flags: int = PF_R | PF_X) -> LoadSegment:
    return LoadSegment(index, vaddr, vaddr, memsz, memsz, flags)


def run(loads: list[LoadSegment], ranges: list[tuple[int, int, int]], e_type: str = "ET_DYN",
        relocatable: bool = False) -> tuple[tuple[int, int], list[tuple[str, Severity, str]]]:
    inf = ElfSFrameInfo("lib.so", e_type, "EM_X86_64", 62, True, 64, (), (), tuple(loads), ())
    ctx = SectionContext(inf.path, ".sframe", 0, b"", ranges=ranges, relocatable=relocatable)
    totals = check_text_coverage(ctx, inf)
    return totals, [(f.rule, f.severity, f.message) for f in ctx.findings]


def finding(message: str) -> tuple[str, Severity, str]:
    return ("elf-text-coverage", Severity.INFO, message)


def test_a_fully_covered_segment_reports_nothing_and_counts_its_bytes() -> None:
    assert run([load(2, 0x1000, 0x100)], [(0x1000, 0x80, 0), (0x1080, 0x80, 1)]) == (
        (0x100, 0), [])


def test_a_one_byte_gap() -> None:
    assert run([load(2, 0x1000, 0x100)], [(0x1000, 0x7F, 0), (0x1080, 0x80, 1)]) == (
        (0x100, 1), [finding("PT_LOAD[2] [0x1000, 0x1100): 1 of 256 executable bytes (0.4%) "
                             "in 1 range no FDE covers: [0x107f, 0x1080)")])


def test_segments_add_up_past_a_covered_one_and_skip_the_rest() -> None:
    """Segment 1 covered whole, 3 not executable, 4 empty, 5 and 6 with gaps: the totals sum
    the executable bytes and the gaps of 2 and 5."""
    loads = [load(1, 0x1000, 0x10), load(3, 0x3000, 0x40, PF_R), load(4, 0x4000, 0),
             load(5, 0x5000, 0x20), load(6, 0x6000, 0x8)]
    ranges = [(0x1000, 0x10, 0), (0x5000, 0x10, 1), (0x5018, 0x8, 2)]
    assert run(loads, ranges) == ((0x10 + 0x20 + 0x8, 8 + 0x8), [
        finding("PT_LOAD[5] [0x5000, 0x5020): 8 of 32 executable bytes (25.0%) in 1 range no "
                "FDE covers: [0x5010, 0x5018)"),
        finding("PT_LOAD[6] [0x6000, 0x6008): 8 of 8 executable bytes (100.0%) in 1 range no "
                "FDE covers: [0x6000, 0x6008)")])


@pytest.mark.parametrize(("gaps", "more"), [(8, ""), (9, " and 1 more"), (10, " and 2 more")])
def test_eight_ranges_are_named_and_the_rest_counted(gaps: int, more: str) -> None:
    # one-byte FDEs at even addresses from 0x1001 to 0x1001 + 2 (gaps - 1): a 1-byte gap before
    # each, the segment ending at the last FDE
    ranges = [(0x1001 + 2 * k, 1, k) for k in range(gaps)]
    size = 2 * gaps
    shown = ", ".join(f"[{0x1000 + 2 * k:#x}, {0x1001 + 2 * k:#x})" for k in range(min(gaps, 8)))
    assert run([load(2, 0x1000, size)], ranges) == ((size, gaps), [finding(
        f"PT_LOAD[2] [0x1000, {0x1000 + size:#x}): {gaps} of {size} executable bytes (50.0%) "
        f"in {gaps} ranges no FDE covers: {shown}{more}")])


@pytest.mark.parametrize(("e_type", "relocatable"), [
    ("ET_REL", False),     # an object: no segments are placed yet
    ("ET_DYN", True),      # relocated bytes of a section checked as an object's
    ("ET_CORE", False),
])
def test_only_a_linked_file_is_measured(e_type: str, relocatable: bool) -> None:
    assert run([load(2, 0x1000, 0x100)], [], e_type, relocatable) == ((0, 0), [])


def test_an_executable_is_measured_like_a_library() -> None:
    assert run([load(0, 0x400000, 0x10)], [], "ET_EXEC") == ((0x10, 0x10), [finding(
        "PT_LOAD[0] [0x400000, 0x400010): 16 of 16 executable bytes (100.0%) in 1 range no "
        "FDE covers: [0x400000, 0x400010)")])


# pcs[k] <= pcs[k + 2] for every k, yet not sorted: sorting is still needed
UNSORTED = [(10, 5, 0), (0, 5, 1), (20, 5, 2)]
UNSORTED_GAPS = [(5, 10), (15, 20), (25, 30)]


def test_ranges_sorted_when_any_two_neighbours_are_out_of_order() -> None:
    assert uncovered(0, 30, UNSORTED) == UNSORTED_GAPS
    assert gap_summary(0, 30, UNSORTED, 8) == (15, 3, UNSORTED_GAPS)
