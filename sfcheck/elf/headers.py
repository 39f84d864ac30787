"""The ELF header and its section and program header tables, decoded with :mod:`struct`
directly, and the bounded reads every other part of the ELF layer goes through.

pyelftools is not used here: it reports unknown ``sh_type``/``p_type`` values as bare
ints, building its ``Section`` objects eagerly parses linked sections (one broken unrelated
section would make the whole file unreadable), and its ``ELFFile`` costs ~50 ms of imports
per process, a quarter of readelf's whole run on a 100k-FDE section, for nine fields.
Every read is checked against the file's size and ``MAX_SECTION_BYTES`` first; every
failure is an :class:`ElfError` naming the file."""

from __future__ import annotations

import struct
from collections.abc import Iterable

from sfcheck.elf.constants import (
    MAX_SECTION_BYTES,
    MAX_SYMBOL_NAME,
    PN_XNUM,
    SHN_UNDEF,
    SHN_XINDEX,
    SHT_NOBITS,
)
from sfcheck.elf.symbols import string_at
from sfcheck.errors import ElfError
from sfcheck.record import Record
from sfcheck.result import clip

# What a damaged table can still raise from inside the bounded struct reads.
PARSE_ERRORS = (
    struct.error,
    ValueError,
    IndexError,
    KeyError,
    AssertionError,
    UnicodeDecodeError,
    OverflowError,
)

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing at run time
if TYPE_CHECKING:
    from typing import Literal

    from sfcheck.elf.model import Buffer
    from sfcheck.fileio import FileView


# Section and program header layouts by (64-bit, little-endian), fields in stored order.
_SHDR = {(is64, little): struct.Struct(("<" if little else ">")
                                       + ("IIQQQQIIQQ" if is64 else "IIIIIIIIII"))
         for is64 in (False, True) for little in (False, True)}
_PHDR = {(is64, little): struct.Struct(("<" if little else ">")
                                       + ("IIQQQQQQ" if is64 else "IIIIIIII"))
         for is64 in (False, True) for little in (False, True)}


def _rows(fmt: struct.Struct, table: bytes, num: int, entsize: int) -> Iterable[tuple]:
    """The `num` entries of a header table read with `fmt` (entries may be wider)."""
    if entsize == fmt.size:
        return fmt.iter_unpack(table)
    return (fmt.unpack_from(table, i * entsize) for i in range(num))


# Name tables up to this size are split whole (one dict entry per piece: real ones hold a
# few dozen); a larger one, which only a damaged or hostile file has, is read name by name.
PIECES_MAX = 1 << 16


def _pieces(strtab: bytes) -> dict[int, str]:
    """Offset -> string of every NUL-terminated piece of a string table that string_at
    would not cut (at most MAX_SYMBOL_NAME bytes)."""
    out = {}
    at = 0
    for piece in strtab.split(b"\0")[:-1]:  # the last piece has no NUL after it
        if len(piece) <= MAX_SYMBOL_NAME:
            out[at] = piece.decode("utf-8", "replace")
        at += len(piece) + 1
    return out


class Shdr(Record, frozen=True):
    """A section header as stored (all fields numeric)."""

    __slots__ = ("index", "name_off", "type", "flags", "addr", "offset", "size", "link",
                 "info", "entsize", "addralign")

    def __init__(self, index: int, name_off: int, type: int, flags: int,  # noqa: A002
                 addr: int, offset: int, size: int, link: int, info: int, entsize: int,
                 addralign: int = 0) -> None:
        self.index, self.name_off, self.type, self.flags = index, name_off, type, flags
        self.addr, self.offset, self.size, self.link = addr, offset, size, link
        self.info, self.entsize, self.addralign = info, entsize, addralign


class Phdr(Record, frozen=True):
    """A program header as stored."""

    __slots__ = ("index", "type", "flags", "offset", "vaddr", "filesz", "memsz")

    def __init__(self, index: int, type: int, flags: int, offset: int,  # noqa: A002
                 vaddr: int, filesz: int, memsz: int) -> None:
        self.index, self.type, self.flags, self.offset = index, type, flags, offset
        self.vaddr, self.filesz, self.memsz = vaddr, filesz, memsz


