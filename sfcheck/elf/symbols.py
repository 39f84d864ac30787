"""Symbol tables: function symbols for naming code in findings, read column-wise on first
use (FuncSymbols), and single entries by index for relocations (SymbolEntries). Both read
the same bytes, which the loader copies once per table (elf.headers.ElfFile.symbol_table),
in the one entry layout of ``entry_format``."""

from __future__ import annotations

import struct
import sys
from bisect import bisect_left, bisect_right
from collections.abc import Iterator
from itertools import compress, islice, repeat
from operator import add, and_, eq, itemgetter, lshift, lt, rshift, sub

from sfcheck.elf.constants import MAX_SYMBOL_NAME, SHN_LORESERVE
from sfcheck.elf.model import FuncSymbol, SymbolColumns
from sfcheck.result import CUT_MARK


def entry_format(order: str, is64: bool) -> str:
    """The struct format of one Elf32_Sym or Elf64_Sym, fields in their stored order:
    st_name, st_info, st_other, st_shndx, st_value, st_size (64-bit) or st_name,
    st_value, st_size, st_info, st_other, st_shndx (32-bit)."""
    return order + ("IBBHQQ" if is64 else "IIIBBH")


def entry_size(is64: bool) -> int:
    return 24 if is64 else 16


class SymbolEntries:
    """One symbol table read an entry at a time, by index (as a relocation names its
    symbol): any symbol type, section symbols included."""

    __slots__ = ("_raw", "_is64", "_unpack", "count")

    def __init__(self, raw: bytes, order: str, is64: bool) -> None:
        self._raw, self._is64 = raw, is64
        self._unpack = struct.Struct(entry_format(order, is64)).unpack_from
        self.count = len(raw) // entry_size(is64)

    def value_and_section(self, index: int) -> tuple[int, int]:
        """(st_value, st_shndx) of entry `index` (below `count`)."""
        fields = self._unpack(self._raw, index * entry_size(self._is64))
        return (fields[4], fields[3]) if self._is64 else (fields[1], fields[5])


def string_at(table: bytes, off: int) -> str:
    """The NUL-terminated string at `off` of a string table, looked at for at most
    MAX_SYMBOL_NAME bytes (so a name without NUL costs no more than a short one) and cut
    with a marker (``result.clip``); "?" when `off` is outside the table."""
    if not 0 <= off < len(table):
        return "?"
    end = table.find(b"\0", off, off + MAX_SYMBOL_NAME + 1)
    if end >= 0:
        return table[off:end].decode("utf-8", "replace")
    return table[off : off + MAX_SYMBOL_NAME].decode("utf-8", "replace") + CUT_MARK


