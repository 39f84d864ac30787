"""Each structural rule fires on a section built to break it, and only there."""

from __future__ import annotations

import struct
from dataclasses import replace

import pytest

from sfcheck.checker import Options, check_section_bytes
from sfcheck.format import FDE, build_section, encode, fde_info, make_fre
from sfcheck.format import constants as C
from sfcheck.result import Severity

from helpers import file_id, upstream_files


def amd64(version: int = 3, fdes=None, **kw) -> bytes:
    if fdes is None:
        fdes = [
            FDE(start=0x100, size=0x40, info=fde_info(C.FRE_TYPE_ADDR1),
                fres=(make_fre(0, [8]), make_fre(1, [16, -16]), make_fre(4, [16, -16], False))),
            FDE(start=0x200, size=0x20, info=fde_info(C.FRE_TYPE_ADDR1),
                fres=(make_fre(0, [8]),)),
        ]
    return encode(build_section(version, C.ABI_AMD64_LE, fdes, **kw))


def rules_of(data: bytes, **opts) -> set[str]:
    res = check_section_bytes(data, options=Options(**opts))
    return {f.rule for f in res.findings}


@pytest.mark.parametrize("version", [2, 3])
def test_valid_sections_are_clean(version: int) -> None:
    assert rules_of(amd64(version)) == set()


def test_v1_is_obsolete_only() -> None:
    assert rules_of(amd64(1, flags=C.F_FDE_SORTED)) == {"header-version-obsolete"}


def patch(data: bytes, offset: int, fmt: str, value: int) -> bytes:
    b = bytearray(data)
    struct.pack_into("<" + fmt, b, offset, value)
    return bytes(b)


HEADER_CASES = [
    ("header-bad-magic", lambda d: b"\x00\x00" + d[2:]),
    ("header-too-short", lambda d: d[:20]),
    ("header-version-unknown", lambda d: patch(d, 2, "B", 9)),
    ("header-flags-unknown", lambda d: patch(d, 3, "B", 0x1 | 0x2 | 0x4)),
    ("header-abi-unknown", lambda d: patch(d, 4, "B", 7)),
    ("header-abi-endian", lambda d: patch(d, 4, "B", C.ABI_AARCH64_BE)),
    ("header-fixed-ra", lambda d: patch(d, 6, "b", 0)),
    ("header-fixed-fp", lambda d: patch(d, 5, "b", -16)),
    ("layout-fdeoff-after-freoff", lambda d: patch(d, 0x14, "I", 0x1000)),
    ("layout-fde-array-bounds", lambda d: patch(d, 8, "I", 0xFFFFFFFF)),
    ("layout-fre-bounds", lambda d: patch(d, 0x10, "I", 0xFFFF)),
    ("layout-num-fres", lambda d: patch(d, 0xC, "I", 5)),
    ("layout-trailing-bytes", lambda d: d + b"\0\0\x01"),
]


def test_gap_bytes() -> None:
    gap = amd64(fdeoff=8)
    assert rules_of(gap) == {"layout-fdeoff-nonzero"}  # zero padding: only the fdeoff note
    dirty = bytearray(gap)
    dirty[28 + 3] = 0x5A  # inside the 8-byte gap after the header
    assert rules_of(bytes(dirty)) == {"layout-fdeoff-nonzero", "layout-gap-bytes"}


def test_auxhdr_fires_alone() -> None:
    assert rules_of(amd64(auxhdr=b"\0\0\0\0")) == {"header-auxhdr"}


def test_no_fdes_is_info_only() -> None:
    res = check_section_bytes(amd64(fdes=[]))
    assert {(f.rule, f.severity) for f in res.findings} == {("layout-no-fdes", Severity.INFO)}


