"""format/fre_info_table.INFO: the one decoding of the FRE info byte, against the byte's layout
written out bit by bit here (binutils SFrame specification, "SFrame FRE Info Word")."""

from __future__ import annotations

import pytest

from sfcheck.format import fre_info_table as fre_info
from sfcheck.format.model import fre_info as pack_info


@pytest.mark.parametrize("info", range(256))
def test_entry_follows_the_bit_layout(info: int) -> None:
    got = fre_info.INFO[info]
    code = (info >> 5) & 3
    width = {0: 1, 1: 2, 2: 4}.get(code, 0)
    assert (got.base_sp, got.count, got.size_code, got.mangled_ra) == (
        bool(info & 1), (info >> 1) & 15, code, bool(info & 0x80))
    assert (got.word_size, got.data_len, got.valid) == (width, width * got.count, code != 3)
    assert (fre_info.COUNT[info], fre_info.WORD_SIZE[info], fre_info.DATA_LEN[info]) == (
        got.count, got.word_size, got.data_len)
    assert pack_info(got.base_sp, got.count, got.size_code, got.mangled_ra) == info


def test_examples() -> None:
    """fre_info 0x5e: 15 four-byte words (the libsframe 2.46 overflow of fre-datawords-size);
    0x03: one 1-byte word, SP-based CFA."""
    assert fre_info.INFO[0x5E].data_len == 60
    assert fre_info.INFO[0x03][:4] == (1, 0, 1, True)


@pytest.mark.parametrize("info", range(256))
def test_entry_builds_the_same_row(info: int) -> None:
    """INFO is built once, at import; _entry itself, called now, gives the same row (so a
    change to it is seen by the tests above, not only by a fresh interpreter)."""
    assert fre_info._entry(info) == fre_info.INFO[info]
    assert fre_info._entry(info) == (
        (info >> 1) & 15, (info >> 5) & 3, {0: 1, 1: 2, 2: 4}.get((info >> 5) & 3, 0),
        bool(info & 1), bool(info & 0x80),
        ((info >> 1) & 15) * {0: 1, 1: 2, 2: 4}.get((info >> 5) & 3, 0))


@pytest.mark.parametrize("asz", [1, 2, 4])
def test_token_pattern_splits_every_fre(asz: int) -> None:
    """The FRE walk's pattern, built afresh (token_pattern is cached): a block of one FRE of
    each valid info byte splits into (start bytes, info + data-word bytes) per FRE; a byte
    with size code 3 is a token of its own with empty groups (no FRE can start there)."""
    from sfcheck.format.fre_blocks import _finder, token_pattern

    pattern = token_pattern.__wrapped__(asz)
    want, block = [], bytearray()
    for info, fi in enumerate(fre_info.INFO):
        if fi.valid:
            start = bytes((info,)) * asz  # any bytes: the start is not interpreted
            rest = bytes((info,)) + bytes(range(fi.data_len))
            want.append((start, rest))
            block += start + rest
    assert pattern.findall(bytes(block)) == want
    bad = 0x60  # size code 3
    assert pattern.findall(bytes((bad,)) * (asz + 1)) == [(b"", b"")] * (asz + 1)
    got = _finder({1: 0, 2: 1, 4: 2}[asz])
    assert got is not None and got[0] == asz
    assert got[1](bytes(block)) == want
    assert _finder(3) is None
