"""rules/header.check_header's findings whole (rule, severity, message, offset), each at the
value that fires it and at the nearest one that does not: v1 against v2, flag bits per
version, ABI bytes (s390x only since v2), byte order against the ABI, the fixed RA offset each
ABI needs, a fixed FP offset, an auxiliary header (the mutation run's survivors: the tests
named only the rule)."""

from __future__ import annotations

import pytest

from sfcheck.format import constants as C
from sfcheck.format.model import Header
from sfcheck.result import Severity
from sfcheck.rules.header import check_header
from sfcheck.walk.context import SectionContext

OBSOLETE = ("header-version-obsolete", Severity.WARNING,
            "SFrame v1 (binutils 2.40); 2.46 readers reject it", 2)


def header(version: int = C.VERSION_3, flags: int = 0, abi: int = C.ABI_AMD64_LE,
           fixed_fp: int = 0, fixed_ra: int = -8, big_endian: bool = False,
           auxhdr: bytes = b"") -> Header:
    return Header(version, flags, abi, fixed_fp, fixed_ra, 1, 1, 0, 0, 0, big_endian, auxhdr)


def findings(h: Header) -> list[tuple]:
    ctx = SectionContext("f", ".sframe", 0, b"")
    check_header(ctx, h)
    return [(f.rule, f.severity, f.message, f.location.offset) for f in ctx.findings]


@pytest.mark.parametrize("version", [C.VERSION_2, C.VERSION_3])
def test_a_clean_header(version: int) -> None:
    assert findings(header(version)) == []


def test_v1_is_obsolete() -> None:
    assert findings(header(C.VERSION_1)) == [OBSOLETE]


@pytest.mark.parametrize(("version", "flags", "found"), [
    (C.VERSION_1, 0x3, []),
    (C.VERSION_1, 0x4, ["flags 0x4 have bits 0x4 undefined in v1 (defined: 0x3)"]),
    (C.VERSION_2, 0x7, []),
    (C.VERSION_2, 0xF, ["flags 0xf have bits 0x8 undefined in v2 (defined: 0x7)"]),
    (C.VERSION_3, 0x5, []),
    (C.VERSION_3, 0x7, ["flags 0x7 have bits 0x2 undefined in v3 (defined: 0x5)"]),
])
def test_flag_bits_each_version_defines(version: int, flags: int, found: list[str]) -> None:
    got = [f for f in findings(header(version, flags)) if f != OBSOLETE]
    assert got == [("header-flags-unknown", Severity.ERROR, m, 3) for m in found]


@pytest.mark.parametrize(("version", "abi", "found"), [
    (C.VERSION_3, 5, ["ABI 5 is not defined for v3"]),
    (C.VERSION_2, 0, ["ABI 0 is not defined for v2"]),
    (C.VERSION_1, C.ABI_S390X_BE, ["ABI 4 is not defined for v1"]),
    (C.VERSION_2, C.ABI_S390X_BE, []),
])
def test_abi_bytes(version: int, abi: int, found: list[str]) -> None:
    # s390x: big-endian, RA not fixed; an unknown ABI is not asked for its fixed RA
    got = [f for f in findings(header(version, abi=abi, fixed_ra=0, big_endian=True))
           if f != OBSOLETE]
    assert got == [("header-abi-unknown", Severity.ERROR, m, 4) for m in found]


@pytest.mark.parametrize(("abi", "big", "fixed_ra", "found"), [
    (C.ABI_AMD64_LE, True, -8,
     ["ABI amd64 is little-endian but the magic says big-endian"]),
    (C.ABI_AARCH64_BE, False, 0,
     ["ABI aarch64-be is big-endian but the magic says little-endian"]),
    (C.ABI_AARCH64_BE, True, 0, []),
    (C.ABI_AARCH64_LE, False, 0, []),
])
def test_byte_order_against_the_abi(abi: int, big: bool, fixed_ra: int,
                                    found: list[str]) -> None:
    assert findings(header(abi=abi, big_endian=big, fixed_ra=fixed_ra)) == [
        ("header-abi-endian", Severity.ERROR, m, 4) for m in found]


@pytest.mark.parametrize(("abi", "big", "fixed_ra", "found"), [
    (C.ABI_AMD64_LE, False, 0, ["sfh_cfa_fixed_ra_offset is 0, amd64 needs -8"]),
    (C.ABI_AMD64_LE, False, -16, ["sfh_cfa_fixed_ra_offset is -16, amd64 needs -8"]),
    (C.ABI_AARCH64_LE, False, -8, ["sfh_cfa_fixed_ra_offset is -8, aarch64-le needs 0"]),
    (C.ABI_S390X_BE, True, -8, ["sfh_cfa_fixed_ra_offset is -8, s390x needs 0"]),
    (7, False, -8, []),   # an unknown ABI: no fixed RA is known (header-abi-unknown says so)
])
def test_the_fixed_ra_each_abi_needs(abi: int, big: bool, fixed_ra: int,
                                     found: list[str]) -> None:
    got = [f for f in findings(header(abi=abi, big_endian=big, fixed_ra=fixed_ra))
           if f[0] != "header-abi-unknown"]
    assert got == [("header-fixed-ra", Severity.ERROR, m, 6) for m in found]


@pytest.mark.parametrize(("fixed_fp", "found"), [
    (0, []), (-16, ["sfh_cfa_fixed_fp_offset is -16"]), (1, ["sfh_cfa_fixed_fp_offset is 1"]),
])
def test_a_fixed_fp_offset(fixed_fp: int, found: list[str]) -> None:
    assert findings(header(fixed_fp=fixed_fp)) == [
        ("header-fixed-fp", Severity.WARNING, m, 5) for m in found]


@pytest.mark.parametrize(("auxhdr", "found"), [
    (b"", []), (b"\0", ["sfh_auxhdr_len is 1"]), (b"\0" * 4, ["sfh_auxhdr_len is 4"]),
])
def test_an_auxiliary_header(auxhdr: bytes, found: list[str]) -> None:
    assert findings(header(auxhdr=auxhdr)) == [
        ("header-auxhdr", Severity.WARNING, m, 7) for m in found]
