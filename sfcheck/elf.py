"""Find SFrame data, and the context needed to check it, in an ELF file.

This layer knows nothing about the SFrame format itself (``sfcheck.format``
decodes the bytes).  It locates ``.sframe`` sections and every ``PT_GNU_SFRAME``
segment (the kernel's way in: a segment no section header describes is handed on
as a section of its own), applies ``.rela.sframe`` in relocatable objects, and
lists the executable address ranges that FDEs are expected to point into.  The
result types live in :mod:`sfcheck.elfmodel`; this module is the one loader that
fills them (its parts share the decoded header tables, so they stay together).

Input is untrusted: every failure becomes an :class:`ElfError`.  The file is
mapped or used in place, never read whole: only the header tables and the
sections needed are copied out, each bounded (``MAX_SECTION_BYTES``), as are
the SFrame sections per file, the symbols read and the bytes of each name.  The
section and program header tables are decoded with :mod:`struct` directly
(pyelftools reports unknown ``sh_type``/``p_type`` values as bare ints, and
building its ``Section`` objects eagerly parses linked sections, so one broken
unrelated section would make the whole file unreadable).
"""

from __future__ import annotations

import mmap
import os
import struct
import sys
from bisect import bisect_left, bisect_right
from collections.abc import Iterator, Sequence
from itertools import compress, islice, repeat
from operator import add, and_, eq, itemgetter, lshift, lt, rshift, sub

from sfcheck.elfgroups import read_facts
from sfcheck.elfmodel import (
    CfiView,
    ElfSFrameInfo,
    FuncSymbol,
    LoadSegment,
    SFrameSection,
    SFrameSegment,
    TextRange,
)
from sfcheck.errors import ElfError
from sfcheck.fileio import FileView, InputFileError, open_regular
from sfcheck.record import Record
from sfcheck.result import CUT_MARK, clip

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing at run time
if TYPE_CHECKING:
    from typing import Literal

__all__ = [
    "PT_GNU_SFRAME",
    "SHT_GNU_SFRAME",
    "CfiView",
    "ElfSFrameInfo",
    "FuncSymbol",
    "LoadSegment",
    "SFrameSection",
    "SFrameSegment",
    "TextRange",
    "is_elf",
    "load_elf",
]

SHT_GNU_SFRAME = 0x6FFFFFF4
PT_GNU_SFRAME = 0x6474E554

ELF_MAGIC = b"\x7fELF"

SHT_PROGBITS = 1
SHT_SYMTAB = 2
SHT_RELA = 4
SHT_NOBITS = 8
SHT_REL = 9
SHT_NOTE = 7
SHT_DYNSYM = 11

SHF_ALLOC = 0x2
SHF_EXECINSTR = 0x4

PT_LOAD = 1
PF_X = 1

SHN_UNDEF = 0
SHN_LORESERVE = 0xFF00
SHN_XINDEX = 0xFFFF
PN_XNUM = 0xFFFF

# Bounds on what one file may make us hold or do (a hostile header can claim anything).
MAX_SECTION_BYTES = 256 << 20  # one section copied out of the file (.sframe, .eh_frame, ...)
MAX_SFRAME_SECTIONS = 64  # SFrame sections checked per file (linked files have one)
MAX_SYMBOLS = 1 << 21  # symbol table entries read for names (big C++ libraries have ~1M)
MAX_SYMBOL_NAME = 256  # bytes of a symbol name looked at (a name without NUL is cut here)

EM_S390 = 22
EM_X86_64 = 62
EM_AARCH64 = 183

_E_TYPES = {0: "ET_NONE", 1: "ET_REL", 2: "ET_EXEC", 3: "ET_DYN", 4: "ET_CORE"}
_MACHINES = {3: "EM_386", EM_S390: "EM_S390", EM_X86_64: "EM_X86_64", EM_AARCH64: "EM_AARCH64",
             40: "EM_ARM", 243: "EM_RISCV", 21: "EM_PPC64", 8: "EM_MIPS"}


def machine_name(e_machine: int) -> str | int:
    """pyelftools' name for an e_machine value (its table loaded only for rare machines)."""
    name = _MACHINES.get(e_machine)
    if name is None:
        from elftools.elf.enums import ENUM_E_MACHINE
        name = next((k for k, v in ENUM_E_MACHINE.items() if v == e_machine), e_machine)
    return name

