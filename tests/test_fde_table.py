"""format/fde_table: the column reader agrees with the record decoder on every FDE."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from sfcheck.format import Decoder, encode
from sfcheck.format.fde_table import Columns

from strategies import sections


@settings(max_examples=300, deadline=None)
@given(sections(), st.integers(0, 1 << 48), st.booleans(), st.booleans(), st.data())
def test_columns_match_the_decoder(sec, vma: int, honour: bool, rel: bool, data) -> None:
    raw = encode(sec)
    dec = Decoder(raw)
    h = dec.header
    n = h.num_fdes
    a = data.draw(st.integers(0, n))
    b = data.draw(st.integers(a, n))
    cols = Columns(raw, h, a, b)
    fdes = [dec.fde(i, with_fres=False) for i in range(a, b)]
    assert list(cols.starts) == [f.start for f in fdes]
    assert list(cols.sizes) == [f.size for f in fdes]
    assert list(cols.fre_offs) == [f.fre_off for f in fdes]
    for field_relative in (None, rel):
        assert cols.pcs(h, vma, field_relative, honour) == [
            h.func_start(i, f.start, vma, honour, field_relative)
            for i, f in zip(range(a, b), fdes, strict=True)]
