"""Unit tests of the format layer on hand-packed bytes (struct.pack, no encoder).

Expected values come from the bytes packed here and from
/work/shared/docs/sframe-format.md (§1 layout, §1.9 and §5 upstream blobs).
"""

from __future__ import annotations

import struct
from pathlib import Path

import pytest

from sfcheck.dump.objdump import dump_text
from sfcheck.errors import DecodeError
from sfcheck.format import FDE, FRE, Section, decode
from sfcheck.format import datawords as W

UPSTREAM = Path(__file__).resolve().parents[1].parent / "shared" / "testdata" / "upstream"
BINUTILS = UPSTREAM / "binutils"


def hdr(o: str, version: int, flags: int, abi: int, fixed_fp: int, fixed_ra: int,
        num_fdes: int, num_fres: int, fre_len: int, fdeoff: int, freoff: int,
        aux: bytes = b"") -> bytes:
    return struct.pack(o + "HBBBbbBIIIII", 0xDEE2, version, flags, abi, fixed_fp, fixed_ra,
                       len(aux), num_fdes, num_fres, fre_len, fdeoff, freoff) + aux


def fre_tuples(fde: FDE) -> list[tuple[int, int, tuple[int, ...], int]]:
    return [(f.start, f.info, f.words, f.offset) for f in fde.fres]


# ---------------------------------------------------------------------------
# v1, AMD64, little-endian


def v1_amd64() -> bytes:
    o = "<"
    fres0 = bytes([0x00, 0x03, 0x08]) + bytes([0x04, 0x05, 0x10, 0xF0])  # 7 bytes
    fres1 = struct.pack(o + "HBhh", 0x0010, 0x24, 16, -16)  # ADDR2, FP base, 2 x i16
    fdes = (struct.pack(o + "iIIIB", 0x100, 0x40, 0, 2, 0x00)
            + struct.pack(o + "iIIIB", 0x200, 0x1000, 7, 1, 0x01))
    assert len(fdes) == 34 and len(fres1) == 7
    return hdr(o, 1, 0x1, 3, 0, -8, 2, 3, 14, 0, 34) + fdes + fres0 + fres1


def test_v1_amd64_section() -> None:
    data = v1_amd64()
    assert len(data) == 28 + 34 + 14
    sec = decode(data)
    h = sec.header
    assert (h.version, h.flags, h.abi, h.fixed_fp, h.fixed_ra, h.auxhdr) == (1, 1, 3, 0, -8, b"")
    assert (h.num_fdes, h.num_fres, h.fre_len, h.fdeoff, h.freoff) == (2, 3, 14, 0, 34)
    assert h.big_endian is False
    assert h.sorted and not h.pcrel
    assert h.size == 28 and h.fde_size == 17
    assert sec.trailing == b""
    f0, f1 = sec.fdes
    assert (f0.start, f0.size, f0.fre_off, f0.num_fres, f0.info) == (0x100, 0x40, 0, 2, 0)
    assert (f0.rep_size, f0.info2, f0.padding, f0.offset) == (0, 0, 0, 28)
    assert (f0.fre_type, f0.pcmask) == (0, False)
    assert fre_tuples(f0) == [(0, 0x03, (8,), 62), (4, 0x05, (16, -16), 65)]
    assert (f1.start, f1.size, f1.fre_off, f1.num_fres, f1.info, f1.offset) == (
        0x200, 0x1000, 7, 1, 0x01, 45)
    assert f1.fre_type == 1
    assert fre_tuples(f1) == [(0x10, 0x24, (16, -16), 69)]
    fre = f1.fres[0]
    assert (fre.base_sp, fre.count, fre.size_code, fre.word_size, fre.mangled_ra) == (
        False, 2, 1, 2, False)
    assert f0.fres[0].base_sp is True
    # v1 starts are section-relative.
    assert sec.func_start(0, 0x4000) == 0x4100
    assert sec.func_start(1, 0x4000) == 0x4200
    # AMD64: CFA = w0, FP = w1 (fixed RA -8 moves FP to index 1), RA fixed at -8.
    assert W.cfa_offset(h, f0.fres[1], False) == 16
    assert W.fp_offset(h, f0.fres[1], False) == -16
    assert W.ra_offset(h, f0.fres[1], False) == -8


