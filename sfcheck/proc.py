"""`sfcheck proc PID`: predict, for every object mapped into a live process, what the Linux
V3-series SFrame unwinder would do with it (registration and lookups), from
/proc/PID/maps, the mapped files and the section bytes as mapped (/proc/PID/mem).

Registration as binfmt_elf and sframe_add_section do it (sfcheck/profiles/kernel.py):
binfmt_elf registers the executable and its interpreter at exec, one registration per PF_X
segment with the PT_GNU_SFRAME range; any other object (a library, something dlopen'ed)
is registered only if its loader calls the stacktrace_setup system call of Steven
Rostedt's RFC (2026-04-29) with the same ranges, which no loader does yet (glibc 2.43
does not), so for those the prediction is what that call would do. The sframe range must lie
in one mapping (readable, or the first lookup faults and the section is dropped), each
text range in exactly one executable mapping (an mprotect that splits it breaks
registration), and no two registered text ranges may overlap or touch (the maple tree's
end is inclusive). The bytes in memory are compared with the file's and checked under the
`kernel` profile.

The process is live and may be hostile: each mapped file is read as a sealed private copy
(sfcheck/filesnap.py: a file it shrinks under us cannot SIGBUS us), a deleted one through
/proc/PID/map_files, memory that cannot be read is an outcome of its own, and an exit during
the read is said as such (exit 3) instead of passing for results.
"""

from __future__ import annotations

import mmap
import os
from dataclasses import dataclass, field
from typing import Any

from .elf.loader import load_elf
from .elf.model import ElfSFrameInfo
from .errors import ElfError
from .loadbias import Mapped, Segment, load_bias
from .procfs import (
    DELETED,
    Mapping,
    ProcError,
    check_readable,
    exec_objects,
    exited,
    is_deleted,
    mapped_file,
    open_mem,
    parse_maps,
    read_maps,
    read_mem,
)
from .report.escape import escape
from .wording import noun, plural

__all__ = ["Mapping", "ObjectReport", "ProcError", "ProcScan", "examine", "parse_maps"]

MAX_SECTION = 256 << 20  # never read more than this from /proc/PID/mem for one section
# Who registers an object's SFrame with the kernel (the V3 series and the syscall RFC).
AT_EXEC, BY_SYSCALL = "binfmt_elf", "stacktrace_setup"
EXIT_OK, EXIT_FINDINGS, EXIT_EXITED = 0, 1, 3
_COMPARE_CHUNK = 1 << 16


@dataclass
class ObjectReport:
    path: str
    sframe: bool = False
    version: int | None = None
    bias: int = 0
    sframe_range: tuple[int, int] | None = None
    texts: list[tuple[int, int]] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)  # registration would fail: why
    notes: list[str] = field(default_factory=list)
    memory: str = ""  # "same as file" | "differs ..." | "unreadable at ..."
    differs: bool = False  # the mapped section is not the file's (other bytes or shorter)
    findings: list[dict[str, Any]] = field(default_factory=list)  # kernel profile, as mapped
    registers: bool = False
    deleted: bool = False  # the file was unlinked (or replaced) after it was mapped
    error: str = ""  # the object could not be examined: why
    # AT_EXEC: the executable or its interpreter, registered at exec; BY_SYSCALL: any
    # other object, registered only when its loader calls stacktrace_setup (none does yet)
    registration: str = AT_EXEC

    @property
    def errors(self) -> int:
        """Error findings that concern the kernel (not those it never reads: effect
        "nothing", sfcheck.effects)."""
        return sum(1 for f in self.findings
                   if f["severity"] == "error" and f.get("effect") != "nothing")


@dataclass
class ProcScan:
    """What `examine` found: one report per object (a file mapped executable), how many
    files are mapped as data only, and whether the process exited before everything was
    read (the reports are then incomplete: memory read after the exit reads as nothing)."""

    pid: int
    reports: list[ObjectReport]
    data_files: int = 0
    exited: bool = False


def compare(mem: bytes | bytearray, filed: Any) -> tuple[int, int | None]:
    """(bytes that differ, offset of the first) over the common length, in O(1) memory:
    chunk by chunk, a differing chunk XORed as one integer."""
    n = min(len(mem), len(filed))
    a, b = memoryview(mem)[:n], memoryview(filed)[:n]
    count, first = 0, None
    for off in range(0, n, _COMPARE_CHUNK):
        x, y = a[off:off + _COMPARE_CHUNK], b[off:off + _COMPARE_CHUNK]
        if x == y:
            continue
        xor = (int.from_bytes(x, "little") ^ int.from_bytes(y, "little")).to_bytes(len(x),
                                                                                "little")
        count += len(xor) - xor.count(0)
        if first is None:
            first = off + len(xor) - len(xor.lstrip(b"\0"))
    return count, first