# Relocation types that can appear in .rela.sframe, per machine:
# type -> (name, width in bytes, pc-relative).  A width of 0 means "*_NONE":
# nothing to do.  Anything not listed is reported, never skipped, so a
# relocation we do not understand cannot silently leave wrong addresses behind.
_RELOC_TYPES: dict[int, dict[int, tuple[str, int, bool]]] = {
    EM_X86_64: {
        0: ("R_X86_64_NONE", 0, False),
        1: ("R_X86_64_64", 8, False),
        2: ("R_X86_64_PC32", 4, True),
        10: ("R_X86_64_32", 4, False),
        11: ("R_X86_64_32S", 4, False),
        24: ("R_X86_64_PC64", 8, True),
    },
    EM_AARCH64: {
        0: ("R_AARCH64_NONE", 0, False),
        # 256 is the older spelling of the null relocation (R_AARCH64_NULL /
        # R_AARCH64_NONE depending on the binutils era); both mean "nothing".
        256: ("R_AARCH64_NONE", 0, False),
        257: ("R_AARCH64_ABS64", 8, False),
        258: ("R_AARCH64_ABS32", 4, False),
        260: ("R_AARCH64_PREL64", 8, True),
        261: ("R_AARCH64_PREL32", 4, True),
    },
    EM_S390: {
        0: ("R_390_NONE", 0, False),
        4: ("R_390_32", 4, False),
        5: ("R_390_PC32", 4, True),
        22: ("R_390_64", 8, False),
        23: ("R_390_PC64", 8, True),
    },
}

# One relocation, resolved: (r_offset, width, pc-relative, st_value, index of the section
# the symbol is relative to or 0, addend or None for REL).
_Reloc = tuple[int, int, bool, int, int, "int | None"]
_MASKS = {4: (1 << 32) - 1, 8: (1 << 64) - 1}

# What a damaged table can still raise from inside the bounded struct reads.
_PARSE_ERRORS = (
    struct.error,
    ValueError,
    IndexError,
    KeyError,
    AssertionError,
    UnicodeDecodeError,
    OverflowError,
)


class _Shdr(Record, frozen=True):
    """A section header as stored (all fields numeric)."""

    __slots__ = ("index", "name_off", "type", "flags", "addr", "offset", "size", "link",
                 "info", "entsize", "addralign")

    def __init__(self, index: int, name_off: int, type: int, flags: int,  # noqa: A002
                 addr: int, offset: int, size: int, link: int, info: int, entsize: int,
                 addralign: int = 0) -> None:
        self.index, self.name_off, self.type, self.flags = index, name_off, type, flags
        self.addr, self.offset, self.size, self.link = addr, offset, size, link
        self.info, self.entsize, self.addralign = info, entsize, addralign


class _Phdr(Record, frozen=True):
    """A program header as stored."""

    __slots__ = ("index", "type", "flags", "offset", "vaddr", "filesz", "memsz")

    def __init__(self, index: int, type: int, flags: int, offset: int,  # noqa: A002
                 vaddr: int, filesz: int, memsz: int) -> None:
        self.index, self.type, self.flags, self.offset = index, type, flags, offset
        self.vaddr, self.filesz, self.memsz = vaddr, filesz, memsz


Buffer = bytes | bytearray | memoryview | mmap.mmap


def is_elf(data_or_path: Buffer | str | os.PathLike[str]) -> bool:
    """Cheap check of the ELF magic; unreadable paths are simply "not ELF"."""
    if isinstance(data_or_path, bytes | bytearray | memoryview | mmap.mmap):
        return bytes(data_or_path[:4]) == ELF_MAGIC
    try:  # a regular file only: a FIFO or device named here must not block or stream
        fd, _st = open_regular(data_or_path)
    except InputFileError:
        return False
    try:
        return os.pread(fd, 4, 0) == ELF_MAGIC
    except OSError:
        return False
    finally:
        os.close(fd)