def test_s390x_odd_offset_in_v3() -> None:
    fdes = [FDE(start=0x100, size=0x40, info=fde_info(C.FRE_TYPE_ADDR1),
                fres=(make_fre(0, [0]), make_fre(4, [20, -49])))]
    odd = encode(build_section(3, C.ABI_S390X_BE, fdes))
    assert "fre-s390x-regnum-v3" in rules_of(odd)
    even = [replace(fdes[0], fres=(make_fre(0, [0]), make_fre(4, [20, -48])))]
    assert "fre-s390x-regnum-v3" not in rules_of(encode(build_section(3, C.ABI_S390X_BE, even)))
    # v2 gives an odd value a meaning (a register number): no finding there
    assert "fre-s390x-regnum-v3" not in rules_of(encode(build_section(2, C.ABI_S390X_BE, fdes)))


@pytest.mark.parametrize(("rule", "mutate"), HEADER_CASES, ids=[c[0] for c in HEADER_CASES])
def test_header_and_layout_rules_fire(rule: str, mutate) -> None:
    fired = rules_of(mutate(amd64()))
    assert rule in fired
    # and nothing at error level that is unrelated to the damage
    # (a fixed FP makes the FREs' own FP words leftovers: fre-word-count)
    assert fired <= {rule, "layout-fre-len", "layout-fde-fres-bounds", "fde-overlap",
                     "header-fixed-ra", "layout-fde-array-overlap", "layout-num-fres",
                     "layout-fdeoff-nonzero", "layout-fde-array-bounds", "layout-gap-bytes"} | (
        {"fre-word-count"} if rule == "header-fixed-fp" else set())


def build(fdes, version=3, **kw) -> bytes:
    return amd64(version, fdes, **kw)


def fde(**kw) -> FDE:
    base = dict(start=0x100, size=0x40, info=fde_info(C.FRE_TYPE_ADDR1),
                fres=(make_fre(0, [8]), make_fre(1, [16])))
    base.update(kw)
    return FDE(**base)


FDE_CASES = [
    ("fde-pcmask-rep-size", [fde(info=fde_info(0, pcmask=True), rep_size=0)]),
    ("fde-rep-size-unused", [fde(rep_size=16)]),
    ("fde-reserved-bits", [fde(info=fde_info(0) | 0x40)]),
    ("fde-type-unknown", [fde(info2=5)]),
    ("fde-pauth-abi", [fde(info=fde_info(0, pauth_key=1))]),
    ("fde-unsorted", [fde(start=0x300), fde(start=0x100)]),
    ("fde-overlap", [fde(start=0x100, size=0x80), fde(start=0x140)]),
    ("fde-fre-type-size", [fde(info=fde_info(C.FRE_TYPE_ADDR2))]),
    ("fde-fre-type-small", [fde(size=0x1000)]),
    ("fre-word-count", [fde(fres=(make_fre(0, [8, 1, 2]),))]),
    ("fre-datawords-size", [fde(info2=C.FDE_TYPE_FLEX,
                               fres=(make_fre(0, [1, 2, 3, 4, 5, 6, 7], size_code=2),))]),
    ("fre-start-order", [fde(fres=(make_fre(0, [8]), make_fre(4, [16]), make_fre(4, [8])))]),
    ("fre-first-start", [fde(fres=(make_fre(2, [8]),))]),
    ("fre-start-beyond-size", [fde(size=4, fres=(make_fre(0, [8]), make_fre(9, [16])))]),
    ("defect-fre-start-at-size", [fde(size=4, fres=(make_fre(0, [8]), make_fre(4, [16])))]),
    ("fre-start-beyond-rep", [fde(info=fde_info(0, pcmask=True), rep_size=16,
                                  fres=(make_fre(0, [8]), make_fre(20, [16])))]),
    ("fre-mangled-ra-abi", [fde(fres=(make_fre(0, [8], mangled_ra=True),))]),
    ("fre-cfa-offset", [fde(fres=(make_fre(0, [12]),))]),
    ("fre-flex-cfa-reg", [fde(info2=C.FDE_TYPE_FLEX, fres=(make_fre(0, [0, 8]),))]),
    ("fre-flex-padding", [fde(info2=C.FDE_TYPE_FLEX,
                              fres=(make_fre(0, [(7 << 3) | 1, 8, 0, 1]),))]),
    ("fre-register", [fde(info2=C.FDE_TYPE_FLEX, fres=(make_fre(0, [(40 << 3) | 1, 8]),))]),
]