def _bias(info: ElfSFrameInfo, maps: list[Mapping]) -> int | None:
    if info.e_type == "ET_EXEC":
        return 0
    return load_bias([Segment(s.vaddr, s.offset) for s in info.load_segments],
                     [Mapped(m.start, m.end, m.offset) for m in maps])


def _containing(maps: list[Mapping], lo: int, hi: int) -> list[Mapping]:
    """The mappings [lo, hi) touches."""
    return [m for m in maps if m.start < hi and lo < m.end]


def examine(pid: int, profile: str = "kernel") -> ProcScan:
    """One report per file mapped executable into process `pid` (an object: the kernel
    registers SFrame only for code)."""
    was = check_readable(pid)
    maps = read_maps(pid)
    fd = open_mem(pid)  # fail fast (exit 2) before loading the checker
    exe, interp = exec_objects(pid)
    by_path: dict[str, list[Mapping]] = {}
    for m in maps:
        if m.path.startswith("/"):
            by_path.setdefault(m.path, []).append(m)
    scan = ProcScan(pid, [])
    try:
        for path, mine in by_path.items():
            if not any(m.executable for m in mine):
                # No code from it (locale archives, caches, an ELF file read as data): the
                # kernel registers nothing for it, and it is neither opened nor copied.
                scan.data_files += 1
                continue
            deleted = is_deleted(mine[0])
            rep = ObjectReport(path[:-len(DELETED)] if deleted else path, deleted=deleted,
                               registration=_registrar(path, mine, exe, interp))
            try:
                data = mapped_file(pid, mine[0], deleted)
            except ProcError as exc:
                if exited(pid, was):
                    scan.exited = True
                    break
                rep.error = str(exc)
                scan.reports.append(rep)
                continue
            if data[:4] != b"\x7fELF":  # code is mapped from it: truncated or rewritten?
                rep.error = (f"mapped executable, but the file is not ELF now ({len(data)} "
                             "bytes): changed since it was mapped")
            scan.reports.append(rep)
            if rep.error:
                continue
            if not _object(rep, data, mine, maps, fd, profile) and exited(pid, was):
                scan.exited = True
                break
        _overlaps(scan.reports)
    finally:
        os.close(fd)
    scan.exited = scan.exited or exited(pid, was)
    for rep in scan.reports:
        rep.registers = rep.sframe and not rep.problems and not rep.error
    return scan


def _registrar(path: str, mine: list[Mapping], exe: str | None, interp: int | None) -> str:
    """AT_EXEC for the executable and the interpreter (binfmt_elf maps both and registers
    their SFrame, load_elf_binary), BY_SYSCALL for everything else. When /proc/PID/exe
    could not be read every object is taken as registered at exec, as before the syscall."""
    if exe is None or path == exe or (interp is not None and min(m.start for m in mine)
                                      == interp):
        return AT_EXEC
    return BY_SYSCALL


def _object(rep: ObjectReport, data: bytes | mmap.mmap, mine: list[Mapping],
            maps: list[Mapping], fd: int, profile: str) -> bool:
    """Fill `rep` for one ELF object; False when its memory could not be read whole."""
    seg = _layout(rep, data, mine, maps)
    if seg is None or rep.sframe_range is None:
        return True
    _release(data)  # load_elf copied what it needed: the section need not stay resident twice
    lo, hi = rep.sframe_range
    size = min(hi - lo, MAX_SECTION)
    mem, why = read_mem(fd, lo, size)
    if len(mem) > 2 and mem[:2] in (b"\xe2\xde", b"\xde\xe2"):
        rep.version = mem[2]
    if why:
        at = lo + len(mem)
        rep.memory = f"unreadable at {at:#x} ({why})"
        rep.problems.append(f"memory unreadable at {at:#x} ({why}): the kernel's reads of the "
                            "section fault there too (registration fails, or the first lookup "
                            "that reaches it drops the section); kernel profile not run")
        return False
    filed = memoryview(data)[seg.offset:seg.offset + min(seg.filesz, size)]
    count, first = compare(mem, filed)
    short = len(mem) < len(filed)
    rep.differs = bool(count) or short
    parts = []
    if count:
        parts.append(f"differs from the file in {plural(count, 'byte')}, first at section offset "
                     f"{first:#x}")
    if short:
        parts.append(f"shorter than the file's ({len(mem)} of {len(filed)} bytes)")
    rep.memory = "; ".join(parts) or "same as file"
    filed.release()
    _release(data)
    _profile(rep, mem, lo, profile)
    return True


