"""rules/layout.check_layout's findings whole and its count of readable FDE records: an FDE
array that fits exactly, then cut by one byte, to one, to none, and a section shorter than the
header (no negative count); fdeoff zero and eight, before and after freoff; the FDE array
reaching one byte into the FRE sub-section (also with fdeoff equal to freoff), the FRE
sub-section one byte past the end, no FDEs; check_trailing on zeros, one byte, three, another
header's magic (the mutation run's survivors: messages and the readable count unasserted)."""

from __future__ import annotations

import pytest

from sfcheck.format import constants as C
from sfcheck.format.model import Header
from sfcheck.result import Severity
from sfcheck.rules.layout import check_layout, check_trailing
from sfcheck.walk.context import SectionContext

N = 3  # v3 FDE index entries of 16 bytes after the 28-byte header: the array ends at 0x4c


def run(size: int, fdeoff: int = 0, freoff: int | None = None, fre_len: int = 0,
        n: int = N, fre_bounds: bool = False) -> tuple[int, list[tuple]]:
    h = Header(C.VERSION_3, 0, C.ABI_AMD64_LE, 0, -8, n, 0, fre_len, fdeoff,
               fdeoff + 16 * n if freoff is None else freoff, False)
    ctx = SectionContext("f", ".sframe", 0, bytes(size))
    readable = check_layout(ctx, h)
    return readable, [(f.rule, f.severity, f.message, f.location.offset) for f in ctx.findings
                      if fre_bounds or f.rule != "layout-fre-bounds"]


def bounds(size: int, readable: str) -> tuple:
    return ("layout-fde-array-bounds", Severity.ERROR, f"3 FDEs of 16 bytes end at 0x4c, the "
            f"section has {size:#x} bytes ({readable} readable)", 8)


@pytest.mark.parametrize(("size", "readable", "found"), [
    (0x4C, 3, []),
    (0x4B, 2, [bounds(0x4B, "2 FDEs")]),
    (0x3C, 2, [bounds(0x3C, "2 FDEs")]),
    (0x3B, 1, [bounds(0x3B, "1 FDE")]),
    (0x2B, 0, [bounds(0x2B, "0 FDEs")]),
    (0x14, 0, [bounds(0x14, "0 FDEs")]),   # shorter than the header: none, not fewer
])
def test_the_fde_records_the_section_holds(size: int, readable: int, found: list) -> None:
    assert run(size) == (readable, found)


NONZERO = ("layout-fdeoff-nonzero", Severity.WARNING, "fdeoff is 0x8; libsframe-based readers "
           "compute every PC-relative function start 0x8 bytes off", 0x14)


@pytest.mark.parametrize(("fdeoff", "freoff", "found"), [
    (0, None, []),
    (8, None, [NONZERO]),
    (8, 8, [NONZERO]),                                  # equal: not after
    (8, 7, [("layout-fdeoff-after-freoff", Severity.ERROR, "fdeoff 0x8 > freoff 0x7", 0x14),
            NONZERO]),
])
def test_fdeoff(fdeoff: int, freoff: int | None, found: list) -> None:
    got = run(0x200, fdeoff, freoff)[1]
    assert [f for f in got if f[0].startswith("layout-fdeoff")] == found


@pytest.mark.parametrize(("fdeoff", "freoff", "found"), [
    (0, 0x30, []),                                      # the FREs start where the array ends
    (0, 0x2F, ["FDE array ends at 0x4c, FRE sub-section starts at 0x4b"]),
    (8, 8, ["FDE array ends at 0x54, FRE sub-section starts at 0x24"]),
])
def test_the_fde_array_against_the_fre_subsection(fdeoff: int, freoff: int,
                                                  found: list[str]) -> None:
    got = [f for f in run(0x200, fdeoff, freoff)[1] if f[0] == "layout-fde-array-overlap"]
    assert got == [("layout-fde-array-overlap", Severity.ERROR, m, 0x18) for m in found]


@pytest.mark.parametrize(("size", "found"), [
    (0x5C, []),
    (0x5B, ["FRE sub-section [0x4c, 0x5c) ends past the section's 0x5b bytes"]),
])
def test_the_fre_subsection_against_the_section(size: int, found: list[str]) -> None:
    assert run(size, fre_len=0x10, fre_bounds=True) == (
        N, [("layout-fre-bounds", Severity.ERROR, m, 0x10) for m in found])


def test_no_fdes() -> None:
    assert run(0x1C, freoff=0, n=0) == (0, [("layout-no-fdes", Severity.INFO, "num_fdes is 0",
                                              8)])


@pytest.mark.parametrize(("tail", "found"), [
    (b"\0\0", None),
    (b"\x01", "1 byte after the SFrame data, nonzero from 0x4c"),
    (b"\0\0\x07", "3 bytes after the SFrame data, nonzero from 0x4e"),
    (b"\0\xe2\xde\x03", "4 bytes after the SFrame data, nonzero from 0x4d (another SFrame "
                        "section?)"),
    # 'X' bytes are data, not padding (a strip of b"XX\0XX" took them for zeros)
    (b"\0XX", "3 bytes after the SFrame data, nonzero from 0x4d"),
])
def test_bytes_after_the_sframe_data(tail: bytes, found: str | None) -> None:
    h = Header(C.VERSION_3, 0, C.ABI_AMD64_LE, 0, -8, N, 0, 0, 0, 16 * N, False)
    ctx = SectionContext("f", ".sframe", 0, bytes(0x4C) + tail)
    check_trailing(ctx, h)
    where = 0x4C + len(tail) - len(tail.lstrip(b"\0"))
    assert [(f.rule, f.severity, f.message, f.location.offset) for f in ctx.findings] == (
        [] if found is None else [("layout-trailing-bytes", Severity.ERROR, found, where)])
