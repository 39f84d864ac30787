"""The fast path's byte classes are derived from the FRE rules' predicates: a word the
derived pattern accepts is one the rule accepts (exhaustive for 1- and 2-byte words)."""

from __future__ import annotations

import re
from unittest import mock

import pytest
from hypothesis import given
from hypothesis import strategies as st

from sfcheck.format import constants as C
from sfcheck.format import fde_info as fde_info_byte
from sfcheck.rules import fde as fde_rules
from sfcheck.rules import fre as R
from sfcheck.walk import fde_shapes as shapes
from sfcheck.walk.fre_patterns import _cfa_word, _slot_word, cfa_scale_abi

ABIS = [C.ABI_AMD64_LE, C.ABI_AARCH64_BE, C.ABI_S390X_BE]


def _accepts(pattern: bytes, word: bytes) -> bool:
    return re.fullmatch(pattern, word, re.DOTALL) is not None


@pytest.mark.parametrize("big", [False, True])
@pytest.mark.parametrize("abi", ABIS)
@pytest.mark.parametrize("width", [1, 2])
def test_cfa_word_exhaustive(width: int, abi: int, big: bool) -> None:
    pat = _cfa_word(width, big, abi)
    order = "big" if big else "little"
    accepted = 0
    for v in range(1 << (8 * width)):
        word = v.to_bytes(width, order)
        if _accepts(pat, word):
            accepted += 1
            assert R.cfa_offset_ok(cfa_scale_abi(abi, int.from_bytes(word, order,
                                                                      signed=True)))
    assert accepted > 0  # the fast path is not vacuous


@pytest.mark.parametrize("big", [False, True])
@pytest.mark.parametrize("abi", ABIS)
@given(st.integers(-(1 << 31), (1 << 31) - 1))
def test_cfa_word_four_bytes(abi: int, big: bool, value: int) -> None:
    word = value.to_bytes(4, "big" if big else "little", signed=True)
    if _accepts(_cfa_word(4, big, abi), word):
        assert R.cfa_offset_ok(cfa_scale_abi(abi, value))


@pytest.mark.parametrize("big", [False, True])
@pytest.mark.parametrize("width", [1, 2, 4])
@given(st.integers(0, (1 << 32) - 1))
def test_slot_words(width: int, big: bool, raw: int) -> None:
    order = "big" if big else "little"
    word = (raw % (1 << 8 * width)).to_bytes(width, order)
    if _accepts(_slot_word(width, big), word):
        assert R.stack_slot(int.from_bytes(word, order, signed=True))


def test_aligned_nonnegative_offsets_are_taken() -> None:
    """The classes are not needlessly narrow: every aligned non-negative 2-byte AMD64
    offset below 0x8000 is accepted (the common gas output)."""
    pat = _cfa_word(2, False, C.ABI_AMD64_LE)
    assert all(_accepts(pat, v.to_bytes(2, "little")) for v in range(0, 0x8000, 8))


# ---------------------------------------------------------------------------
# FDE verdicts: the per-column shortcut gives the per-FDE answer.

def _header(version: int):
    from sfcheck.format import FDE, build_section, decode_header, encode, fde_info, make_fre

    fdes = [FDE(start=0x100, size=0x40, info=fde_info(C.FRE_TYPE_ADDR1),
                fres=(make_fre(0, [8]),))]
    return decode_header(encode(build_section(version, C.ABI_AMD64_LE, fdes)))