# ---------------------------------------------------------------------------
# v2, aarch64, big-endian


def v2_aarch64_be() -> bytes:
    o = ">"
    # FDE0: ADDR4, PCINC, pauth key B. FRE: start 0, mangled RA, 3 x i16, SP base.
    fres0 = struct.pack(o + "IBhhh", 0, 0xA7, 32, -24, -32)  # 11 bytes
    # FDE1: ADDR1, PCMASK, rep_size 16. FRE: start 8, 1 x i32, SP base.
    fres1 = struct.pack(o + "BBi", 8, 0x43, 0x12345)  # 6 bytes
    fdes = (struct.pack(o + "iIIIBBH", -0x1000, 0x80, 0, 1, 0x22, 0, 0)
            + struct.pack(o + "iIIIBBH", 0x300, 0x40, 11, 1, 0x10, 16, 0))
    return hdr(o, 2, 0x5, 1, 0, 0, 2, 2, 17, 0, 40) + fdes + fres0 + fres1 + b"\0\0"


def test_v2_aarch64_be_section() -> None:
    data = v2_aarch64_be()
    assert data[:2] == b"\xde\xe2"
    sec = decode(data)
    h = sec.header
    assert h.big_endian is True
    assert (h.version, h.flags, h.abi, h.fixed_fp, h.fixed_ra) == (2, 5, 1, 0, 0)
    assert (h.num_fdes, h.num_fres, h.fre_len, h.fdeoff, h.freoff) == (2, 2, 17, 0, 40)
    assert h.pcrel and h.sorted
    assert sec.trailing == b"\0\0"
    f0, f1 = sec.fdes
    assert (f0.start, f0.size, f0.fre_off, f0.num_fres, f0.info, f0.rep_size, f0.padding) == (
        -0x1000, 0x80, 0, 1, 0x22, 0, 0)
    assert (f0.fre_type, f0.pcmask, f0.pauth_key, f0.offset) == (2, False, 1, 28)
    assert fre_tuples(f0) == [(0, 0xA7, (32, -24, -32), 68)]
    fre = f0.fres[0]
    assert fre.mangled_ra and fre.base_sp and fre.count == 3 and fre.word_size == 2
    assert (f1.start, f1.size, f1.fre_off, f1.num_fres, f1.info, f1.rep_size) == (
        0x300, 0x40, 11, 1, 0x10, 16)
    assert (f1.fre_type, f1.pcmask, f1.pauth_key, f1.offset) == (0, True, 0, 48)
    assert fre_tuples(f1) == [(8, 0x43, (0x12345,), 79)]
    # PCREL: vma + field position + stored value.
    assert sec.func_start(0, 0x10000) == 0x10000 + 28 - 0x1000
    assert sec.func_start(1, 0x10000) == 0x10000 + 48 + 0x300
    # aarch64 DEFAULT: CFA w0, RA w1, FP w2 (no fixed RA).
    assert W.cfa_offset(h, fre, False) == 32
    assert W.ra_offset(h, fre, False) == -24
    assert W.fp_offset(h, fre, False) == -32


# ---------------------------------------------------------------------------
# v3, AMD64: a FLEX FDE with the signal bit, and a PCMASK FDE


def v3_amd64() -> bytes:
    o = "<"
    # FDE0 attribute: 1 FRE, info = signal | ADDR2, info2 = FLEX, rep 0.
    attr0 = struct.pack(o + "HBBB", 1, 0x81, 0x01, 0)
    # Flex FRE: CFA = rsp(7)+16; RA padding word 0; FP = *(rbp(6) - 16).
    fre0 = struct.pack(o + "HB", 0, 0x0B) + bytes([0x39, 0x10, 0x00, 0x33, 0xF0])
    # FDE1 attribute: 2 FREs, PCMASK ADDR1, DEFAULT, rep_size 16.
    attr1 = struct.pack(o + "HBBB", 2, 0x10, 0x00, 16)
    fres1 = bytes([0x00, 0x03, 0x08, 0x0B, 0x03, 0x10])
    sub = attr0 + fre0 + attr1 + fres1
    assert len(sub) == 24
    fdes = (struct.pack(o + "qII", -0x100000000, 0x30, 0)
            + struct.pack(o + "qII", 0x7FFFFFFF00, 0x40, 13))
    return hdr(o, 3, 0x5, 3, 0, -8, 2, 3, 24, 0, 32) + fdes + sub


