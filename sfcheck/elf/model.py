"""What the ELF layer hands on: the SFrame sections and segments of one file, with the
context the checker and the unwinder need (text ranges, load segments, symbols, the
`.eh_frame` cross-check inputs). Built by :func:`sfcheck.elf.loader.load_elf`; the rules
read these types and nothing else of the ELF layer."""

from __future__ import annotations

import mmap
from collections.abc import Sequence

from sfcheck.elf.constants import SHT_GNU_SFRAME
from sfcheck.record import Record

# The bytes of a file in any buffer load_elf accepts.
Buffer = bytes | bytearray | memoryview | mmap.mmap


class TextRange(Record, frozen=True):
    """An executable address range FDEs may point into."""

    __slots__ = ("name", "start", "end")

    def __init__(self, name: str, start: int, end: int) -> None:
        self.name = name  # section name, or "PT_LOAD[i]" (i = program header index)
        self.start = start
        self.end = end  # exclusive


class SFrameSection(Record, frozen=True):
    """An SFrame section, with its bytes (relocated in ET_REL files)."""

    # `segment`: index of the PT_GNU_SFRAME program header this stands for when there is
    # no section header for those bytes (name "PT_GNU_SFRAME[i]"), else None.
    __slots__ = ("name", "index", "sh_type", "sh_flags", "vma", "offset", "size", "data",
                 "relocations", "raw_data", "segment", "nobits")

    def __init__(self, name: str, index: int, sh_type: int, sh_flags: int, vma: int,
                 offset: int, size: int, data: bytes, relocations: int, raw_data: bytes,
                 segment: int | None = None, nobits: bool = False) -> None:
        self.name = name
        self.index = index
        self.sh_type = sh_type  # SHT_PROGBITS before binutils 2.45, SHT_GNU_SFRAME after
        self.sh_flags = sh_flags
        self.vma = vma
        self.offset = offset
        self.size = size
        self.data = data  # relocated contents (== raw_data for linked files)
        self.relocations = relocations  # number of relocations applied
        self.raw_data = raw_data  # contents as stored in the file
        self.segment = segment
        self.nobits = nobits  # SHT_NOBITS: no bytes in this file (a separate debug file)

    @property
    def gnu_sframe_type(self) -> bool:
        """Whether sh_type is SHT_GNU_SFRAME (the type binutils 2.45 and later write)."""
        return self.sh_type == SHT_GNU_SFRAME


class Segment(Record, frozen=True):
    """The program header fields sfcheck reads (flags: PF_X=1, PF_W=2, PF_R=4)."""

    __slots__ = ("index", "offset", "vaddr", "filesz", "memsz", "flags")

    def __init__(self, index: int, offset: int, vaddr: int, filesz: int, memsz: int,
                 flags: int) -> None:
        self.index = index
        self.offset = offset
        self.vaddr = vaddr
        self.filesz = filesz
        self.memsz = memsz
        self.flags = flags


class SFrameSegment(Segment):
    """A PT_GNU_SFRAME program header."""


class LoadSegment(Segment):
    """A PT_LOAD program header."""


class FuncSymbol(Record, frozen=True):
    """A function symbol, for naming code in findings."""

    __slots__ = ("addr", "size", "name")

    def __init__(self, addr: int, size: int, name: str) -> None:
        self.addr = addr
        self.size = size
        self.name = name


class SymbolColumns(Sequence[FuncSymbol]):
    """A function symbol table that holds its addresses as one column
    (elf.symbols.FuncSymbols), so the address lists below make no FuncSymbol per entry."""

    __slots__ = ()

    @property
    def addrs(self) -> list[int]:
        """Every symbol's address, in order (for bisect)."""
        raise NotImplementedError

    def address_set(self) -> set[int]:
        """Every symbol's address (no sort needed)."""
        raise NotImplementedError


def addresses(symbols: Sequence[FuncSymbol]) -> list[int]:
    """The symbols' addresses, in order."""
    if isinstance(symbols, SymbolColumns):
        return symbols.addrs
    return [s.addr for s in symbols]


def address_set(symbols: Sequence[FuncSymbol]) -> set[int]:
    """The symbols' addresses as a set."""
    if isinstance(symbols, SymbolColumns):
        return symbols.address_set()
    return {s.addr for s in symbols}