class FuncSymbols(SymbolColumns):
    """The STT_FUNC/STT_GNU_IFUNC symbols of one symbol table, defined in a section, in
    the order (address, -size, name), read on first use: a file whose findings name no
    function never pays for its symbol table. Addresses and sizes are read column-wise
    in bulk; a FuncSymbol (and its name) is made only for the entries asked for.

    `bases` (a .o's layout) places each symbol at its section's address."""

    __slots__ = ("_raw", "_strtab", "_order", "_is64", "_bases", "_flat", "_cols")
    # info byte -> 1 for STT_FUNC (2) and STT_GNU_IFUNC (10)
    _FUNC_TYPE = bytes(1 if i & 0xF in (2, 10) else 0 for i in range(256))
    _NONZERO = bytes([0] + [1] * 255)
    _BELOW_FF = bytes([1] * 255 + [0])

    def __init__(self, raw: bytes, strtab: bytes, order: str, is64: bool,
                 bases: dict[int, int] | None) -> None:
        self._raw, self._strtab, self._order, self._is64 = raw, strtab, order, is64
        self._bases = bases
        self._flat: tuple[list[int], list[int], list[int]] | None = None  # table order
        self._cols: tuple[list[int], list[int], list[int]] | None = None  # sorted

    @property
    def addrs(self) -> list[int]:
        """Every symbol's address, in order (for bisect)."""
        return self._columns()[0]

    def __len__(self) -> int:
        return len(self._unsorted()[0])  # (as many, sorted or not)

    def __getitem__(self, i):  # type: ignore[override]
        if isinstance(i, slice):
            return [self[k] for k in range(*i.indices(len(self)))]
        addrs, sizes, offs = self._columns()
        return FuncSymbol(addrs[i], sizes[i], string_at(self._strtab, offs[i]) or "?")

    def __iter__(self) -> Iterator[FuncSymbol]:
        return map(self.__getitem__, range(len(self)))

    def address_set(self) -> set[int]:
        """Every symbol's address, unsorted (no sort needed)."""
        return set(self._unsorted()[0])

    def _columns(self) -> tuple[list[int], list[int], list[int]]:
        if self._cols is None:
            self._cols = self._read()
        return self._cols

    def name(self, off: int) -> str:
        return string_at(self._strtab, off) or "?"

    def names_at(self, pcs: list[int], targeted: bool | None = None) -> list[str | None]:
        """Per PC, what checker.name_functions finds for it in this sorted table (the first
        of the (up to) 8 symbols at or before it, nearest first, that contains it), without
        sorting the whole table when it is not sorted yet: only the symbols whose address
        is one of those 8 positions' are ordered, and placed by their rank. `targeted`
        forces that way (True) or the whole sort (False); by default the whole sort is
        taken when done already or when the PCs are many for the table."""
        if targeted is None:
            targeted = self._cols is None and len(pcs) * 64 <= len(self._unsorted()[0])
        if not targeted:
            syms, starts = self, self.addrs
            out: list[str | None] = []
            for pc in pcs:
                k = bisect_right(starts, pc) - 1
                out.append(next((sym.name for sym in map(syms.__getitem__,
                                                         range(k, max(k - 8, -1), -1))
                                 if sym.addr <= pc < sym.addr + max(sym.size, 1)), None))
            return out
        addrs, sizes, offs = self._unsorted()
        sa = sorted(addrs)
        ks = [bisect_right(sa, pc) - 1 for pc in pcs]
        needed = {a for k in ks for a in sa[max(k - 7, 0):k + 1]}
        picked = sorted((addrs[j], -sizes[j], self.name(offs[j]), j)
                        for j in compress(range(len(addrs)), map(needed.__contains__, addrs)))
        # The global position of each picked symbol: symbols below its address, plus its
        # rank among those at its address (all of which are picked).
        at: dict[int, tuple[int, int, str]] = {}
        prev, rank = None, 0
        for a, negsize, name, _j in picked:
            rank = rank + 1 if a == prev else 0
            prev = a
            at[bisect_left(sa, a) + rank] = (a, -negsize, name)
        out = []
        for pc, k in zip(pcs, ks, strict=True):
            found = None
            for j in range(k, max(k - 8, -1), -1):
                a, size, name = at[j]
                if a <= pc < a + max(size, 1):
                    found = name
                    break
            out.append(found)
        return out

    def _unsorted(self) -> tuple[list[int], list[int], list[int]]:
        """(addresses, sizes, name offsets) of the kept symbols, in table order."""
        if self._flat is None:
            self._flat = self._read_table()
        return self._flat

    def _read_table(self) -> tuple[list[int], list[int], list[int]]:
        body = self._raw[entry_size(self._is64):]  # entry 0 is the null symbol
        if self._is64 and self._order == "<" and sys.byteorder == "little":
            return self._read_le64(body)
        fmt = entry_format(self._order, self._is64)
        cols = list(zip(*struct.iter_unpack(fmt, body), strict=True)) or [()] * 6
        if self._is64:
            names, info_t, _o, shndx, values, sizes = map(list, cols)
        else:
            names, values, sizes, info_t, _o, shndx = map(list, cols)
        infos = bytes(info_t)
        n = len(names)
        # SHN_UNDEF < shndx < SHN_LORESERVE, as (shndx - 1) mod 2**16 < SHN_LORESERVE - 1
        in_section = map(lt, map(and_, map(sub, shndx, repeat(1, n)), repeat(0xFFFF, n)),
                         repeat(SHN_LORESERVE - 1, n))
        keep = bytes(map(and_, infos.translate(self._FUNC_TYPE), in_section))
        addrs = list(compress(values, keep))
        if self._bases is not None:
            addrs = list(map(add, addrs, map(self._bases.get, compress(shndx, keep),
                                             repeat(0))))
        return addrs, list(compress(sizes, keep)), list(compress(names, keep))

    def _read_le64(self, body: bytes) -> tuple[list[int], list[int], list[int]]:
        """_read_table's columns of a 64-bit little-endian table on a little-endian host:
        st_name | st_info << 32 | st_other << 40 | st_shndx << 48, st_value, st_size. The
        keep mask comes from byte columns; int objects are made only for the symbols kept."""
        q = memoryview(body).cast("Q")
        lo, hi = body[6::24], body[7::24]  # st_shndx
        n = len(lo)
        # SHN_UNDEF < shndx < SHN_LORESERVE: some byte set, and the high one below 0xff
        # (0/1 bytes ANDed, and bytes ORed, as big integers)
        set_ = (int.from_bytes(lo, "little") | int.from_bytes(hi, "little")).to_bytes(
            n, "little").translate(self._NONZERO)
        keep = (int.from_bytes(body[4::24].translate(self._FUNC_TYPE), "little")
                & int.from_bytes(hi.translate(self._BELOW_FF), "little")
                & int.from_bytes(set_, "little")).to_bytes(n, "little")
        addrs = list(compress(q[1::3], keep))
        if self._bases is not None:
            addrs = list(map(add, addrs, map(self._bases.get, map(
                rshift, compress(q[0::3], keep), repeat(48)), repeat(0))))
        return (addrs, list(compress(q[2::3], keep)),
                list(compress(memoryview(body).cast("I")[0::6], keep)))

    def _read(self) -> tuple[list[int], list[int], list[int]]:
        """(addresses, sizes, name offsets) of the kept symbols, sorted."""
        addrs, sizes, offs = self._unsorted()
        # (address, -size) as one integer per symbol (sizes are below 2**64)
        keys = list(map(sub, map(lshift, addrs, repeat(64)), sizes))
        if all(map(lt, keys, islice(keys, 1, None))):
            return addrs, sizes, offs  # already in order, no ties
        order = sorted(range(len(keys)), key=keys.__getitem__)
        sk = list(map(keys.__getitem__, order))
        ties = list(compress(range(len(sk) - 1), map(eq, sk, islice(sk, 1, None))))
        k = 0
        while k < len(ties):  # equal (address, size): by name (aliases), stably
            a = b = ties[k]
            while k < len(ties) and ties[k] == b:
                b += 1
                k += 1
            order[a:b + 1] = sorted(order[a:b + 1],
                                    key=lambda j: string_at(self._strtab, offs[j]) or "?")
        pick = itemgetter(*order)  # (at least two symbols here: else they are in order)
        return list(pick(addrs)), list(pick(sizes)), list(pick(offs))

