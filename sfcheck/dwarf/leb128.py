"""The one LEB128 reader of the DWARF package (call-frame programs and expressions)."""

from __future__ import annotations

from ..errors import SfcheckError

MAX_SHIFT = 70  # more than 11 bytes is no number a DWARF writer produces


class LebError(SfcheckError):
    """The number is cut short by `end` (`cut`), or longer than any real writer's."""

    def __init__(self, cut: bool, pos: int) -> None:
        super().__init__("LEB128 number cut short" if cut else "LEB128 number too long")
        self.cut, self.pos = cut, pos


def leb128(data: bytes, pos: int, end: int, signed: bool) -> tuple[int, int]:
    """(value, position after it) of the LEB128 number at data[pos:end]."""
    value = shift = 0
    while pos < end:
        b = data[pos]
        pos += 1
        value |= (b & 0x7F) << shift
        shift += 7
        if not b & 0x80:
            return (value - (1 << shift) if signed and b & 0x40 else value), pos
        if shift > MAX_SHIFT:
            raise LebError(False, pos)
    raise LebError(True, pos)
