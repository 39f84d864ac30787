"""Bounded reads inside one `.eh_frame` entry: fixed-size fields, LEB128 numbers, strings,
blocks and DW_EH_PE-encoded pointers. A read past the entry, like anything else malformed,
raises EhFrameError with the section offset."""

from __future__ import annotations

import struct

from ..errors import SfcheckError
from .leb128 import LebError, leb128


class EhFrameError(SfcheckError):
    def __init__(self, message: str, offset: int) -> None:
        super().__init__(f"{message} (at .eh_frame+{offset:#x})")
        self.offset = offset


class Cursor:
    """Bounded little/big-endian reads inside [pos, end)."""

    def __init__(self, data: bytes, pos: int, end: int, big: bool, base: int = 0) -> None:
        self.data, self.pos, self.end, self.o = data, pos, end, ">" if big else "<"
        self.base = base  # section offset of data[0], for error messages

    def need(self, n: int) -> int:
        p = self.pos
        if n < 0 or p + n > self.end:
            raise EhFrameError("entry ends inside a field", self.base + p)
        self.pos = p + n
        return p

    def u8(self) -> int:
        return self.data[self.need(1)]

    def fixed(self, code: str, size: int) -> int:
        return struct.unpack_from(self.o + code, self.data, self.need(size))[0]

    def uleb(self) -> int:
        return self._leb(False)

    def sleb(self) -> int:
        return self._leb(True)

    def _leb(self, signed: bool) -> int:
        try:
            value, self.pos = leb128(self.data, self.pos, self.end, signed)
        except LebError as exc:
            raise EhFrameError("entry ends inside a field" if exc.cut else
                               "LEB128 number too long", self.base + exc.pos) from None
        return value

    def cstring(self) -> bytes:
        end = self.data.find(b"\0", self.pos, self.end)
        if end < 0:
            raise EhFrameError("unterminated augmentation string", self.base + self.pos)
        s = self.data[self.pos:end]
        self.pos = end + 1
        return s

    def block(self) -> bytes:
        n = self.uleb()
        p = self.need(n)
        return self.data[p:p + n]

    def pointer(self, enc: int, vma: int, address_size: int) -> int:
        """A DW_EH_PE-encoded pointer (pcrel relative to the field's address)."""
        field_at = vma + self.base + self.pos
        fmt = enc & 0x0F
        if fmt == 0x00:
            v = self.fixed("Q" if address_size == 8 else "I", address_size)
        elif fmt == 0x01:
            v = self.uleb()
        elif fmt == 0x09:
            v = self.sleb()
        elif fmt in _FIXED:
            code, size = _FIXED[fmt]
            v = self.fixed(code, size)
        else:
            raise EhFrameError(f"pointer encoding {enc:#x} not supported", self.base + self.pos)
        app = enc & 0x70
        if app == 0x10:
            v += field_at
        elif app not in (0x00, 0x50):  # textrel/datarel/funcrel have no base here
            raise EhFrameError(f"pointer application {enc:#x} not supported",
                               self.base + self.pos)
        return v & ((1 << (8 * address_size)) - 1)


_FIXED = {0x02: ("H", 2), 0x03: ("I", 4), 0x04: ("Q", 8),
          0x0A: ("h", 2), 0x0B: ("i", 4), 0x0C: ("q", 8)}
