"""An ELF core file as a memory model plus thread registers and file mappings.

Memory comes from the PT_LOAD contents. Read-only file mappings are often not
dumped (the kernel writes them with p_filesz 0; gdb's gcore leaves them out
entirely), so an address the core does not hold is read from the mapped file
named by NT_FILE (file offset = page_offset * page_size) when that file can be
found locally.

Neither the core nor the mapped files are mapped into sfcheck: each is read at
offsets (fileio.FileView, its size taken once at open), so a file truncated
while it is read is a "changed while read" error (the core's: exit 2; a mapped
file's: that file is unreadable) and never a SIGBUS that kills the process. What the
notes say (threads, registers, file mappings) is read by notes.py.
"""

from __future__ import annotations

import io
import mmap
import os
import struct
from bisect import bisect_right
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass, field, replace

from elftools.common.exceptions import ELFError, ELFParseError
from elftools.elf.elffile import ELFFile

from ..errors import ElfError
from ..fileio import FileChangedError, FileView, InputFileError, ViewStream
from .abi import ABI_OF_MACHINE, EM_AARCH64, EM_S390
from .memory import ADDR_MASK
from .notes import (
    NT_ARM_PAC_MASK,
    NT_AUXV,
    NT_FILE,
    NT_PRFPREG,
    NT_PRSTATUS,
    FileMapping,
    Thread,
    iter_notes,
    nt_file,
    prstatus,
)

PT_LOAD, PT_NOTE = 1, 4
AT_PHDR, AT_ENTRY = 3, 9
# Distinct mapped files read for memory the core does not hold; a real process maps a few
# hundred, a hostile NT_FILE note may name any number.
MAX_MAPPED_FILES = 1024
# Of those, how many are kept open at once (the least recently read is closed, and
# reopened if read again: it must then be the same file, or it changed while read).
MAX_OPEN_MAPPED_FILES = 64
# The core is read in blocks of this size, the last few hundred kept: a walk reads a
# stack a word at a time, near the words before.
_BLOCK_SHIFT = 14
_BLOCK = 1 << _BLOCK_SHIFT
_CACHED_BLOCKS = 256
# File mappings used from NT_FILE notes: above the kernel's default vm.max_map_count (65530,
# every mapping of a process, file-backed or not), so a core of any ordinary process is read
# whole; a hostile note listing millions costs no more than this many.
MAX_FILE_MAPPINGS = 1 << 16


@dataclass(frozen=True, slots=True)
class _Load:
    vaddr: int
    memsz: int
    offset: int
    filesz: int


class _MappedFile:
    """A mapped file read at offsets. Its descriptor may be closed while other files are
    read (at most MAX_OPEN_MAPPED_FILES stay open) and reopened later: the file then found
    at the path must be the one first read (device, inode, size, modification time), or
    it changed while read."""

    __slots__ = ("local", "view", "ident", "size")

    def __init__(self, local: str) -> None:
        self.local = local
        self.view: FileView | None = None
        self.ident: tuple[int, ...] | None = None
        self.size = 0
        self.reopen()

    def reopen(self) -> None:
        view = FileView(self.local)  # refuses devices, FIFOs, directories in one line
        try:
            st = os.fstat(view.fd)
        except OSError as exc:
            view.close()
            raise InputFileError(f"cannot read file: {exc.strerror or exc}",
                                 self.local) from None
        ident = (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns)
        if self.ident is None:
            self.ident, self.size = ident, view.size
        elif ident != self.ident:
            view.close()
            raise FileChangedError(f"changed while read: {self.size} bytes when first "
                                   f"read, now {st.st_size} bytes"
                                   + ("" if st.st_size != self.size
                                      else " (rewritten or replaced)"), self.local)
        self.view = view

    def close(self) -> None:
        if self.view is not None:
            self.view.close()
            self.view = None


