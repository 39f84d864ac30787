"""Every structural rule in v1, v2 and v3, with where its finding points, and each numeric
bound at the boundary and one past it (issue 29 items 2 and 3).

Expected locations are computed from the layout each version defines (record sizes, the v3
attribute record, PC-relative starts), not copied from output: a rule that points one FDE,
FRE or byte off, or forgets a version's field, fails here."""

from __future__ import annotations

import struct
from dataclasses import replace

import pytest
from test_rules import ALSO, FDE_CASES, HEADER_CASES, amd64, build, fde, patch, rules_of

from sfcheck.checker import check_section_bytes
from sfcheck.format import FDE, build_section, encode, fde_info, make_fre
from sfcheck.format import constants as C
from sfcheck.walk.context import SectionContext
from sfcheck.walk.section import FAST_MIN, check_section

HEADER = 28
RECORD = {1: 17, 2: 20, 3: 16}  # FDE record (v1, v2) or index entry (v3)
V3_ATTR = 5  # the v3 attribute record before each FDE's FREs
ADDR_BYTES = {C.FRE_TYPE_ADDR1: 1, C.FRE_TYPE_ADDR2: 2, C.FRE_TYPE_ADDR4: 4}

# Fields a version lacks: the rule must stay silent there, not fire on a neighbour's bytes.
NEEDS = {
    "fde-pcmask-rep-size": {2, 3}, "fde-rep-size-unused": {2, 3},
    "fre-start-beyond-rep": {2, 3},  # rep_size arrived with v2
    "fde-type-unknown": {3}, "fre-flex-cfa-reg": {3}, "fre-flex-padding": {3},
    "fre-register": {3},  # info2 and flex FDEs are v3's
}
# In v1/v2 the flex words of these cases are plain CFA/RA/FP offsets.
OLD_ALSO = {"fre-datawords-size": {"fre-cfa-offset"}}
FRE_LEVEL = {"fre-word-count", "fre-datawords-size", "fre-start-order", "fre-first-start",
             "fre-start-beyond-size", "defect-fre-start-at-size", "fre-start-beyond-rep",
             "fre-mangled-ra-abi", "fre-cfa-offset", "fre-flex-cfa-reg", "fre-flex-padding",
             "fre-register"}


def _fre_bytes(fre) -> int:
    return 1 + 1 + len(fre.words) * (1, 2, 4)[fre.size_code]  # info + ADDR1 start + words


def _fre_offset(version: int, fdes: list[FDE], index: int, fre: int) -> int:
    """Section offset of FRE `fre` of FDE `index` (each FDE's FREs follow the previous')."""
    at = HEADER + len(fdes) * RECORD[version]
    for i, f in enumerate(fdes):
        at += V3_ATTR if version == 3 else 0
        if i == index:
            return at + sum(_fre_bytes(x) for x in f.fres[:fre])
        at += sum(_fre_bytes(x) for x in f.fres)
    raise AssertionError(index)


def _pc(version: int, fdes: list[FDE], index: int) -> int:
    """The function's start: v3 starts are relative to the start field (the record's first)."""
    start = fdes[index].start
    return start + HEADER + index * RECORD[version] if version == 3 else start


def _located(data: bytes, rule: str) -> list:
    return [f.location for f in check_section_bytes(data).findings if f.rule == rule]


@pytest.mark.parametrize("version", [1, 2, 3])
@pytest.mark.parametrize(("rule", "fdes"), FDE_CASES, ids=[c[0] for c in FDE_CASES])
def test_fde_and_fre_rules_per_version(rule: str, fdes: list[FDE], version: int) -> None:
    data = build(fdes, version=version)
    fired = rules_of(data) - {"header-version-obsolete"}
    if version not in NEEDS.get(rule, {1, 2, 3}):
        assert rule not in fired, f"v{version} has no field for {rule}"
        return
    also = ALSO.get(rule, set()) | (OLD_ALSO.get(rule, set()) if version < 3 else set())
    assert fired == {rule} | also
    (loc,) = _located(data, rule)
    index = 1 if rule in ("fde-unsorted", "fde-overlap") else 0
    assert loc.fde == index
    assert loc.pc == _pc(version, fdes, index)
    if rule in FRE_LEVEL:
        fre = {"fre-start-order": 2, "fre-start-beyond-size": 1, "defect-fre-start-at-size": 1,
               "fre-start-beyond-rep": 1}.get(rule, 0)
        assert loc.fre == fre
        assert loc.offset == _fre_offset(version, fdes, index, fre)
    elif rule != "fde-overlap":  # an overlap is between two ranges: no one record to name
        assert loc.fre is None
        assert loc.offset == HEADER + index * RECORD[version]


