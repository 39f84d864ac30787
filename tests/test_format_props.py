"""Property tests of the format layer: round trips, robustness on damaged input,
bounded work on lying count fields, located errors, and stated invariants."""

from __future__ import annotations

import importlib
import struct
import tracemalloc

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sfcheck.dump.objdump import dump_text
from sfcheck.errors import DecodeError
from sfcheck.format import FRE, Decoder, Header, Section, decode, encode, make_fre
from sfcheck.format import constants as C
from sfcheck.format import datawords as W
from sfcheck.format.model import FDE

from strategies import (
    ADDR_SIZES,
    FDE_SIZES,
    HEADER_SIZE,
    WIDTHS,
    generated,
    mutated_sections,
    sections,
)

# `sfcheck.format.decode` the attribute is the decode() function (re-exported by the
# package), so fetch the module itself to patch its globals.
decode_mod = importlib.import_module("sfcheck.format.decode")

PROPS = settings(max_examples=300, deadline=None,
                 suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
FAST = settings(max_examples=150, deadline=None,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])


# ---------------------------------------------------------------------------
# A tiny reference reader written from sframe-format.md §1, independent of sfcheck.


def ref_parse(data: bytes) -> dict:
    order = "<" if data[:2] == b"\xe2\xde" else ">"
    (magic, version, flags, abi, fixed_fp, fixed_ra, aux_len, num_fdes, num_fres, fre_len,
     fdeoff, freoff) = struct.unpack_from(order + "HBBBbbBIIIII", data, 0)
    assert magic == 0xDEE2
    hdr = HEADER_SIZE + aux_len
    fres_base = hdr + freoff
    fdes = []
    for i in range(num_fdes):
        off = hdr + fdeoff + i * FDE_SIZES[version]
        rep_size = info2 = 0
        if version == 1:
            start, size, fre_off, n, info = struct.unpack_from(order + "iIIIB", data, off)
            pos = fres_base + fre_off
        elif version == 2:
            start, size, fre_off, n, info, rep_size, _pad = struct.unpack_from(
                order + "iIIIBBH", data, off)
            pos = fres_base + fre_off
        else:
            start, size, fre_off = struct.unpack_from(order + "qII", data, off)
            n, info, info2, rep_size = struct.unpack_from(order + "HBBB", data,
                                                          fres_base + fre_off)
            pos = fres_base + fre_off + 5
        asz = ADDR_SIZES[info & 0xF]
        fres = []
        for _ in range(n):
            fstart = int.from_bytes(data[pos:pos + asz], "little" if order == "<" else "big")
            finfo = data[pos + asz]
            cnt, w = (finfo >> 1) & 0xF, WIDTHS[(finfo >> 5) & 3]
            words = struct.unpack_from(order + {1: "b", 2: "h", 4: "i"}[w] * cnt, data,
                                       pos + asz + 1)
            fres.append((fstart, finfo, tuple(words), pos))
            pos += asz + 1 + cnt * w
        fdes.append(dict(start=start, size=size, info=info, info2=info2, rep_size=rep_size,
                         fres=fres, offset=off))
    return dict(version=version, flags=flags, abi=abi, fixed_fp=fixed_fp, fixed_ra=fixed_ra,
                aux=data[HEADER_SIZE:hdr], num_fdes=num_fdes, num_fres=num_fres,
                fre_len=fre_len, fdeoff=fdeoff, freoff=freoff, fdes=fdes,
                big=order == ">")


# ---------------------------------------------------------------------------
# Round trips


@PROPS
@given(sections())
def test_decode_encode_roundtrip(section: Section) -> None:
    data = encode(section)
    assert decode(data) == section
    assert encode(decode(data)) == data


@PROPS
@given(generated(), st.integers(0, 1 << 48))
def test_generated_sections_against_the_spec(g, vma: int) -> None:
    """One generated section, checked several ways (generation dominates the cost)."""
    data = encode(g.section)
    ref = ref_parse(data)
    check_encoded_bytes(g, data, ref)
    sec = decode(data)
    check_decoded_fields(g, sec, ref)
    check_func_start(g, sec, vma)
    check_fre_sizes(g, sec, data)


