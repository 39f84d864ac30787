"""The executable and shared objects mapped in a core: load bias, SFrame tables, symbols."""

from __future__ import annotations

import io
import os
from bisect import bisect_right
from dataclasses import dataclass, field

from elftools.elf.elffile import ELFFile

from ..elf.loader import load_elf
from ..elf.model import ElfSFrameInfo
from ..errors import ElfError
from ..fileio import FileChangedError, FileView, InputFileError, ViewStream, open_regular
from ..loadbias import Mapped, Segment, load_bias
from .core import AT_ENTRY, CoreFile
from .notes import FileMapping
from .table import SFrameTable

_SYMBOL_ERRORS = (Exception,)  # pyelftools can raise nearly anything on a damaged symtab


@dataclass(slots=True)  # a hostile core may map a great many files: small objects
class Module:
    """One mapped ELF file. `path` is as the core names it; `local` where we read it."""

    path: str
    local: str | None
    start: int  # lowest mapped address
    end: int
    bias: int | None = None
    info: ElfSFrameInfo | None = None
    tables: list[SFrameTable] = field(default_factory=list)
    error: str | None = None  # why the file (or its SFrame data) could not be used
    is_exe: bool = False
    not_elf: bool = False  # a data file (locale archive, font, cache): not an object
    ranges: tuple[tuple[int, int], ...] = ()  # its mappings' [start, end), when known
    # where to note the file as unreadable when it changes while its symbols are read
    # (the core's `unreadable`: load_modules sets it)
    unreadable: dict[str, str] | None = None
    _symbols: Symbols | None = None

    def symbolize(self, pc: int) -> tuple[str, int] | None:
        if self._symbols is None:
            self._symbols = Symbols.load(self.local) if self.local else Symbols([])
            if self._symbols.changed is not None and self.unreadable is not None:
                self.unreadable.setdefault(self.path, self._symbols.changed)
        if self.bias is None:
            return None
        return self._symbols.find(pc - self.bias)


# st_info types that name code: STT_FUNC and STT_GNU_IFUNC (10: glibc's memcpy, strlen...),
# which pyelftools, having no name STT_GNU_IFUNC, calls STT_LOOS (elf/symbols.py reads the
# raw 2 and 10)
_FUNC_TYPES = ("STT_FUNC", "STT_LOOS")


class Symbols:
    """Function symbols of one file (link-time addresses), `.symtab` and `.dynsym`."""

    def __init__(self, syms: list[tuple[int, int, str]], changed: str | None = None) -> None:
        syms.sort()
        self._syms = syms
        self._starts = [s[0] for s in syms]
        self.changed = changed  # "changed while read: ..." when the file shrank meanwhile

    @classmethod
    def load(cls, path: str) -> Symbols:
        out: list[tuple[int, int, str]] = []
        try:
            # Read at offsets, never mapped (a file truncated meanwhile must not SIGBUS us):
            # only the tables are read.
            view = FileView(path)
        except InputFileError:
            return cls(out)
        try:
            elf = ELFFile(io.BufferedReader(ViewStream(view)))
            for secname in (".symtab", ".dynsym"):
                sec = elf.get_section_by_name(secname)
                if sec is None or not hasattr(sec, "iter_symbols"):
                    continue
                for sym in sec.iter_symbols():
                    if sym["st_info"]["type"] in _FUNC_TYPES and \
                            sym["st_value"] and sym.name:
                        out.append((sym["st_value"], sym["st_size"], sym.name))
            out.extend(_plt_symbols(elf))
        except FileChangedError as exc:
            return cls(out, exc.message)
        except _SYMBOL_ERRORS:
            pass  # symbols are a nicety; a broken table just means "??"
        finally:
            view.close()
        return cls(out)

    def find(self, addr: int) -> tuple[str, int] | None:
        """(name, offset) of the function containing `addr` (size-0 symbols: nearest below)."""
        i = bisect_right(self._starts, addr) - 1
        # Several symbols may share a start (aliases); walk back a little for a sized one.
        for k in range(i, max(i - 8, -1), -1):
            start, size, name = self._syms[k]
            if start <= addr < start + size or (size == 0 and k == i):
                return name, addr - start
        return None


def _plt_symbols(elf: ELFFile) -> list[tuple[int, int, str]]:
    """`name@plt` for x86-64 PLT entries, as gdb and objdump synthesise them: the i-th
    .rela.plt relocation owns the i-th 16-byte entry of .plt.sec (or of .plt after
    PLT0)."""
    if elf["e_machine"] != "EM_X86_64":
        return []
    rela, dynsym = elf.get_section_by_name(".rela.plt"), elf.get_section_by_name(".dynsym")
    plt_sec = elf.get_section_by_name(".plt.sec")
    plt, first = (plt_sec, 0) if plt_sec is not None else (elf.get_section_by_name(".plt"), 16)
    if rela is None or dynsym is None or plt is None or not hasattr(rela, "iter_relocations"):
        return []
    out = []
    for i, rel in enumerate(rela.iter_relocations()):
        addr = plt["sh_addr"] + first + 16 * i
        if addr + 16 > plt["sh_addr"] + plt["sh_size"]:
            break
        name = dynsym.get_symbol(rel["r_info_sym"]).name if rel["r_info_sym"] else ""
        if name:
            out.append((addr, 16, name + "@plt"))
    return out