# The header field each header/layout rule names.
FIELD = {"header-bad-magic": 0, "header-too-short": 0, "header-version-unknown": 2,
         "header-flags-unknown": 3, "header-abi-unknown": 4, "header-abi-endian": 4,
         "header-fixed-ra": 6, "header-fixed-fp": 5, "layout-fdeoff-after-freoff": 0x14,
         "layout-fde-array-bounds": 8, "layout-fre-bounds": 0x10, "layout-num-fres": 0xC}


@pytest.mark.parametrize("version", [1, 2, 3])
@pytest.mark.parametrize(("rule", "mutate"), HEADER_CASES, ids=[c[0] for c in HEADER_CASES])
def test_header_rules_point_at_their_field(rule: str, mutate, version: int) -> None:
    clean = amd64(version)
    if rule == "header-flags-unknown" and version > 1:
        # 0x4 (FDE_FUNC_START_PCREL) is a known flag from v2 on: 0x8 is not.
        data = bytes([*clean[:3], clean[3] | 0x8, *clean[4:]])
    else:
        data = mutate(clean)
    (loc,) = _located(data, rule)
    assert loc.fde is None and loc.fre is None
    # trailing zero bytes are padding: the finding names the first non-zero byte after fre_len
    expected = len(clean) + 2 if rule == "layout-trailing-bytes" else FIELD[rule]
    assert loc.offset == expected


def test_pcrel_flag_is_unknown_in_v1_only() -> None:
    """FDE_FUNC_START_PCREL (0x4) is a v2 (binutils 2.45) and v3 flag; v1 knows 0x1 and 0x2."""
    for version, fires in ((1, True), (2, False), (3, False)):
        clean = amd64(version)
        data = bytes([*clean[:3], clean[3] | C.F_FDE_FUNC_START_PCREL, *clean[4:]])
        assert ("header-flags-unknown" in rules_of(data)) is fires, version


@pytest.mark.parametrize(("version", "abi", "known"), [
    (1, C.ABI_AARCH64_BE, True), (1, C.ABI_AMD64_LE, True), (1, C.ABI_S390X_BE, False),
    (2, C.ABI_S390X_BE, True), (2, C.ABI_S390X_BE + 1, False),
    (3, C.ABI_S390X_BE, True), (3, C.ABI_S390X_BE + 1, False),
])
def test_abi_limits_per_version(version: int, abi: int, known: bool) -> None:
    """s390x (ABI 4) arrived with v2; the last ABI of each version and one past it."""
    fdes = [fde(fres=(make_fre(0, [160]),))]
    data = encode(build_section(version, abi, fdes))
    locs = _located(data, "header-abi-unknown")
    assert [loc.offset for loc in locs] == ([] if known else [4])


@pytest.mark.parametrize("version", [1, 2, 3])
@pytest.mark.parametrize(("size", "fre_type", "want"), [
    # gas picks ADDR1 below 0x100 bytes and ADDR2 below 0x10000 (sframe_convert_frag);
    # ADDR1 starts reach offset 0xff, every PC of a 0x100-byte function, ADDR2 0xffff.
    (0xFF, C.FRE_TYPE_ADDR1, set()),
    (0x100, C.FRE_TYPE_ADDR1, set()),
    (0x101, C.FRE_TYPE_ADDR1, {"fde-fre-type-small"}),
    (0xFF, C.FRE_TYPE_ADDR2, {"fde-fre-type-size"}),
    (0x100, C.FRE_TYPE_ADDR2, set()),
    (0xFFFF, C.FRE_TYPE_ADDR2, set()),
    (0x10000, C.FRE_TYPE_ADDR2, set()),
    (0x10001, C.FRE_TYPE_ADDR2, {"fde-fre-type-small"}),
    (0xFFFF, C.FRE_TYPE_ADDR4, {"fde-fre-type-size"}),
    (0x10000, C.FRE_TYPE_ADDR4, set()),
    (0x10001, C.FRE_TYPE_ADDR4, set()),
])
@pytest.mark.parametrize("fast", [False, True])
def test_fre_type_bounds(version: int, size: int, fre_type: int, want: set[str],
                         fast: bool) -> None:
    """Each side of both limits, on the reference walk and on the fast path (a table of
    FAST_MIN copies of the FDE, which it classes by size_class)."""
    copies = FAST_MIN if fast else 1
    fdes = [fde(start=0x1000 + k * 0x20000, size=size, info=fde_info(fre_type))
            for k in range(copies)]
    ctx = SectionContext("x", ".sframe", 0, build(fdes, version=version))
    check_section(ctx, fast=fast)
    got = {f.rule for f in ctx.findings} & {"fde-fre-type-small", "fde-fre-type-size"}
    assert got == want


