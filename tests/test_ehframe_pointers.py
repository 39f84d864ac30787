"""The `.eh_frame` reader's DW_EH_PE pointer encodings (LSB 5.0, "Exception Frame Header",
DWARF Exception Header Encoding): every value format and the pcrel application, both byte
orders and address sizes, and the located error for those it does not take.

The corpus files all use pcrel sdata4 (0x1b), which the reader takes on a fast path, so the
field-by-field path is pinned here on hand-made sections.
"""

from __future__ import annotations

import struct

import pytest
from hypothesis import given
from hypothesis import strategies as st

from sfcheck.dwarf.ehframe import EhFrameError, read_eh_frame

from helpers import sleb, uleb

VMA = 0x2000


def _entry(body: bytes, o: str) -> bytes:
    body += b"\0" * (-(len(body) + 4) % 4)
    return struct.pack(o + "I", len(body)) + body


def section(enc: int, start: bytes, size: bytes, big: bool = False) -> bytes:
    """A "zR" CIE with FDE pointer encoding `enc` (CFA = r7 + 8) and one FDE at offset
    0x14 whose pc_begin field (at 0x1c) and pc_range field hold the given bytes."""
    o = ">" if big else "<"
    cie = _entry(struct.pack(o + "I", 0) + b"\x01zR\0" + uleb(1) + sleb(-8) + b"\x10"
                 + uleb(1) + bytes([enc]) + b"\x0c\x07\x08", o)
    assert len(cie) == 0x14
    fde = _entry(struct.pack(o + "I", 0x14 + 4) + start + size + uleb(0), o)
    return cie + fde + bytes(4)


FIELD = VMA + 0x1C  # the address of the FDE's pc_begin field


def start_size(data: bytes, big: bool = False, address_size: int = 8) -> tuple[int, int]:
    (fde,) = read_eh_frame(data, VMA, big, address_size, 16, 6)
    assert fde.offset == 0x14
    return fde.start, fde.size


@pytest.mark.parametrize(("enc", "start", "size", "want"), [
    (0x00, struct.pack("<Q", 0x401000), struct.pack("<Q", 0x20), (0x401000, 0x20)),
    (0x01, uleb(0x401000), uleb(0x300), (0x401000, 0x300)),
    (0x09, sleb(0x401000), sleb(0x30), (0x401000, 0x30)),
    (0x09, sleb(-0x10), sleb(0x30), (2**64 - 0x10, 0x30)),
    (0x02, struct.pack("<H", 0xF000), struct.pack("<H", 0x20), (0xF000, 0x20)),
    (0x03, struct.pack("<I", 0x80401000), struct.pack("<I", 0x20), (0x80401000, 0x20)),
    (0x04, struct.pack("<Q", 2**63 + 5), struct.pack("<Q", 0x20), (2**63 + 5, 0x20)),
    (0x0A, struct.pack("<h", -2), struct.pack("<h", 0x20), (2**64 - 2, 0x20)),
    (0x0B, struct.pack("<i", -2), struct.pack("<i", 0x20), (2**64 - 2, 0x20)),
    (0x0C, struct.pack("<q", -2), struct.pack("<q", 0x20), (2**64 - 2, 0x20)),
    # pcrel: relative to the field's own address; the range is never pcrel
    (0x1A, struct.pack("<h", -0x20), struct.pack("<h", 0x20), (FIELD - 0x20, 0x20)),
    (0x11, uleb(0x100), uleb(0x20), (FIELD + 0x100, 0x20)),
    (0x1C, struct.pack("<q", 0x1000), struct.pack("<q", 0x20), (FIELD + 0x1000, 0x20)),
    # aligned (0x50): no base
    (0x53, struct.pack("<I", 0x401000), struct.pack("<I", 0x20), (0x401000, 0x20)),
])
def test_pointer_encodings(enc: int, start: bytes, size: bytes, want: tuple) -> None:
    assert start_size(section(enc, start, size)) == want


def test_big_endian_and_32_bit() -> None:
    assert start_size(section(0x03, struct.pack(">I", 0x401000), struct.pack(">I", 0x20),
                              big=True), big=True) == (0x401000, 0x20)
    assert start_size(section(0x0A, struct.pack(">h", -0x20), struct.pack(">h", 0x20),
                              big=True), big=True) == (2**64 - 0x20, 0x20)
    # absptr is the address size; values wrap at it
    assert start_size(section(0x00, struct.pack("<I", 0x80401000), struct.pack("<I", 0x20)),
                      address_size=4) == (0x80401000, 0x20)
    assert start_size(section(0x0B, struct.pack("<i", -2), struct.pack("<i", 0x20)),
                      address_size=4) == (2**32 - 2, 0x20)
    assert start_size(section(0x1B, struct.pack("<i", -0x3000), struct.pack("<i", 0x20)),
                      address_size=4) == ((FIELD - 0x3000) % 2**32, 0x20)


@pytest.mark.parametrize(("enc", "message", "at"), [
    (0x05, "pointer encoding 0x5 not supported", 0x1C),
    (0x0D, "pointer encoding 0xd not supported", 0x1C),
    (0x33, "pointer application 0x33 not supported", 0x20),  # datarel: after the value
    (0x23, "pointer application 0x23 not supported", 0x20),  # textrel
    (0x43, "pointer application 0x43 not supported", 0x20),  # funcrel
])
def test_unsupported_pointers_are_located(enc: int, message: str, at: int) -> None:
    data = section(enc, struct.pack("<I", 0x401000), struct.pack("<I", 0x20))
    with pytest.raises(EhFrameError) as exc:
        read_eh_frame(data, VMA, False, 8, 16, 6)
    assert exc.value.offset == at
    assert str(exc.value) == f"{message} (at .eh_frame+{at:#x})"


def test_field_cut_short_is_located() -> None:
    data = bytearray(section(0x04, struct.pack("<Q", 0x401000), struct.pack("<Q", 0x20)))
    data[0x14:0x18] = struct.pack("<I", 0x0C)  # the FDE ends inside pc_range
    with pytest.raises(EhFrameError) as exc:
        read_eh_frame(bytes(data), VMA, False, 8, 16, 6)
    assert exc.value.offset == 0x24  # where pc_range starts


@given(st.integers(0, 2**63 - 1), st.integers(0, 2**32 - 1))
def test_uleb_and_udata8_agree(start: int, size: int) -> None:
    want = (start, size)
    assert start_size(section(0x01, uleb(start), uleb(size))) == want
    assert start_size(section(0x04, struct.pack("<Q", start), struct.pack("<Q", size))) == want
    assert start_size(section(0x04, struct.pack(">Q", start), struct.pack(">Q", size),
                              big=True), big=True) == want
