"""The FDE table read column-wise: the one reader of FDE records in bulk.

The checker's fast path, the FRE-block walk (dump, .eh_frame cross-check) and the
unwinder's index all need the start, size and FRE-offset fields of many FDEs at
once; reading them here, as arrays of ints in C (no per-FDE Python), keeps one
definition of where each field is. Function starts are resolved by
`Header.start_base`, the one place that knows the PC-relative formula.
Callers check the FDE array against the section first (decode.check_fde_array).
"""

from __future__ import annotations

import sys
from array import array
from itertools import islice, repeat
from operator import add, lt

from . import constants as C
from .model import Header

UCODE = {1: "B", 2: "H", 4: "I", 8: "Q"}
_SCODE = {1: "b", 2: "h", 4: "i", 8: "q"}
HOST_LITTLE = sys.byteorder == "little"

# Width of the signed start field at the front of every FDE (index) record.
START_WIDTH = {C.VERSION_1: 4, C.VERSION_2: 4, C.VERSION_3: 8}


def column(rec: bytes, stride: int, off: int, width: int, signed: bool, big: bool,
           n: int) -> array:
    """Field `off` (width bytes) of n records of `stride` bytes, as an array of ints."""
    code = (_SCODE if signed else UCODE)[width]
    if width == 1:
        return array(code, rec[off::stride])
    out = bytearray(width * n)
    for k in range(width):
        out[k::width] = rec[off + k::stride]
    arr = array(code, out)
    if big == HOST_LITTLE:  # the data is not in host order
        arr.byteswap()
    return arr


def records(data: bytes, h: Header, a: int, b: int) -> bytes:
    """The raw records of FDEs a..b-1."""
    return data[h.fdes_start + a * h.fde_size:h.fdes_start + b * h.fde_size]


class Columns:
    """Stored start fields, sizes and FRE offsets of FDEs a..b-1."""

    __slots__ = ("a", "n", "rec", "starts", "sizes", "fre_offs")

    def __init__(self, data: bytes, h: Header, a: int, b: int) -> None:
        self.a = a
        self.n = n = b - a
        self.rec = rec = records(data, h, a, b)
        fsz, big, wide = h.fde_size, h.big_endian, START_WIDTH[h.version]
        self.starts = column(rec, fsz, 0, wide, True, big, n)
        self.sizes = column(rec, fsz, wide, 4, False, big, n)
        self.fre_offs = column(rec, fsz, wide + 4, 4, False, big, n)

    def pcs(self, h: Header, vma: int, field_relative: bool | None = None,
            honour_fdeoff: bool = True) -> list[int]:
        """Absolute function starts (Header.func_start, for the whole column)."""
        base, stride = h.start_base(field_relative, honour_fdeoff)
        if not stride:
            return list(map(add, self.starts, repeat(vma + base, self.n)))
        first = vma + base + self.a * stride
        return list(map(add, self.starts, range(first, first + self.n * stride, stride)))


def block_ends(data: bytes, h: Header, readable: int, limit: int) -> array[int] | None:
    """Per FDE 0..readable-1: where the next FRE block by offset begins (the last one:
    `limit`); None when the blocks are in table order (then that is the next FDE's).
    An array: it is kept for the cross-check, and a list would cost an int object per FDE."""
    return block_ends_distinct(data, h, readable, limit)[0]


def block_ends_distinct(data: bytes, h: Header, readable: int,
                        limit: int) -> tuple[array[int] | None, bool]:
    """block_ends(), and whether no two FDEs share a block start (then each block lies
    before its end there, in table order or not, when the blocks are disjoint)."""
    # The FRE-offset column alone, as an array: int objects are made once, by the sort,
    # and shared by the sorted list and the dict (a list of the column would hold a second
    # set: ~30 MB at 1M FDEs).
    offs = column(records(data, h, 0, readable), h.fde_size, START_WIDTH[h.version] + 4, 4,
                  False, h.big_endian, readable)
    if all(map(lt, offs, islice(offs, 1, None))):
        return None, True
    # Sorting the offsets, not a set of them, is cheaper (gcc's .cold blocks leave long
    # increasing runs for the sort) and says whether they are distinct.
    srt = sorted(offs)
    distinct = all(map(lt, srt, islice(srt, 1, None)))
    if not distinct:
        srt = sorted(set(srt))
    # offset -> the next greater offset (the greatest: the end of the FRE data); the last
    # offset is left out by zip (shorter second argument)
    nxt = dict(zip(srt, islice(srt, 1, None), strict=False))
    nxt[srt[-1]] = limit - h.fres_start
    return array("q", map(add, map(nxt.__getitem__, offs), repeat(h.fres_start))), distinct