@pytest.mark.parametrize(("abi", "last"), [
    (C.ABI_AMD64_LE, 16), (C.ABI_AARCH64_LE, 31), (C.ABI_S390X_BE, 31)])
def test_flex_register_bound(abi: int, last: int) -> None:
    """The highest DWARF register of each ABI is valid; the next is fre-register."""
    def fired(reg: int) -> list:
        fdes = [fde(info2=C.FDE_TYPE_FLEX, fres=(make_fre(0, [(reg << 3) | 1, 8]),))]
        return _located(encode(build_section(3, abi, fdes)), "fre-register")
    assert fired(last) == []
    (loc,) = fired(last + 1)
    assert (loc.fde, loc.fre) == (0, 0)


def test_data_word_bytes_bound() -> None:
    """Six 4-byte words fill libsframe's 24-byte buffer; a seventh overflows it."""
    def fired(n: int) -> set[str]:
        fres = (make_fre(0, list(range(8, 8 * (n + 1), 8)), size_code=2),)
        return rules_of(build([fde(info2=C.FDE_TYPE_FLEX, fres=fres)]))
    assert "fre-datawords-size" not in fired(6)
    assert "fre-datawords-size" in fired(7)


@pytest.mark.parametrize(("offset", "fires"), [(-8, True), (0, False), (8, False), (12, True),
                                                (16, False)])
def test_cfa_offset_bounds(offset: int, fires: bool) -> None:
    """An SP-based CFA is at or above SP and 8-byte aligned: 0 is the bound, -8 one past."""
    assert ("fre-cfa-offset" in rules_of(build([fde(fres=(make_fre(0, [offset]),))]))) is fires


@pytest.mark.parametrize("version", [2, 3])
def test_pcmask_rep_size_bound(version: int) -> None:
    """A PCMASK FDE's FRE starts must stay below rep_size: rep_size - 1 is the last valid."""
    def fired(start: int) -> list:
        f = fde(info=fde_info(0, pcmask=True), rep_size=16,
                fres=(make_fre(0, [8]), make_fre(start, [16])))
        return _located(build([f], version=version), "fre-start-beyond-rep")
    assert fired(15) == []
    (loc,) = fired(16)
    assert (loc.fde, loc.fre) == (0, 1)


@pytest.mark.parametrize("version", [1, 2, 3])
def test_fre_start_at_and_past_size(version: int) -> None:
    """start == size is gas's known defect (warning); size + 1 is past the function."""
    def rules(start: int) -> set[str]:
        f = replace(fde(size=8), fres=(make_fre(0, [8]), make_fre(start, [16])))
        return rules_of(build([f], version=version)) - {"header-version-obsolete"}
    assert rules(7) == set()
    assert rules(8) == {"defect-fre-start-at-size"}
    assert rules(9) == {"fre-start-beyond-size"}


# -- fields and bounds a version changes (issue 29 item 3) -----------------------------------

def _fde_finding(data: bytes, rule: str) -> list[tuple[int | None, int | None]]:
    return [(loc.fde, loc.offset) for loc in _located(data, rule)]


@pytest.mark.parametrize("version", [1, 2, 3])
def test_signal_bit_is_reserved_before_v3(version: int) -> None:
    """Info bit 7 is v3's signal-frame flag; v1 and v2 leave it unused (reserved)."""
    fdes = [fde(), fde(start=0x200, info=fde_info(C.FRE_TYPE_ADDR1) | C.FDE_INFO_SIGNAL)]
    got = _fde_finding(build(fdes, version=version), "fde-reserved-bits")
    assert got == ([] if version == 3 else [(1, HEADER + RECORD[version])])