def test_v3_amd64_flex_and_pcmask() -> None:
    data = v3_amd64()
    sec = decode(data)
    h = sec.header
    assert (h.version, h.flags, h.abi, h.fixed_fp, h.fixed_ra, h.big_endian) == (
        3, 5, 3, 0, -8, False)
    assert (h.num_fdes, h.num_fres, h.fre_len, h.fdeoff, h.freoff) == (2, 3, 24, 0, 32)
    assert h.fde_size == 16 and h.fres_start == 60 and h.fres_end == 84
    f0, f1 = sec.fdes
    assert (f0.start, f0.size, f0.fre_off, f0.num_fres) == (-0x100000000, 0x30, 0, 1)
    assert (f0.info, f0.info2, f0.rep_size, f0.offset) == (0x81, 0x01, 0, 28)
    assert f0.signal and f0.flex(3) and not f0.pcmask and f0.fre_type == 1
    assert f0.fde_type == 1
    assert fre_tuples(f0) == [(0, 0x0B, (0x39, 0x10, 0, 0x33, -16), 65)]
    assert (f1.start, f1.size, f1.fre_off, f1.num_fres) == (0x7FFFFFFF00, 0x40, 13, 2)
    assert (f1.info, f1.info2, f1.rep_size, f1.offset) == (0x10, 0, 16, 44)
    assert f1.pcmask and not f1.signal and not f1.flex(3) and f1.fre_type == 0
    assert fre_tuples(f1) == [(0, 0x03, (8,), 78), (0x0B, 0x03, (16,), 81)]
    assert sec.func_start(0, 0x200000000) == 0x200000000 + 28 - 0x100000000
    assert sec.func_start(1, 0) == 44 + 0x7FFFFFFF00
    # Flex words (§1.7): w0/w1 CFA, w2 == 0 is RA padding, FP is w3/w4.
    fre = f0.fres[0]
    assert W.cfa_offset(h, fre, True) == 16
    assert W.fp_offset(h, fre, True) == -16
    assert W.flex_ra_padded(fre)
    cfa, _ra, fp = W.flex_controls(fre)
    assert (cfa.reg_p, cfa.deref, cfa.reg) == (True, False, 7)
    assert (fp.reg_p, fp.deref, fp.reg) == (True, True, 6)


# ---------------------------------------------------------------------------
# v3, s390x, big-endian


def v3_s390x() -> bytes:
    o = ">"
    attr = struct.pack(o + "HBBB", 2, 0x00, 0x00, 0)
    fres = bytes([0x00, 0x03, 0x00]) + struct.pack(o + "BBbbb", 6, 0x07, 1, -48, -72)
    fdes = struct.pack(o + "qII", -0x20, 0x10, 0)
    return hdr(o, 3, 0x5, 4, 0, 0, 1, 2, 13, 0, 16) + fdes + attr + fres + b"\0" * 3


def test_v3_s390x_section() -> None:
    data = v3_s390x()
    sec = decode(data)
    h = sec.header
    assert (h.version, h.flags, h.abi, h.fixed_fp, h.fixed_ra, h.big_endian) == (
        3, 5, 4, 0, 0, True)
    assert (h.num_fdes, h.num_fres, h.fre_len, h.fdeoff, h.freoff) == (1, 2, 13, 0, 16)
    assert sec.trailing == b"\0\0\0"
    (f0,) = sec.fdes
    assert (f0.start, f0.size, f0.fre_off, f0.num_fres, f0.info, f0.info2, f0.rep_size) == (
        -0x20, 0x10, 0, 2, 0, 0, 0)
    assert fre_tuples(f0) == [(0, 0x03, (0,), 49), (6, 0x07, (1, -48, -72), 52)]
    assert sec.func_start(0, 0x1000) == 0x1000 + 28 - 0x20
    # s390x CFA is stored as (off - 160) / 8.
    assert W.cfa_offset(h, f0.fres[0], False) == 160
    assert W.cfa_offset(h, f0.fres[1], False) == 168
    assert W.ra_offset(h, f0.fres[1], False) == -48
    assert W.fp_offset(h, f0.fres[1], False) == -72


