"""`sfcheck proc PID`: predict, for every object mapped into a live process, what the Linux
V3-series SFrame unwinder would do with it (registration and lookups), from
/proc/PID/maps, the mapped files and the section bytes as mapped (/proc/PID/mem).

Registration as binfmt_elf and sframe_add_section do it (sfcheck/profiles.py, `kernel`):
one registration per PF_X segment with the PT_GNU_SFRAME range; the sframe range must lie
in one mapping (readable, or the first lookup faults and the section is dropped), each
text range in exactly one executable mapping (an mprotect that splits it breaks
registration), and no two registered text ranges may overlap or touch (the maple tree's
end is inclusive). The bytes in memory are compared with the file's and checked under the
`kernel` profile.
"""

from __future__ import annotations

import argparse
import json
import mmap
import os
import sys
from dataclasses import asdict, dataclass, field
from typing import Any

from .elf import ElfError, ElfSFrameInfo, load_elf
from .fileio import InputFileError, map_regular

PAGE = os.sysconf("SC_PAGE_SIZE") if hasattr(os, "sysconf") else 4096
MAX_SECTION = 256 << 20  # never read more than this from /proc/PID/mem for one section
EXIT_OK, EXIT_FINDINGS, EXIT_USAGE = 0, 1, 2


class ProcError(Exception):
    """The process cannot be read (gone, not permitted): a one-line error, exit 2."""


@dataclass(frozen=True)
class Mapping:
    start: int
    end: int
    perms: str
    offset: int
    path: str

    @property
    def readable(self) -> bool:
        return self.perms[:1] == "r"

    @property
    def executable(self) -> bool:
        return self.perms[2:3] == "x"


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
    memory: str = ""  # "same as file" | "differs ..." | "not read"
    findings: list[dict[str, Any]] = field(default_factory=list)  # kernel profile, as mapped
    registers: bool = False
    error: str = ""

    @property
    def errors(self) -> int:
        return sum(1 for f in self.findings if f["severity"] == "error")


def parse_maps(text: str) -> list[Mapping]:
    out = []
    for line in text.splitlines():
        parts = line.split(None, 5)
        if len(parts) < 5:
            continue
        lo, _, hi = parts[0].partition("-")
        try:
            out.append(Mapping(int(lo, 16), int(hi, 16), parts[1], int(parts[2], 16),
                               parts[5].strip() if len(parts) > 5 else ""))
        except ValueError:
            continue
    return out


def read_maps(pid: int) -> list[Mapping]:
    try:
        with open(f"/proc/{pid}/maps") as fh:
            return parse_maps(fh.read())
    except FileNotFoundError:
        raise ProcError(f"no process {pid}") from None
    except OSError as exc:
        raise ProcError(f"cannot read /proc/{pid}/maps: {exc.strerror}") from None


def _open_mem(pid: int) -> int:
    try:
        return os.open(f"/proc/{pid}/mem", os.O_RDONLY)
    except FileNotFoundError:
        raise ProcError(f"no process {pid}") from None
    except OSError as exc:
        raise ProcError(f"cannot read the memory of process {pid} ({exc.strerror}): run as "
                        "its owner with ptrace permission (see kernel.yama.ptrace_scope) or "
                        "as root") from None


def _file_bytes(pid: int, m: Mapping) -> bytes | mmap.mmap:
    """The mapped file, mapped read-only (never read whole; regular files only, opened
    without blocking): through /proc/PID/map_files (the very file mapped, even if
    replaced or deleted since), else by its path."""
    for p in (f"/proc/{pid}/map_files/{m.start:x}-{m.end:x}", m.path):
        try:
            return map_regular(p)
        except InputFileError:
            continue
    raise OSError(f"cannot open {m.path}")


def _bias(info: ElfSFrameInfo, maps: list[Mapping]) -> int | None:
    """Load bias: the mapping of the first PT_LOAD's page at its file offset."""
    if info.e_type == "ET_EXEC":
        return 0
    if not info.load_segments:
        return None
    first = min(info.load_segments, key=lambda s: s.vaddr)
    off = first.offset - first.offset % PAGE
    for m in sorted(maps, key=lambda m: m.start):
        if m.offset == off:
            return m.start - (first.vaddr - first.vaddr % PAGE)
    return None


def _containing(maps: list[Mapping], lo: int, hi: int) -> list[Mapping]:
    """The mappings [lo, hi) touches."""
    return [m for m in maps if m.start < hi and lo < m.end]


def _read_mem(fd: int, lo: int, size: int) -> bytes | None:
    try:
        return os.pread(fd, size, lo)
    except OSError:
        return None


