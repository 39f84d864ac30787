"""DW_EH_PE pointers read by the Python reference (sfcheck.dwarf.cursor.Cursor.pointer, the C
reader switched off) and by the C reader, which must agree: every value format at its edges,
pcrel wrapping at the address size, aligned, the applications it refuses and omit as
located one-line errors (LSB 5.0, "DWARF Exception Header Encoding").

tests/test_ehframe_pointers.py reads the same encodings through read_eh_frame, where the C
reader takes them all: here the Python reader is made to read them.
"""

from __future__ import annotations

import struct

import pytest

from sfcheck.dwarf import ehframe
from sfcheck.dwarf.cursor import Cursor, EhFrameError

from helpers import sleb, uleb

VMA = 0x2000
C_READER = ehframe.CFIRUN


def _entry(body: bytes, o: str) -> bytes:
    body += b"\0" * (-(len(body) + 4) % 4)
    return struct.pack(o + "I", len(body)) + body


def section(enc: int, start: bytes, size: bytes, big: bool = False,
            program: bytes = b"\x41\x0e\x10") -> bytes:
    """A "zR" CIE with FDE pointer encoding `enc` (CFA = r7 + 8) and one FDE at offset 0x14
    whose pc_begin field (at 0x1c) and pc_range field hold the given bytes."""
    o = ">" if big else "<"
    cie = _entry(struct.pack(o + "I", 0) + b"\x01zR\0" + uleb(1) + sleb(-8) + b"\x10"
                 + uleb(1) + bytes([enc]) + b"\x0c\x07\x08", o)
    assert len(cie) == 0x14
    fde = _entry(struct.pack(o + "I", 0x14 + 4) + start + size + uleb(0) + program, o)
    return cie + fde + bytes(4)


FIELD = 0x1C  # the FDE's pc_begin field's section offset


def read(data: bytes, vma: int = VMA, big: bool = False, asz: int = 8,
         reader: object = None) -> tuple:
    """(start, size, rows) of the one FDE, or the error's text and offset."""
    ehframe.CFIRUN = reader
    try:
        (f,) = ehframe.read_eh_frame(data, vma, big, asz, 16, 6)
    except EhFrameError as exc:
        return str(exc), exc.offset
    finally:
        ehframe.CFIRUN = C_READER
    return f.start, f.size, [tuple(r) for r in f.rel]


def python_and_c(data: bytes, **kw: object) -> tuple:
    """The Python reader's answer, checked against the C reader's where it is built."""
    got = read(data, **kw)
    if C_READER is not None:
        assert read(data, reader=C_READER, **kw) == got
    return got


ROWS = [(0, (7, 8), None, None), (1, (7, 16), None, None)]
M64 = 1 << 64