def check_encoded_bytes(g, data: bytes, ref: dict) -> None:
    """The encoded bytes, read by the independent reference reader, hold what was generated."""
    assert data[:2] == (b"\xde\xe2" if g.big_endian else b"\xe2\xde")
    assert ref["big"] == g.big_endian
    assert (ref["version"], ref["flags"], ref["abi"]) == (g.version, g.flags, g.abi)
    assert (ref["fixed_fp"], ref["fixed_ra"], ref["aux"]) == (g.fixed_fp, g.fixed_ra, g.auxhdr)
    assert ref["num_fdes"] == len(g.fdes)
    assert ref["num_fres"] == sum(len(f.fres) for f in g.fdes)
    assert ref["fre_len"] == g.fre_bytes()
    assert ref["fdeoff"] == g.fdeoff
    assert ref["freoff"] == g.fdeoff + len(g.fdes) * FDE_SIZES[g.version]
    expected_len = (HEADER_SIZE + len(g.auxhdr) + ref["freoff"] + g.fre_bytes()
                    + len(g.trailing))
    assert len(data) == expected_len
    assert data[len(data) - len(g.trailing):] == g.trailing
    for i, (want, got) in enumerate(zip(g.fdes, ref["fdes"], strict=True)):
        assert got["offset"] == g.field_offset(i)
        assert (got["start"], got["size"], got["info"]) == (want.start, want.size, want.info)
        if g.version >= 2:
            assert got["rep_size"] == want.rep_size
        if g.version == 3:
            assert got["info2"] == want.info2
        assert [(s, i_, w) for s, i_, w, _ in got["fres"]] == [
            (f.start, f.info, f.words) for f in want.fres]


def check_decoded_fields(g, sec: Section, ref: dict) -> None:
    """decode() against the reference reader, including record offsets."""
    h = sec.header
    assert (h.version, h.flags, h.abi, h.fixed_fp, h.fixed_ra, h.auxhdr, h.big_endian) == (
        ref["version"], ref["flags"], ref["abi"], ref["fixed_fp"], ref["fixed_ra"],
        ref["aux"], ref["big"])
    assert (h.num_fdes, h.num_fres, h.fre_len, h.fdeoff, h.freoff) == (
        ref["num_fdes"], ref["num_fres"], ref["fre_len"], ref["fdeoff"], ref["freoff"])
    assert sec.trailing == g.trailing
    for fde, r in zip(sec.fdes, ref["fdes"], strict=True):
        assert fde.offset == r["offset"]
        assert (fde.start, fde.size, fde.info, fde.info2, fde.rep_size) == (
            r["start"], r["size"], r["info"], r["info2"], r["rep_size"])
        assert [(f.start, f.info, f.words, f.offset) for f in fde.fres] == r["fres"]


@FAST
@given(sections(), st.binary(min_size=1, max_size=255))
def test_header_roundtrip_with_auxhdr(section: Section, aux: bytes) -> None:
    h = section.header
    header = Header(version=h.version, flags=h.flags, abi=h.abi, fixed_fp=h.fixed_fp,
                    fixed_ra=h.fixed_ra, num_fdes=h.num_fdes, num_fres=h.num_fres,
                    fre_len=h.fre_len, fdeoff=h.fdeoff, freoff=h.freoff,
                    big_endian=h.big_endian, auxhdr=aux)
    with_aux = Section(header, section.fdes, section.trailing)
    data = encode(with_aux)
    assert data[7] == len(aux)
    assert data[HEADER_SIZE:HEADER_SIZE + len(aux)] == aux
    back = decode(data)
    assert back == with_aux
    assert back.header.auxhdr == aux
    assert back.header.size == HEADER_SIZE + len(aux)
    assert encode(back) == data
    # The FDEs moved by exactly len(aux) bytes.
    for i, fde in enumerate(back.fdes):
        assert fde.offset == HEADER_SIZE + len(aux) + h.fdeoff + i * h.fde_size


# ---------------------------------------------------------------------------
# Robustness: only DecodeError, never anything else


def _decode_only_decodeerror(data: bytes) -> None:
    try:
        result = decode(data)
    except DecodeError as err:
        # Located: an offset inside the data or where missing bytes were needed, and
        # the structure being read.
        assert err.offset is not None and err.offset >= 0, str(err)
        assert isinstance(err.structure, str) and err.structure, str(err)
        return
    except Exception as exc:  # noqa: BLE001 - the point is to catch anything else
        pytest.fail(f"decode raised {type(exc).__name__}: {exc!r} on {data.hex()}")
    assert isinstance(result, Section)


def _dump_only_decodeerror(data: bytes) -> None:
    try:
        lines = list(dump_text(data))
    except DecodeError:
        return
    except Exception as exc:  # noqa: BLE001
        pytest.fail(f"dump_text raised {type(exc).__name__}: {exc!r} on {data.hex()}")
    assert all(isinstance(line, str) for line in lines)


