"""SFrameTable lookups that cannot give a row, exactly: FREs out of order, an FDE that does
not decode, a section that does not decode; and lookups at a load bias."""

from __future__ import annotations

import pytest

from sfcheck.errors import DecodeError
from sfcheck.format import constants as C
from sfcheck.format import decode, make_fre
from sfcheck.unwind import SFrameTable
from sfcheck.unwind.table import Miss, Row

from unwind_build import SECTION_VMA, Func, section_bytes


def fres(*starts: int) -> list:
    return [make_fre(s, (16,)) for s in starts]


@pytest.mark.parametrize("starts,bad", [((0x10, 0x8), 1), ((0, 0x20, 0x18), 2),
                                        ((0, 0x8, 0x20, 0x20), 3)])
def test_fres_out_of_order_are_malformed_at_the_first_bad_fre(starts: tuple, bad: int) -> None:
    data = section_bytes(3, C.ABI_AMD64_LE, [Func(0x1000, 0x40, fres(*starts))])
    tab = SFrameTable(data, vma=SECTION_VMA)
    offset = decode(data).fdes[0].fres[bad].offset
    message = (f".sframe: FDE[0]: FRE {bad} starts at {starts[bad]:#x}, not after FRE "
               f"{bad - 1} at {starts[bad - 1]:#x}")
    for _ in range(2):  # the second answer comes from the table's cache
        assert tab.lookup(0x1030) == Miss("malformed", message, 0, offset)


def test_fde_that_does_not_decode_is_malformed_alone() -> None:
    data = bytearray(section_bytes(3, C.ABI_AMD64_LE, [Func(0x1000, 0x40, fres(0)),
                                                       Func(0x1040, 0x40, fres(0))]))
    fde = decode(bytes(data)).fdes[1].offset
    data[fde + 12:fde + 16] = (0x7000).to_bytes(4, "little")  # v3 sfdi_func_start_fre_off
    tab = SFrameTable(bytes(data), vma=SECTION_VMA)
    with pytest.raises(DecodeError) as exc:
        tab.fde(1)
    assert exc.value.offset == fde + 12
    for _ in range(2):
        assert tab.lookup(0x1050) == Miss("malformed", f".sframe: {exc.value}", 1, fde + 12)
    with pytest.raises(DecodeError):
        tab.fde(1)  # kept, raised again
    row = tab.lookup(0x1010)
    assert isinstance(row, Row) and (row.fde_index, row.func_start) == (0, 0x1000)
    assert tab.fde(0) is row.fde  # decoded once


def test_section_that_does_not_decode() -> None:
    tab = SFrameTable(bytes(28), vma=SECTION_VMA, name=".sframe.x")
    assert tab.error is not None
    with pytest.raises(DecodeError) as exc:
        tab.fde(0)
    assert exc.value is tab.error
    assert tab.lookup(0x1000) == Miss("malformed", f".sframe.x: {tab.error}", None, 0)


def test_lookup_at_a_load_bias() -> None:
    data = section_bytes(3, C.ABI_AMD64_LE, [Func(0x1000, 0x40, fres(0, 0x10)),
                                             Func(0x1040, 0x40, fres(0))])
    tab = SFrameTable(data, vma=SECTION_VMA, bias=0x5000)
    row = tab.lookup(0x6018)
    assert isinstance(row, Row) and (row.fde_index, row.fre_index, row.func_start) == (
        0, 1, 0x6000)
    assert tab.lookup(0x1018) == Miss("no-fde", ".sframe: no FDE covers 0x1018")
    last = tab.lookup(0x607F)
    assert isinstance(last, Row) and (last.fde_index, last.func_start) == (1, 0x6040)
    assert tab.lookup(0x6080) == Miss("no-fde", ".sframe: no FDE covers 0x6080")