@pytest.mark.parametrize(("enc", "start", "size", "want"), [
    # absptr is the address size: a value past 32 bits must keep its high half
    (0x00, struct.pack("<Q", 0x7F00_0040_1000), struct.pack("<Q", 0x20),
     (0x7F00_0040_1000, 0x20)),
    (0x00, struct.pack("<Q", M64 - 1), struct.pack("<Q", 0), (M64 - 1, 0)),
    (0x01, uleb(0), uleb(0x7F), (0, 0x7F)),
    (0x01, uleb(0x80), uleb((1 << 63) - 1), (0x80, (1 << 63) - 1)),
    (0x09, sleb(-1), sleb(0x3F), (M64 - 1, 0x3F)),
    (0x09, sleb(0x40), sleb(-0x41), (0x40, M64 - 0x41)),
    # fixed sizes at the sign bit and on both sides of it
    (0x02, struct.pack("<H", 0xFFFF), struct.pack("<H", 0x8000), (0xFFFF, 0x8000)),
    (0x0A, struct.pack("<h", 0x7FFF), struct.pack("<h", -0x8000), (0x7FFF, M64 - 0x8000)),
    (0x03, struct.pack("<I", 0xFFFF_FFFF), struct.pack("<I", 0x8000_0000),
     (0xFFFF_FFFF, 0x8000_0000)),
    (0x0B, struct.pack("<i", 0x7FFF_FFFF), struct.pack("<i", -0x8000_0000),
     (0x7FFF_FFFF, M64 - 0x8000_0000)),
    (0x04, struct.pack("<Q", M64 - 1), struct.pack("<Q", 1 << 63), (M64 - 1, 1 << 63)),
    (0x0C, struct.pack("<q", (1 << 63) - 1), struct.pack("<q", -(1 << 63)),
     ((1 << 63) - 1, 1 << 63)),
    # pcrel: the field's address plus the value, modulo the address size; never the range
    (0x19, sleb(-0x10), sleb(0x20), (VMA + FIELD - 0x10, 0x20)),
    (0x1B, struct.pack("<i", -(VMA + FIELD)), struct.pack("<i", 0x20), (0, 0x20)),
    (0x1B, struct.pack("<i", -(VMA + FIELD) - 1), struct.pack("<i", 0x20), (M64 - 1, 0x20)),
    # the indirect bit is not applied: the FDE's own address range is what it reads
    (0x9B, struct.pack("<i", 0x100), struct.pack("<i", 0x20), (VMA + FIELD + 0x100, 0x20)),
    # aligned (0x50): no base
    (0x53, struct.pack("<I", 0x401000), struct.pack("<I", 0x20), (0x401000, 0x20)),
    (0x5B, struct.pack("<i", -2), struct.pack("<i", 0x20), (M64 - 2, 0x20)),
])
def test_value_formats_64_bit(enc: int, start: bytes, size: bytes, want: tuple) -> None:
    assert python_and_c(section(enc, start, size)) == (*want, ROWS)


@pytest.mark.parametrize(("enc", "start", "size", "want"), [
    (0x00, struct.pack(">Q", 0x7F00_0040_1000), struct.pack(">Q", 0x20),
     (0x7F00_0040_1000, 0x20)),
    (0x09, sleb(-2), sleb(0x20), (M64 - 2, 0x20)),
    (0x0A, struct.pack(">h", -2), struct.pack(">h", 0x20), (M64 - 2, 0x20)),
    (0x0C, struct.pack(">q", -2), struct.pack(">q", 0x20), (M64 - 2, 0x20)),
])
def test_value_formats_big_endian(enc: int, start: bytes, size: bytes, want: tuple) -> None:
    assert python_and_c(section(enc, start, size, big=True), big=True) == (*want, ROWS)


M32 = 1 << 32


@pytest.mark.parametrize(("enc", "start", "size", "want"), [
    (0x00, struct.pack("<I", 0xFFFF_FFFF), struct.pack("<I", 0x20), (0xFFFF_FFFF, 0x20)),
    (0x0B, struct.pack("<i", -2), struct.pack("<i", 0x20), (M32 - 2, 0x20)),
    (0x09, sleb(-1), sleb(-0x20), (M32 - 1, M32 - 0x20)),
    # a wider value than the address keeps only the address's bits
    (0x04, struct.pack("<Q", M32 + 5), struct.pack("<Q", (1 << 36) + 6), (5, 6)),
    (0x0C, struct.pack("<q", -2), struct.pack("<q", -(1 << 33)), (M32 - 2, 0)),
    (0x1B, struct.pack("<i", -(VMA + FIELD)), struct.pack("<i", 0x20), (0, 0x20)),
    (0x1B, struct.pack("<i", -(VMA + FIELD) - 1), struct.pack("<i", 0x20), (M32 - 1, 0x20)),
])
def test_value_formats_32_bit(enc: int, start: bytes, size: bytes, want: tuple) -> None:
    assert python_and_c(section(enc, start, size), asz=4) == (*want, ROWS)