# ---------------------------------------------------------------------------
# Located DecodeErrors


def decode_error(data: bytes) -> DecodeError:
    with pytest.raises(DecodeError) as info:
        decode(data)
    return info.value


def test_bad_magic() -> None:
    err = decode_error(b"\x12\x34" + bytes(26))
    assert "bad magic" in err.message and "1234" in err.message
    assert (err.offset, err.structure, err.field) == (0, "preamble", "sfp_magic")


@pytest.mark.parametrize("data", [b"", b"\xe2"])
def test_too_short_for_magic(data: bytes) -> None:
    err = decode_error(data)
    assert (err.offset, err.field) == (0, "sfp_magic")


@pytest.mark.parametrize("version", [0, 4, 0xFF])
def test_unknown_version(version: int) -> None:
    err = decode_error(hdr("<", version, 0, 3, 0, -8, 0, 0, 0, 0, 0))
    assert err.message == f"unknown SFrame version {version}"
    assert (err.offset, err.structure, err.field) == (2, "preamble", "sfp_version")


@pytest.mark.parametrize("length", [2, 3, 8, 20, 27])
def test_header_truncated(length: int) -> None:
    data = hdr("<", 2, 0, 3, 0, -8, 0, 0, 0, 0, 0)[:length]
    err = decode_error(data)
    assert err.offset == 0
    assert err.structure == "header"
    assert "28 bytes needed" in err.message


def test_auxhdr_truncated() -> None:
    data = hdr("<", 2, 0, 3, 0, -8, 0, 0, 0, 0, 0, aux=b"\xaa" * 10)[:33]
    err = decode_error(data)
    assert err.offset == 28
    assert err.structure == "auxiliary header"


def test_fde_array_past_end() -> None:
    o = "<"
    fde = struct.pack(o + "iIIIBBH", 0, 16, 0, 0, 0, 0, 0)
    data = hdr(o, 2, 0, 3, 0, -8, 2, 0, 0, 0, 40) + fde  # 2 FDEs claimed, 1 present
    err = decode_error(data)
    assert (err.offset, err.structure, err.field) == (8, "header", "sfh_num_fdes")
    assert "2 FDEs of 20 bytes" in err.message


def test_fre_subsection_past_end() -> None:
    data = hdr("<", 2, 0, 3, 0, -8, 0, 0, 4, 0, 0) + b"\0\0"
    err = decode_error(data)
    assert (err.offset, err.structure, err.field) == (0x10, "header", "sfh_fre_len")


def test_v3_attribute_outside_fre_len() -> None:
    o = "<"
    attr = struct.pack(o + "HBBB", 0, 0, 0, 0)
    fde = struct.pack(o + "qII", 0, 16, 4)  # 4 + 5 > fre_len 8
    data = hdr(o, 3, 0x5, 3, 0, -8, 1, 0, 8, 0, 16) + fde + b"\0" * 3 + attr + bytes(8)
    err = decode_error(data)
    assert (err.offset, err.structure, err.field) == (28 + 12, "FDE[0]",
                                                       "sfdi_func_start_fre_off")
    assert "attribute record" in err.message


def test_v2_first_fre_outside_fre_len() -> None:
    o = "<"
    fde = struct.pack(o + "iIIIBBH", 0, 16, 9, 0, 0, 0, 0)
    data = hdr(o, 2, 0, 3, 0, -8, 1, 0, 8, 0, 20) + fde + bytes(8)
    err = decode_error(data)
    assert (err.offset, err.structure, err.field) == (28 + 8, "FDE[0]",
                                                       "sfde_func_start_fre_off")


def test_fre_size_code_3() -> None:
    o = "<"
    fres = bytes([0x00, 0x03, 0x08, 0x04, 0x63, 0x08])  # FRE 1: size code 3
    fde = struct.pack(o + "iIIIB", 0, 16, 0, 2, 0)
    data = hdr(o, 1, 0, 3, 0, -8, 1, 2, 6, 0, 17) + fde + fres
    err = decode_error(data)
    assert (err.offset, err.structure, err.field) == (28 + 17 + 4, "FDE[0].FRE[1]", "fre_info")
    assert "size code 3" in err.message


