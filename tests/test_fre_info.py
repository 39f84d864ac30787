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