@pytest.mark.parametrize(("padding", "fires"), [(0, False), (1, True), (0x8000, True)])
def test_v2_fde_padding_is_reserved(padding: int, fires: bool) -> None:
    """v2's FDE record ends in a 2-byte padding field (v1 has none, v3 no record)."""
    data = bytearray(build([fde(), fde(start=0x200)], version=2))
    struct.pack_into("<H", data, HEADER + RECORD[2] + 18, padding)  # FDE 1's padding
    got = _fde_finding(bytes(data), "fde-reserved-bits")
    assert got == ([(1, HEADER + RECORD[2])] if fires else [])


FLEX_FRES = (make_fre(0, [(7 << 3) | 1, 8]),)  # CFA = rsp+8 as a FLEX control word pair


@pytest.mark.parametrize(("info2", "rule"), [
    (C.FDE_TYPE_FLEX, None),  # the last FDE type defined
    (C.FDE_TYPE_FLEX + 1, "fde-type-unknown"),  # one past it
    (C.FDE_INFO2_TYPE, "fde-type-unknown"),  # the widest type value
    (C.FDE_TYPE_FLEX | 0x20, "fde-reserved-bits"),  # the lowest unused info2 bit
])
def test_v3_info2_bounds(info2: int, rule: str | None) -> None:
    fdes = [fde(), fde(start=0x200, info2=info2, fres=FLEX_FRES)]
    data = build(fdes)
    fired = rules_of(data)
    if rule is None:
        assert fired == set()
        return
    assert rule in fired
    assert _fde_finding(data, rule) == [(1, HEADER + RECORD[3])]


@pytest.mark.parametrize("version", [1, 2, 3])
def test_data_word_bytes_bound_per_version(version: int) -> None:
    """24 bytes of data words (libsframe's buffer) in every version: 6 words of 4 bytes fit,
    a seventh is one past (v1/v2 FREs carry up to 15 words too)."""
    def fired(n: int) -> list:
        fres = (make_fre(0, [8]), make_fre(1, list(range(8, 8 * (n + 1), 8)), size_code=2))
        info2 = C.FDE_TYPE_FLEX if version == 3 else 0
        data = build([fde(), fde(start=0x200, info2=info2, fres=fres)], version=version)
        return [(loc.fde, loc.fre) for loc in _located(data, "fre-datawords-size")]
    assert fired(6) == []
    assert fired(7) == [(1, 1)]


@pytest.mark.parametrize("version", [1, 2, 3])
@pytest.mark.parametrize(("abi", "top"), [(C.ABI_AMD64_LE, 2), (C.ABI_AARCH64_LE, 3)])
def test_word_count_bounds(version: int, abi: int, top: int) -> None:
    """A DEFAULT FRE holds the CFA, then RA and FP unless the header fixes them (amd64 fixes
    RA: 2 words at most; aarch64: 3). No word at all (RA undefined) is legal from v2 on."""
    def fired(n: int) -> list:
        fres = (make_fre(0, [16]), make_fre(1, [16, -16, -8, -24][:n]))
        data = encode(build_section(version, abi, [fde(), fde(start=0x200, fres=fres)]))
        return [(loc.fde, loc.fre, loc.offset) for loc in _located(data, "fre-word-count")]
    fdes2 = [fde(), fde(start=0x200, fres=(make_fre(0, [16]), make_fre(1, [16])))]
    at = _fre_offset(version, fdes2, 1, 1)
    assert fired(1) == []
    assert fired(top) == []
    assert fired(top + 1) == [(1, 1, at)]
    assert fired(0) == ([(1, 1, at)] if version == 1 else [])


@pytest.mark.parametrize("version", [1, 2, 3])
@pytest.mark.parametrize(("offset", "fires"), [(-8, True), (0, False), (8, False), (12, True)])
def test_cfa_offset_bounds_per_version(version: int, offset: int, fires: bool) -> None:
    fdes = [fde(), fde(start=0x200, fres=(make_fre(0, [8]), make_fre(1, [offset])))]
    got = [(loc.fde, loc.fre) for loc in _located(build(fdes, version=version),
                                                  "fre-cfa-offset")]
    assert got == ([(1, 1)] if fires else [])


