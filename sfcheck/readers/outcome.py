"""What a modelled reader does for one registration or one PC lookup."""

from __future__ import annotations

from dataclasses import dataclass

from ..format.fre_rules import RegRule
from ..wording import plural

# Outcome kinds. "row": the reader answered with rules; the rest are its failures.
ROW = "row"
EINVAL = "einval"  # the lookup fails (the unwinder falls back or stops)
EFAULT = "efault"  # the lookup fails; the V3 series drops the section from the process
UNINIT = "uninit"  # the answer depends on an uninitialised variable
PAST = "past"  # the reader reads bytes outside the section
DIV0 = "div0"  # division by zero
REFUSED = "refused"  # registration fails: no lookup ever happens


class Uninit:
    """An uninitialised local (a stack slot the reader never wrote)."""

    def __init__(self, name: str) -> None:
        self.name = name

    def __repr__(self) -> str:
        return f"<uninitialised {self.name}>"


class PastSection(Exception):
    """A read of bytes outside the section: their value is not known."""

    def __init__(self, offset: int, size: int, what: str) -> None:
        super().__init__(f"reads {plural(size, 'byte')} at section offset {offset:#x} ({what}), "
                         "outside the section")
        self.offset = offset


@dataclass(frozen=True, slots=True)
class Outcome:
    kind: str
    detail: str = ""
    fde: int | None = None  # index of the FDE record the reader used (may be num_fdes)
    fre: int | None = None  # index of the FRE the reader used within that FDE
    cfa: RegRule | None = None
    ra: RegRule | None = None
    fp: RegRule | None = None
    outermost: bool = False
    # Things the reader did on the way that the answer does not show (e.g. a read one
    # FDE past the table that happened to land inside the section).
    notes: tuple[str, ...] = ()
    cause: str = ""  # short name of the reader defect behind a failure


class Bytes:
    """The section as the reader sees it: bounded reads, PastSection outside."""

    def __init__(self, data: bytes, big_endian: bool = False) -> None:
        self.data = data
        self.order = "big" if big_endian else "little"

    def uint(self, off: int, size: int, what: str) -> int:
        if off < 0 or off + size > len(self.data):
            raise PastSection(off, size, what)
        return int.from_bytes(self.data[off:off + size], self.order)

    def sint(self, off: int, size: int, what: str) -> int:
        return wrap(self.uint(off, size, what), 8 * size)


def wrap(value: int, bits: int) -> int:
    """`value` stored into a signed integer of `bits` bits (two's complement)."""
    value &= (1 << bits) - 1
    return value - (1 << bits) if value >> (bits - 1) else value
