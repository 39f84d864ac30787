"""The reading side of sfcheck/format at its edges: every located DecodeError's message,
offset, structure and field where a record is cut or points outside the FRE sub-section
(random access by Decoder.fde, without the whole-table checks decode() runs first), the
header cache keyed on the whole auxiliary header, the FRE-block walk with its finder cache
empty, the FDE table's columns at their widths and signs, and the bounds helpers at their
boundary."""

from __future__ import annotations

import importlib
import re
import struct
from array import array

import pytest

from sfcheck.errors import DecodeError
from sfcheck.format import Decoder, fre_blocks
from sfcheck.format import constants as C
from sfcheck.format.bounds import block_starts_within
from sfcheck.format.decode import byte_order, decode, decode_header
from sfcheck.format.encode import encode
from sfcheck.format.fde_table import Columns, column
from sfcheck.format.fre_blocks import FreBlocks
from sfcheck.format.layout import build_section, fre_size
from sfcheck.format.model import FDE, FRE, fde_info, make_fre
from sfcheck.format.reader import Reader

# the package exports decode() under the module's name
decode_mod = importlib.import_module("sfcheck.format.decode")
T1, T2, T4 = C.FRE_TYPE_ADDR1, C.FRE_TYPE_ADDR2, C.FRE_TYPE_ADDR4


def _where(err: DecodeError) -> tuple:
    return err.message, err.offset, err.structure, err.field


def _section(version: int, n_fres: tuple[int, ...] = (3, 1), fre_type: int = T1,
             big: bool = False, **kw) -> bytes:
    fdes = [FDE(0x100 * k, 0x80, fde_info(fre_type),
                tuple(make_fre(j, (8 + j, -16)) for j in range(n)))
            for k, n in enumerate(n_fres)]
    return encode(build_section(version, C.ABI_AMD64_LE, fdes, big_endian=big, **kw))


def test_byte_order_of_a_cut_magic() -> None:
    with pytest.raises(DecodeError) as exc:
        byte_order(b"\xe2")
    assert _where(exc.value) == ("section of 1 byte is too short for the SFrame magic", 0,
                                 "preamble", "sfp_magic")


def test_reader_bounds() -> None:
    r = Reader(b"abcd", False)
    for offset, length in ((0, 4), (4, 0), (1, 3)):
        r.need(offset, length, "s")
    for offset, length in ((-1, 1), (-4, 4), (0, -1), (2, -1), (1, 4), (5, 0)):
        with pytest.raises(DecodeError) as exc:
            r.need(offset, length, "s", "f")
        assert (exc.value.offset, exc.value.structure, exc.value.field) == (offset, "s", "f")
    with pytest.raises(DecodeError) as exc:
        r.bytes(3, 2, "s", "f")
    assert _where(exc.value) == ("2 bytes needed at offset 0x3 but the section has 0x4 bytes",
                                 3, "s", "f")
    assert r.bytes(1, 2, "s", "f") == b"bc"


def test_cut_auxiliary_header() -> None:
    data = _section(C.VERSION_2, (), auxhdr=b"abcd")[:C.HEADER_SIZE + 2]
    with pytest.raises(DecodeError) as exc:
        decode_header(data)
    assert _where(exc.value) == ("4 bytes needed at offset 0x1c but the section has 0x1e bytes",
                                 0x1C, "auxiliary header", "sfh_auxhdr_len")


def test_header_cache_keys_on_the_whole_auxiliary_header(monkeypatch) -> None:
    monkeypatch.setattr(decode_mod, "_HEADERS", {})
    one = _section(C.VERSION_2, (), auxhdr=b"abcd")
    two = _section(C.VERSION_2, (), auxhdr=b"abce")
    assert one[8] == 0  # num_fdes' low byte, next to the auxiliary length
    assert decode_header(one).auxhdr == b"abcd"
    assert decode_header(two).auxhdr == b"abce"
    assert decode_header(one).auxhdr == b"abcd"


