"""What the ELF layer hands on: the SFrame sections and segments of one file, with the
context the checker and the unwinder need (text ranges, load segments, symbols, the
`.eh_frame` cross-check inputs). Built by :func:`sfcheck.elf.load_elf`."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field


@dataclass(frozen=True)
class TextRange:
    """An executable address range FDEs may point into."""

    name: str  # section name, or "PT_LOAD[i]" (i = program header index)
    start: int
    end: int  # exclusive


@dataclass(frozen=True)
class SFrameSection:
    """An SFrame section, with its bytes (relocated in ET_REL files)."""

    name: str
    index: int
    sh_type: int  # SHT_PROGBITS before binutils 2.45, SHT_GNU_SFRAME after
    sh_flags: int
    vma: int
    offset: int
    size: int
    data: bytes  # relocated contents (== raw_data for linked files)
    relocations: int  # number of relocations applied
    raw_data: bytes  # contents as stored in the file
    # Index of the PT_GNU_SFRAME program header this stands for when there is no section
    # header for those bytes (name "PT_GNU_SFRAME[i]"), else None.
    segment: int | None = None
    nobits: bool = False  # SHT_NOBITS: no bytes in this file (a separate debug file)


@dataclass(frozen=True)
class Segment:
    """The program header fields sfcheck reads (flags: PF_X=1, PF_W=2, PF_R=4)."""

    index: int
    offset: int
    vaddr: int
    filesz: int
    memsz: int
    flags: int


class SFrameSegment(Segment):
    """A PT_GNU_SFRAME program header."""


class LoadSegment(Segment):
    """A PT_LOAD program header."""


@dataclass(frozen=True)
class FuncSymbol:
    """A function symbol, for naming code in findings."""

    addr: int
    size: int
    name: str


@dataclass(frozen=True)
class CfiView:
    """`.eh_frame` and the SFrame sections relocated against one address layout.

    In linked files that is the file's own layout.  In a ``.o`` every section
    has address 0, so functions in different text sections would collide: each
    allocated section gets a distinct synthetic address instead, and both
    sections are relocated against it, which keeps their PCs comparable.
    """

    eh_frame: bytes | None  # None: the file has no .eh_frame
    eh_frame_vma: int
    sframe: tuple[tuple[int, bytes], ...]  # per ElfSFrameInfo.sections: (vma, data)
    symbols: Sequence[FuncSymbol]  # sorted by address (elf.FuncSymbols: read on first use)
    text_ranges: tuple[TextRange, ...]
    error: str | None = None  # why .eh_frame could not be prepared


@dataclass(frozen=True)
class ElfSFrameInfo:
    """Everything the SFrame checker needs to know about one ELF file."""

    path: str
    e_type: str
    e_machine: str
    machine: int
    little_endian: bool
    elfclass: int
    sections: tuple[SFrameSection, ...]
    sframe_segments: tuple[SFrameSegment, ...]
    load_segments: tuple[LoadSegment, ...]
    text_ranges: tuple[TextRange, ...]
    cfi: CfiView | None = None  # only when load_elf(..., cfi=True)
    # Function symbols at their stored st_value (what findings' PCs are named with),
    # sorted; read only for files with SFrame data, and () when the tables are unusable.
    symbols: Sequence[FuncSymbol] = ()
    # A separate debug file (objcopy --only-keep-debug): every allocated section except
    # notes is SHT_NOBITS, so section and segment headers describe bytes not in this file.
    debug_only: bool = False
    sframe_sections_total: int = 0  # SFrame sections found (sections holds at most the cap)
    # Bytes of each PT_GNU_SFRAME past its .sframe section's sh_size: (segment index, bytes).
    segment_tails: tuple[tuple[int, bytes], ...] = field(default=())
