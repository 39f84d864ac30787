"""The writing side of sfcheck/format at its edges: the info-byte helpers' exact bits, the
model's defaults, build_section's flags, byte order and kept fields, and the encoder's
refusals (which field, which message) with its struct cache empty, so that the shape check
itself runs rather than an answer cached by an earlier test. The bit layouts are the
binutils SFrame specification's ("SFrame FDE Info Word", "SFrame FRE Info Word")."""

from __future__ import annotations

import importlib
import struct

import pytest

from sfcheck.errors import EncodeError
from sfcheck.format import constants as C
from sfcheck.format.decode import decode
from sfcheck.format.encode import encode, encode_fre
from sfcheck.format.layout import build_section
from sfcheck.format.model import (
    FDE,
    FRE,
    Header,
    Section,
    fde_info,
    fre_info,
    make_fre,
    smallest_size_code,
)

# the package exports encode() under the module's name
encode_mod = importlib.import_module("sfcheck.format.encode")
T1, T2, T4 = C.FRE_TYPE_ADDR1, C.FRE_TYPE_ADDR2, C.FRE_TYPE_ADDR4


@pytest.mark.parametrize(("args", "want"), [
    ((T2,), 0x01),
    ((T4, True), 0x12),
    ((T1, False, 1), 0x20),
    ((T1, False, 2), 0x00),  # only bit 0 of the key is stored
    ((T1, False, 3), 0x20),
    ((T1, False, 0, True), 0x80),
    ((T4, True, 1, True), 0xB2),
    ((0x1F,), 0x0F),  # the FRE type keeps its 4 bits
])
def test_fde_info_bits(args: tuple, want: int) -> None:
    assert fde_info(*args) == want
    fde = FDE(0, 1, want)
    assert (fde.fre_type, fde.pcmask, fde.pauth_key, fde.signal) == (
        want & 0xF, bool(want & 0x10), (want >> 5) & 1, bool(want & 0x80))


@pytest.mark.parametrize(("args", "want"), [
    ((True, 1, 0), 0x03), ((False, 2, 1), 0x24), ((True, 15, 2), 0x5F),
    ((False, 0, 0, True), 0x80), ((True, 3, 1, True), 0xA7)])
def test_fre_info_bits(args: tuple, want: int) -> None:
    assert fre_info(*args) == want


def test_smallest_size_code_at_each_width() -> None:
    assert smallest_size_code((127, -128)) == 0
    assert smallest_size_code((128,)) == 1
    assert smallest_size_code((-32769,)) == 2
    # wider than 4 bytes: the widest code, never the invalid 3 (the encoder then refuses)
    assert smallest_size_code((1 << 31,)) == 2
    assert smallest_size_code((-(1 << 40),)) == 2
    assert make_fre(0, (1 << 40,)).size_code == 2


def test_fde_defaults() -> None:
    fde = FDE(0x10, 0x20, fde_info(T1))
    assert (fde.fres, fde.rep_size, fde.info2, fde.padding, fde.fre_off, fde.num_fres,
            fde.offset) == ((), 0, 0, 0, 0, 0, -1)


def _header(version: int = C.VERSION_3, flags: int = 0, fdeoff: int = 0) -> Header:
    return Header(version=version, flags=flags, abi=C.ABI_AMD64_LE, fixed_fp=0, fixed_ra=-8,
                  num_fdes=0, num_fres=0, fre_len=0, fdeoff=fdeoff, freoff=fdeoff,
                  big_endian=False)


def test_header_sorted_and_start_base() -> None:
    assert _header(flags=0).sorted is False
    assert _header(flags=C.F_FDE_FUNC_START_PCREL).sorted is False
    assert _header(flags=C.F_FDE_SORTED).sorted is True
    h = _header(flags=C.F_FDE_FUNC_START_PCREL, fdeoff=8)
    assert h.fdes_start == C.HEADER_SIZE + 8
    # fdeoff honoured by default; libsframe's reading (ignoring it) only when asked
    assert h.start_base() == (C.HEADER_SIZE + 8, 16)
    assert h.start_base(honour_fdeoff=False) == (C.HEADER_SIZE, 16)
    assert h.func_start(2, 0x100, 0x1000) == 0x1000 + 0x100 + C.HEADER_SIZE + 8 + 2 * 16


@pytest.mark.parametrize(("version", "flags"), [
    (C.VERSION_1, C.F_FDE_SORTED), (C.VERSION_2, C.F_FDE_SORTED),
    (C.VERSION_3, C.F_FDE_SORTED | C.F_FDE_FUNC_START_PCREL)])
def test_build_section_default_flags(version: int, flags: int) -> None:
    sec = build_section(version, C.ABI_AMD64_LE, [])
    assert sec.header.flags == flags
    assert decode(encode(sec)).header.flags == flags


@pytest.mark.parametrize("abi", [*C.ABI_BIG_ENDIAN, 0, 9])
def test_build_section_byte_order_of_the_abi(abi: int) -> None:
    want = C.ABI_BIG_ENDIAN.get(abi, False)
    sec = build_section(C.VERSION_2, abi, [FDE(0, 4, fde_info(T1), (make_fre(0, (8,)),))])
    assert sec.header.big_endian is want
    assert encode(sec)[:2] == (C.MAGIC_BE if want else C.MAGIC_LE)


