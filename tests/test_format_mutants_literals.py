"""The struct format codes of the encoder's per-shape FRE struct (`_fre_struct`): the
start-address code of each FRE type (B, H, I: unsigned) and the 4-byte data-word code
(i: signed): mutants of these literals that an older mutant classifier had hidden as
message text (a changed string taken for wording). Each test empties the struct cache,
so the struct is built in the test rather than taken from an earlier one (from a warm
cache a broken format code is never even compiled), and compares the whole result: the
bytes, or the EncodeError's exact message.

A start below zero fits no unsigned start field: a signed code would pack it as the
two's complement instead of refusing it, so the refusal pins each unsigned code. The info
code (B) and the 4-byte word code's signedness only decide whether the fast struct or the
checked path writes the bytes (both write the same ones), so those are named equivalent,
not tested here."""

from __future__ import annotations

import importlib
import struct

import pytest

from sfcheck.errors import EncodeError
from sfcheck.format import constants as C
from sfcheck.format.encode import encode_fre
from sfcheck.format.model import FRE, fre_info, make_fre

# the package exports encode() under the module's name
encode_mod = importlib.import_module("sfcheck.format.encode")
T1, T2, T4 = C.FRE_TYPE_ADDR1, C.FRE_TYPE_ADDR2, C.FRE_TYPE_ADDR4
START_CODE = {T1: "B", T2: "H", T4: "I"}


@pytest.fixture(autouse=True)
def no_struct_cache(monkeypatch: pytest.MonkeyPatch) -> None:
    """The encoder's per-shape struct cache, empty: the struct is built in each test."""
    monkeypatch.setattr(encode_mod, "_FRE_STRUCTS", {})


@pytest.mark.parametrize("order", ["<", ">"])
@pytest.mark.parametrize(("fre_type", "start"), [
    (T1, 0), (T1, 0x7F), (T1, 0xFF), (T2, 0x1234), (T2, 0xFFFF), (T4, 0x12345678),
    (T4, 0xFFFFFFFF)])
@pytest.mark.parametrize(("words", "size_code", "word_code"), [
    ((8,), 0, "b"), ((16, -8), 1, "h"), ((0x10000, -0x10000, 0x7FFFFFFF), 2, "i"),
    ((-(1 << 31),), 2, "i")])
def test_each_shape_packs_start_info_and_words(order: str, fre_type: int, start: int,
                                               words: tuple[int, ...], size_code: int,
                                               word_code: str) -> None:
    fre = make_fre(start, words, size_code=size_code)
    want = struct.pack(order + START_CODE[fre_type] + "B" + word_code * len(words),
                       start, fre.info, *words)
    for _ in range(2):  # the second time from the cache
        assert encode_fre(fre, fre_type, order) == want


def test_four_byte_words_given_unsigned_are_their_twos_complement() -> None:
    fre = FRE(0x40, fre_info(False, 2, 2, True), (0xFFFFFFF8, 0x80000000))
    assert encode_fre(fre, T4, "<") == (b"\x40\x00\x00\x00" + bytes([fre.info])
                                        + b"\xf8\xff\xff\xff" + b"\x00\x00\x00\x80")


@pytest.mark.parametrize("fre_type", [T1, T2, T4])
@pytest.mark.parametrize("start", [-1, -0x80])
def test_a_start_below_zero_is_refused(fre_type: int, start: int) -> None:
    fre = make_fre(start, (8,))
    fmt = "<" + START_CODE[fre_type] + "Bb"
    with pytest.raises(struct.error) as exc_struct:
        struct.pack(fmt, start, fre.info, 8)
    for _ in range(2):
        with pytest.raises(EncodeError) as exc:
            encode_fre(fre, fre_type, "<", "FDE[3]")
        assert str(exc.value) == (f"FDE[3]: {exc_struct.value} "
                                  f"(values ({start}, {fre.info}, 8))")