# Rules that cannot fire without another: 7 words always break the count too.
ALSO = {"fre-datawords-size": {"fre-word-count"}}


@pytest.mark.parametrize(("rule", "fdes"), FDE_CASES, ids=[c[0] for c in FDE_CASES])
def test_fde_and_fre_rules_fire_alone(rule: str, fdes) -> None:
    assert rules_of(build(fdes)) == {rule} | ALSO.get(rule, set())


def test_size_code_3_stops_the_fde_only() -> None:
    data = bytearray(build([fde(), fde(start=0x200)]))
    # FRE sub-section of v3 starts after two 16-byte index entries: attr (5) + start + info
    info_at = 28 + 2 * 16 + 5 + 1
    data[info_at] |= 0x60
    fired = rules_of(bytes(data))
    assert "fre-size-code" in fired
    assert all(not r.startswith("header") for r in fired)


def test_fre_overlap_between_fdes() -> None:
    sec = build_section(3, C.ABI_AMD64_LE, [fde(), fde(start=0x200)])
    second = replace(sec.fdes[1], fre_off=sec.fdes[0].fre_off)
    data = encode(replace(sec, fdes=(sec.fdes[0], second)))
    assert "layout-fre-overlap" in rules_of(data)


def test_disable_by_group_and_id() -> None:
    data = build([fde(rep_size=16), fde(start=0x300, fres=(make_fre(2, [8]),))])
    assert rules_of(data) == {"fde-rep-size-unused", "fre-first-start"}
    assert rules_of(data, disable={"fde"}) == {"fre-first-start"}
    assert rules_of(data, disable={"fde", "fre-first-start"}) == set()
    assert rules_of(data, disable={"fre"}, enable={"fre-first-start"}) == {
        "fde-rep-size-unused", "fre-first-start"}


def test_count_fields_cannot_drive_work() -> None:
    data = patch(amd64(), 8, "I", 0xFFFFFFFF)[:40]
    res = check_section_bytes(data)
    assert len(res.findings) < 10
    assert any(f.rule == "layout-fde-array-bounds" for f in res.findings)


def test_finding_cap_per_rule() -> None:
    fdes = [fde(start=0x1000 * i, fres=(make_fre(3, [8]),)) for i in range(80)]
    res = check_section_bytes(build(fdes))
    first = [f for f in res.findings if f.rule == "fre-first-start"]
    assert len(first) == 51 and "30 more findings" in first[-1].message


@pytest.mark.parametrize("case", upstream_files("simple-frame-rs", "*.json"),
                         ids=file_id)
def test_upstream_sections_have_no_errors(case) -> None:
    import json
    d = json.loads(case.read_text())
    data = bytes(d["content"])
    if not data:
        pytest.skip("empty section")
    res = check_section_bytes(data, vma=d["section_base"])
    assert [f.text() for f in res.findings if f.severity == Severity.ERROR] == []


def test_aliased_fre_blocks_bounded() -> None:
    """60 FDEs sharing one 490-row block: reported, and FREs walked stay below the bytes."""
    from sfcheck.format import decode as _decode  # noqa: F401  (module import for patching)
    from sfcheck.format.decode import Decoder

    n_fdes, n_fres = 60, 490
    fres = b"\x00\x03\x08" * n_fres
    fdes = b"".join(struct.pack("<iIIIBBH", 0x100 * i, 256, 0, n_fres, 0, 0, 0)
                    for i in range(n_fdes))
    hdr = struct.pack("<HBBBbbBIIIII", 0xDEE2, 2, 1, 3, 0, -8, 0, n_fdes, n_fres * n_fdes,
                      len(fres), 0, len(fdes))
    data = hdr + fdes + fres
    walked = 0
    orig = Decoder.iter_fres

    def counting(self, *a):
        nonlocal walked
        for fre in orig(self, *a):
            walked += 1
            yield fre

    Decoder.iter_fres = counting
    try:
        res = check_section_bytes(data)
    finally:
        Decoder.iter_fres = orig
    assert "layout-fre-overlap" in {f.rule for f in res.findings}
    assert walked <= len(data)