@PROPS
@given(st.binary(max_size=200))
def test_arbitrary_bytes_decode(data: bytes) -> None:
    _decode_only_decodeerror(data)
    _dump_only_decodeerror(data)


@PROPS
@given(st.sampled_from([b"\xe2\xde", b"\xde\xe2"]), st.sampled_from([1, 2, 3]),
       st.binary(max_size=200))
def test_arbitrary_bytes_with_magic_decode(magic: bytes, version: int, rest: bytes) -> None:
    data = magic + bytes([version]) + rest
    _decode_only_decodeerror(data)
    _dump_only_decodeerror(data)


@settings(max_examples=500, deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(mutated_sections())
def test_mutated_sections_decode(data: bytes) -> None:
    _decode_only_decodeerror(data)
    _dump_only_decodeerror(data)


@PROPS
@given(sections())
def test_dump_of_valid_sections(section: Section) -> None:
    data = encode(section)
    lines = list(dump_text(data, section_vma=0x1000))
    assert lines[0] == "Contents of the SFrame section .sframe:"
    assert sum(line.startswith("    func idx [") for line in lines) == section.header.num_fdes


# ---------------------------------------------------------------------------
# Count fields cost nothing


class _Counter:
    def __init__(self) -> None:
        self.fres = 0
        self.fdes = 0


@pytest.fixture
def counter(monkeypatch):
    """Counts FRE objects built by the decoder and FDE decodes, deterministically."""
    c = _Counter()
    real_fre = decode_mod.FRE
    real_fde = Decoder.fde

    def counting_fre(*args, **kwargs):
        c.fres += 1
        return real_fre(*args, **kwargs)

    def counting_fde(self, *args, **kwargs):
        c.fdes += 1
        return real_fde(self, *args, **kwargs)

    monkeypatch.setattr(decode_mod, "FRE", counting_fre)
    monkeypatch.setattr(Decoder, "fde", counting_fde)
    return c


def _failure_and_peak(data: bytes, func) -> tuple[DecodeError, int]:
    """The DecodeError `func(data)` must raise, and the peak memory it took to get there."""
    tracemalloc.start()
    try:
        with pytest.raises(DecodeError) as info:
            func(data)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    return info.value, peak


def _fails_cheaply(data: bytes, c: _Counter, func) -> DecodeError:
    err, peak = _failure_and_peak(data, func)
    assert peak < 1_000_000, f"peak {peak} bytes"
    assert c.fres < len(data)
    assert c.fdes < len(data)
    return err


def _decode(data: bytes) -> None:
    decode(data)


def _dump(data: bytes) -> None:
    list(dump_text(data))


def header_bytes(version: int, num_fdes: int, num_fres: int, fre_len: int, fdeoff: int,
                 freoff: int, *, big: bool = False, abi: int = 3, flags: int = 0,
                 fixed_ra: int = 0, aux: int = 0) -> bytes:
    return struct.pack((">" if big else "<") + "HBBBbbBIIIII", 0xDEE2, version, flags, abi, 0,
                       fixed_ra, aux, num_fdes, num_fres, fre_len, fdeoff, freoff)


@pytest.mark.parametrize("func", [_decode, _dump])
@pytest.mark.parametrize("big", [False, True])
@pytest.mark.parametrize("version", [1, 2, 3])
def test_huge_num_fdes_is_cheap(version, big, func, counter) -> None:
    data = header_bytes(version, 0xFFFFFFFF, 0xFFFFFFFF, 0, 0, 0, big=big) + bytes(12)
    assert len(data) == 40
    err = _fails_cheaply(data, counter, func)
    assert counter.fdes == 0
    assert err.offset is not None and 0 <= err.offset <= len(data)


def _tiny_section_with_huge_num_fres(version: int, big: bool, fre_type: int) -> bytes:
    o = ">" if big else "<"
    fde_size = FDE_SIZES[version]
    fre_len = 5 + 6 if version == 3 else 6  # room for a couple of tiny FREs
    hdr = header_bytes(version, 1, 0xFFFFFFFF, fre_len, 0, fde_size, big=big)
    if version == 1:
        fde = struct.pack(o + "iIIIB", 0, 64, 0, 0xFFFFFFFF, fre_type)
        fres = b"\x00\x00" * 3
    elif version == 2:
        fde = struct.pack(o + "iIIIBBH", 0, 64, 0, 0xFFFFFFFF, fre_type, 0, 0)
        fres = b"\x00\x00" * 3
    else:
        fde = struct.pack(o + "qII", 0, 64, 0)
        fres = struct.pack(o + "HBBB", 0xFFFF, fre_type, 0, 0) + b"\x00\x00" * 3
    return hdr + fde + fres


@pytest.mark.parametrize("func", [_decode, _dump])
@pytest.mark.parametrize("fre_type", [0, 1, 2])
@pytest.mark.parametrize("big", [False, True])
@pytest.mark.parametrize("version", [1, 2, 3])
def test_huge_num_fres_is_cheap(version, big, fre_type, func, counter) -> None:
    data = _tiny_section_with_huge_num_fres(version, big, fre_type)
    assert len(data) < 64
    err = _fails_cheaply(data, counter, func)
    assert err.structure is not None and err.structure.startswith("FDE[0]")


@pytest.mark.parametrize("version", [1, 2, 3])
def test_huge_num_fres_in_many_fdes_is_cheap(version, counter) -> None:
    """100 FDEs each claiming the maximum FRE count, inside a few hundred bytes."""
    o = "<"
    n = 100
    fde_size = FDE_SIZES[version]
    if version == 3:
        block = struct.pack(o + "HBBB", 0xFFFF, 0, 0, 0) + b"\x00\x00" * 2
        fdes = b"".join(struct.pack(o + "qII", 0, 64, 0) for _ in range(n))
    elif version == 2:
        block = b"\x00\x00" * 2
        fdes = b"".join(struct.pack(o + "iIIIBBH", 0, 64, 0, 0xFFFFFFFF, 0, 0, 0)
                        for _ in range(n))
    else:
        block = b"\x00\x00" * 2
        fdes = b"".join(struct.pack(o + "iIIIB", 0, 64, 0, 0xFFFFFFFF, 0) for _ in range(n))
    data = header_bytes(version, n, 0xFFFFFFFF, len(block), 0, n * fde_size) + fdes + block
    _fails_cheaply(data, counter, _decode)


@pytest.mark.parametrize("func", [_decode, _dump])
@pytest.mark.parametrize("version", [1, 2, 3])
def test_aliased_fre_ranges_do_not_amplify_work(version, func, counter) -> None:
    """A ~2 KB section: 60 FDEs all pointing at the same block of zero-word FREs.

    The format does not forbid FREs of different FDEs aliasing (sframe-format.md §2),
    but decoding must not build num_fdes * num_fres FREs: the work (FRE objects
    built) must stay proportional to the bytes given, as for every other count.
    decode() and dump_text() refuse FRE blocks that use more bytes than the FRE
    sub-section holds, with a located error.
    """
    n_fdes = 60
    o = "<"
    fre = b"\x00\x01"  # ADDR1 start 0, info: SP base, 0 words
    if version == 3:
        n_fres = 490
        block = struct.pack(o + "HBBB", n_fres, 0, 0, 0) + fre * n_fres
        fdes = b"".join(struct.pack(o + "qII", 0, 256, 0) for _ in range(n_fdes))
    else:
        n_fres = 490 if version == 1 else 400
        block = fre * n_fres
        fmt, extra = ("iIIIB", ()) if version == 1 else ("iIIIBBH", (0, 0))
        fdes = b"".join(struct.pack(o + fmt, 0, 256, 0, n_fres, 0, *extra)
                        for _ in range(n_fdes))
    data = header_bytes(version, n_fdes, n_fres, len(block), 0, len(fdes), fixed_ra=-8,
                        flags=0x5 if version == 3 else 0) + fdes + block
    assert len(data) < 2200
    err, peak = _failure_and_peak(data, func)
    assert err.offset is not None and 0 <= err.offset <= len(data), str(err)
    assert err.structure and err.structure.startswith("FDE["), str(err)
    assert "overlap" in err.message
    assert counter.fres <= len(data), f"{counter.fres} FREs from {len(data)} bytes"
    assert peak < 1_000_000, f"peak {peak} bytes"


# ---------------------------------------------------------------------------
# Located errors


def _structures_end(section: Section) -> int:
    h = section.header
    return max(h.fdes_start + h.num_fdes * h.fde_size, h.fres_end)


@FAST
@given(sections())
def test_every_truncation_fails_with_a_location(section: Section) -> None:
    data = encode(section)
    end = len(data) - len(section.trailing)
    for length in range(len(data) + 1):
        cut = data[:length]
        if length >= end:
            back = decode(cut)
            assert back.trailing == data[end:length]
            continue
        with pytest.raises(DecodeError) as info:
            decode(cut)
        err = info.value
        assert err.offset is not None, (length, str(err))
        assert 0 <= err.offset <= len(data), (length, str(err))
        assert isinstance(err.structure, str) and err.structure, (length, str(err))
        assert err.message and str(err).startswith(err.message)


# ---------------------------------------------------------------------------
# Invariants


def check_func_start(g, sec: Section, vma: int) -> None:
    for i, fde in enumerate(g.fdes):
        expected = vma + fde.start + (g.field_offset(i) if g.pcrel else 0)
        assert sec.func_start(i, vma) == expected
        assert sec.func_start(i, vma) == vma + g.rel_starts[i]
        # a zero start read field-relative is the field's own section offset
        assert sec.header.func_start(i, 0, field_relative=True) == g.field_offset(i)


def check_fre_sizes(g, sec: Section, data: bytes) -> None:
    assert sec.header.fre_len == g.fre_bytes()
    total = 5 * len(sec.fdes) if g.version == 3 else 0
    for fde in sec.fdes:
        asz = ADDR_SIZES[fde.info & 0xF]
        for fre in fde.fres:
            size = asz + 1 + len(fre.words) * WIDTHS[(fre.info >> 5) & 3]
            total += size
            # The FRE's stored bytes are where the decoder says they are.
            assert data[fre.offset:fre.offset + asz] == fre.start.to_bytes(
                asz, "big" if g.big_endian else "little")
            assert data[fre.offset + asz] == fre.info
    assert total == sec.header.fre_len
    assert sec.header.num_fres == sum(len(f.fres) for f in g.fdes)


def _s390x_header(version: int) -> Header:
    return Header(version=version, flags=0, abi=4, fixed_fp=0, fixed_ra=0, num_fdes=0,
                  num_fres=0, fre_len=0, fdeoff=0, freoff=0, big_endian=True)


@PROPS
@given(st.sampled_from([2, 3]), st.integers(-(1 << 31), (1 << 31) - 1),
       st.integers(-(1 << 31), (1 << 31) - 1), st.booleans())
def test_s390x_cfa_offset_scaling(version: int, w0: int, w1: int, flex: bool) -> None:
    h = _s390x_header(version)
    fre = make_fre(0, (w0, w1))
    stored = w1 if flex else w0
    assert W.cfa_offset(h, fre, flex) == stored * 8 + 160
    amd = Header(version=version, flags=0, abi=3, fixed_fp=0, fixed_ra=-8, num_fdes=0,
                 num_fres=0, fre_len=0, fdeoff=0, freoff=0, big_endian=False)
    assert W.cfa_offset(amd, fre, flex) == stored
    assert W.cfa_offset(h, make_fre(0, ()), flex) is None


@PROPS
@given(st.integers(-(1 << 28), 1 << 28))
def test_s390x_cfa_encode_inverts_decode(k: int) -> None:
    offset = 160 + 8 * k
    assert C.s390x_cfa_encode(offset) == k
    assert C.s390x_cfa_decode(k) == offset


_BOUNDARIES = [-(1 << 31), -32769, -32768, -129, -128, -1, 0, 1, 127, 128, 32767, 32768,
               (1 << 31) - 1]


@PROPS
@given(st.lists(st.one_of(st.sampled_from(_BOUNDARIES), st.integers(-(1 << 31), (1 << 31) - 1),
                          st.integers(-40000, 40000)), max_size=6))
def test_make_fre_picks_smallest_size_code(words: list[int]) -> None:
    if all(-128 <= w <= 127 for w in words):
        code = 0
    elif all(-32768 <= w <= 32767 for w in words):
        code = 1
    else:
        code = 2
    fre = make_fre(5, words)
    assert (fre.info >> 5) & 3 == code
    assert (fre.info >> 1) & 0xF == len(words)
    assert fre.words == tuple(words)
    assert fre.start == 5


@pytest.mark.parametrize(("words", "code"), [
    ((), 0), ((-128, 127), 0), ((-129,), 1), ((128,), 1), ((-32768, 32767), 1),
    ((-32769,), 2), ((32768, 0), 2), ((-(1 << 31), (1 << 31) - 1), 2),
])
def test_make_fre_size_code_boundaries(words, code) -> None:
    assert (make_fre(0, words).info >> 5) & 3 == code


def test_fre_and_fde_compare_ignores_offset() -> None:
    a = FRE(1, 2, (), offset=10)
    b = FRE(1, 2, (), offset=99)
    assert a == b
    assert FDE(0, 1, 0, offset=1) == FDE(0, 1, 0, offset=2)
    assert FRE(1, 2, ()) != FRE(2, 2, ())
