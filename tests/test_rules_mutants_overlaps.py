"""rules/layout.check_overlaps' findings whole (rule, severity, message, offset, FDE, PC): FRE
blocks that touch against blocks sharing one byte, in table order and out of it (the sort),
and function ranges that touch against ranges sharing one PC, as a plain list and as the
walk's Ranges columns, a zero-size range ignored; next_start read by FDE number; _check_gaps on
a gap of zeros against one of 'X' bytes (the mutation run's survivors: the tests
compared FDE and offset only)."""

from __future__ import annotations

from array import array

import pytest

from sfcheck.format import constants as C
from sfcheck.format.model import Header
from sfcheck.result import Severity
from sfcheck.rules import layout as L
from sfcheck.walk.context import Ranges, SectionContext

ERR = Severity.ERROR


def found(blocks: list[tuple[int, int, int]], ranges: list[tuple[int, int, int]] = (),
          columns: bool = False) -> list[tuple]:
    b = L.Blocks()
    for first, end, fde in blocks:
        b.add(first, end, fde)
    ctx = SectionContext("x", ".sframe", 0, b"")
    L.check_overlaps(ctx, b, Ranges(ranges) if columns else list(ranges))
    return [(f.rule, f.severity, f.message, f.location.offset, f.location.fde, f.location.pc)
            for f in ctx.findings]


@pytest.mark.parametrize("blocks", [
    [(0x40, 0x50, 0), (0x50, 0x60, 1)],
    [(0x50, 0x60, 1), (0x40, 0x50, 0)],                  # out of table order
])
def test_fre_blocks_that_touch(blocks: list) -> None:
    assert found(blocks) == []


@pytest.mark.parametrize("blocks", [
    [(0x40, 0x50, 0), (0x4F, 0x60, 1)],                  # table order
    [(0x60, 0x70, 0), (0x4F, 0x60, 1), (0x40, 0x50, 2)],  # out of it: sorted
])
def test_fre_blocks_sharing_a_byte(blocks: list) -> None:
    first = min(blocks)
    second = sorted(blocks)[1]
    assert found(blocks) == [(
        "layout-fre-overlap", ERR,
        f"FRE blocks of FDE {first[2]} [0x40, 0x50) and FDE {second[2]} (from 0x4f) overlap",
        0x4F, second[2], None)]


@pytest.mark.parametrize("columns", [False, True])
@pytest.mark.parametrize("ranges", [
    [(0x1000, 0x10, 0), (0x1010, 0x8, 1)],
    [(0x1010, 0x8, 0), (0x1000, 0x10, 1)],              # out of table order: sorted
])
def test_functions_that_touch(ranges: list, columns: bool) -> None:
    assert found([], ranges, columns) == []


@pytest.mark.parametrize("columns", [False, True])
def test_a_one_byte_function_inside_another(columns: bool) -> None:
    assert found([], [(0x1005, 1, 0), (0x1000, 0x10, 1)], columns) == [(
        "fde-overlap", ERR, "function [0x1005, ...) of FDE 0 starts inside FDE 1's "
        "[0x1000, 0x1010)", None, 0, 0x1005)]


@pytest.mark.parametrize("columns", [False, True])
@pytest.mark.parametrize(("ranges", "i1", "i2"), [
    ([(0x1000, 0x10, 0), (0x100F, 0x8, 1)], 0, 1),
    ([(0x100F, 0x8, 0), (0x1000, 0x10, 1)], 1, 0),      # out of table order: sorted
    ([(0x100F, 0x8, 0), (0x1008, 0, 1), (0x1000, 0x10, 2)], 2, 0),  # size 0 skipped
    ([(0x1008, 0, 0), (0x1000, 0x10, 1), (0x100F, 0x8, 2)], 1, 2),  # a size 0 first
])
def test_functions_sharing_a_pc(ranges: list, i1: int, i2: int, columns: bool) -> None:
    assert found([], ranges, columns) == [(
        "fde-overlap", ERR, f"function [0x100f, ...) of FDE {i2} starts inside FDE {i1}'s "
        "[0x1000, 0x1010)", None, i2, 0x100F)]


def test_next_start_is_read_by_fde_number_when_a_block_is_missing() -> None:
    # FDE 1 has no block: block k's limit is next_start[fde], not next_start[k].
    b = L.Blocks()
    b.add(0x30, 0x40, 0)
    b.add(0, 0x35, 2)
    ctx = SectionContext("x", ".sframe", 0, b"")
    L.check_overlaps(ctx, b, [], array("q", [0x40, 0x100, 0x30]))
    assert [(f.rule, f.message, f.location.offset, f.location.fde) for f in ctx.findings] == [(
        "layout-fre-overlap", "FRE blocks of FDE 2 [0x0, 0x35) and FDE 0 (from 0x30) overlap",
        0x30, 0)]


@pytest.mark.parametrize(("gap", "found"), [
    (b"\0\0\0\0", []),
    (b"XXXX", [("layout-gap-bytes", ERR, "4 bytes in [0x1c, 0x20) belong to no header, FDE or "
                "FRE, nonzero from 0x1c", 0x1C)]),                # any nonzero byte, even 'X'
])
def test_gap_bytes_before_the_fdes(gap: bytes, found: list) -> None:
    h = Header(C.VERSION_3, 0, C.ABI_AMD64_LE, 0, -8, 0, 0, 0, 4, 4, False)
    ctx = SectionContext("x", ".sframe", 0, bytes(h.size) + gap)
    L._check_gaps(ctx, h, h.fdes_start, len(ctx.data))
    assert [(f.rule, f.severity, f.message, f.location.offset) for f in ctx.findings] == found