def load_elf(
    source: str | os.PathLike[str] | Buffer,
    name: str | None = None,
    cfi: bool = False,
) -> ElfSFrameInfo:
    """Read an ELF file (a path, or its bytes in any buffer) and return its SFrame data.

    Nothing reads the whole file: a path is read at offsets (``fileio.FileView``, which refuses
    anything but a regular file and reports a file that shrank as changed while read), a
    buffer is used in place, and only the header tables
    and the sections needed are copied out, each bounded by ``MAX_SECTION_BYTES``.
    ``name`` labels the input in the result and in error messages (it defaults to the
    path, or ``"<bytes>"``).  ``cfi`` also prepares the `.eh_frame` cross-check inputs
    (:class:`CfiView`).  Raises :class:`ElfError` on any problem with the SFrame side;
    `.eh_frame` problems only set ``cfi.error``.
    """
    owned: FileView | None = None
    data: Buffer | FileView
    if isinstance(source, bytes | bytearray | mmap.mmap):
        data = source
        label = name if name is not None else "<bytes>"
    elif isinstance(source, memoryview):
        label = name if name is not None else "<bytes>"
        if not source.c_contiguous:
            raise ElfError("cannot read a non-contiguous buffer", label)
        data = source.cast("B") if source.format != "B" or source.ndim != 1 else source
    else:
        label = name if name is not None else os.fsdecode(source)
        try:
            # Read, not mapped: a file truncated while it is checked must be one file's
            # error ("changed while read"), not a SIGBUS that kills the scan.
            owned = data = FileView(source)
        except InputFileError as exc:
            raise ElfError(exc.message, label) from None
    try:
        if bytes(data[:4]) != ELF_MAGIC:
            raise ElfError("not an ELF file", label)
        return _Loader(data, label).load(cfi)
    except ElfError:
        raise
    except InputFileError as exc:  # FileView: changed while read, or an I/O error
        raise ElfError(exc.message, label) from None
    except _PARSE_ERRORS as exc:
        # `from None`: callers get one clean ElfError, not a pyelftools chain.
        raise ElfError(f"cannot parse ELF: {type(exc).__name__}: {exc}", label) from None
    finally:
        if owned is not None:
            owned.close()


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


class FuncSymbols(Sequence[FuncSymbol]):
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
        entsize = 24 if self._is64 else 16
        body = self._raw[entsize:]  # entry 0 is the null symbol
        if self._is64 and self._order == "<" and sys.byteorder == "little":
            return self._read_le64(body)
        fmt = self._order + ("IBBHQQ" if self._is64 else "IIIBBH")
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


def address_set(symbols: Sequence[FuncSymbol]) -> set[int]:
    """The symbols' addresses as a set (no sort needed)."""
    if isinstance(symbols, FuncSymbols):
        return set(symbols._unsorted()[0])
    return {s.addr for s in symbols}


def addresses(symbols: Sequence[FuncSymbol]) -> list[int]:
    """The symbols' addresses, in order (without making every FuncSymbol)."""
    if isinstance(symbols, FuncSymbols):
        return symbols.addrs
    return [s.addr for s in symbols]