@pytest.mark.parametrize("version", [1, 2, 3])
def test_fre_type_3(version: int) -> None:
    o = "<"
    fres = bytes([0x00, 0x03, 0x08])
    if version == 1:
        fde = struct.pack(o + "iIIIB", 0, 16, 0, 1, 0x03)
    elif version == 2:
        fde = struct.pack(o + "iIIIBBH", 0, 16, 0, 1, 0x03, 0, 0)
    else:
        fde = struct.pack(o + "qII", 0, 16, 0)
        fres = struct.pack(o + "HBBB", 1, 0x03, 0, 0) + fres
    flags = 0x5 if version == 3 else 0
    data = hdr(o, version, flags, 3, 0, -8, 1, 1, len(fres), 0, len(fde)) + fde + fres
    err = decode_error(data)
    assert "FRE type 3" in err.message
    assert (err.offset, err.structure, err.field) == (28, "FDE[0]", "info")


def test_fres_run_past_fre_len_start_address() -> None:
    """FRE 1 would start at the last byte of fre_len; bytes exist after it (trailing)."""
    o = "<"
    fres = bytes([0x00, 0x09, 1, 2, 3, 4, 0x10])  # FRE0: 4 x i8 (6 bytes), then 1 byte
    fde = struct.pack(o + "iIIIBBH", 0, 64, 0, 2, 0, 0, 0)
    data = hdr(o, 2, 0, 3, 0, -8, 1, 2, 7, 0, 20) + fde + fres + bytes(16)
    err = decode_error(data)
    assert (err.offset, err.structure, err.field) == (48 + 6, "FDE[0].FRE[1]",
                                                       "fre_start_addr")


def test_fres_run_past_fre_len_data_words() -> None:
    o = ">"
    fres = bytes([0x00, 0x03, 0x08, 0x04, 0x05, 0x10])  # FRE1: 2 words, only 1 inside
    attr = struct.pack(o + "HBBB", 2, 0, 0, 0)
    fde = struct.pack(o + "qII", 0, 64, 0)
    sub = attr + fres
    data = hdr(o, 3, 0x5, 4, 0, 0, 1, 2, len(sub), 0, 16) + fde + sub + bytes(16)
    err = decode_error(data)
    assert (err.offset, err.structure, err.field) == (44 + 5 + 3 + 2, "FDE[0].FRE[1]",
                                                       "data words")


def test_num_fres_beyond_fre_len() -> None:
    o = "<"
    fde = struct.pack(o + "iIIIB", 0, 64, 0, 5, 0)  # 5 FREs need >= 10 bytes; fre_len 6
    data = hdr(o, 1, 0, 3, 0, -8, 1, 5, 6, 0, 17) + fde + bytes(6) + bytes(32)
    err = decode_error(data)
    assert (err.offset, err.structure, err.field) == (45, "FDE[0]", "num_fres")


# ---------------------------------------------------------------------------
# Upstream blobs (sframe-format.md §1.9 and §5)


def blob(name: str) -> bytes:
    path = BINUTILS / name
    if not path.is_file():
        pytest.skip(f"upstream test blob {path} is not present")
    return path.read_bytes()


AMD64_FRES = [(0, 0x03, (8,)), (1, 0x05, (16, -16)), (4, 0x04, (16, -16))]


def plain_fres(fde: FDE) -> list[tuple[int, int, tuple[int, ...]]]:
    return [(f.start, f.info, f.words) for f in fde.fres]


def test_upstream_data2() -> None:
    data = blob("DATA2")
    assert len(data) == 100
    sec = decode(data)
    h = sec.header
    assert (h.version, h.flags, h.abi, h.fixed_fp, h.fixed_ra, h.big_endian) == (
        3, 0x5, 3, 0, -8, False)
    assert (h.num_fdes, h.num_fres, h.fre_len, h.fdeoff, h.freoff) == (2, 8, 40, 0, 32)
    f0, f1 = sec.fdes
    assert (f0.start, f0.size, f0.fre_off, f0.offset) == (-4062, 27, 0, 28)
    assert (f1.start, f1.size, f1.fre_off, f1.offset) == (-4051, 16, 20, 44)
    for f in (f0, f1):
        assert (f.num_fres, f.info, f.info2, f.rep_size) == (4, 0, 0, 0)
    assert plain_fres(f0) == [*AMD64_FRES, (0x1A, 0x05, (8, -16))]
    assert plain_fres(f1) == [*AMD64_FRES, (0x0F, 0x05, (8, -16))]
    assert f0.fres[0].offset == 60 + 5
    assert sec.func_start(0, 0x1000) == 0x3E
    assert sec.func_start(1, 0x1000) == 0x1000 + 44 - 4051
    assert sec.trailing == b""
    lines = list(dump_text(data, section_vma=0x1000))
    assert any("func idx [0]: pc = 0x3e, size = 27 bytes" in line for line in lines)


