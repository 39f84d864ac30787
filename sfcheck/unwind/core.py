"""An ELF core file as a memory model plus thread registers and file mappings.

Memory comes from the PT_LOAD contents. Read-only file mappings are often not
dumped (the kernel writes them with p_filesz 0; gdb's gcore leaves them out
entirely), so an address the core does not hold is read from the mapped file
named by NT_FILE (file offset = page_offset * page_size) when that file can be
found locally.
"""

from __future__ import annotations

import io
import mmap
import os
import struct
from bisect import bisect_right
from collections.abc import Callable
from dataclasses import dataclass, field, replace

from elftools.common.exceptions import ELFError, ELFParseError
from elftools.elf.elffile import ELFFile

from ..errors import ElfError
from ..fileio import InputFileError, map_regular
from ..format import constants as C
from .abi import ABI_OF_MACHINE, ABIS, EM_AARCH64, EM_S390, EM_X86_64, S390X_FPR_DWARF
from .memory import ADDR_MASK
from .unwinder import Registers

PT_LOAD, PT_NOTE = 1, 4
NT_PRSTATUS, NT_PRFPREG, NT_AUXV, NT_FILE = 1, 2, 6, 0x46494C45
NT_ARM_PAC_MASK = 0x406  # "LINUX" note: data_mask, insn_mask (pointer authentication)
AT_PHDR, AT_ENTRY = 3, 9
_PR_PID_OFF, _PR_REG_OFF = 32, 112  # in the 64-bit struct elf_prstatus

# user_regs_struct field order, per machine (the layout of pr_reg).
_X86_64_REGS = ["r15", "r14", "r13", "r12", "rbp", "rbx", "r11", "r10", "r9", "r8", "rax", "rcx",
                "rdx", "rsi", "rdi", "orig_rax", "rip", "cs", "eflags", "rsp", "ss", "fs_base",
                "gs_base", "ds", "es", "fs", "gs"]
_X86_64_DWARF = {"rax": 0, "rdx": 1, "rcx": 2, "rbx": 3, "rsi": 4, "rdi": 5, "rbp": 6, "rsp": 7,
                 **{f"r{i}": i for i in range(8, 16)}}
_AARCH64_REGS = [f"x{i}" for i in range(31)] + ["sp", "pc", "pstate"]
_S390X_REGS = ["psw_mask", "psw_addr"] + [f"r{i}" for i in range(16)]
_REG_NAMES = {EM_X86_64: _X86_64_REGS, EM_AARCH64: _AARCH64_REGS, EM_S390: _S390X_REGS}
# Distinct mapped files read for memory the core does not hold (each a read-only map);
# a real process maps a few hundred, a hostile NT_FILE note may name any number.
MAX_MAPPED_FILES = 1024
MAX_NT_FILE = 64 << 20  # a large process's NT_FILE note is a few hundred KiB
# File mappings used from NT_FILE notes: above the kernel's default vm.max_map_count (65530,
# every mapping of a process, file-backed or not), so a core of any ordinary process is read
# whole; a hostile note listing millions costs no more than this many.
MAX_FILE_MAPPINGS = 1 << 16


@dataclass(frozen=True, slots=True)
class Thread:
    """One NT_PRSTATUS note. The registers are decoded when asked for, so a core with a
    great many threads costs a small object per thread, not a dict."""

    number: int  # 1-based, in note order (gdb numbers threads the same way)
    pid: int
    machine: int
    order: str  # struct byte order of the core
    pr_reg: memoryview  # the raw register block
    fpregs: memoryview | None = None  # s390x: NT_PRFPREG (fpc, pad, f0..f15)

    @property
    def named(self) -> dict[str, int]:
        """Every pr_reg field by name, for display."""
        names = _REG_NAMES[self.machine]
        return dict(zip(names, struct.unpack_from(self.order + "Q" * len(names), self.pr_reg),
                        strict=True))

    @property
    def registers(self) -> Registers:
        named = self.named
        if self.machine == EM_X86_64:
            others = {n: named[r] for r, n in _X86_64_DWARF.items()}
            return Registers(named["rip"], named["rsp"], named["rbp"], None, others)
        if self.machine == EM_AARCH64:
            others = {i: named[f"x{i}"] for i in range(31)}
            return Registers(named["pc"], named["sp"], named["x29"], named["x30"], others)
        others = {i: named[f"r{i}"] for i in range(16)}
        if self.fpregs is not None and len(self.fpregs) >= 8 + 8 * 16:
            # -O0 code saves the caller's FP (and RA) in floating-point registers.
            fprs = struct.unpack_from(self.order + "16Q", self.fpregs, 8)
            others.update(zip(S390X_FPR_DWARF, fprs, strict=True))
        s390 = ABIS[C.ABI_S390X_BE]
        return Registers(named["psw_addr"], named[f"r{s390.sp}"], named[f"r{s390.fp}"],
                         named["r14"], others)


@dataclass(frozen=True, slots=True)
class FileMapping:
    start: int
    end: int
    file_offset: int
    path: str


@dataclass(frozen=True, slots=True)
class _Load:
    vaddr: int
    memsz: int
    offset: int
    filesz: int