class ElfFile:
    """One ELF file's bytes (a buffer, or a FileView read at offsets) and its decoded ELF
    header; the section and program header tables are decoded on request."""

    def __init__(self, data: Buffer | FileView, label: str) -> None:
        self.data = data
        self.size = len(data)
        self.label = label
        self._symtabs: dict[int, bytes] = {}  # section index -> its bytes, read once
        # Say plainly that the header is cut short.
        ehsize = {1: 52, 2: 64}.get(data[4] if len(data) > 4 else 0)
        if ehsize is None:
            raise self.fail(f"cannot parse ELF: invalid EI_CLASS {bytes(data[4:5])!r}")
        if len(data) < ehsize:
            raise self.fail(
                f"cannot parse ELF: file too short for the ELF header "
                f"({len(data)} bytes, need {ehsize})"
            )
        if data[5] not in (1, 2):
            raise self.fail(f"cannot parse ELF: invalid EI_DATA {bytes(data[5:6])!r}")
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

    def fail(self, message: str) -> ElfError:
        return ElfError(message, self.label)

    def _table_check(self, what: str, off: int, num: int, entsize: int, minsize: int) -> None:
        """Make sure a header table lies inside the file before reading it."""
        if num == 0:
            return
        if entsize < minsize:
            raise self.fail(f"cannot parse ELF: {what} entry size {entsize} < {minsize}")
        end = off + num * entsize
        if end > self.size:
            raise self.fail(
                f"cannot parse ELF: {what} at offset {off:#x} ({num} x {entsize} bytes) "
                f"runs past end of file ({self.size:#x} bytes)"
            )

    def read(self, off: int, size: int, what: str) -> bytes:
        """`size` bytes at `off`, after checking they exist and are within the copy bound."""
        if off + size > self.size:
            raise self.fail(
                f"{what} at offset {off:#x} with size {size:#x} runs past end of file "
                f"({self.size:#x} bytes)"
            )
        if size > MAX_SECTION_BYTES:
            raise self.fail(
                f"{what} has size {size:#x}, over sfcheck's bound of {MAX_SECTION_BYTES:#x} "
                "bytes: not read"
            )
        return bytes(self.data[off : off + size])

    def section_bytes(self, sh: Shdr, name: str, prefix: str = "") -> bytes:
        """The stored contents of a section, after checking they exist."""
        if sh.type == SHT_NOBITS or sh.size == 0:
            return b""
        return self.read(sh.offset, sh.size, f"{prefix}section {clip(name)} [{sh.index}]")

    # -- header tables ---------------------------------------------------

    def _parse_shdr(self, index: int, table: bytes, off: int) -> Shdr:
        name_off, sh_type, flags, addr, offset, size, link, info, align, entsize = (
            _SHDR[self.elfclass == 64, self.little].unpack_from(table, off))
        return Shdr(
            index, name_off, sh_type, flags, addr, offset, size, link, info, entsize, align
        )

    def section_headers(self) -> list[Shdr]:
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
            shnum = self._parse_shdr(0, self.read(shoff, minsize, "section header 0"), 0).size
        self._table_check("section header table", shoff, shnum, shentsize, minsize)
        # One read of the whole table (bounded like a section): a file is read, not mapped.
        table = self.read(shoff, shnum * shentsize, "section header table")
        return [Shdr(i, name_off, sh_type, flags, addr, offset, size, link, info, entsize, align)
                for i, (name_off, sh_type, flags, addr, offset, size, link, info, align,
                        entsize) in enumerate(_rows(_SHDR[self.elfclass == 64, self.little],
                                                    table, shnum, shentsize))]

    def section_names(self, shdrs: list[Shdr]) -> list[str]:
        if not shdrs:
            return []
        shstrndx = self.e_shstrndx
        if shstrndx == SHN_XINDEX:
            shstrndx = shdrs[0].link
        if shstrndx == SHN_UNDEF:
            return [""] * len(shdrs)  # no section name table: nothing has a name
        if shstrndx >= len(shdrs):
            raise self.fail(
                f"cannot parse ELF: e_shstrndx {shstrndx} out of range ({len(shdrs)} sections)"
            )
        strtab_hdr = shdrs[shstrndx]
        if strtab_hdr.type == SHT_NOBITS:
            raise self.fail("cannot parse ELF: section name table has no contents (SHT_NOBITS)")
        strtab = self.section_bytes(strtab_hdr, "name table", "cannot parse ELF: ")
        offs = [sh.name_off for sh in shdrs]
        bad = next((sh for sh in shdrs if sh.name_off >= len(strtab)
                    and (sh.name_off or strtab)), None) if max(offs) >= len(strtab) else None
        if bad is not None:
            raise self.fail(
                f"cannot parse ELF: section [{bad.index}] name offset {bad.name_off:#x} "
                f"outside section name table ({len(strtab):#x} bytes)"
            )
        if not strtab:
            return [""] * len(shdrs)  # every offset 0 (any other was refused above)
        # Names only matter for matching ".sframe"; don't reject odd bytes. Each name that
        # starts a NUL-terminated piece of the table is that piece (string_at's answer
        # when it is not cut); any other (a shared tail, a long name) asks string_at.
        whole = _pieces(strtab) if len(strtab) <= PIECES_MAX else {}
        return [whole.get(off) or string_at(strtab, off) for off in offs]

    def program_headers(self, shdrs: list[Shdr]) -> list[Phdr]:
        phoff = self.e_phoff
        phentsize = self.e_phentsize
        phnum = self.e_phnum
        if phnum == PN_XNUM and shdrs:
            phnum = shdrs[0].info  # extended numbering
        if phnum == 0:
            return []
        minsize = 56 if self.elfclass == 64 else 32
        self._table_check("program header table", phoff, phnum, phentsize, minsize)
        table = self.read(phoff, phnum * phentsize, "program header table")
        rows = _rows(_PHDR[self.elfclass == 64, self.little], table, phnum, phentsize)
        if self.elfclass == 64:
            return [Phdr(i, p_type, flags, offset, vaddr, filesz, memsz)
                    for i, (p_type, flags, offset, vaddr, _pa, filesz, memsz, _al)
                    in enumerate(rows)]
        return [Phdr(i, p_type, flags, offset, vaddr, filesz, memsz)
                for i, (p_type, offset, vaddr, _pa, filesz, memsz, flags, _al)
                in enumerate(rows)]

    def symbol_table(self, sh: Shdr, name: str) -> bytes:
        """The stored bytes of a symbol table, copied once per file: the relocations and
        the function symbols read the same table (100k relocations against a 4 MB table
        once copied it 100k times, ~70 s for 6 MB)."""
        raw = self._symtabs.get(sh.index)
        if raw is None:
            raw = self._symtabs[sh.index] = self.section_bytes(sh, name)
        return raw