@pytest.mark.parametrize("version", [1, 2, 3])
def test_first_start_bound(version: int) -> None:
    """The first row must start at offset 0: 1 is one past."""
    def fired(start: int) -> list:
        fdes = [fde(), fde(start=0x200, fres=(make_fre(start, [8]),))]
        return [(loc.fde, loc.fre) for loc in _located(build(fdes, version=version),
                                                       "fre-first-start")]
    assert fired(0) == []
    assert fired(1) == [(1, 0)]


@pytest.mark.parametrize("version", [1, 2, 3])
def test_header_length_bound(version: int) -> None:
    """A section of no FDEs is exactly the 28-byte header; 27 bytes is one short."""
    empty = amd64(version, fdes=[])
    assert len(empty) == HEADER
    assert _located(empty, "header-too-short") == []
    assert [loc.offset for loc in _located(empty[:-1], "header-too-short")] == [0]


@pytest.mark.parametrize("version", [1, 2, 3])
def test_fde_array_end_bound(version: int) -> None:
    """fdeoff moves the FDE array: ending at the section's last byte is in bounds (other
    layout rules object), one byte further is layout-fde-array-bounds."""
    data = amd64(version)
    fits = len(data) - HEADER - 2 * RECORD[version]
    assert _located(patch(data, 0x14, "I", fits), "layout-fde-array-bounds") == []
    (loc,) = _located(patch(data, 0x14, "I", fits + 1), "layout-fde-array-bounds")
    assert loc.offset == 8


@pytest.mark.parametrize("version", [1, 2, 3])
def test_fre_len_bound(version: int) -> None:
    """sfh_fre_len as built ends the FRE sub-section at the section's end; one more byte is
    past it (layout-fre-bounds, at the field)."""
    data = amd64(version, flags=C.F_FDE_SORTED)
    fre_len = struct.unpack_from("<I", data, 0x10)[0]
    assert _located(data, "layout-fre-bounds") == []
    (loc,) = _located(patch(data, 0x10, "I", fre_len + 1), "layout-fre-bounds")
    assert loc.offset == 0x10


@pytest.mark.parametrize("version", [1, 2, 3])
def test_auxhdr_length_bound(version: int) -> None:
    """sfh_auxhdr_len bytes must follow the header: all 4 present is the bound, one short is
    header-too-short at the length field."""
    with_aux = amd64(version, fdes=[], auxhdr=b"\0" * 4)
    assert len(with_aux) == HEADER + 4
    assert _located(with_aux, "header-too-short") == []
    assert [loc.offset for loc in _located(with_aux[:-1], "header-too-short")] == [7]


@pytest.mark.parametrize("count", range(8))
def test_flex_word_counts(count: int) -> None:
    """A FLEX FRE holds (control, offset) pairs: CFA, RA, FP, or CFA, padding, FP (5 words);
    0 words is an outermost row. Any other count is fre-word-count, on that FRE."""
    words = [(7 << 3) | 1, 16, 0 if count == 5 else 2, -8, 2, -16, 2][:count]
    fdes = [fde(), fde(start=0x200, info2=C.FDE_TYPE_FLEX,
                       fres=((make_fre(0, [(7 << 3) | 1, 8]), make_fre(1, words))))]
    got = [(loc.fde, loc.fre) for loc in _located(build(fdes), "fre-word-count")]
    assert got == ([] if count in (0, 2, 4, 5, 6) else [(1, 1)])


@pytest.mark.parametrize(("version", "word", "rule"), [
    (2, (31 << 1) | 1, None),  # the highest s390x register, encoded (v2: odd = register)
    (2, (32 << 1) | 1, "fre-register"),  # one past it
    (2, -1, "fre-register"),  # negative and odd: no register
    (3, (31 << 1) | 1, "fre-s390x-regnum-v3"),  # v3 took the odd encoding away
    (3, -48, None),  # an even offset: a stack slot in both versions
])
def test_s390x_register_words_per_version(version: int, word: int, rule: str | None) -> None:
    fres = (make_fre(0, [160]), make_fre(4, [160, -48, word]))
    fdes = [fde(), fde(start=0x200, fres=fres)]
    data = encode(build_section(version, C.ABI_S390X_BE, fdes))
    fired = rules_of(data) & {"fre-register", "fre-s390x-regnum-v3"}
    assert fired == (set() if rule is None else {rule})
    if rule is not None:
        (loc,) = _located(data, rule)
        assert (loc.fde, loc.fre) == (1, 1)
