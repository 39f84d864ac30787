"""The rules' located cases again, with every cache the rules and the fast path keep emptied
first (tests/mutation.py's rules and walk groups). mutmut forks each mutant from a process
that already checked sections, so the cached tables (fre.legal_counts, fre.quiet_infos, the
fast path's patterns and FDE verdicts) hold the unmutated answers and the functions that
build them never run under the mutant; here they are built again for each case, and each
finding's rule and location (offset, FDE index, PC, FRE) are compared as the catalogue
states them."""

from __future__ import annotations

import pytest
import test_rule_location_catalogue as catalogue
from test_fastpath_equivalence import assert_same

from sfcheck.format import constants as C
from sfcheck.format.fre_info_table import INFO
from sfcheck.rules import fre as R
from sfcheck.walk import fde_shapes, fre_patterns

from synth import encode_tiled, plan

_CACHED = (R.legal_counts, R.quiet_infos, fre_patterns._cfa_classes, fre_patterns._cfa_word,
           fre_patterns._slot_word, fre_patterns.fre_pattern, fre_patterns.walk_spec,
           fde_shapes.type_table, fde_shapes._verdicts)


@pytest.fixture(autouse=True)
def fresh_caches():
    for f in _CACHED:
        f.cache_clear()
    yield
    for f in _CACHED:
        f.cache_clear()


@pytest.mark.parametrize("rule", sorted(catalogue.LOCATED))
def test_rule_points_where_it_should_uncached(rule: str) -> None:
    catalogue.test_rule_points_where_it_should(rule)


@pytest.mark.parametrize("version", [1, 2, 3])
def test_fast_path_agrees_uncached(version: int) -> None:
    """A realistic section and copies with one FRE byte changed: the fast path, its patterns
    built afresh, gives the reference pass's findings."""
    lay = plan(120, version, seed=7 + version)
    clean = encode_tiled(lay)
    assert {f.rule for f in assert_same(clean, lay.sframe_vma)} == (
        {"header-version-obsolete"} if version == 1 else set())
    seen: set[str] = set()
    for pos in range(len(clean) - 400, len(clean), 7):
        for value in (0x00, 0x7F, 0xFF, clean[pos] ^ 0x20):
            buf = bytearray(clean)
            buf[pos] = value
            seen.update(f.rule for f in assert_same(bytes(buf), lay.sframe_vma))
    assert seen - {"header-version-obsolete"}, "no byte change was noticed"


def _info(count: int, size_code: int = 0, base_sp: bool = True, mangled: bool = False) -> int:
    """An fre_info byte: CFA base bit 0 (1: SP), count bits 1-4, size code bits 5-6,
    mangled-RA bit 7 (libsframe's SFRAME_V1_FRE_INFO)."""
    return int(base_sp) | count << 1 | size_code << 5 | int(mangled) << 7


def test_legal_counts() -> None:
    """fre-word-count: CFA, RA, FP words less those the header fixes; none since v2."""
    assert R.legal_counts(1, 0) == {1, 2, 3}
    assert R.legal_counts(2, 0) == {0, 1, 2, 3}
    assert R.legal_counts(3, 1) == {0, 1, 2}
    assert R.legal_counts(3, 2) == {0, 1}
    assert R.legal_counts(1, 2) == {1}
    assert R.legal_counts(3, 0, flex=True) == R.FLEX_COUNTS == {0, 2, 4, 5, 6}


@pytest.mark.parametrize("info,legal,pauth,quiet", [
    (_info(1), {1}, False, True),
    (_info(1), {2}, False, False),  # fre-word-count
    (_info(2), {1, 2, 3}, False, True),
    (_info(1, mangled=True), {1}, False, False),  # fre-mangled-ra-abi
    (_info(1, mangled=True), {1}, True, True),
    (_info(6, 2), {6}, False, True),  # 24 bytes: libsframe's buffer holds them
    (_info(7, 2), {7}, False, False),  # 28 bytes: fre-datawords-size
    (_info(12, 1), {12}, False, True),  # 24 bytes of 2-byte words
    (_info(13, 1), {13}, False, False),
    (_info(15, 0), {15}, False, True),  # 15 one-byte words
    (_info(15, 3), {15}, False, True),  # size code 3 counted as 1-byte words (fre-size-code's)
    (_info(0), {0}, False, True),
])
def test_info_quiet(info: int, legal: set[int], pauth: bool, quiet: bool) -> None:
    assert R.info_quiet(info, frozenset(legal), pauth) is quiet
    table = R.quiet_infos(frozenset(legal), pauth)
    assert table[info] == quiet and len(table) == 256
    assert sum(table) == sum(R.info_quiet(b, frozenset(legal), pauth) for b in range(256))


def test_quiet_infos_for_amd64_v3() -> None:
    """Every accepted byte has 0-2 words (RA fixed), of at most 24 bytes, no mangled RA."""
    table = R.quiet_infos(R.legal_counts(3, 1), False)
    for b in range(256):
        fi = INFO[b]
        expect = (fi.count <= 2 and not fi.mangled_ra
                  and fi.count * (fi.word_size or 1) <= C.MAX_DATAWORD_BYTES)
        assert table[b] == expect, hex(b)