@pytest.mark.parametrize(("asz", "vma"), [(4, M32 - FIELD - 0x10), (8, M64 - FIELD - 0x10)])
def test_pcrel_wraps_at_the_address_size(asz: int, vma: int) -> None:
    # the field is 0x10 bytes below the top of the address space: 0x20 past it wraps to 0x10
    data = section(0x1B, struct.pack("<i", 0x20), struct.pack("<i", 0x20))
    assert python_and_c(data, vma=vma, asz=asz) == (0x10, 0x20, ROWS)
    data = section(0x1B, struct.pack("<i", 0x0F), struct.pack("<i", 0x20))
    assert python_and_c(data, vma=vma, asz=asz) == ((1 << 8 * asz) - 1, 0x20, ROWS)


@pytest.mark.parametrize(("enc", "message", "at"), [
    (0x33, "pointer application 0x33 not supported", FIELD + 4),  # datarel: after the value
    (0x3B, "pointer application 0x3b not supported", FIELD + 4),
    (0x63, "pointer application 0x63 not supported", FIELD + 4),
    (0x73, "pointer application 0x73 not supported", FIELD + 4),
    (0x0F, "pointer encoding 0xf not supported", FIELD),
    (0xFF, "pointer encoding 0xff not supported", FIELD),  # omit: an FDE cannot omit pc_begin
    (0x08, "pointer encoding 0x8 not supported", FIELD),
    (0x0E, "pointer encoding 0xe not supported", FIELD),
])
def test_refused_pointers_are_located(enc: int, message: str, at: int) -> None:
    data = section(enc, struct.pack("<I", 0x401000), struct.pack("<I", 0x20))
    assert python_and_c(data) == (f"{message} (at .eh_frame+{at:#x})", at)


def test_a_pointer_cut_short_is_located() -> None:
    # udata8 with only four bytes before the entry's end
    o = "<"
    cie = _entry(struct.pack(o + "I", 0) + b"\x01zR\0" + uleb(1) + sleb(-8) + b"\x10"
                 + uleb(1) + b"\x04" + b"\x0c\x07\x08", o)
    fde = struct.pack("<II", 8, 0x18) + struct.pack("<I", 0x1000)
    assert python_and_c(cie + fde) == ("entry ends inside a field (at .eh_frame+0x1c)", FIELD)


def test_cursor_pointer_directly() -> None:
    """The Cursor on its own: where the field is, with a base (a CIE's augmentation data)."""
    data = b"\xAA" * 4 + struct.pack("<q", -3)
    assert Cursor(data, 4, 12, False).pointer(0x0C, 0, 8) == M64 - 3
    assert Cursor(data, 4, 12, False).pointer(0x0C, 0, 4) == M32 - 3
    # pcrel from vma + base + position: 0x100 + 0x30 + 4
    assert Cursor(data, 4, 12, False, 0x30).pointer(0x1C, 0x100, 8) == 0x134 - 3
    c = Cursor(b"\x7f", 0, 1, False)
    assert (c.pointer(0x09, 0, 8), c.pos) == (M64 - 1, 1)
    c = Cursor(struct.pack(">Q", 0x1122_3344_5566_7788), 0, 8, True)
    assert c.pointer(0x00, 0, 8) == 0x1122_3344_5566_7788
    c = Cursor(struct.pack(">I", 0x1122_3344), 0, 4, True)
    assert (c.pointer(0x00, 0, 4), c.pos) == (0x1122_3344, 4)


def test_a_cie_with_pcrel_sdata8_is_read_field_by_field() -> None:
    # 0x1c has the 32-bit shortcut's layout for its first 13 bytes (a start below 4 GiB, a
    # range whose low byte is 0): only the encoding says the fields are 8 bytes
    data = section(0x1C, struct.pack("<q", 0x1000), struct.pack("<q", 0x300))
    assert python_and_c(data) == (VMA + FIELD + 0x1000, 0x300, ROWS)