@pytest.mark.parametrize("version", [C.VERSION_1, C.VERSION_2, C.VERSION_3])
def test_fde_cut_in_the_table(version: int) -> None:
    data = _section(version)
    dec = Decoder(data)
    size = dec.header.fde_size
    off = dec.fde_offset(1)
    cut = data[:off + size - 1]
    with pytest.raises(DecodeError) as exc:
        Decoder(cut).fde(1)
    assert _where(exc.value) == (
        f"{size} bytes needed at offset {off:#x} but the section has {len(cut):#x} bytes",
        off, "FDE[1]", None)
    if version != C.VERSION_3:  # (v3 reads the attribute record in the FRE sub-section)
        # exactly to the end of the record: it decodes (its FREs are not asked for)
        got = Decoder(data[:off + size]).fde(1, with_fres=False)
        assert (got.start, got.size, got.num_fres, got.offset) == (0x100, 0x80, 1, off)
    with pytest.raises(DecodeError) as exc:
        dec.fde(-(off // size) - 1)
    assert exc.value.structure == f"FDE[{-(off // size) - 1}]"
    assert exc.value.offset < 0


def test_v3_attribute_cut() -> None:
    data = _section(C.VERSION_3)
    dec = Decoder(data)
    fde1 = dec.fde(1)
    attr_off = dec.header.fres_start + fde1.fre_off
    for cut in (attr_off, attr_off + 2, attr_off + 4):
        with pytest.raises(DecodeError) as exc:
            Decoder(data[:cut]).fde(1)
        assert _where(exc.value) == (
            f"FDE[1]: attribute record at FRE offset {fde1.fre_off:#x} does not fit in the "
            f"{dec.header.fre_len:#x}-byte FRE sub-section", dec.fde_offset(1) + 12, "FDE[1]",
            "sfdi_func_start_fre_off")
    assert Decoder(data[:attr_off + 5]).fde(1, with_fres=False).num_fres == 1


@pytest.mark.parametrize("version", [C.VERSION_1, C.VERSION_2])
def test_first_fre_outside(version: int) -> None:
    data = bytearray(_section(version))
    dec = Decoder(bytes(data))
    fre_len = dec.header.fre_len
    off = dec.fde_offset(1)
    struct.pack_into("<I", data, off + 8, fre_len)  # an empty block may start at the end
    assert Decoder(bytes(data)).fde(1, with_fres=False).fre_off == fre_len
    struct.pack_into("<I", data, off + 8, fre_len + 1)
    with pytest.raises(DecodeError) as exc:
        Decoder(bytes(data)).fde(1, with_fres=False)
    assert _where(exc.value) == (
        f"FDE[1]: first FRE at FRE offset {fre_len + 1:#x} is outside the {fre_len:#x}-byte "
        "FRE sub-section", off + 8, "FDE[1]", "sfde_func_start_fre_off")


@pytest.mark.parametrize("version", [C.VERSION_1, C.VERSION_2, C.VERSION_3])
def test_fde_without_fres_asked(version: int) -> None:
    fde = Decoder(_section(version)).fde(0, with_fres=False)
    assert fde.fres == ()
    assert fde.num_fres == 3


def test_too_many_fres_for_the_subsection() -> None:
    data = bytearray(_section(C.VERSION_2))
    dec = Decoder(bytes(data))
    struct.pack_into("<I", data, dec.fde_offset(0) + 12, 1000)
    with pytest.raises(DecodeError) as exc:
        Decoder(bytes(data)).fde(0)
    h = dec.header
    assert re.fullmatch(rf"FDE\[0\]: 1000 FREs need at least 0x[0-9a-f]+ bytes from "
                        rf"{h.fres_start:#x}, but the FRE sub-section ends at {h.fres_end:#x}",
                        exc.value.message)
    assert (exc.value.offset, exc.value.structure, exc.value.field) == (
        h.fres_start, "FDE[0]", "num_fres")


@pytest.mark.parametrize("version", [C.VERSION_2, C.VERSION_3])
def test_decoder_calls_a_patched_fre(monkeypatch, version: int) -> None:
    """With FRE replaced (as a counting test does) the decoder calls the replacement for
    every FRE, with the fields its fast path sets on plain FREs."""
    data = _section(version, (3, 1), T2)
    want = [(f.start, f.info, f.words, f.offset) for fde in decode(data).fdes
            for f in fde.fres]
    built: list[FRE] = []

    def recording_fre(*args) -> FRE:
        built.append(FRE(*args))
        return built[-1]

    monkeypatch.setattr(decode_mod, "FRE", recording_fre)
    fres = [f for fde in decode(data).fdes for f in fde.fres]
    assert fres == built
    assert [(f.start, f.info, f.words, f.offset) for f in built] == want
    assert want[1][:3] == (1, make_fre(1, (9, -16)).info, (9, -16))


def _aliasing_v2() -> bytes:
    """FDE 0: 3 FREs; FDE 1 made to claim all 4 FREs of the sub-section from offset 0."""
    data = bytearray(_section(C.VERSION_2))
    off = Decoder(bytes(data)).fde_offset(1)
    struct.pack_into("<II", data, off + 8, 0, 4)
    return bytes(data)


def test_overlapping_blocks_located() -> None:
    data = _aliasing_v2()
    h = decode_header(data)
    want = (f"FDE[1]: FRE blocks of the FDEs so far use more than the {h.fre_len:#x}-byte "
            "FRE sub-section: blocks overlap", h.fres_start, "FDE[1]", "start_fre_off")
    with pytest.raises(DecodeError) as exc:
        decode(data)
    assert _where(exc.value) == want
    paths: list[str] = []
    blocks = FreBlocks(Decoder(data))
    with pytest.raises(DecodeError) as exc:
        blocks.run(0, 2, lambda i, *a: paths.append("tokens"),
                   lambda i, fde: paths.append("decoded"))
    assert _where(exc.value) == want
    assert paths == ["decoded"]  # FDE 1's four tokens were found, then charged


@pytest.mark.parametrize("version", [C.VERSION_2, C.VERSION_3])
@pytest.mark.parametrize("fre_type", [T1, T2, T4])
def test_fre_blocks_with_no_finder_cache(monkeypatch, version: int, fre_type: int) -> None:
    monkeypatch.setattr(fre_blocks, "_FINDERS", {})
    data = _section(version, (3, 1, 2), fre_type)
    want = decode(data).fdes
    seen: list[tuple] = []

    def on_tokens(i, rec, info, info2, asz, toks) -> None:
        seen.append((i, info, info2, asz, len(toks)))

    FreBlocks(Decoder(data)).run(0, 3, on_tokens, lambda i, fde: seen.append((i, "decoded")))
    asz = C.FRE_ADDR_SIZE[fre_type]
    assert seen == [(i, f.info, f.info2, asz, len(f.fres)) for i, f in enumerate(want)]
    assert all(f.info2 == 0 for f in want) or version == C.VERSION_3


@pytest.mark.parametrize("version", [C.VERSION_1, C.VERSION_2, C.VERSION_3])
def test_fre_span(version: int) -> None:
    data = _section(version, (0, 2))
    dec = Decoder(data)
    h = dec.header
    empty, two = decode(data).fdes
    attr = C.V3_ATTR_SIZE if version == C.VERSION_3 else 0
    first = h.fres_start + empty.fre_off
    assert dec.fre_span(empty) == (first, first + attr)
    first = h.fres_start + two.fre_off
    assert dec.fre_span(two) == (first, first + attr + 2 * fre_size(two.fres[0], T1))


def test_block_starts_within_at_the_boundary() -> None:
    assert block_starts_within(7, 5, 12)
    assert not block_starts_within(8, 5, 12)
    assert block_starts_within(12, 0, 12)
    assert not block_starts_within(13, 0, 12)


def test_column_of_one_byte_fields() -> None:
    rec = bytes([1, 0xFF, 2, 0xFE, 3, 0x80])
    assert column(rec, 2, 1, 1, True, False, 3) == array("b", [-1, -2, -128])
    assert column(rec, 2, 1, 1, False, True, 3) == array("B", [0xFF, 0xFE, 0x80])
    assert column(rec, 2, 0, 1, False, False, 3) == array("B", [1, 2, 3])


@pytest.mark.parametrize("big", [False, True])
def test_columns_read_fre_offsets_and_sizes_unsigned(big: bool) -> None:
    data = bytearray(_section(C.VERSION_2, big=big))
    h = decode_header(bytes(data))
    off = h.fdes_start + h.fde_size
    struct.pack_into(">iII" if big else "<iII", data, off, -4, 0x80000001, 0xFFFFFFF0)
    cols = Columns(bytes(data), h, 0, 2)
    assert list(cols.starts) == [0, -4]
    assert list(cols.sizes) == [0x80, 0x80000001]
    assert list(cols.fre_offs) == [0, 0xFFFFFFF0]


def test_columns_pcs_honour_fdeoff_by_default() -> None:
    data = _section(C.VERSION_3, fdeoff=0)
    fdes = decode(data).fdes
    sec = build_section(C.VERSION_3, C.ABI_AMD64_LE, fdes, fdeoff=4, trailing=b"")
    data = encode(sec)
    h = decode_header(data)
    cols = Columns(data, h, 0, 2)
    want = [h.func_start(i, f.start, 0x1000) for i, f in enumerate(fdes)]
    assert want[0] == 0x1000 + 0 + C.HEADER_SIZE + 4
    assert cols.pcs(h, 0x1000) == want
    assert cols.pcs(h, 0x1000, honour_fdeoff=False) == [w - 4 for w in want]


@pytest.mark.parametrize("big", [False, True])
def test_fre_past_a_cut_subsection(big: bool) -> None:
    """Enough bytes for the FREs at their shortest (the count check passes), too few for
    the second one's start address and info byte."""
    data = _section(C.VERSION_2, (2,), big=big)
    h = decode_header(data)
    pos = h.fres_start + 4  # FRE 0: 1-byte start, info, two 1-byte words
    with pytest.raises(DecodeError) as exc:
        Decoder(data[:pos + 1]).fde(0)
    assert _where(exc.value) == (
        f"FDE[0]: FRE 1 at {pos:#x} runs past the FRE sub-section end {pos + 1:#x}", pos,
        "FDE[0].FRE[1]", "fre_start_addr")
