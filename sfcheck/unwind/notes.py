"""What an ELF core's notes say: the threads and their registers (NT_PRSTATUS, s390x's
NT_PRFPREG) and the mapped files (NT_FILE), read through a bounded window (iter_notes)."""

from __future__ import annotations

import os
import struct
from collections.abc import Callable, Iterator
from dataclasses import dataclass

from ..format import constants
from .abi import ABIS, EM_AARCH64, EM_S390, EM_X86_64, S390X_FPR_DWARF
from .unwinder import Registers

NT_PRSTATUS, NT_PRFPREG, NT_AUXV, NT_FILE = 1, 2, 6, 0x46494C45
NT_ARM_PAC_MASK = 0x406  # "LINUX" note: data_mask, insn_mask (pointer authentication)
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
# Notes are read through a window of this size; a note larger than MAX_NOTE (none the
# walk uses is: NT_FILE is refused above MAX_NT_FILE) is skipped, never read.
_NOTE_WINDOW = 1 << 20
MAX_NT_FILE = 64 << 20  # a large process's NT_FILE note is a few hundred KiB
MAX_NOTE = MAX_NT_FILE + 4096  # header and name of the largest note used


@dataclass(frozen=True, slots=True)
class Thread:
    """One NT_PRSTATUS note. The registers are decoded when asked for, so a core with a
    great many threads costs a small object per thread, not a dict."""

    number: int  # 1-based, in note order (gdb numbers threads the same way)
    pid: int
    machine: int
    order: str  # struct byte order of the core
    pr_reg: bytes | memoryview  # the raw register block
    fpregs: bytes | memoryview | None = None  # s390x: NT_PRFPREG (fpc, pad, f0..f15)

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
        s390 = ABIS[constants.ABI_S390X_BE]
        return Registers(named["psw_addr"], named[f"r{s390.sp}"], named[f"r{s390.fp}"],
                         named["r14"], others)


@dataclass(frozen=True, slots=True)
class FileMapping:
    start: int
    end: int
    file_offset: int
    path: str


def iter_notes(read: Callable[[int, int], bytes | memoryview], start: int, size: int,
                order: str) -> Iterator[tuple[bytes, int, memoryview]]:
    """(name, type, desc) of each note of the `size` bytes at `start` (`read(offset, n)`
    gives bytes of the core), read through a window: a note segment costs the window and
    the largest note used, whatever its size. A note of more than MAX_NOTE bytes is
    skipped unread; stops quietly at the first truncated one. `desc` is a view of the
    window: copy what is kept."""
    pos, base, buf = 0, 0, memoryview(b"")
    while pos + 12 <= size:
        if pos + 12 > base + len(buf):
            base, buf = pos, memoryview(read(start + pos, min(_NOTE_WINDOW, size - pos)))
        namesz, descsz, ntype = struct.unpack_from(order + "III", buf, pos - base)
        name_end = pos + 12 + namesz
        desc_pos = pos + 12 + ((namesz + 3) & ~3)
        desc_end = desc_pos + descsz
        if desc_end > size or name_end > size:
            return
        after = desc_pos + ((descsz + 3) & ~3)
        if desc_end > base + len(buf):
            if desc_end - pos > MAX_NOTE:
                pos = after
                continue
            base = pos
            buf = memoryview(read(start + pos, max(desc_end - pos,
                                                   min(_NOTE_WINDOW, size - pos))))
        yield (bytes(buf[pos + 12 - base:name_end - base]).rstrip(b"\0"), ntype,
               buf[desc_pos - base:desc_end - base])
        pos = after


def prstatus(desc: memoryview, order: str, machine: int, number: int) -> Thread | None:
    names = _REG_NAMES.get(machine)
    if names is None or len(desc) < _PR_REG_OFF + 8 * len(names):
        return None
    pid = struct.unpack_from(order + "i", desc, _PR_PID_OFF)[0]
    # Copied: `desc` is a view of the note window, read over by the next notes.
    return Thread(number, pid, machine, order,
                  bytes(desc[_PR_REG_OFF:_PR_REG_OFF + 8 * len(names)]))


def nt_file(desc: memoryview, order: str, room: int) -> tuple[list[FileMapping], int]:
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