class _Loader:
    """One load_elf() call: the file bytes plus the decoded header tables."""

    def __init__(self, data: Buffer | FileView, label: str) -> None:
        self.data = data
        self.size = len(data)
        self.label = label
        self._symtabs: dict[int, bytes] = {}  # symbol tables read for relocations
        self._plans: dict[int, list[_Reloc]] = {}  # section index -> its relocations
        # Say plainly that the header is cut short.
        ehsize = {1: 52, 2: 64}.get(data[4] if len(data) > 4 else 0)
        if ehsize is None:
            raise self._fail(f"cannot parse ELF: invalid EI_CLASS {bytes(data[4:5])!r}")
        if len(data) < ehsize:
            raise self._fail(
                f"cannot parse ELF: file too short for the ELF header "
                f"({len(data)} bytes, need {ehsize})"
            )
        if data[5] not in (1, 2):
            raise self._fail(f"cannot parse ELF: invalid EI_DATA {bytes(data[5:6])!r}")
        # The header by hand: pyelftools' ELFFile costs ~50 ms of imports per process,
        # a quarter of readelf's whole run on a 100k-FDE section, for nine fields.
        self.little = data[5] == 1
        self.elfclass = 64 if data[4] == 2 else 32
        self.order = "<" if self.little else ">"
        self.byteorder: Literal["little", "big"] = "little" if self.little else "big"
        fields = struct.unpack_from(
            self.order + ("HHIQQQIHHHHHH" if self.elfclass == 64 else "HHIIIIIHHHHHH"),
            bytes(data[16:ehsize]))
        (self.e_type, self.machine, _version, _entry, self.e_phoff, self.e_shoff, _flags,
         _ehsize, self.e_phentsize, self.e_phnum, self.e_shentsize, self.e_shnum,
         self.e_shstrndx) = fields

    # -- helpers ---------------------------------------------------------

    def _fail(self, message: str) -> ElfError:
        return ElfError(message, self.label)

    def _table_check(self, what: str, off: int, num: int, entsize: int, minsize: int) -> None:
        """Make sure a header table lies inside the file before reading it."""
        if num == 0:
            return
        if entsize < minsize:
            raise self._fail(f"cannot parse ELF: {what} entry size {entsize} < {minsize}")
        end = off + num * entsize
        if end > self.size:
            raise self._fail(
                f"cannot parse ELF: {what} at offset {off:#x} ({num} x {entsize} bytes) "
                f"runs past end of file ({self.size:#x} bytes)"
            )

    def _bytes(self, off: int, size: int, what: str) -> bytes:
        """`size` bytes at `off`, after checking they exist and are within the copy bound."""
        if off + size > self.size:
            raise self._fail(
                f"{what} at offset {off:#x} with size {size:#x} runs past end of file "
                f"({self.size:#x} bytes)"
            )
        if size > MAX_SECTION_BYTES:
            raise self._fail(
                f"{what} has size {size:#x}, over sfcheck's bound of {MAX_SECTION_BYTES:#x} "
                "bytes: not read"
            )
        return bytes(self.data[off : off + size])

    def _section_bytes(self, sh: _Shdr, name: str, prefix: str = "") -> bytes:
        """The stored contents of a section, after checking they exist."""
        if sh.type == SHT_NOBITS or sh.size == 0:
            return b""
        return self._bytes(sh.offset, sh.size, f"{prefix}section {clip(name)} [{sh.index}]")

    # -- header tables ---------------------------------------------------

    def _parse_shdr(self, index: int, table: bytes, off: int) -> _Shdr:
        if self.elfclass == 64:
            fields = struct.unpack_from(self.order + "IIQQQQIIQQ", table, off)
        else:
            fields = struct.unpack_from(self.order + "IIIIIIIIII", table, off)
        name_off, sh_type, flags, addr, offset, size, link, info, align, entsize = fields
        return _Shdr(
            index, name_off, sh_type, flags, addr, offset, size, link, info, entsize, align
        )

    def _section_headers(self) -> list[_Shdr]:
        shoff = self.e_shoff
        shentsize = self.e_shentsize
        shnum = self.e_shnum
        minsize = 64 if self.elfclass == 64 else 40
        if shoff == 0:
            return []
        # Extended numbering: e_shnum == 0 means "the count is in section 0's
        # sh_size" (more than 0xff00 sections).
        self._table_check("section header table", shoff, 1, shentsize, minsize)
        if shnum == 0:
            shnum = self._parse_shdr(0, self._bytes(shoff, minsize, "section header 0"), 0).size
        self._table_check("section header table", shoff, shnum, shentsize, minsize)
        # One read of the whole table (bounded like a section): a file is read, not mapped.
        table = self._bytes(shoff, shnum * shentsize, "section header table")
        return [self._parse_shdr(i, table, i * shentsize) for i in range(shnum)]

    def _section_names(self, shdrs: list[_Shdr]) -> list[str]:
        if not shdrs:
            return []
        shstrndx = self.e_shstrndx
        if shstrndx == SHN_XINDEX:
            shstrndx = shdrs[0].link
        if shstrndx == SHN_UNDEF:
            return [""] * len(shdrs)  # no section name table: nothing has a name
        if shstrndx >= len(shdrs):
            raise self._fail(
                f"cannot parse ELF: e_shstrndx {shstrndx} out of range ({len(shdrs)} sections)"
            )
        strtab_hdr = shdrs[shstrndx]
        if strtab_hdr.type == SHT_NOBITS:
            raise self._fail("cannot parse ELF: section name table has no contents (SHT_NOBITS)")
        strtab = self._section_bytes(strtab_hdr, "name table", "cannot parse ELF: ")
        names = []
        for sh in shdrs:
            if sh.name_off == 0 and not strtab:
                names.append("")
                continue
            if sh.name_off >= len(strtab):
                raise self._fail(
                    f"cannot parse ELF: section [{sh.index}] name offset {sh.name_off:#x} "
                    f"outside section name table ({len(strtab):#x} bytes)"
                )
            # Names only matter for matching ".sframe"; don't reject odd bytes.
            names.append(string_at(strtab, sh.name_off))
        return names

    def _program_headers(self, shdrs: list[_Shdr]) -> list[_Phdr]:
        phoff = self.e_phoff
        phentsize = self.e_phentsize
        phnum = self.e_phnum
        if phnum == PN_XNUM and shdrs:
            phnum = shdrs[0].info  # extended numbering
        if phnum == 0:
            return []
        minsize = 56 if self.elfclass == 64 else 32
        self._table_check("program header table", phoff, phnum, phentsize, minsize)
        table = self._bytes(phoff, phnum * phentsize, "program header table")
        out = []
        for i in range(phnum):
            off = i * phentsize
            if self.elfclass == 64:
                p_type, flags, offset, vaddr, _pa, filesz, memsz, _al = struct.unpack_from(
                    self.order + "IIQQQQQQ", table, off
                )
            else:
                p_type, offset, vaddr, _pa, filesz, memsz, flags, _al = struct.unpack_from(
                    self.order + "IIIIIIII", table, off
                )
            out.append(_Phdr(i, p_type, flags, offset, vaddr, filesz, memsz))
        return out

    # -- relocation ------------------------------------------------------

    def _iter_relocs(self, rs: _Shdr, name: str) -> Iterator[tuple[int, int, int, int | None]]:
        """Yield (r_offset, symbol index, type, addend or None for REL)."""
        rela = rs.type == SHT_RELA
        # Elf{32,64}_Rel{,a}: r_offset, r_info[, r_addend]
        fmt = {(64, True): "QQq", (64, False): "QQ", (32, True): "IIi", (32, False): "II"}[
            (self.elfclass, rela)
        ]
        size = struct.calcsize(self.order + fmt)
        if rs.entsize not in (0, size):
            raise self._fail(f"relocation section {name} has sh_entsize {rs.entsize}, not {size}")
        if rs.size % size:
            raise self._fail(
                f"relocation section {name} size {rs.size:#x} is not a multiple of {size}"
            )
        raw = self._section_bytes(rs, name)
        for entry in struct.iter_unpack(self.order + fmt, raw):
            r_offset, r_info = entry[0], entry[1]
            addend = entry[2] if rela else None
            if self.elfclass == 64:
                yield r_offset, r_info >> 32, r_info & 0xFFFFFFFF, addend
            else:
                yield r_offset, r_info >> 8, r_info & 0xFF, addend

    def _symtab(self, shdrs: list[_Shdr], names: list[str], index: int, where: str,
                sym: int) -> bytes:
        """The symbol table `index` a relocation section links to, read once per file:
        100k relocations against a 4 MB table copied it 100k times (~70 s for 6 MB)."""
        if not 0 < index < len(shdrs) or shdrs[index].type not in (SHT_SYMTAB, SHT_DYNSYM):
            raise self._fail(f"{where}: symbol {sym} but sh_link {index} is no symbol table")
        symtab = self._symtabs.get(index)
        if symtab is None:
            symtab = self._symtabs[index] = self._section_bytes(shdrs[index], names[index])
        return symtab

    def _reloc_plan(self, sf: _Shdr, shdrs: list[_Shdr], names: list[str]) -> list[_Reloc]:
        """Every REL/RELA relocation targeting ``sf``, checked and resolved in one pass,
        once per file (the .sframe and .eh_frame are relocated for more than one layout).

        A symbol defined in a section is relative to it (in .o files sh_addr is 0, but be
        general); SHN_ABS/SHN_COMMON/SHN_XINDEX symbols are used as they are (SHN_XINDEX
        would need .symtab_shndx; SFrame relocations never use such symbols)."""
        plan = self._plans.get(sf.index)
        if plan is not None:
            return plan
        plan = []
        types = _RELOC_TYPES.get(self.machine, {})
        is64 = self.elfclass == 64
        entsize = 24 if is64 else 16
        unpack = struct.Struct(self.order + ("IBBHQQ" if is64 else "IIIBBH")).unpack_from
        for rs in shdrs:
            if rs.type not in (SHT_REL, SHT_RELA) or rs.info != sf.index:
                continue
            rname = names[rs.index] or f"#{rs.index}"
            symtab, count = None, 0
            for j, (r_offset, sym, rtype, addend) in enumerate(self._iter_relocs(rs, rname)):
                kind = types.get(rtype)
                if kind is None:
                    raise self._fail(
                        f"{rname}: relocation {j}: unsupported relocation type {rtype} "
                        f"for machine {self.machine}"
                    )
                width, pcrel = kind[1], kind[2]
                if width == 0:
                    continue  # *_NONE
                if r_offset + width > sf.size:
                    raise self._fail(
                        f"{rname}: relocation {j} ({kind[0]}): r_offset {r_offset:#x} + "
                        f"{width} outside section {names[sf.index]} (size {sf.size:#x})"
                    )
                value = shndx = 0
                if sym:  # not STN_UNDEF
                    if symtab is None:
                        symtab = self._symtab(shdrs, names, rs.link,
                                              f"{rname}: relocation {j} ({kind[0]})", sym)
                        count = len(symtab) // entsize
                    if sym >= count:
                        raise self._fail(
                            f"{rname}: relocation {j} ({kind[0]}): bad symbol index {sym} "
                            f"({count} symbols in {names[rs.link]})"
                        )
                    fields = unpack(symtab, sym * entsize)
                    shndx, value = (fields[3], fields[4]) if is64 else (fields[5], fields[1])
                    if not SHN_UNDEF < shndx < SHN_LORESERVE:
                        shndx = 0
                    elif shndx >= len(shdrs):
                        raise self._fail(f"{rname}: relocation {j} ({kind[0]}): symbol {sym} "
                                         f"refers to missing section {shndx}")
                plan.append((r_offset, width, pcrel, value, shndx, addend))
        self._plans[sf.index] = plan
        return plan

    def _relocate(
        self,
        sf: _Shdr,
        raw: bytes,
        shdrs: list[_Shdr],
        names: list[str],
        bases: dict[int, int] | None = None,
    ) -> tuple[bytes, int]:
        """Apply every REL/RELA section targeting ``sf`` to a copy of ``raw``.

        ``bases`` overrides section addresses (the synthetic .o layout)."""
        plan = self._reloc_plan(sf, shdrs, names)
        buf = bytearray(raw)
        order = self.byteorder
        addr = [sh.addr for sh in shdrs] if bases is None else \
            [bases.get(sh.index, 0) for sh in shdrs]
        place = addr[sf.index]
        size = len(buf)  # the bytes held: a NOBITS section's are none, whatever sh_size says
        for r_offset, width, pcrel, value, shndx, addend in plan:
            if r_offset + width > size:  # the plan checked sh_size; a slice past the end grows
                raise self._fail(f"relocation at r_offset {r_offset:#x} + {width} outside "
                                 f"the {size:#x} stored bytes of section #{sf.index}")
            if addend is None:  # REL: the addend is what is stored in place
                addend = int.from_bytes(buf[r_offset : r_offset + width], order, signed=True)
            value += addr[shndx] + addend if shndx else addend
            if pcrel:
                value -= place + r_offset
            buf[r_offset : r_offset + width] = (value & _MASKS[width]).to_bytes(width, order)
        return bytes(buf), len(plan)

    # -- main ------------------------------------------------------------

    # -- .eh_frame cross-check inputs ------------------------------------

    def _layout(self, shdrs: list[_Shdr], is_rel: bool) -> dict[int, int]:
        """Section index -> address: the file's own, or distinct synthetic ones in a .o."""
        if not is_rel:
            return {sh.index: sh.addr for sh in shdrs}
        bases, cursor = {}, 0x1000
        for sh in shdrs:
            if sh.index and sh.flags & SHF_ALLOC:
                align = max(16, sh.addralign) if 0 < sh.addralign <= 1 << 16 else 16
                cursor = (cursor + align - 1) // align * align
                bases[sh.index] = cursor
                cursor += max(sh.size, 1) if sh.size < 1 << 40 else 1
        return bases

    def _func_symbols(
        self, shdrs: list[_Shdr], names: list[str], bases: dict[int, int] | None
    ) -> Sequence[FuncSymbol]:
        """STT_FUNC/STT_GNU_IFUNC symbols of .symtab (else .dynsym), sorted by address
        (FuncSymbols: the tables are copied here, read when first used).

        In a .o, ``bases`` places each symbol at its section's layout address (None: the
        stored st_value, which is what findings' PCs in a .o are).  At most MAX_SYMBOLS
        entries are read; names are cut (``string_at``)."""
        tables = [sh for sh in shdrs if sh.type == SHT_SYMTAB] or [
            sh for sh in shdrs if sh.type == SHT_DYNSYM
        ]
        if not tables:
            return ()
        st = tables[0]
        if not 0 < st.link < len(shdrs):
            return ()
        entsize = 24 if self.elfclass == 64 else 16
        raw = self._section_bytes(st, names[st.index])
        raw = raw[: (min(len(raw), MAX_SYMBOLS * entsize) // entsize) * entsize]
        strtab = self._section_bytes(shdrs[st.link], names[st.link])
        return FuncSymbols(raw, strtab, self.order, self.elfclass == 64,
                           bases if self.is_rel else None)

    def _cfi_view(
        self, shdrs: list[_Shdr], names: list[str], sections: list[SFrameSection]
    ) -> CfiView:
        bases = self._layout(shdrs, self.is_rel)
        sframe = []
        for sec in sections:
            data = sec.data
            if self.is_rel and sec.raw_data:
                data, _n = self._relocate(shdrs[sec.index], sec.raw_data, shdrs, names, bases)
            sframe.append((bases.get(sec.index, sec.vma), data))
        text = sorted(
            (
                TextRange(name, bases[sh.index], bases[sh.index] + sh.size)
                for sh, name in zip(shdrs, names, strict=True)
                if sh.index in bases and sh.flags & SHF_EXECINSTR and sh.size > 0
            ),
            key=lambda r: (r.start, r.end, r.name),
        ) or self.text_ranges
        eh = next(
            (sh for sh, name in zip(shdrs, names, strict=True)
             if name == ".eh_frame" and sh.type != SHT_NOBITS),
            None,
        )
        eh_data, eh_vma, error = None, 0, None
        try:
            symbols = self._func_symbols(shdrs, names, bases)
        except (ElfError, *_PARSE_ERRORS) as exc:
            symbols, error = (), f"symbol table: {getattr(exc, 'message', exc)}"
        if eh is not None:
            try:
                eh_data = self._section_bytes(eh, ".eh_frame")
                if self.is_rel:
                    eh_data, _n = self._relocate(eh, eh_data, shdrs, names, bases)
                eh_vma = bases.get(eh.index, eh.addr)
            except (ElfError, *_PARSE_ERRORS) as exc:
                eh_data, error = None, f".eh_frame: {getattr(exc, 'message', exc)}"
        return CfiView(eh_data, eh_vma, tuple(sframe), symbols, tuple(text), error)

    def load(self, cfi: bool = False) -> ElfSFrameInfo:
        shdrs = self._section_headers()
        names = self._section_names(shdrs)
        phdrs = self._program_headers(shdrs)
        e_type = _E_TYPES.get(self.e_type, self.e_type)
        e_machine = machine_name(self.machine)
        is_rel = self.is_rel = e_type == "ET_REL"
        linked = e_type in ("ET_EXEC", "ET_DYN")
        debug_only = linked and _debug_only(shdrs)

        found = [
            (sh, name) for sh, name in zip(shdrs, names, strict=True)
            if sh.index and (name == ".sframe" or sh.type == SHT_GNU_SFRAME)
        ]
        sections = []
        for sh, name in found[:MAX_SFRAME_SECTIONS]:
            nobits = sh.type == SHT_NOBITS
            raw = b"" if nobits else self._section_bytes(sh, name)
            data, count = raw, 0
            if is_rel and raw:
                data, count = self._relocate(sh, raw, shdrs, names)
            sections.append(
                SFrameSection(
                    name=clip(name),
                    index=sh.index,
                    sh_type=sh.type,
                    sh_flags=sh.flags,
                    vma=sh.addr,
                    offset=sh.offset,
                    size=sh.size,
                    data=data,
                    relocations=count,
                    raw_data=raw,
                    nobits=nobits,
                )
            )

        sframe_segments = tuple(
            SFrameSegment(p.index, p.offset, p.vaddr, p.filesz, p.memsz, p.flags)
            for p in phdrs
            if p.type == PT_GNU_SFRAME
        )
        load_segments = tuple(
            LoadSegment(p.index, p.offset, p.vaddr, p.filesz, p.memsz, p.flags)
            for p in phdrs
            if p.type == PT_LOAD
        )
        tails: list[tuple[int, bytes]] = []
        if linked and not debug_only:
            sections.extend(self._segment_sections(sframe_segments, load_segments, sections,
                                                    tails))

        if shdrs:
            ranges = [
                TextRange(clip(name), sh.addr, sh.addr + sh.size)
                for sh, name in zip(shdrs, names, strict=True)
                if sh.flags & SHF_EXECINSTR and sh.flags & SHF_ALLOC and sh.size > 0
            ]
        else:
            # No section headers (e.g. stripped with sstrip): executable
            # PT_LOAD segments are the best description of the text.
            ranges = [
                TextRange(f"PT_LOAD[{seg.index}]", seg.vaddr, seg.vaddr + seg.memsz)
                for seg in load_segments
                if seg.flags & PF_X and seg.memsz > 0
            ]
        ranges.sort(key=lambda r: (r.start, r.end, r.name))
        self.text_ranges = ranges
        view = self._cfi_view(shdrs, names, sections) if cfi else None
        symbols: Sequence[FuncSymbol] = ()
        if any(sec.data for sec in sections):
            if view is not None and not is_rel:
                symbols = view.symbols  # the same table at the same addresses
            else:
                try:
                    symbols = self._func_symbols(shdrs, names, None)
                except (ElfError, *_PARSE_ERRORS):
                    symbols = ()  # names are a nicety, never a reason to fail

        return ElfSFrameInfo(
            path=self.label,
            e_type=e_type if isinstance(e_type, str) else f"{e_type:#x}",
            e_machine=e_machine if isinstance(e_machine, str) else f"{e_machine:#x}",
            machine=self.machine,
            little_endian=self.little,
            elfclass=self.elfclass,
            sections=tuple(sections),
            sframe_segments=sframe_segments,
            load_segments=load_segments,
            text_ranges=tuple(ranges),
            cfi=view,
            symbols=symbols,
            debug_only=debug_only,
            sframe_sections_total=len(found),
            segment_tails=tuple(tails),
            # only for files with SFrame data: the rules that use them are about it
            facts=read_facts(self, shdrs, names, [s.index for s in sections if s.index > 0],
                             is_rel, linked) if sections else None,
        )

    def _segment_sections(
        self,
        segments: tuple[SFrameSegment, ...],
        loads: tuple[LoadSegment, ...],
        sections: list[SFrameSection],
        tails: list[tuple[int, bytes]],
    ) -> list[SFrameSection]:
        """What the kernel reads: each PT_GNU_SFRAME's bytes, as mapped.

        The loader reads [p_vaddr, p_vaddr + p_memsz) from the process image, i.e. through
        the PT_LOAD that maps it; p_offset only agrees with that in a sane file.  What the
        PT_LOAD leaves out of the file (its zero-filled part) is not made up here: the
        data is cut there, and a header that reaches into it reads as cut short.  A
        segment whose bytes are those of a .sframe section (same file offset and
        address) is that section: only its bytes past
        sh_size are kept (in ``tails``).  Any other segment (no section headers, e.g.
        sstrip; or headers that disagree with it) becomes a section of its own, named
        ``PT_GNU_SFRAME[i]``, checked like one."""
        out = []
        for seg in segments[:MAX_SFRAME_SECTIONS]:
            if seg.memsz == 0 and seg.filesz == 0:
                continue
            offset, size = self._mapped(seg, loads)
            sec = next((s for s in sections if not s.nobits and s.segment is None
                        and s.offset == offset and s.vma == seg.vaddr), None)
            if sec is not None:
                # The tail as far as the file holds it (a segment past the end of the
                # file is the segment rules' business, not a reason to refuse the file).
                tail_len = min(size - sec.size, self.size - offset - sec.size,
                               MAX_SECTION_BYTES)
                if tail_len > 0:
                    tails.append((seg.index, self._bytes(
                        offset + sec.size, tail_len, f"PT_GNU_SFRAME[{seg.index}] tail")))
                continue
            data = self._bytes(offset, size, f"PT_GNU_SFRAME[{seg.index}]")
            out.append(SFrameSection(
                name=f"PT_GNU_SFRAME[{seg.index}]", index=-1, sh_type=0, sh_flags=SHF_ALLOC,
                vma=seg.vaddr, offset=offset, size=size, data=data, relocations=0,
                raw_data=data, segment=seg.index))
        return out

    @staticmethod
    def _mapped(seg: SFrameSegment, loads: tuple[LoadSegment, ...]) -> tuple[int, int]:
        """(file offset, size) of the bytes a loader sees at the segment's address: through
        the PT_LOAD that maps them, at most p_memsz and what that PT_LOAD has in the file;
        the segment's own p_offset/p_filesz when no PT_LOAD maps it (the ELF rules say so)."""
        for load in loads:
            if load.vaddr <= seg.vaddr and seg.vaddr + seg.memsz <= load.vaddr + load.memsz:
                rel = seg.vaddr - load.vaddr
                in_file = max(0, min(seg.memsz, load.filesz - rel))
                return load.offset + rel, in_file
        return seg.offset, seg.filesz


def _debug_only(shdrs: list[_Shdr]) -> bool:
    """True for a separate debug file: allocated sections exist, and all but notes are
    SHT_NOBITS (objcopy --only-keep-debug keeps their headers, not their bytes)."""
    alloc = [sh for sh in shdrs if sh.flags & SHF_ALLOC and sh.size and sh.type != SHT_NOTE]
    return bool(alloc) and all(sh.type == SHT_NOBITS for sh in alloc)
