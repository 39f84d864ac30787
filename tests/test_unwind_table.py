"""SFrameTable lookups that cannot give a row, exactly: FREs out of order, an FDE that does
not decode, a section that does not decode; and lookups at a load bias."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sfcheck.errors import DecodeError
from sfcheck.format import constants as C
from sfcheck.format import decode, encode, make_fre
from sfcheck.record import replace
from sfcheck.unwind import SFrameTable
from sfcheck.unwind.table import Miss, Row

from strategies import mutated_sections, sections
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


def _rows_by_decoder(tab: SFrameTable, i: int) -> tuple | str:
    """What SFrameTable.rows must give: the decoder's FDE without its FREs, their starts
    and (info, data words); or the decoder's error (message and offset)."""
    try:
        f = tab.fde(i)
    except DecodeError as exc:
        return f"{exc} @{exc.offset}"
    return (replace(f, fres=()), [r.start for r in f.fres], [(r.info, r.words) for r in f.fres])


@given(st.one_of(mutated_sections(), st.builds(encode, sections())), st.booleans())
@settings(max_examples=300, deadline=None, suppress_health_check=list(HealthCheck))
def test_rows_equal_the_decoders_fde(data: bytes, decoded_first: bool) -> None:
    # v1, v2 and v3, valid and damaged: rows() reads what fde() decodes, or raises its
    # error, whether fde() ran on a fresh table or first.
    ref = SFrameTable(data)
    tab = SFrameTable(data)
    n = ref.header.num_fdes if ref.header is not None else 1
    for i in range(min(n, 64)):
        want = _rows_by_decoder(ref, i)
        if decoded_first:
            _rows_by_decoder(tab, i)
        for _ in range(2):  # the second answer comes from the table's cache
            try:
                got: tuple | str = tab.rows(i)
            except DecodeError as exc:
                got = f"{exc} @{exc.offset}"
            assert got == want


@pytest.mark.parametrize("version", [2, 3])
@pytest.mark.parametrize("cut", [1, 2, 3])
def test_rows_stop_at_the_fre_sub_section_end_with_bytes_after_it(version: int,
                                                                  cut: int) -> None:
    # The last FRE's data words (or its info byte) run past fre_len into bytes that
    # exist: rows() raises the decoder's error, as fde() does, never reading them.
    data = bytearray(section_bytes(version, C.ABI_AMD64_LE,
                                   [Func(0x1000, 0x40, [make_fre(0, (16, -8))])]))
    fre_len = int.from_bytes(data[16:20], "little")
    data[16:20] = (fre_len - cut).to_bytes(4, "little")
    tab = SFrameTable(bytes(data) + bytes(16))
    want = _rows_by_decoder(SFrameTable(bytes(data) + bytes(16)), 0)
    assert isinstance(want, str)
    with pytest.raises(DecodeError) as exc:
        tab.rows(0)
    assert f"{exc.value} @{exc.value.offset}" == want
