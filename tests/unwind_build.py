"""Builders for unwind tests: SFrame sections at chosen addresses, synthetic stacks.

Every expected value in the unwind tests is derived from what these builders
were asked to construct, never read back from the unwinder.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

from sfcheck.format import FDE, FRE, build_section, encode, fde_info, make_fre
from sfcheck.format import constants as C
from sfcheck.unwind import Registers, SFrameTable, SparseMemory

SECTION_VMA = 0x10000


@dataclass
class Func:
    """A function at `addr` of `size` bytes with FREs (start offsets relative to it)."""

    addr: int
    size: int
    fres: list[FRE]
    pcmask: bool = False
    rep_size: int = 0
    flex: bool = False
    signal: bool = False
    pauth_key: int = 0


def section_bytes(version: int, abi: int, funcs: list[Func], *, sorted_flag: bool = True,
                  pcrel: bool | None = None, fixed_ra: int | None = None,
                  vma: int = SECTION_VMA, order: list[int] | None = None) -> bytes:
    """Encode `funcs` (in `order`, default as given) with start fields pointing at them."""
    if pcrel is None:
        pcrel = version >= C.VERSION_3
    flags = (C.F_FDE_SORTED if sorted_flag else 0) | (C.F_FDE_FUNC_START_PCREL if pcrel else 0)
    order = list(range(len(funcs))) if order is None else order
    fdes = []
    for pos, k in enumerate(order):
        f = funcs[k]
        field_pos = C.HEADER_SIZE + pos * C.FDE_SIZE[version]
        start = f.addr - vma - (field_pos if pcrel else 0)
        fre_type = 0 if f.size <= 0xFF else (1 if f.size <= 0xFFFF else 2)
        fdes.append(FDE(start=start, size=f.size,
                        info=fde_info(fre_type, f.pcmask, f.pauth_key, f.signal),
                        fres=tuple(f.fres), rep_size=f.rep_size,
                        info2=C.FDE_TYPE_FLEX if f.flex else C.FDE_TYPE_DEFAULT))
    sec = build_section(version, abi, fdes, flags=flags, fixed_ra=fixed_ra)
    return encode(sec)


def table(version: int, abi: int, funcs: list[Func], **kw: object) -> SFrameTable:
    return SFrameTable(section_bytes(version, abi, funcs, **kw), vma=SECTION_VMA)


@dataclass
class Stack:
    """A synthetic amd64-style stack: frame k has CFA = SP + 16, RA at CFA-8 and the
    caller's FP at CFA-16 (a `push %rbp` frame), descending from `top`."""

    words: dict[int, int] = field(default_factory=dict)

    def memory(self, big_endian: bool = False) -> SparseMemory:
        mem = SparseMemory()
        for addr, value in self.words.items():
            mem.add(addr, value.to_bytes(8, "big" if big_endian else "little"))
        return mem


def chain(n: int, func_size: int = 0x40, text: int = 0x400000, stack_top: int = 0x7FFF0000,
          version: int = 2, outermost: bool = True
          ) -> tuple[SFrameTable, SparseMemory, Registers, list[tuple[int, int]]]:
    """n amd64 frames; function k calls k+1. Returns the expected (pc, sp) per frame.

    The last function's FRE says RA undefined when `outermost` (v2/v3), so the
    walk ends there; otherwise it has a normal FRE and its saved RA points
    outside any text (the walk ends with "no FDE for PC").
    """
    funcs = []
    for k in range(n):
        last = k == n - 1
        fres = [make_fre(0, (8,)), make_fre(1, (16, -16))]
        if last and outermost:
            fres = [make_fre(0, ())]
        funcs.append(Func(text + k * func_size, func_size, fres))
    # Frame 0 is the innermost (function 0); its caller is function 1, and so on.
    sp = stack_top - 16 * (n + 2)
    stack = Stack()
    expected = []
    pc = text + 5
    fp = 0
    for k in range(n):
        expected.append((pc, sp))
        cfa = sp + 16
        ra = text + (k + 1) * func_size + 7 if k + 1 < n else 0xDEAD0000
        stack.words[cfa - 8] = ra
        stack.words[cfa - 16] = fp
        fp = cfa - 16
        pc, sp = ra, cfa
    if not outermost:
        expected.append((pc, sp))
    tab = table(version, C.ABI_AMD64_LE, funcs)
    return tab, stack.memory(), Registers(text + 5, expected[0][1], 0), expected


def with_fres(f: Func, *fres: FRE) -> Func:
    return replace(f, fres=list(fres))


# -- synthetic x86-64 core files (ELF ET_CORE), written from the ELF and Linux core
# layouts: PT_NOTE with CORE notes (NT_PRSTATUS: pr_pid at 32, pr_reg at 112 in the
# order of struct user_regs_struct), NT_FILE, NT_AUXV; then one PT_LOAD per range.