def test_upstream_data_v2() -> None:
    data = blob("DATA-V2")
    assert len(data) == 98
    sec = decode(data)
    h = sec.header
    assert (h.version, h.flags, h.abi, h.fixed_ra, h.big_endian) == (2, 0x5, 3, -8, False)
    assert (h.num_fdes, h.num_fres, h.fre_len, h.fdeoff, h.freoff) == (2, 8, 30, 0, 40)
    f0, f1 = sec.fdes
    assert (f0.start, f0.size, f0.fre_off, f0.num_fres) == (-4062, 27, 0, 4)
    assert (f1.start, f1.size, f1.fre_off, f1.num_fres) == (-4055, 16, 15, 4)
    assert plain_fres(f0) == [*AMD64_FRES, (0x1A, 0x05, (8, -16))]
    assert plain_fres(f1) == [*AMD64_FRES, (0x0F, 0x05, (8, -16))]
    # Same program as DATA2 (v3): PCREL starts land on the same functions.
    assert sec.func_start(0, 0x1000) == 0x3E
    assert sec.func_start(1, 0x1000) == 0x1000 + 48 - 4055 == 0x1000 + 44 - 4051


def test_upstream_data1() -> None:
    data = blob("DATA1")
    assert len(data) == 63
    sec = decode(data)
    h = sec.header
    assert (h.version, h.flags, h.abi, h.fixed_ra, h.big_endian) == (2, 0x1, 3, -8, False)
    assert not h.pcrel
    assert (h.num_fdes, h.num_fres, h.fre_len, h.fdeoff, h.freoff) == (1, 4, 15, 0, 20)
    (f0,) = sec.fdes
    assert (f0.start, f0.size, f0.fre_off, f0.num_fres, f0.info) == (-3994, 27, 0, 4, 0)
    assert plain_fres(f0) == [*AMD64_FRES, (0x1A, 0x05, (8, -16))]
    assert sec.func_start(0, 0x1000) == 0x1000 - 3994


def test_upstream_data_be() -> None:
    data = blob("DATA-BE")
    assert len(data) == 67
    assert data[:2] == b"\xde\xe2"
    sec = decode(data)
    h = sec.header
    assert (h.version, h.flags, h.abi, h.fixed_fp, h.fixed_ra, h.big_endian) == (
        2, 0, 1, 0, 0, True)
    assert (h.num_fdes, h.num_fres, h.fre_len, h.fdeoff, h.freoff) == (1, 5, 19, 0, 20)
    (f0,) = sec.fdes
    assert (f0.start, f0.size, f0.fre_off, f0.num_fres, f0.info, f0.rep_size) == (
        0, 68, 0, 5, 0, 0)
    three = (32, -24, -32)
    assert plain_fres(f0) == [(0, 0x03, (0,)), (4, 0x07, three), (44, 0x03, (0,)),
                              (48, 0x07, three), (64, 0x03, (0,))]
    h3 = f0.fres[1]
    assert W.cfa_offset(h, h3, False) == 32
    assert W.ra_offset(h, h3, False) == -24
    assert W.fp_offset(h, h3, False) == -32


def test_section_equality_ignores_offsets_only() -> None:
    sec = decode(v1_amd64())
    rebuilt = Section(sec.header, tuple(
        FDE(f.start, f.size, f.info, tuple(FRE(r.start, r.info, r.words) for r in f.fres),
            f.rep_size, f.info2, f.padding, f.fre_off, f.num_fres) for f in sec.fdes))
    assert rebuilt == sec
    changed = Section(sec.header, (sec.fdes[0],), sec.trailing)
    assert changed != sec