def test_build_section_keeps_the_fdes_other_fields() -> None:
    """fre_off and num_fres are recomputed; every other field, offset included, is kept."""
    fdes = [FDE(0x10, 0x20, fde_info(T2, True), (make_fre(0, (8,)),), rep_size=4, info2=1,
                padding=3, fre_off=99, num_fres=7, offset=0x40),
            FDE(0x30, 0x8, fde_info(T1), ())]
    placed = build_section(C.VERSION_3, C.ABI_AMD64_LE, fdes).fdes
    got = [(f.start, f.size, f.info, f.fres, f.rep_size, f.info2, f.padding, f.fre_off,
            f.num_fres, f.offset) for f in placed]
    assert got == [(0x10, 0x20, 0x11, fdes[0].fres, 4, 1, 3, 0, 1, 0x40),
                   (0x30, 0x8, 0x00, (), 0, 0, 0, 5 + 4, 0, -1)]


@pytest.fixture
def no_struct_cache(monkeypatch: pytest.MonkeyPatch) -> None:
    """The encoder's per-shape struct cache, empty: the shape check runs in the test."""
    monkeypatch.setattr(encode_mod, "_FRE_STRUCTS", {})


@pytest.mark.parametrize(("fre", "fre_type", "message"), [
    (FRE(0, fre_info(True, 1, 0), (8,)), 3, "FRE: FRE type 3 has no start-address size"),
    (FRE(0, fre_info(True, 1, 0), (8,)), 7, "FRE: FRE type 7 has no start-address size"),
    (FRE(0, fre_info(True, 1, 3), (8,)), T1, "FRE: data-word size code 3 cannot be encoded"),
    (FRE(0, fre_info(True, 0, 3), ()), T2, "FRE: data-word size code 3 cannot be encoded"),
    (FRE(0, fre_info(True, 2, 0), (8,)), T1, "FRE: info byte says 2 words, 1 given"),
    (FRE(0, fre_info(True, 1, 1), (8, 9)), T4, "FRE: info byte says 1 words, 2 given"),
])
def test_refused_shapes_with_no_cache(no_struct_cache: None, fre: FRE, fre_type: int,
                                      message: str) -> None:
    for _ in range(2):  # the second time from the cache
        with pytest.raises(EncodeError) as exc:
            encode_fre(fre, fre_type, "<")
        assert str(exc.value) == message


def test_shapes_with_no_cache(no_struct_cache: None) -> None:
    fre = make_fre(0x1234, (16, -8), size_code=1)
    want = struct.pack(">HBhh", 0x1234, fre.info, 16, -8)
    assert encode_fre(fre, T2, ">") == want
    assert encode_fre(fre, T2, ">") == want
    assert encode_fre(fre, T4, "<") == struct.pack("<IBhh", 0x1234, fre.info, 16, -8)


@pytest.mark.parametrize("info", [0x100, -1])
def test_info_past_a_byte_is_refused(no_struct_cache: None, info: int) -> None:
    with pytest.raises(EncodeError, match=f"FRE info {info:#x} does not fit its byte"):
        encode_fre(FRE(0, info, ()), T1, "<")


def _fde(**kw: int) -> FDE:
    return FDE(kw.pop("start", 0), kw.pop("size", 0x10), fde_info(T1), (make_fre(0, (8,)),),
               **kw)


@pytest.mark.parametrize(("version", "fde", "prefix"), [
    (C.VERSION_1, _fde(size=1 << 32), "FDE[0]: "),
    (C.VERSION_2, _fde(size=1 << 32), "FDE[0]: "),
    (C.VERSION_2, _fde(padding=1 << 16), "FDE[0]: "),
    (C.VERSION_3, _fde(start=1 << 63), "FDE[0]: "),
    (C.VERSION_3, _fde(rep_size=256), "FDE[0] attribute: "),
])
def test_encode_errors_name_the_record(version: int, fde: FDE, prefix: str) -> None:
    sec = build_section(version, C.ABI_AMD64_LE, [_fde(), fde])
    with pytest.raises(EncodeError) as exc:
        encode(sec)
    assert str(exc.value).startswith(prefix.replace("[0]", "[1]"))
    assert "(values (" in str(exc.value)


def test_encode_header_errors() -> None:
    sec = build_section(C.VERSION_2, C.ABI_AMD64_LE, [], fixed_fp=200)
    with pytest.raises(EncodeError, match=r"^header: .*\(values \(57058, 2, "):
        encode(sec)
    h = build_section(C.VERSION_2, C.ABI_AMD64_LE, []).header
    bad = Header(version=7, flags=0, abi=h.abi, fixed_fp=0, fixed_ra=0, num_fdes=0,
                 num_fres=0, fre_len=0, fdeoff=0, freoff=0, big_endian=False)
    with pytest.raises(EncodeError) as exc:
        encode(Section(header=bad, fdes=()))
    assert str(exc.value) == "unknown SFrame version 7"


@pytest.mark.parametrize("n", [0, 1, 254, 255])
def test_auxiliary_header_up_to_255_bytes(n: int) -> None:
    aux = bytes(range(n))
    sec = build_section(C.VERSION_2, C.ABI_AMD64_LE, [_fde()], auxhdr=aux)
    data = encode(sec)
    assert data[7] == n
    assert data[C.HEADER_SIZE:C.HEADER_SIZE + n] == aux
    assert decode(data) == sec


@pytest.mark.parametrize("n", [256, 300])
def test_auxiliary_header_past_255_bytes(n: int) -> None:
    sec = build_section(C.VERSION_2, C.ABI_AMD64_LE, [_fde()], auxhdr=bytes(n))
    with pytest.raises(EncodeError) as exc:
        encode(sec)
    assert str(exc.value) == "auxiliary header longer than 255 bytes"
