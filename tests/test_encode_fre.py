"""sfcheck.format.encode.encode_fre: one FRE's bytes (start address of the FDE's FRE type,
info byte, data words of the info byte's size), as the SFrame spec lays them out
(binutils sframe-spec, "SFrame Frame Row Entries"); flex control words may be given
unsigned; what does not fit raises EncodeError naming the FRE."""

from __future__ import annotations

import struct

import pytest
from hypothesis import given
from hypothesis import strategies as st

from sfcheck.errors import EncodeError
from sfcheck.format import constants as C
from sfcheck.format.decode import decode
from sfcheck.format.encode import encode, encode_fre
from sfcheck.format.layout import build_section
from sfcheck.format.model import FDE, FRE, fde_info, fre_info, make_fre

T1, T2, T4 = C.FRE_TYPE_ADDR1, C.FRE_TYPE_ADDR2, C.FRE_TYPE_ADDR4


@pytest.mark.parametrize(("fre_type", "order", "fmt"), [
    (T1, "<", "B"), (T2, "<", "H"), (T4, "<", "I"), (T2, ">", "H"), (T4, ">", "I")])
@pytest.mark.parametrize(("size_code", "wfmt"), [(0, "b"), (1, "h"), (2, "i")])
def test_layout(fre_type: int, order: str, fmt: str, size_code: int, wfmt: str) -> None:
    fre = make_fre(0x7F, (16, -8, -16), size_code=size_code)
    assert encode_fre(fre, fre_type, order) == struct.pack(
        order + fmt + "B" + wfmt * 3, 0x7F, fre.info, 16, -8, -16)


def test_unsigned_control_words_are_stored_as_their_bits() -> None:
    """A 1-byte flex control word of register 31 given as 0xf9 (unsigned) or -7."""
    info = fre_info(True, 2, 0)
    assert encode_fre(FRE(0, info, (0xF9, 8)), T1, "<") == bytes([0, info, 0xF9, 8])
    assert encode_fre(FRE(0, info, (-7, 8)), T1, "<") == bytes([0, info, 0xF9, 8])
    assert encode_fre(FRE(0, info, (0xFF, -128)), T1, "<") == bytes([0, info, 0xFF, 0x80])
    info2 = fre_info(True, 1, 1)
    assert encode_fre(FRE(0, info2, (0xFFFF,)), T1, ">") == bytes([0, info2, 0xFF, 0xFF])
    assert encode_fre(FRE(0, info2, (0x8000,)), T1, ">") == bytes([0, info2, 0x80, 0])


@pytest.mark.parametrize(("fre", "fre_type", "message"), [
    (FRE(0, fre_info(True, 1, 0), (256,)), T1, "FRE: data word 256 does not fit in 1 byte"),
    (FRE(0, fre_info(True, 1, 0), (-129,)), T1, "FRE: data word -129 does not fit in 1 byte"),
    (FRE(0, fre_info(True, 1, 1), (1 << 16,)), T1,
     "FRE: data word 65536 does not fit in 2 bytes"),
    (FRE(0, fre_info(True, 1, 2), (-(1 << 31) - 1,)), T1,
     "FRE: data word -2147483649 does not fit in 4 bytes"),
    (FRE(0, fre_info(True, 1, 0), (8,)), 3, "FRE: FRE type 3 has no start-address size"),
    (FRE(0, fre_info(True, 1, 3), (8,)), T1,
     "FRE: data-word size code 3 cannot be encoded"),
    (FRE(0, fre_info(True, 2, 0), (8,)), T1, "FRE: info byte says 2 words, 1 given"),
])
def test_refused(fre: FRE, fre_type: int, message: str) -> None:
    with pytest.raises(EncodeError) as exc:
        encode_fre(fre, fre_type, "<")
    assert str(exc.value) == message


def test_words_at_the_bounds_fit() -> None:
    info = fre_info(True, 2, 0)
    assert encode_fre(FRE(0, info, (-128, 255)), T1, "<") == bytes([0, info, 0x80, 0xFF])
    info4 = fre_info(True, 2, 2)
    assert encode_fre(FRE(0, info4, (-(1 << 31), (1 << 32) - 1)), T1, "<") == \
        bytes([0, info4]) + struct.pack("<iI", -(1 << 31), (1 << 32) - 1)


def test_start_past_the_type_names_the_fre() -> None:
    with pytest.raises(EncodeError, match=r"^FRE: .*\(values \(256, "):
        encode_fre(make_fre(256, (8,)), T1, "<")
    fde = FDE(0, 0x400, fde_info(T1), (make_fre(0, (8,)), make_fre(300, (16,))))
    with pytest.raises(EncodeError, match=r"^FDE\[0\]\.FRE\[1\]: .*\(values \(300, "):
        encode(build_section(C.VERSION_2, C.ABI_AMD64_LE, [fde]))


@given(st.sampled_from([T1, T2, T4]), st.sampled_from(["<", ">"]),
       st.lists(st.integers(-(1 << 31), (1 << 31) - 1), min_size=1, max_size=3))
def test_decoder_reads_back_what_encode_fre_wrote(fre_type: int, order: str,
                                                  words: list[int]) -> None:
    """Through a whole section: the decoder gives back the FRE encode_fre wrote, and the
    section's FRE bytes are encode_fre's."""
    fre = make_fre(1, words)
    fde = FDE(0, 0x100, fde_info(fre_type), (fre,))
    sec = build_section(C.VERSION_2, C.ABI_AMD64_LE, [fde], big_endian=order == ">")
    data = encode(sec)
    got = decode(data).fdes[0].fres[0]
    assert (got.start, got.info, got.words) == (fre.start, fre.info, fre.words)
    h = sec.header
    assert data[h.fres_start:h.fres_start + h.fre_len] == encode_fre(fre, fre_type, order)


@pytest.mark.parametrize(("fre_type", "start", "sfmt"), [
    (T1, 200, "B"), (T2, 0xF000, "H"), (T4, 0xF0000000, "I")])
def test_checked_path_keeps_unsigned_fields(fre_type: int, start: int, sfmt: str) -> None:
    """An unsigned control word sends the FRE down the checked path; its start address
    (unsigned, of the FRE type's size), info byte (the mangled-RA bit set: >= 0x80) and
    words (signed, or unsigned controls as their bits) come out as on the fast path."""
    fre = make_fre(start, (0xF9, 100, -3), mangled_ra=True, size_code=0)
    assert fre.info >= 0x80
    want = struct.pack("<" + sfmt + "B", start, fre.info) + bytes([0xF9, 100, 0xFD])
    assert encode_fre(fre, fre_type, "<") == want


def test_uword_reads_words_unsigned() -> None:
    one = FRE(0, fre_info(True, 2, 0), (-7, 8))
    assert [one.uword(0), one.uword(1), one.uword(2)] == [0xF9, 8, None]
    two = FRE(0, fre_info(True, 1, 1), (-7,))
    assert [two.uword(0), two.uword(1)] == [0xFFF9, None]
    four = FRE(0, fre_info(True, 1, 2), (-(1 << 31),))
    assert four.uword(0) == 1 << 31