@dataclass
class CoreFile:
    """Parse with `CoreFile.open(path)`; `path_resolver` maps a path from the
    core's NT_FILE note to a local file (sysroot, --exe override)."""

    path: str
    # The core itself: read at offsets (a FileView, see _core_bytes), or bytes for tests.
    data: bytes | mmap.mmap | FileView
    machine: int
    big_endian: bool
    loads: list[_Load]
    threads: list[Thread]
    mappings: list[FileMapping]
    auxv: dict[int, int]
    path_resolver: Callable[[str], str | None] = field(default=lambda p: p)
    _file_cache: dict[str, _MappedFile | None] = field(default_factory=dict)
    _open_files: OrderedDict[str, _MappedFile] = field(default_factory=OrderedDict)
    _blocks: dict[int, bytes] = field(default_factory=dict)  # FileView cores: read blocks
    # mapped path -> why it was not read (refused by the resolver, not a regular file, ...)
    unreadable: dict[str, str] = field(default_factory=dict)
    pac_mask: int | None = None  # aarch64: the PAC bits of code addresses (NT_ARM_PAC_MASK)
    mappings_dropped: int = 0  # NT_FILE entries past MAX_FILE_MAPPINGS: not used

    def __post_init__(self) -> None:
        self.loads.sort(key=lambda s: s.vaddr)
        self._load_starts = [s.vaddr for s in self.loads]
        self.mappings.sort(key=lambda m: m.start)
        self._map_starts = [m.start for m in self.mappings]

    @property
    def abi(self) -> int | None:
        return ABI_OF_MACHINE.get((self.machine, self.big_endian))

    # -- memory ------------------------------------------------------------

    def read(self, addr: int, size: int) -> bytes | None:
        if addr < 0 or size < 0 or addr + size > ADDR_MASK + 1:
            return None
        i = bisect_right(self._load_starts, addr) - 1
        if i >= 0:
            seg = self.loads[i]
            off = addr - seg.vaddr
            if off + size <= seg.filesz and seg.offset + off + size <= len(self.data):
                return self._core_bytes(seg.offset + off, size)
        return self._read_mapped_file(addr, size)

    def _core_bytes(self, pos: int, size: int) -> bytes:
        """`size` bytes of the core at `pos` (inside its size). A FileView core is read a
        block at a time, the last blocks kept; a core that shrank since it was opened
        raises FileChangedError (the caller's error: the core cannot be read)."""
        data = self.data
        if not isinstance(data, FileView):
            return data[pos:pos + size]
        block = pos >> _BLOCK_SHIFT
        if size > _BLOCK or (pos + size - 1) >> _BLOCK_SHIFT != block:
            return data.read(pos, size)
        buf = self._blocks.get(block)
        if buf is None:
            if len(self._blocks) >= _CACHED_BLOCKS:
                del self._blocks[next(iter(self._blocks))]  # the oldest read
            start = block << _BLOCK_SHIFT
            buf = self._blocks[block] = data.read(start, min(_BLOCK, data.size - start))
        at = pos & (_BLOCK - 1)
        return buf[at:at + size]

    def _read_mapped_file(self, addr: int, size: int) -> bytes | None:
        j = bisect_right(self._map_starts, addr) - 1
        if j < 0:
            return None
        m = self.mappings[j]
        if addr + size > m.end:
            return None
        return self.file_read(m.path, m.file_offset + (addr - m.start), size)

    def file_read(self, mapped_path: str, pos: int, size: int) -> bytes | None:
        """`size` bytes at `pos` of a mapped file, or None when it cannot be read or ends
        before (the kernel would have given SIGBUS). A file that cannot be read, or that
        changed while read, is noted in `unreadable` and not read again."""
        f = self._mapped_file(mapped_path)
        if f is None or pos < 0 or size < 0 or pos + size > f.size:
            return None
        try:
            if f.view is None:
                f.reopen()
                self._opened(mapped_path, f)
            else:
                self._open_files.move_to_end(mapped_path)
            assert f.view is not None
            return f.view.read(pos, size)
        except InputFileError as exc:
            self.unreadable.setdefault(mapped_path, exc.message)
            f.close()
            self._open_files.pop(mapped_path, None)
            self._file_cache[mapped_path] = None
            return None

    def _mapped_file(self, mapped_path: str) -> _MappedFile | None:
        """The mapped file, opened at its first use, or None when it cannot be read."""
        if mapped_path not in self._file_cache:
            got = None
            if len(self._file_cache) >= MAX_MAPPED_FILES:
                self.unreadable.setdefault(
                    mapped_path, f"more than {MAX_MAPPED_FILES} mapped files: not read")
            else:
                local = self.path_resolver(mapped_path)
                if local is not None:
                    try:
                        got = _MappedFile(local)
                    except InputFileError as exc:
                        self.unreadable.setdefault(mapped_path, exc.message)
                    else:
                        self._opened(mapped_path, got)
            self._file_cache[mapped_path] = got
        return self._file_cache[mapped_path]

    def _opened(self, mapped_path: str, f: _MappedFile) -> None:
        """Count `f` as open; close the least recently read file past the bound."""
        self._open_files[mapped_path] = f
        while len(self._open_files) > MAX_OPEN_MAPPED_FILES:
            self._open_files.popitem(last=False)[1].close()

    def close(self) -> None:
        """Close the core and the mapped files (a FileView core cannot be read after)."""
        for f in self._open_files.values():
            f.close()
        self._open_files.clear()
        if isinstance(self.data, FileView):
            self.data.close()

    # -- parsing -----------------------------------------------------------

    @classmethod
    def open(cls, path: str, path_resolver: Callable[[str], str | None] | None = None
             ) -> CoreFile:
        """The core at `path`, read at offsets (never mapped: a core truncated while it is
        read raises ElfError "changed while read", not SIGBUS; it may still raise
        FileChangedError from `read` later, when the walk reaches the bytes it lost)."""
        try:
            view = FileView(path)  # refuses devices, FIFOs, directories in one line
        except InputFileError as exc:
            raise ElfError(exc.message, path) from None
        try:
            return cls.parse(view, path, path_resolver)
        except BaseException:
            view.close()
            raise

    @classmethod
    def parse(cls, data: bytes | mmap.mmap | FileView, label: str = "<core>",
              path_resolver: Callable[[str], str | None] | None = None) -> CoreFile:
        """Parse a core held in `data`: its bytes, or a FileView the CoreFile goes on reading
        (memory comes from it as the walk asks)."""
        try:
            return cls._parse(data, label, path_resolver)
        except InputFileError as exc:  # a FileView core: changed while read, or an I/O error
            raise ElfError(exc.message, label) from None

    @classmethod
    def _parse(cls, data: bytes | mmap.mmap | FileView, label: str,
               path_resolver: Callable[[str], str | None] | None) -> CoreFile:
        read: Callable[[int, int], bytes | memoryview]
        if isinstance(data, FileView):
            read = data.read
            stream: io.BufferedIOBase | mmap.mmap = io.BufferedReader(ViewStream(data))
        else:
            whole = memoryview(data)
            read = lambda off, n: whole[off:off + n]  # noqa: E731 - no copy
            stream = data if isinstance(data, mmap.mmap) else io.BytesIO(data)
        if bytes(read(0, min(4, len(data)))) != b"\x7fELF":
            raise ElfError("not an ELF file", label)
        try:
            elf = ELFFile(stream)
            if elf["e_type"] != "ET_CORE":
                raise ElfError(f"not a core file (e_type {elf['e_type']})", label)
            if elf.elfclass != 64:
                raise ElfError("only 64-bit cores are supported", label)
            big = not elf.little_endian
            machine = struct.unpack((">" if big else "<") + "H", read(18, 2))[0]
            loads, notes = [], []
            for seg in elf.iter_segments():
                if seg["p_type"] == "PT_LOAD":
                    loads.append(_Load(seg["p_vaddr"], seg["p_memsz"], seg["p_offset"],
                                       seg["p_filesz"]))
                elif seg["p_type"] == "PT_NOTE":
                    off, size = seg["p_offset"], seg["p_filesz"]
                    if off + size > len(data):
                        raise ElfError(f"PT_NOTE at {off:#x} runs past the end of the file",
                                       label)
                    notes.append((off, size))
        except (ElfError, InputFileError):
            raise
        except (ELFError, ELFParseError, struct.error, ValueError, KeyError, OverflowError,
                IndexError, TypeError, AttributeError) as exc:
            # pyelftools raises these on hostile header fields (e.g. a 2**63 e_phoff)
            raise ElfError(f"cannot parse core: {exc}", label) from None
        order = ">" if big else "<"
        threads: list[Thread] = []
        mappings: list[FileMapping] = []
        dropped = 0
        auxv: dict[int, int] = {}
        pac_mask = None
        for off, size in notes:
            for name, ntype, desc in iter_notes(read, off, size, order):
                if name == b"LINUX" and ntype == NT_ARM_PAC_MASK and len(desc) >= 16 \
                        and machine == EM_AARCH64 and pac_mask is None:
                    pac_mask = struct.unpack_from(order + "Q", desc, 8)[0]  # insn_mask
                if name != b"CORE":
                    continue
                if ntype == NT_PRSTATUS:
                    thread = prstatus(desc, order, machine, len(threads) + 1)
                    if thread is not None:
                        threads.append(thread)
                elif ntype == NT_PRFPREG and machine == EM_S390 and threads:
                    # follows its PRSTATUS; copied: the note window is read over
                    threads[-1] = replace(threads[-1], fpregs=bytes(desc))
                elif ntype == NT_FILE:
                    got, more = nt_file(desc, order, MAX_FILE_MAPPINGS - len(mappings))
                    mappings.extend(got)
                    dropped += more
                elif ntype == NT_AUXV:
                    for i in range(0, len(desc) - 15, 16):
                        key, val = struct.unpack_from(order + "QQ", desc, i)
                        auxv.setdefault(key, val)
        core = cls(label, data, machine, big, loads, threads, mappings, auxv,
                   path_resolver or (lambda p: p))
        core.pac_mask = pac_mask
        core.mappings_dropped = dropped
        return core
