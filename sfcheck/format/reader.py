"""Bounds-checked reads from SFrame bytes.

Every read names the structure and field it is reading, so a short or
truncated section fails with a located DecodeError rather than an IndexError
or a struct.error.
"""

from __future__ import annotations

import struct

from ..errors import DecodeError

_FORMATS = {
    ("u8", 1): "B", ("i8", 1): "b",
    ("u16", 2): "H", ("i16", 2): "h",
    ("u32", 4): "I", ("i32", 4): "i",
    ("u64", 8): "Q", ("i64", 8): "q",
}


class Reader:
    """Reads fixed-width integers from `data` in one byte order."""

    __slots__ = ("data", "size", "big_endian", "_structs")

    def __init__(self, data: bytes, big_endian: bool) -> None:
        self.data = data
        self.size = len(data)
        self.big_endian = big_endian
        order = ">" if big_endian else "<"
        self._structs = {name: struct.Struct(order + code)
                         for (name, _), code in _FORMATS.items()}

    def need(self, offset: int, length: int, structure: str, field: str | None = None) -> None:
        """Raise a located DecodeError unless [offset, offset+length) is inside the data."""
        if offset < 0 or length < 0 or offset + length > self.size:
            raise DecodeError(
                f"{length} byte(s) needed at offset {offset:#x} but the section has "
                f"{self.size:#x} bytes", offset, structure, field)

    def _read(self, kind: str, width: int, offset: int, structure: str, field: str) -> int:
        if offset < 0 or offset + width > self.size:
            self.need(offset, width, structure, field)
        return self._structs[kind].unpack_from(self.data, offset)[0]

    def u8(self, offset: int, structure: str, field: str) -> int:
        return self._read("u8", 1, offset, structure, field)

    def i8(self, offset: int, structure: str, field: str) -> int:
        return self._read("i8", 1, offset, structure, field)

    def u16(self, offset: int, structure: str, field: str) -> int:
        return self._read("u16", 2, offset, structure, field)

    def u32(self, offset: int, structure: str, field: str) -> int:
        return self._read("u32", 4, offset, structure, field)

    def i32(self, offset: int, structure: str, field: str) -> int:
        return self._read("i32", 4, offset, structure, field)

    def i64(self, offset: int, structure: str, field: str) -> int:
        return self._read("i64", 8, offset, structure, field)

    def uint(self, width: int, offset: int, structure: str, field: str) -> int:
        """An unsigned integer of 1, 2 or 4 bytes (FRE start addresses)."""
        return self._read({1: "u8", 2: "u16", 4: "u32"}[width], width, offset, structure, field)

    def sints(self, width: int, count: int, offset: int, structure: str,
              field: str) -> tuple[int, ...]:
        """`count` signed integers of `width` bytes (FRE data words)."""
        self.need(offset, width * count, structure, field)
        code = {1: "b", 2: "h", 4: "i"}[width]
        fmt = (">" if self.big_endian else "<") + code * count
        return struct.unpack_from(fmt, self.data, offset)

    def bytes(self, offset: int, length: int, structure: str, field: str) -> bytes:
        self.need(offset, length, structure, field)
        return self.data[offset:offset + length]
