"""rules/layout's table-wide totals and the FRE blocks' overlap columns: layout-num-fres with
its whole message (the FDEs' sum, singular and plural, and the header's count) at the header's
count equal, one under and one over, and Blocks.tuples refusing columns of unequal length (the
mutation run's survivors: only the rule ID of layout-num-fres was asserted)."""

from __future__ import annotations

import struct

import pytest

from sfcheck.checker import check_section_bytes
from sfcheck.format import FDE, build_section, encode, fde_info, make_fre
from sfcheck.format import constants as C
from sfcheck.result import Location, Severity
from sfcheck.rules.layout import Blocks

ADDR1 = fde_info(C.FRE_TYPE_ADDR1)


def section(fre_counts: tuple[int, ...], version: int = 3) -> bytes:
    fdes = [FDE(start=0x100 * (k + 1), size=0x40, info=ADDR1,
                fres=tuple(make_fre(4 * j, [8]) for j in range(n)))
            for k, n in enumerate(fre_counts)]
    return encode(build_section(version, C.ABI_AMD64_LE, fdes))


def with_num_fres(data: bytes, num_fres: int) -> bytes:
    b = bytearray(data)
    struct.pack_into("<I", b, 0xC, num_fres)
    return bytes(b)


def findings(data: bytes) -> list[tuple]:
    return [(f.rule, f.severity, f.message, f.location)
            for f in check_section_bytes(data).findings]


def num_fres_finding(message: str) -> tuple:
    return ("layout-num-fres", Severity.ERROR, message,
            Location("<bytes>", ".sframe", offset=0x0C))


@pytest.mark.parametrize("version", [2, 3])
def test_the_header_count_equal_to_the_sum_is_clean(version: int) -> None:
    data = section((1, 3), version)
    assert struct.unpack_from("<I", data, 0xC)[0] == 4
    assert findings(data) == []


@pytest.mark.parametrize("version", [2, 3])
@pytest.mark.parametrize("claimed", [3, 5])
def test_one_fre_more_or_fewer_is_reported_whole(version: int, claimed: int) -> None:
    data = with_num_fres(section((1, 3), version), claimed)
    assert findings(data) == [num_fres_finding(f"FDEs hold 4 FREs, the header says {claimed}")]


@pytest.mark.parametrize("claimed", [0, 2])
def test_a_single_fre_is_counted_in_the_singular(claimed: int) -> None:
    data = with_num_fres(section((1,)), claimed)
    assert findings(data) == [num_fres_finding(f"FDEs hold 1 FRE, the header says {claimed}")]


def test_no_fre_at_all_against_one_claimed() -> None:
    data = with_num_fres(section((0, 0)), 1)
    got = findings(data)
    assert num_fres_finding("FDEs hold 0 FREs, the header says 1") in got


def test_blocks_tuples_sorted_with_their_fde() -> None:
    blocks = Blocks()
    blocks.extend(0, [0x40, 0x10], [0x50, 0x20])
    blocks.add(0x30, 0x38, 3)  # FDE 2 skipped: the FDE column is kept
    assert blocks.tuples() == [(0x10, 0x20, 1), (0x30, 0x38, 3), (0x40, 0x50, 0)]


@pytest.mark.parametrize("numbered", [False, True])
def test_blocks_with_columns_of_unequal_length_raise(numbered: bool) -> None:
    """A walk that recorded a block's start without its end is an error, not a table whose
    last block silently escapes the overlap test."""
    blocks = Blocks()
    if numbered:
        blocks.add(0x10, 0x20, 1)  # FDE 0 skipped: the FDE column is kept
    blocks.extend(2 if numbered else 0, [0x30, 0x40], [0x38])
    with pytest.raises(ValueError):
        blocks.tuples()