def examine(pid: int, profile: str = "kernel") -> list[ObjectReport]:
    """One report per file-backed ELF object mapped into process `pid`."""
    maps = read_maps(pid)
    fd = _open_mem(pid)  # fail fast (exit 2) before loading the checker
    from .checker import Options, check_section_bytes
    from .readers import v3series
    from .readers.outcome import Outcome

    by_path: dict[str, list[Mapping]] = {}
    for m in maps:
        if m.path.startswith("/") and not m.path.endswith(" (deleted)"):
            by_path.setdefault(m.path, []).append(m)
    reports = []
    try:
        for path, mine in by_path.items():
            rep = ObjectReport(path)
            reports.append(rep)
            try:
                data = _file_bytes(pid, mine[0])
                info = load_elf(data, name=path)
            except (OSError, ElfError) as exc:
                if isinstance(exc, ElfError) and data[:4] != b"\x7fELF":
                    reports.pop()  # not ELF (locale archives, fonts, caches): not an object
                else:
                    rep.error = str(exc)
                continue
            bias = _bias(info, mine)
            if bias is None:
                rep.error = "cannot tell where the file is loaded"
                continue
            rep.bias = bias
            rep.texts = [(bias + s.vaddr, bias + s.vaddr + s.memsz)
                         for s in info.load_segments if s.flags & 1]
            if not info.sframe_segments:
                rep.notes.append("no PT_GNU_SFRAME: nothing to register (frame pointers only)")
                continue
            rep.sframe = True
            seg = info.sframe_segments[0]
            lo, hi = bias + seg.vaddr, bias + seg.vaddr + seg.memsz
            rep.sframe_range = (lo, hi)
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
            size = min(hi - lo, MAX_SECTION)
            mem = _read_mem(fd, lo, size)
            filed = data[seg.offset:seg.offset + min(seg.filesz, size)]
            if mem is None:
                rep.memory = "not readable through /proc/PID/mem"
                continue
            diff = [i for i in range(min(len(mem), len(filed))) if mem[i] != filed[i]]
            rep.memory = "same as file" if not diff and len(mem) >= len(filed) else (
                f"differs from the file in {len(diff)} byte(s), first at section offset "
                f"{diff[0]:#x}" if diff else "shorter than the file's")
            if len(mem) > 2 and mem[:2] in (b"\xe2\xde", b"\xde\xe2"):
                rep.version = mem[2]
            res = check_section_bytes(mem, path=path, vma=lo, name="PT_GNU_SFRAME (mapped)",
                                      options=Options(profile=profile,
                                                      disable={"semantic", "defect"}))
            rep.findings = [{"rule": f.rule, "severity": str(f.severity), "message": f.message}
                            for f in res.findings]
            refusals = {r.detail for t in rep.texts
                        if isinstance(r := v3series.register(mem, lo, t), Outcome)}
            rep.problems.extend(sorted(refusals))
        _overlaps(reports)
    finally:
        os.close(fd)
    for rep in reports:
        rep.registers = rep.sframe and not rep.problems and not rep.error
    return reports


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


def render_text(pid: int, reports: list[ObjectReport]) -> list[str]:
    lines = []
    for r in reports:
        head = f"{r.path}:"
        if r.error:
            lines.append(f"{head} error: {r.error}")
            continue
        if not r.sframe:
            lines.append(f"{head} no SFrame (frame pointers only)")
            continue
        verdict = "registers" if r.registers else "registration fails"
        lines.append(f"{head} SFrame v{r.version}, bias {r.bias:#x}: {verdict}")
        if r.sframe_range:
            lines.append(f"  sframe [{r.sframe_range[0]:#x}, {r.sframe_range[1]:#x}); "
                         f"memory {r.memory}")
        for lo, hi in r.texts:
            lines.append(f"  text [{lo:#x}, {hi:#x})")
        lines += [f"  problem: {p}" for p in r.problems]
        lines += [f"  note: {n}" for n in r.notes]
        lines += [f"  {f['severity']}: [{f['rule']}] {f['message']}" for f in r.findings]
    with_sf = [r for r in reports if r.sframe]
    lines.append(f"process {pid}: {len(reports)} object(s), {len(with_sf)} with SFrame, "
                 f"{sum(r.registers for r in with_sf)} would register, "
                 f"{sum(1 for r in with_sf if r.errors)} with kernel-profile errors, "
                 f"{sum(1 for r in with_sf if r.memory.startswith('differs'))} differing from "
                 "the file")
    return lines


def cmd_proc(args: argparse.Namespace) -> int:
    try:
        reports = examine(args.pid)
    except ProcError as exc:
        print(f"sfcheck proc: {exc}", file=sys.stderr)
        return EXIT_USAGE
    if args.json:
        print(json.dumps({"pid": args.pid, "objects": [
            asdict(r) | {"errors": r.errors} for r in reports]}, indent=1))
    else:
        print("\n".join(render_text(args.pid, reports)))
    bad = any(r.sframe and (not r.registers or r.errors) for r in reports)
    return EXIT_FINDINGS if bad else EXIT_OK


def add_parser(subparsers: Any) -> argparse.ArgumentParser:
    """Register `proc` on an argparse subparsers object; returns its parser."""
    p = subparsers.add_parser(
        "proc", help="predict kernel SFrame registration for a live process (Linux)",
        description="For every ELF object mapped into process PID, predict what the Linux "
                    "V3-series unwinder would do: registration (PT_GNU_SFRAME in a PT_LOAD, "
                    "the sframe range in one readable mapping, each PF_X segment in exactly "
                    "one executable mapping, no registered text ranges overlapping or "
                    "touching) and the `kernel` profile on the section bytes as mapped, "
                    "compared with the file.",
        epilog="Exit status: 0 every object with SFrame would register and has no "
               "kernel-profile error, 1 otherwise, 2 usage error or a process that cannot "
               "be read.")
    p.add_argument("pid", type=int, metavar="PID", help="the process ID")
    p.add_argument("--json", action="store_true", help="JSON instead of text")
    p.set_defaults(func=cmd_proc)
    return p
