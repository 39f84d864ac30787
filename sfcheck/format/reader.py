"""Bounds-checked reads from SFrame bytes.

Every read names the structure and field it is reading, so a short or
truncated section fails with a located DecodeError rather than an IndexError
or a struct.error.
"""

from __future__ import annotations

from ..errors import DecodeError
from ..wording import plural


class Reader:
    """Bounds checks for reads of `data`; callers unpack with precompiled structs."""

    __slots__ = ("data", "size", "big_endian")

    def __init__(self, data: bytes, big_endian: bool) -> None:
        self.data = data
        self.size = len(data)
        self.big_endian = big_endian

    def need(self, offset: int, length: int, structure: str, field: str | None = None) -> None:
        """Raise a located DecodeError unless [offset, offset+length) is inside the data."""
        if offset < 0 or length < 0 or offset + length > self.size:
            raise DecodeError(
                f"{plural(length, 'byte')} needed at offset {offset:#x} but the section has "
                f"{self.size:#x} bytes", offset, structure, field)

    def bytes(self, offset: int, length: int, structure: str, field: str) -> bytes:
        self.need(offset, length, structure, field)
        return self.data[offset:offset + length]
