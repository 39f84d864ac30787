"""Find SFrame data, and the context needed to check it, in an ELF file.

This layer knows nothing about the SFrame format itself (``sfcheck.format``
decodes the bytes).  It locates ``.sframe`` sections and every ``PT_GNU_SFRAME``
segment (the kernel's way in: a segment no section header describes is handed on
as a section of its own), applies ``.rela.sframe`` in relocatable objects, and
lists the executable address ranges that FDEs are expected to point into.  The
result types live in :mod:`sfcheck.elf.model`; the header tables and bounded reads
in :mod:`sfcheck.elf.headers`, relocations in :mod:`sfcheck.elf.relocations`, symbol
tables in :mod:`sfcheck.elf.symbols`.

Input is untrusted: every failure becomes an :class:`ElfError`.  The file is
mapped or used in place, never read whole: only the header tables and the
sections needed are copied out, each bounded (``MAX_SECTION_BYTES``), as are
the SFrame sections per file, the symbols read and the bytes of each name.
"""

from __future__ import annotations

import mmap
import os
from collections.abc import Sequence

from sfcheck.elf.constants import (
    E_TYPES,
    ELF_MAGIC,
    MACHINES,
    MAX_SECTION_BYTES,
    MAX_SFRAME_SECTIONS,
    MAX_SYMBOLS,
    PF_X,
    PT_GNU_SFRAME,
    PT_LOAD,
    SHF_ALLOC,
    SHF_EXECINSTR,
    SHT_DYNSYM,
    SHT_GNU_SFRAME,
    SHT_NOBITS,
    SHT_NOTE,
    SHT_SYMTAB,
)
from sfcheck.elf.groups import read_facts
from sfcheck.elf.headers import PARSE_ERRORS, ElfFile, Shdr
from sfcheck.elf.model import (
    Buffer,
    CfiView,
    ElfSFrameInfo,
    FuncSymbol,
    LoadSegment,
    SFrameSection,
    SFrameSegment,
    TextRange,
)
from sfcheck.elf.relocations import Relocator
from sfcheck.elf.symbols import FuncSymbols, entry_size
from sfcheck.errors import ElfError
from sfcheck.fileio import FileView, InputFileError, open_regular
from sfcheck.result import clip


def machine_name(e_machine: int) -> str | int:
    """pyelftools' name for an e_machine value (its table loaded only for rare machines)."""
    name = MACHINES.get(e_machine)
    if name is None:
        from elftools.elf.enums import ENUM_E_MACHINE
        name = next((k for k, v in ENUM_E_MACHINE.items() if v == e_machine), e_machine)
    return name


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
    except PARSE_ERRORS as exc:
        # `from None`: callers get one clean ElfError, not a pyelftools chain.
        raise ElfError(f"cannot parse ELF: {type(exc).__name__}: {exc}", label) from None
    finally:
        if owned is not None:
            owned.close()


class _Loader(ElfFile):
    """One load_elf() call: the file and its header tables, and what is found in them."""

    def _layout(self, shdrs: list[Shdr], is_rel: bool) -> dict[int, int]:
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
        self, shdrs: list[Shdr], names: list[str], bases: dict[int, int] | None
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
        entsize = entry_size(self.elfclass == 64)
        raw = self.symbol_table(st, names[st.index])
        raw = raw[: (min(len(raw), MAX_SYMBOLS * entsize) // entsize) * entsize]
        strtab = self.section_bytes(shdrs[st.link], names[st.link])
        return FuncSymbols(raw, strtab, self.order, self.elfclass == 64,
                           bases if self.is_rel else None)

    def _cfi_view(
        self, shdrs: list[Shdr], names: list[str], sections: list[SFrameSection]
    ) -> CfiView:
        bases = self._layout(shdrs, self.is_rel)
        sframe = []
        for sec in sections:
            data = sec.data
            if self.is_rel and sec.raw_data:
                data, _n = self.relocator.apply(shdrs[sec.index], sec.raw_data, bases)
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
        except (ElfError, *PARSE_ERRORS) as exc:
            symbols, error = (), f"symbol table: {getattr(exc, 'message', exc)}"
        if eh is not None:
            try:
                eh_data = self.section_bytes(eh, ".eh_frame")
                if self.is_rel:
                    eh_data, _n = self.relocator.apply(eh, eh_data, bases)
                eh_vma = bases.get(eh.index, eh.addr)
            except (ElfError, *PARSE_ERRORS) as exc:
                eh_data, error = None, f".eh_frame: {getattr(exc, 'message', exc)}"
        return CfiView(eh_data, eh_vma, tuple(sframe), symbols, tuple(text), error)

    def load(self, cfi: bool = False) -> ElfSFrameInfo:
        shdrs = self.section_headers()
        names = self.section_names(shdrs)
        phdrs = self.program_headers(shdrs)
        self.relocator = Relocator(self, shdrs, names)
        e_type = E_TYPES.get(self.e_type, self.e_type)
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
            raw = b"" if nobits else self.section_bytes(sh, name)
            data, count = raw, 0
            if is_rel and raw:
                data, count = self.relocator.apply(sh, raw)
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
                except (ElfError, *PARSE_ERRORS):
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
                    tails.append((seg.index, self.read(
                        offset + sec.size, tail_len, f"PT_GNU_SFRAME[{seg.index}] tail")))
                continue
            data = self.read(offset, size, f"PT_GNU_SFRAME[{seg.index}]")
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


def _debug_only(shdrs: list[Shdr]) -> bool:
    """True for a separate debug file: allocated sections exist, and all but notes are
    SHT_NOBITS (objcopy --only-keep-debug keeps their headers, not their bytes)."""
    alloc = [sh for sh in shdrs if sh.flags & SHF_ALLOC and sh.size and sh.type != SHT_NOTE]
    return bool(alloc) and all(sh.type == SHT_NOBITS for sh in alloc)