def _release(data: bytes | mmap.mmap) -> None:
    """Drop the pages of a mapped snapshot from our RSS (the memfd keeps them; a later read
    maps them back): a large section is then never resident as file, copy and memory at
    once."""
    if isinstance(data, mmap.mmap):
        data.madvise(mmap.MADV_DONTNEED)


def _layout(rep: ObjectReport, data: bytes | mmap.mmap, mine: list[Mapping],
            maps: list[Mapping]) -> Any:
    """Bias, text ranges, sframe range and the registration checks that need only the file
    and the maps; the PT_GNU_SFRAME segment, or None when there is nothing more to do (the
    parsed file, with its copy of the section, is dropped on return)."""
    try:
        info = load_elf(data, name=rep.path)
    except ElfError as exc:
        rep.error = str(exc)
        return None
    bias = _bias(info, mine)
    if bias is None:
        rep.error = "cannot tell where the file is loaded (no mapping of its first PT_LOAD)"
        return None
    rep.bias = bias
    rep.texts = [(bias + s.vaddr, bias + s.vaddr + s.memsz)
                 for s in info.load_segments if s.flags & 1]
    if not info.sframe_segments:
        # kernel/unwind/user.c (V3 series): a failed SFrame lookup (-ENOENT) tries the
        # frame-pointer unwinder next.
        rep.notes.append("no PT_GNU_SFRAME: nothing to register; for PCs in this object the "
                         "kernel's unwinder falls back to frame pointers (stacks through it "
                         "are right only where it keeps them)")
        return None
    rep.sframe = True
    seg = info.sframe_segments[0]
    rep.sframe_range = (bias + seg.vaddr, bias + seg.vaddr + seg.memsz)
    _registration(rep, info, seg, maps)
    return seg


def _registration(rep: ObjectReport, info: ElfSFrameInfo, seg: Any,
                  maps: list[Mapping]) -> None:
    assert rep.sframe_range is not None
    lo, hi = rep.sframe_range
    if not any(ld.vaddr <= seg.vaddr and seg.vaddr + seg.memsz <= ld.vaddr + ld.memsz
               for ld in info.load_segments):
        rep.problems.append("PT_GNU_SFRAME is not inside a PT_LOAD segment")
    where = _containing(maps, lo, hi)
    if len(where) != 1:
        rep.problems.append(f"sframe range [{lo:#x}, {hi:#x}) spans {len(where)} "
                            "mappings (sframe_add_section needs one)")
    elif not where[0].readable:
        rep.problems.append(f"sframe range [{lo:#x}, {hi:#x}) is in an unreadable "
                            f"mapping ({where[0].perms}): the first lookup faults and "
                            "the section is dropped")
    for tlo, thi in rep.texts:
        ex = _containing(maps, tlo, thi)
        if len(ex) != 1 or not ex[0].executable or ex[0].end < thi:
            got = ", ".join(f"{m.start:#x}-{m.end:#x} {m.perms}" for m in ex) or "none"
            rep.problems.append(
                f"text [{tlo:#x}, {thi:#x}) is not inside exactly one executable "
                f"mapping ({got}): an mprotect split or an unmapped part")


def _profile(rep: ObjectReport, mem: bytes | bytearray, lo: int, profile: str) -> None:
    """The `profile` checks and the V3 series' registration on the bytes as mapped."""
    from .checker import Options, check_section_bytes
    from .readers import v3series
    from .readers.outcome import Outcome

    res = check_section_bytes(mem, path=rep.path, vma=lo, name="PT_GNU_SFRAME (mapped)",
                              options=Options(profile=profile, disable={"semantic", "defect"}))
    rep.findings = [{"rule": f.rule, "severity": str(f.severity), "message": f.message}
                    | ({"effect": f.effect} if f.effect is not None else {})
                    for f in res.findings]
    texts = rep.texts
    if rep.registration == BY_SYSCALL:  # the loader's call, one per PF_X segment as binfmt's
        assert rep.sframe_range is not None
        size = rep.sframe_range[1] - lo
        calls = [v3series.stacktrace_setup(v3series.STACKTRACE_REGISTER_SFRAME, lo, size,
                                           tlo, thi - tlo) for tlo, thi in rep.texts]
        rep.problems.extend(sorted({c.detail for c in calls if isinstance(c, Outcome)}))
        texts = [c[1] for c in calls if not isinstance(c, Outcome)]
    refusals = {r.detail for t in texts
                if isinstance(r := v3series.register(mem, lo, t), Outcome)}
    rep.problems.extend(sorted(refusals))