@given(st.sampled_from([1, 2, 3]), st.data())
def test_noisy_fdes_matches_per_fde_verdicts(version: int, data) -> None:
    from sfcheck.rules import fde as F
    from sfcheck.walk.fde_shapes import _verdict, noisy_fdes, type_table

    h = _header(version)
    n = data.draw(st.integers(1, 40))
    small = st.integers(0, 255) if data.draw(st.booleans()) else st.sampled_from(
        [0x00, 0x01, 0x02, 0x10, 0x11, 0x20, 0x40, 0x80, 0x03])

    def col(strategy):
        return data.draw(st.lists(strategy, min_size=n, max_size=n))

    infos = bytes(col(small))
    info2s = bytes(col(st.sampled_from([0, 0, 1, 2, 0x20])))
    reps = bytes(col(st.sampled_from([0, 0, 16])))
    pads = col(st.sampled_from([0, 0, 1])) if version == 2 else [0] * n
    nfs = col(st.sampled_from([0, 1, 2, 5, 70]))
    sizes = col(st.sampled_from([0, 1, 0xFF, 0x100, 0x101, 0xFFFF, 0x10000, 0x10001, 0x12345]))
    columns = {"info": infos, "info2": info2s, "rep_size": reps, "padding": pads,
               "num_fres": nfs}
    types = infos.translate(type_table())
    want = [int(_verdict(h, (i, i2, r, p, F.size_class(z), nf)))
            for i, i2, r, p, z, nf in zip(infos, info2s, reps, pads, sizes, nfs, strict=True)]
    # and with the per-column path open to tables of any size (by default only above
    # DIRECT_MAX FDEs), so that its marks are checked on these small tables too
    for direct_max in (shapes.DIRECT_MAX, 0):
        with mock.patch.object(shapes, "DIRECT_MAX", direct_max):
            layers = noisy_fdes(h, dict(columns), sizes, types)
        got = bytearray(n)
        for layer in layers:
            got = bytearray(a | b for a, b in zip(got, layer, strict=True))
        assert list(got) == want


def test_noisy_fdes_per_column_layers() -> None:
    """Above DIRECT_MAX FDEs, a verdict that is an OR of per-column conditions comes as one
    layer of marks per column (C-level translations, no per-FDE lookup): here "FRE type 3
    in the info byte" (a bytes column) or "no FREs" (a list column)."""
    from sfcheck.walk.fde_shapes import noisy_fdes, type_table

    h = _header(3)
    n = shapes.DIRECT_MAX + 1
    good, bad = fde_info_byte(C.FRE_TYPE_ADDR1), fde_info_byte(C.FRE_TYPE_ADDR1) | 3
    infos = bytes(bad if i % 7 == 3 else good for i in range(n))
    nfs = [(0, 1, 2)[i % 3] for i in range(n)]
    columns = {"info": infos, "info2": bytes(n), "rep_size": bytes(n), "padding": [0] * n,
               "num_fres": nfs}
    layers = noisy_fdes(h, columns, [0x40] * n, infos.translate(type_table()))
    assert layers == [bytes(int(b == bad) for b in infos), bytes(int(k == 0) for k in nfs)]
    # Not an OR of columns: ADDR1 is noisy on a large function (too narrow), ADDR2 on a
    # small one (wider than needed), so both info values and both size classes are clean
    # somewhere. One layer, looked up per shape: the per-FDE verdicts.
    addr1, addr2 = fde_info_byte(C.FRE_TYPE_ADDR1), fde_info_byte(C.FRE_TYPE_ADDR2)
    infos = bytes((addr1, addr2)[i % 2] for i in range(n))
    sizes = [(0x40, 0x1000)[i % 3 == 0] for i in range(n)]
    columns = dict(columns, info=infos, num_fres=[1] * n)
    layers = noisy_fdes(h, columns, sizes, infos.translate(type_table()))
    want = [int((b == addr1) == (z == 0x1000)) for b, z in zip(infos, sizes, strict=True)]
    assert layers == [bytes(want)]


NEAR_BOUNDS = st.sampled_from(fde_rules.SIZE_BOUNDS).flatmap(lambda b: st.integers(b - 2, b + 1))


@given(st.one_of(st.integers(0, 0xFFFFFFFF), NEAR_BOUNDS))
def test_size_class_stands_for_its_sizes(size: int) -> None:
    """fde_shapes probes CLASS_SIZES[size_class(size)] for a function of `size` bytes: both
    FRE-type answers of check_fde must be the same for the two."""
    probe = fde_rules.CLASS_SIZES[fde_rules.size_class(size)]
    assert fde_rules.size_class(probe) == fde_rules.size_class(size)
    assert fde_rules.needed_fre_type(probe) == fde_rules.needed_fre_type(size)
    assert fde_rules.narrowest_fre_type(probe) == fde_rules.narrowest_fre_type(size)