def _bias(info: ElfSFrameInfo, maps: list[FileMapping], prefer: int | None) -> int | None:
    """runtime - link-time, from the mapping of the first PT_LOAD's page that the other
    PT_LOADs line up with (sfcheck/loadbias.py): a lower stray mapping of the file's first
    page must not move every address of the file."""
    return load_bias([Segment(s.vaddr, s.offset) for s in info.load_segments],
                     [Mapped(m.start, m.end, m.file_offset) for m in maps], prefer)


def _entry_bias(core: CoreFile, local: str) -> int | None:
    """AT_ENTRY - e_entry: the executable's bias as the kernel chose it (gdb's choice)."""
    entry = core.auxv.get(AT_ENTRY)
    if entry is None:
        return None
    try:
        fd = open_regular(local)[0]
        try:
            head = os.pread(fd, 32, 0)
        finally:
            os.close(fd)
    except (InputFileError, OSError):
        return None
    if len(head) < 32 or head[:4] != b"\x7fELF" or head[4] != 2:
        return None
    e_entry = int.from_bytes(head[24:32], "little" if head[5] == 1 else "big")
    return (entry - e_entry) & ((1 << 64) - 1)


def exe_mapping_path(core: CoreFile) -> str | None:
    """The NT_FILE path of the main executable: the file mapped at AT_ENTRY."""
    entry = core.auxv.get(AT_ENTRY)
    if entry is None:
        return None
    for m in core.mappings:
        if m.start <= entry < m.end:
            return m.path
    return None


def load_modules(core: CoreFile, exe: str | None = None) -> list[Module]:
    """Every file-backed mapping of the core as a Module, with SFrame tables loaded.

    When the core has no NT_FILE note, `exe` alone is loaded and its bias is
    taken from AT_ENTRY.
    """
    by_path: dict[str, list[FileMapping]] = {}
    for m in core.mappings:
        by_path.setdefault(m.path, []).append(m)
    exe_path = exe_mapping_path(core)
    refused = getattr(core.path_resolver, "refused", {})
    modules = []
    for path, maps in by_path.items():
        local = core.path_resolver(path)
        mod = Module(path, local, min(m.start for m in maps), max(m.end for m in maps),
                     is_exe=path == exe_path, ranges=tuple((m.start, m.end) for m in maps),
                     unreadable=core.unreadable)
        if path in refused:
            mod.error = f"refused: {refused[path]}"
        else:
            _load(mod, maps, core if mod.is_exe else None)
        modules.append(mod)
    if not by_path and exe is not None:
        mod = Module(exe, exe, 0, 0, is_exe=True, unreadable=core.unreadable)
        _load(mod, [], None)
        if mod.info is not None and AT_ENTRY in core.auxv:
            try:
                with FileView(exe) as view:  # read, not mapped
                    e_entry = ELFFile(io.BufferedReader(ViewStream(view)))["e_entry"]
                mod.bias = core.auxv[AT_ENTRY] - e_entry
                if mod.info.load_segments:  # its extent, for naming PCs and symbols
                    segs = mod.info.load_segments
                    mod.start = min(s.vaddr for s in segs) + mod.bias
                    mod.end = max(s.vaddr + s.memsz for s in segs) + mod.bias
                _add_tables(mod)
            except InputFileError as exc:
                mod.error = f"cannot read e_entry: {exc.message}"
            except _SYMBOL_ERRORS as exc:
                mod.error = f"cannot read e_entry: {exc}"
        modules.append(mod)
    modules.sort(key=lambda m: m.start)
    return modules


def _load(mod: Module, maps: list[FileMapping], core: CoreFile | None) -> None:
    """Load `mod`'s file and SFrame tables; `core` for the executable (its AT_ENTRY)."""
    if mod.local is None:
        mod.error = "file not found" if mod.path.startswith("/") else "not a file"
        return
    try:
        fd = open_regular(mod.local)[0]  # a regular file, opened without blocking
        try:
            magic = os.pread(fd, 4, 0)
        finally:
            os.close(fd)
        if magic != b"\x7fELF":
            mod.error, mod.not_elf = "not an ELF file", True
            return
        mod.info = load_elf(mod.local)
    except InputFileError as exc:
        mod.error = exc.message
        return
    except OSError as exc:
        mod.error = f"cannot read file: {exc.strerror}"
        return
    except ElfError as exc:
        mod.error = exc.message
        return
    if maps:
        prefer = _entry_bias(core, mod.local) if core is not None else None
        mod.bias = _bias(mod.info, maps, prefer)
        if mod.bias is None:
            mod.error = "no PT_LOAD matches its mappings (a different file than the core's?)"
            return
        _add_tables(mod)


def _add_tables(mod: Module) -> None:
    assert mod.info is not None and mod.bias is not None
    ranges = [(r.start, r.end) for r in mod.info.text_ranges]
    for sec in mod.info.sections:
        if not sec.data:
            continue  # a zero-size SFrame section means "no data" (mold issue #1646)
        mod.tables.append(SFrameTable(sec.data, sec.vma, mod.bias, ranges,
                                      name=f"{mod.path}:{sec.name}"))