def _overlaps(reports: list[ObjectReport]) -> None:
    """No two registered text ranges may overlap or touch: mtree_insert_range(start, end)
    takes an inclusive end, so [a, b) and [b, c) collide (-EEXIST for the second)."""
    ranges = sorted((lo, hi, rep) for rep in reports if rep.sframe for lo, hi in rep.texts)
    for (alo, ahi, a), (blo, bhi, b) in zip(ranges, ranges[1:], strict=False):
        if blo <= ahi:
            how = "touches" if blo == ahi else "overlaps"
            b.problems.append(f"text [{blo:#x}, {bhi:#x}) {how} the registered text "
                              f"[{alo:#x}, {ahi:#x}) of {a.path}: the maple tree's end is "
                              "inclusive, so this registration fails (-EEXIST)")


def render_text(scan: ProcScan) -> list[str]:
    """The report as lines; every path and message escaped (report.escape): a name in
    /proc/PID/maps can hold any byte but a newline, and messages quote names."""
    lines = []
    for r in scan.reports:
        head = escape(r.path) + (" (deleted since mapped)" if r.deleted else "") + ":"
        if r.error:
            lines.append(f"{head} error: {escape(r.error)}")
            continue
        if not r.sframe:
            lines.append(f"{head} no SFrame: the kernel's unwinder falls back to frame "
                         "pointers in it (stacks through it are right only where it keeps "
                         "frame pointers)")
            continue
        verdict = "registers" if r.registers else "registration fails"
        if r.registration == BY_SYSCALL:
            verdict = ("would register through stacktrace_setup (no loader calls it yet)"
                       if r.registers else "stacktrace_setup would refuse it")
        version = f"v{r.version}" if r.version is not None else "(version unknown: memory " \
            "unreadable)"
        lines.append(f"{head} SFrame {version}, bias {r.bias:#x}: {verdict}")
        if r.sframe_range:
            lines.append(f"  sframe [{r.sframe_range[0]:#x}, {r.sframe_range[1]:#x}); "
                         f"memory {escape(r.memory)}")
        for lo, hi in r.texts:
            lines.append(f"  text [{lo:#x}, {hi:#x})")
        lines += [f"  problem: {escape(p)}" for p in r.problems]
        lines += [f"  note: {escape(n)}" for n in r.notes]
        lines += [f"  {f['severity']}: [{f['rule']}] {escape(f['message'])}"
                  + (f" (kernel: {f['effect']})" if "effect" in f else "") for f in r.findings]
    lines.append(_summary(scan))
    if scan.exited:
        lines.append(f"process {scan.pid} exited during the read: the results above are "
                     "incomplete")
    return lines


def _summary(scan: ProcScan) -> str:
    reports = scan.reports
    with_sf = [r for r in reports if r.sframe]
    extra = [f"{n} {what}" for n, what in (
        (sum(r.deleted for r in reports), "deleted since mapped"),
        (sum(bool(r.error) for r in reports), "that could not be examined"),
        (scan.data_files, f"{noun(scan.data_files, 'file')} mapped as data only, not counted"))
        if n]
    return (f"process {scan.pid}: {plural(len(reports), 'object')}, {len(with_sf)} with SFrame, "
            f"{sum(r.registers for r in with_sf)} would register "
            f"({sum(r.registers and r.registration == AT_EXEC for r in with_sf)} at exec, "
            f"{sum(r.registers and r.registration == BY_SYSCALL for r in with_sf)} only through "
            "stacktrace_setup), "
            f"{sum(1 for r in with_sf if r.errors)} with kernel-profile errors, "
            f"{sum(r.differs for r in with_sf)} differing from the file"
            + "".join(f", {e}" for e in extra))


def exit_status(scan: ProcScan) -> int:
    if scan.exited:
        return EXIT_EXITED
    bad = any(r.error or (r.sframe and (not r.registers or r.errors)) for r in scan.reports)
    return EXIT_FINDINGS if bad else EXIT_OK