class CfiView(Record, frozen=True):
    """`.eh_frame` and the SFrame sections relocated against one address layout.

    In linked files that is the file's own layout.  In a ``.o`` every section
    has address 0, so functions in different text sections would collide: each
    allocated section gets a distinct synthetic address instead, and both
    sections are relocated against it, which keeps their PCs comparable.
    """

    __slots__ = ("eh_frame", "eh_frame_vma", "sframe", "symbols", "text_ranges", "error")

    def __init__(self, eh_frame: bytes | None, eh_frame_vma: int,
                 sframe: tuple[tuple[int, bytes], ...], symbols: Sequence[FuncSymbol],
                 text_ranges: tuple[TextRange, ...], error: str | None = None) -> None:
        self.eh_frame = eh_frame  # None: the file has no .eh_frame
        self.eh_frame_vma = eh_frame_vma
        self.sframe = sframe  # per ElfSFrameInfo.sections: (vma, data)
        self.symbols = symbols  # sorted by address (elf.symbols.FuncSymbols: read on first use)
        self.text_ranges = text_ranges
        self.error = error  # why .eh_frame could not be prepared


class SFrameReloc(Record, frozen=True):
    """One relocation against an SFrame section in an object."""

    __slots__ = ("section", "offset", "type", "target")

    def __init__(self, section: int, offset: int, type: int,  # noqa: A002
                 target: int) -> None:
        self.section = section  # index of the SFrame section relocated
        self.offset = offset  # r_offset
        self.type = type  # r_type
        self.target = target  # section index the symbol is defined in (0: none or special)


class ElfFacts(Record, frozen=True):
    """What :func:`read_facts` found; every field is empty when its table is absent."""

    __slots__ = ("eh_frame_size", "comdat", "relocs", "soname", "needed", "verdefs",
                 "reloc_names")

    def __init__(self, eh_frame_size: int | None = None,
                 comdat: tuple[tuple[int, str], ...] = (),
                 relocs: tuple[SFrameReloc, ...] = (), soname: str | None = None,
                 needed: int = 0, verdefs: tuple[str, ...] = (),
                 reloc_names: tuple[tuple[int, str], ...] = ()) -> None:
        # sh_size of .eh_frame (None: no such section, or only SHT_NOBITS)
        self.eh_frame_size = eh_frame_size
        # (member section index, group signature) for members of GRP_COMDAT groups
        self.comdat = comdat
        self.relocs = relocs  # relocations against SFrame sections (objects only)
        self.soname = soname  # DT_SONAME
        self.needed = needed  # DT_NEEDED entries
        self.verdefs = verdefs  # names of the version definitions (SHT_GNU_verdef)
        # (r_type, name) of the machine's relocation types, when `relocs` has any: the rules
        # name types without reading the loader's table
        self.reloc_names = reloc_names

    def reloc_name(self, rtype: int) -> str:
        return dict(self.reloc_names).get(rtype, f"type {rtype}")


class ElfSFrameInfo(Record, frozen=True):
    """Everything the SFrame checker needs to know about one ELF file."""

    __slots__ = ("path", "e_type", "e_machine", "machine", "little_endian", "elfclass",
                 "sections", "sframe_segments", "load_segments", "text_ranges", "cfi",
                 "symbols", "debug_only", "sframe_sections_total", "segment_tails", "facts")

    def __init__(self, path: str, e_type: str, e_machine: str, machine: int,
                 little_endian: bool, elfclass: int, sections: tuple[SFrameSection, ...],
                 sframe_segments: tuple[SFrameSegment, ...],
                 load_segments: tuple[LoadSegment, ...], text_ranges: tuple[TextRange, ...],
                 cfi: CfiView | None = None, symbols: Sequence[FuncSymbol] = (),
                 debug_only: bool = False, sframe_sections_total: int = 0,
                 segment_tails: tuple[tuple[int, bytes], ...] = (),
                 facts: ElfFacts | None = None) -> None:
        self.path = path
        self.e_type = e_type
        self.e_machine = e_machine
        self.machine = machine
        self.little_endian = little_endian
        self.elfclass = elfclass
        self.sections = sections
        self.sframe_segments = sframe_segments
        self.load_segments = load_segments
        self.text_ranges = text_ranges
        self.cfi = cfi  # only when load_elf(..., cfi=True)
        # Function symbols at their stored st_value (what findings' PCs are named with),
        # sorted; read only for files with SFrame data, and () when the tables are unusable.
        self.symbols = symbols
        # A separate debug file (objcopy --only-keep-debug): every allocated section except
        # notes is SHT_NOBITS, so section and segment headers describe bytes not in this file.
        self.debug_only = debug_only
        # SFrame sections found (sections holds at most the cap)
        self.sframe_sections_total = sframe_sections_total
        # Bytes of each PT_GNU_SFRAME past its .sframe section's sh_size: (segment index, bytes)
        self.segment_tails = segment_tails
        # COMDAT groups, .rela.sframe types, soname, .eh_frame size (sfcheck.elf.groups)
        self.facts = ElfFacts() if facts is None else facts
