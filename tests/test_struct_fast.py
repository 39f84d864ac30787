"""The structure walk's shortcuts pinned to what they stand for: noisy_fdes' two ways of
asking check_fde (the shapes present, or per-column verdicts found over every combination)
flag exactly the FDEs whose own shape _verdict sends to the reference path."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sfcheck.format import FDE, build_section, decode_header, encode, fde_info, make_fre
from sfcheck.format import constants as C
from sfcheck.rules import fde as fde_rules
from sfcheck.walk import fde_shapes
from sfcheck.walk.fde_shapes import _verdict, noisy_fdes, type_table


def _header(version: int):
    fdes = [FDE(start=0x100, size=0x40, info=fde_info(C.FRE_TYPE_ADDR1),
                fres=(make_fre(0, [8]),))]
    return decode_header(encode(build_section(version, C.ABI_AMD64_LE, fdes)))


HEADERS = {v: _header(v) for v in (1, 2, 3)}


def _flags(layers: list[bytes], n: int) -> list[int]:
    assert all(len(layer) == n for layer in layers)
    return [int(any(layer[k] for layer in layers)) for k in range(n)]


@settings(deadline=None, max_examples=150)
@given(st.sampled_from([1, 2, 3]), st.sampled_from([0, 10**9]), st.data())
def test_noisy_fdes_either_way_is_each_shapes_verdict(version: int, direct_max: int,
                                                      data) -> None:
    """DIRECT_MAX 0 takes the per-column search wherever the combinations allow it; a large
    one looks up the shapes present. Both give _verdict of every FDE's own shape."""
    h = HEADERS[version]
    n = data.draw(st.integers(1, 30))
    pool = data.draw(st.lists(st.integers(0, 255), min_size=1, max_size=3))

    def col(values):
        return data.draw(st.lists(st.sampled_from(values), min_size=n, max_size=n))

    infos = bytes(col(pool + [0, 1, 2, C.FDE_INFO_PCMASK]))
    info2s = bytes(col([0, 0, 1, 2])) if version == 3 else bytes(n)
    reps = bytes(col([0, 0, 8, 16])) if version > 1 else bytes(n)
    pads = col([0, 0, 1]) if version == 2 else bytes(n)
    counts = col([0, 1, 1, 2, 300])
    sizes = col([0, 1, 16, 100, 0xFF, 0x100, 5000, 0x10000, 70000])
    columns = {"info": infos, "info2": info2s, "rep_size": reps, "padding": pads,
               "num_fres": counts}
    old = fde_shapes.DIRECT_MAX
    fde_shapes.DIRECT_MAX = direct_max
    try:
        got = _flags(noisy_fdes(h, dict(columns), sizes, infos.translate(type_table())), n)
    finally:
        fde_shapes.DIRECT_MAX = old
    expect = [int(_verdict(h, (infos[k], info2s[k], reps[k], pads[k],
                               fde_rules.size_class(sizes[k]), counts[k])))
              for k in range(n)]
    assert got == expect


@pytest.mark.parametrize("direct_max", [0, 10**9])
@pytest.mark.parametrize("noisy", [False, True])
def test_noisy_fdes_one_shape(direct_max: int, noisy: bool, monkeypatch) -> None:
    """Every column fixed: one probe decides every FDE, as a full layer or none."""
    monkeypatch.setattr(fde_shapes, "DIRECT_MAX", direct_max)
    h = HEADERS[2]
    n = 5
    info = C.FDE_INFO_PCMASK if noisy else 0
    infos = bytes([info] * n)
    columns = {"info": infos, "info2": bytes(n), "rep_size": bytes(n),
               "padding": bytes(n), "num_fres": [1] * n}
    layers = noisy_fdes(h, columns, [100] * n, infos.translate(type_table()))
    assert _flags(layers, n) == [int(noisy)] * n