_PRSTATUS_SIZE = 336
_USER_REGS = ["r15", "r14", "r13", "r12", "rbp", "rbx", "r11", "r10", "r9", "r8", "rax", "rcx",
              "rdx", "rsi", "rdi", "orig_rax", "rip", "cs", "eflags", "rsp", "ss", "fs_base",
              "gs_base", "ds", "es", "fs", "gs"]


def note(ntype: int, desc: bytes, name: bytes = b"CORE\0", order: str = "little") -> bytes:
    pad = (-len(name)) % 4
    return (len(name).to_bytes(4, order) + len(desc).to_bytes(4, order)
            + ntype.to_bytes(4, order) + name + bytes(pad) + desc
            + bytes((-len(desc)) % 4))


def prstatus(pid: int, rip: int, rsp: int, rbp: int = 0) -> bytes:
    regs = {"rip": rip, "rsp": rsp, "rbp": rbp}
    return prstatus_raw(pid, [regs.get(name, 0) for name in _USER_REGS])


def prstatus_raw(pid: int, pr_reg: list[int], order: str = "little") -> bytes:
    """Any machine's NT_PRSTATUS: pr_reg in its user_regs_struct order (aarch64: x0..x30,
    sp, pc, pstate; s390x: psw mask, psw addr, r0..r15)."""
    desc = bytearray(112 + 8 * len(pr_reg) + 8)
    desc[32:36] = pid.to_bytes(4, order)
    for i, value in enumerate(pr_reg):
        desc[112 + 8 * i:120 + 8 * i] = value.to_bytes(8, order)
    return note(1, bytes(desc), order=order)


def nt_file(maps: list[tuple[int, int, int, str]], page_size: int = 4096) -> bytes:
    """(start, end, file offset (a multiple of page_size), path) per mapping."""
    head = len(maps).to_bytes(8, "little") + page_size.to_bytes(8, "little")
    table = b"".join(s.to_bytes(8, "little") + e.to_bytes(8, "little")
                     + (off // page_size).to_bytes(8, "little") for s, e, off, _ in maps)
    names = b"".join(p.encode() + b"\0" for *_, p in maps)
    return note(0x46494C45, head + table + names)


def auxv(entries: dict[int, int]) -> bytes:
    body = b"".join(k.to_bytes(8, "little") + v.to_bytes(8, "little")
                    for k, v in [*entries.items(), (0, 0)])
    return note(6, body)


def core_bytes(notes: bytes, loads: list[tuple[int, bytes]], machine: int = 62,
               order: str = "little") -> bytes:
    """A core (default x86-64; 183 aarch64, 22 s390x with order "big"): the notes in one
    PT_NOTE, `loads` as (vaddr, contents) PT_LOADs."""
    phnum = 1 + len(loads)
    off = 64 + 56 * phnum
    phdrs = [(4, 0, off, 0, len(notes), len(notes))]
    data_off = off + len(notes)
    blobs = [notes]
    for vaddr, blob in loads:
        phdrs.append((1, 6, data_off, vaddr, len(blob), len(blob)))
        blobs.append(blob)
        data_off += len(blob)
    data = b"\x01" if order == "little" else b"\x02"  # EI_DATA
    ehdr = (b"\x7fELF\x02" + data + b"\x01" + bytes(9) + (4).to_bytes(2, order)
            + machine.to_bytes(2, order) + (1).to_bytes(4, order) + bytes(8)
            + (64).to_bytes(8, order) + bytes(8) + bytes(4)
            + (64).to_bytes(2, order) + (56).to_bytes(2, order)
            + phnum.to_bytes(2, order) + (64).to_bytes(2, order) + bytes(4))
    ph = b"".join(t.to_bytes(4, order) + fl.to_bytes(4, order) + o.to_bytes(8, order)
                  + v.to_bytes(8, order) + v.to_bytes(8, order) + fs.to_bytes(8, order)
                  + ms.to_bytes(8, order) + (8).to_bytes(8, order)
                  for t, fl, o, v, fs, ms in phdrs)
    return ehdr + ph + b"".join(blobs)


# -- gdb's view of a core: every thread's frames, as `thread apply all bt` walks them
# (GDBFRAME lwp level pc name), and why the walk of each thread ended (GDBSTOP lwp reason).
SIGTRAMP = "<signal handler called>"
GDB_FRAMES_PY = """\
for t in sorted(gdb.selected_inferior().threads(), key=lambda t: t.num):
    t.switch()
    f = gdb.newest_frame()
    while f is not None:
        name = "<signal handler called>" if f.type() == gdb.SIGTRAMP_FRAME else f.name()
        print("GDBFRAME %d %d %#x %s" % (t.ptid[1], f.level(), f.pc(), name))
        if f.older() is None:
            print("GDBSTOP %d %s" % (t.ptid[1], gdb.frame_stop_reason_string(
                f.unwind_stop_reason())))
        f = f.older()
"""