@dataclass
class CoreFile:
    """Parse with `CoreFile.open(path)`; `path_resolver` maps a path from the
    core's NT_FILE note to a local file (sysroot, --exe override)."""

    path: str
    data: bytes | mmap.mmap  # the core itself, mapped: pages load as they are read
    machine: int
    big_endian: bool
    loads: list[_Load]
    threads: list[Thread]
    mappings: list[FileMapping]
    auxv: dict[int, int]
    path_resolver: Callable[[str], str | None] = field(default=lambda p: p)
    _file_cache: dict[str, bytes | mmap.mmap | None] = field(default_factory=dict)
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
                return self.data[seg.offset + off:seg.offset + off + size]
        return self._read_mapped_file(addr, size)

    def _read_mapped_file(self, addr: int, size: int) -> bytes | None:
        j = bisect_right(self._map_starts, addr) - 1
        if j < 0:
            return None
        m = self.mappings[j]
        if addr + size > m.end:
            return None
        blob = self.file_bytes(m.path)
        if blob is None:
            return None
        pos = m.file_offset + (addr - m.start)
        if pos + size > len(blob):
            return None  # past the end of the file: the kernel would have given SIGBUS
        return blob[pos:pos + size]

    def file_bytes(self, mapped_path: str) -> bytes | mmap.mmap | None:
        """The mapped file's bytes (a read-only map), or None when it cannot be read."""
        if mapped_path not in self._file_cache:
            blob = None
            if len(self._file_cache) >= MAX_MAPPED_FILES:
                self.unreadable.setdefault(
                    mapped_path, f"more than {MAX_MAPPED_FILES} mapped files: not read")
            else:
                local = self.path_resolver(mapped_path)
                if local is not None:
                    try:
                        blob = map_regular(local)
                    except InputFileError as exc:
                        self.unreadable.setdefault(mapped_path, exc.message)
            self._file_cache[mapped_path] = blob
        return self._file_cache[mapped_path]

    # -- parsing -----------------------------------------------------------

    @classmethod
    def open(cls, path: str, path_resolver: Callable[[str], str | None] | None = None
             ) -> CoreFile:
        try:
            data = map_regular(path)  # refuses devices, FIFOs, directories in one line
        except InputFileError as exc:
            raise ElfError(exc.message, path) from None
        return cls.parse(data, path, path_resolver)

    @classmethod
    def parse(cls, data: bytes | mmap.mmap, label: str = "<core>",
              path_resolver: Callable[[str], str | None] | None = None) -> CoreFile:
        if data[:4] != b"\x7fELF":
            raise ElfError("not an ELF file", label)
        try:
            elf = ELFFile(data if isinstance(data, mmap.mmap) else io.BytesIO(data))
            if elf["e_type"] != "ET_CORE":
                raise ElfError(f"not a core file (e_type {elf['e_type']})", label)
            if elf.elfclass != 64:
                raise ElfError("only 64-bit cores are supported", label)
            big = not elf.little_endian
            machine = struct.unpack_from((">" if big else "<") + "H", data, 18)[0]
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
                    notes.append(memoryview(data)[off:off + size])  # no copy
        except ElfError:
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
        for blob in notes:
            for name, ntype, desc in _iter_notes(blob, order):
                if name == b"LINUX" and ntype == NT_ARM_PAC_MASK and len(desc) >= 16 \
                        and machine == EM_AARCH64 and pac_mask is None:
                    pac_mask = struct.unpack_from(order + "Q", desc, 8)[0]  # insn_mask
                if name != b"CORE":
                    continue
                if ntype == NT_PRSTATUS:
                    thread = _prstatus(desc, order, machine, len(threads) + 1)
                    if thread is not None:
                        threads.append(thread)
                elif ntype == NT_PRFPREG and machine == EM_S390 and threads:
                    threads[-1] = replace(threads[-1], fpregs=desc)  # follows its PRSTATUS
                elif ntype == NT_FILE:
                    got, more = _nt_file(desc, order, MAX_FILE_MAPPINGS - len(mappings))
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


def _iter_notes(blob: memoryview, order: str):
    """(name, type, desc) of each note; stops quietly at the first truncated one."""
    pos = 0
    while pos + 12 <= len(blob):
        namesz, descsz, ntype = struct.unpack_from(order + "III", blob, pos)
        name_end = pos + 12 + namesz
        desc_pos = pos + 12 + ((namesz + 3) & ~3)
        desc_end = desc_pos + descsz
        if desc_end > len(blob) or name_end > len(blob):
            return
        yield bytes(blob[pos + 12:name_end]).rstrip(b"\0"), ntype, blob[desc_pos:desc_end]
        pos = desc_pos + ((descsz + 3) & ~3)


def _prstatus(desc: memoryview, order: str, machine: int, number: int) -> Thread | None:
    names = _REG_NAMES.get(machine)
    if names is None or len(desc) < _PR_REG_OFF + 8 * len(names):
        return None
    pid = struct.unpack_from(order + "i", desc, _PR_PID_OFF)[0]
    return Thread(number, pid, machine, order, desc[_PR_REG_OFF:_PR_REG_OFF + 8 * len(names)])


def _nt_file(desc: memoryview, order: str, room: int) -> tuple[list[FileMapping], int]:
    """NT_FILE: count, page_size, count x (start, end, page_offset), then the names. At most
    `room` mappings; the second value is how many more the note lists."""
    if len(desc) < 16 or len(desc) > MAX_NT_FILE:
        return [], 0
    count, page_size = struct.unpack_from(order + "QQ", desc, 0)
    table_end = 16 + 24 * count
    if count > len(desc) // 24 or table_end > len(desc):
        return [], 0
    used = max(0, min(count, room))
    # Only the names used are split off (the rest stays one bytes object).
    names = bytes(desc[table_end:]).split(b"\0", used)
    out = []
    for i in range(used):
        start, end, page_off = struct.unpack_from(order + "QQQ", desc, 16 + 24 * i)
        if i >= len(names) or end <= start:
            continue
        out.append(FileMapping(start, end, page_off * page_size,
                               os.fsdecode(names[i])))
    return out, count - used
