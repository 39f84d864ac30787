"""`sfcheck unwind --core CORE`: a backtrace from SFrame data alone.

`add_parser(subparsers)` registers the command; `run` returns 0 (walk ended normally),
1 (walk ended with an error-type reason: bad data, unreadable memory, CFA not moving up,
...) or 2 (usage error, unreadable core). The walk itself is sfcheck.unwind's; its text and
JSON reports (modules by PC, symbols, stop reasons, the summary) are here, their only user,
which makes this module some 400 lines. `python -m sfcheck.cli.unwind --core ...` runs the
command alone (main).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from bisect import bisect_right
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ..errors import ElfError
from ..format import constants
from ..report.escape import escape
from ..wording import plural
from . import EXIT_OK, EXIT_USAGE
from .args import positive

if TYPE_CHECKING:  # imported by run: building the parser must stay cheap
    from ..unwind.core import CoreFile
    from ..unwind.modules import Module
    from ..unwind.notes import Thread
    from ..unwind.unwinder import Frame, Stop

# == unwinder.DEFAULT_MAX_FRAMES, without importing the unwinder to build the parser
# (tests/test_startup.py::test_unwind_parser_default_matches_the_unwinder checks).
DEFAULT_MAX_FRAMES = 512
# All threads together: a core with 100,000 threads sharing one deep stack stays bounded.
DEFAULT_MAX_TOTAL_FRAMES = 1 << 16

EXIT_WALK_ERROR = 1
# A core may map any number of files (NT_FILE): warnings name this many per kind, the
# JSON lists this many modules (those with SFrame and the executable first).
MAX_NAMED = 3
MAX_JSON_MODULES = 1024


def add_parser(subparsers: Any) -> argparse.ArgumentParser:
    """Register `unwind` on an argparse subparsers object; returns its parser."""
    p = subparsers.add_parser(
        "unwind", help="backtrace every thread of a core file using SFrame data only",
        description="Walk the stack of every thread of CORE (like gdb's `thread apply all "
                    "bt`) with the SFrame sections of the executable and of every mapped "
                    "shared object that can be found. There is no frame-pointer or DWARF "
                    "fallback: a walk stops at the first frame SFrame cannot unwind, and "
                    "says why. Signal frames are stepped through (x86-64, aarch64).",
        epilog="Exit status: 0 every walk ended normally (outermost frame, code without "
               "SFrame, frame cap), 1 a walk ended on an error (malformed data, unreadable "
               "memory, CFA not moving up, ...), 2 usage error or unreadable core.")
    p.add_argument("--core", required=True, metavar="CORE", help="ELF core file")
    p.add_argument("--exe", metavar="PATH",
                   help="the executable (default: the path the core records)")
    p.add_argument("--sysroot", metavar="DIR",
                   help="look for mapped files under DIR (e.g. a copy of the target's /); "
                        "paths from the core never leave DIR")
    p.add_argument("--json", action="store_true", help="JSON instead of text")
    p.add_argument("--max-frames", type=positive, default=DEFAULT_MAX_FRAMES, metavar="N",
                   help=f"stop a thread's walk after N frames (default {DEFAULT_MAX_FRAMES})")
    p.add_argument("--max-total-frames", type=positive, default=DEFAULT_MAX_TOTAL_FRAMES,
                   metavar="N", help="frames for all threads together; threads past it are "
                                     f"not walked (default {DEFAULT_MAX_TOTAL_FRAMES})")
    p.add_argument("--thread", type=positive, default=None, metavar="N",
                   help="only thread N, 1-based in the core's order (1: the thread that "
                        "received the signal); default: every thread")
    p.set_defaults(func=run)
    return p


class _Modules(list["Module"]):
    """The modules, and which one holds a PC: a bisect over every mapping's range (a linear
    scan per frame would cost as much as the mappings a core lists)."""

    def __init__(self, modules: Iterable[Module]) -> None:
        super().__init__(modules)
        spans = sorted((lo, hi, k) for k, m in enumerate(self)
                       for lo, hi in (m.ranges or ((m.start, m.end),)))
        self._starts = [lo for lo, _hi, _k in spans]
        self._spans = spans

    def of(self, pc: int) -> Module | None:
        i = bisect_right(self._starts, pc) - 1
        # Ranges of a hostile core may overlap: look back a little for one that holds pc.
        for lo, hi, k in reversed(self._spans[max(0, i - 7):i + 1]):
            if lo <= pc < hi:
                return self[k]
        return None


def _module_of(modules: _Modules, pc: int) -> Module | None:
    return modules.of(pc)


def _symbol(mod: Module | None, frame: Frame, exact: bool) -> tuple[str | None, int | None]:
    if mod is None:
        return None, None
    # Caller PCs are return addresses: name the function holding the call (PC-1).
    adjust = 0 if exact else 1
    got = mod.symbolize(frame.pc - adjust)
    if got is None:
        return None, None
    return got[0], got[1] + adjust


def _exact_pcs(frames: Sequence[Frame]) -> list[bool]:
    """Whether each frame's PC is exact (innermost, or interrupted by a signal) rather
    than a return address."""
    return [f.index == 0 or frames[k - 1].signal for k, f in enumerate(frames)]


def _stop_detail(stop: Stop, modules: _Modules) -> str:
    """The walker's detail plus what we know about the module the PC is in."""
    detail = stop.detail
    from ..unwind.unwinder import StopReason

    mod = _module_of(modules, stop.pc)
    if stop.reason is StopReason.NO_FDE:
        if mod is None:
            detail += " (no file is mapped there)"
        elif mod.error:
            detail += f" ({mod.path}: {mod.error})"
        elif not mod.tables:
            detail += f" ({mod.path} has no SFrame section)"
    return detail


def _where(stop: Stop, modules: _Modules) -> str:
    mod = _module_of(modules, stop.pc)
    return f"{stop.pc:#x} in {mod.path if mod else 'no mapped file'}"


@dataclass
class _Walked:
    thread: Thread
    frames: list[Frame]
    stop: Stop | None  # None: not walked (the frame budget of all threads was spent)
    count: int = 0  # frames walked (the text output drops `frames` once printed)


def run(args: argparse.Namespace) -> int:
    from ..fileio import InputFileError, open_regular
    from ..unwind.core import CoreFile
    from ..unwind.sysroot import PathResolver

    prog = "sfcheck unwind"
    overrides: dict[str, str] = {}
    if args.exe is not None:
        try:
            os.close(open_regular(args.exe)[0])
        except InputFileError as exc:
            print(f"{prog}: error: {exc}", file=sys.stderr)
            return EXIT_USAGE
    if args.sysroot is not None and not os.path.isdir(args.sysroot):
        print(f"{prog}: error: {args.sysroot}: not a directory", file=sys.stderr)
        return EXIT_USAGE
    resolver = PathResolver(args.sysroot, overrides)
    try:
        core = CoreFile.open(args.core, resolver)
    except ElfError as exc:
        print(f"{prog}: error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    try:
        return _unwind(args, prog, core, overrides)
    except InputFileError as exc:
        # The core, read as the walk needs its memory, changed (or failed) under us: the
        # mapped files' errors are theirs (core.unreadable), never raised to here.
        print(escape(f"{prog}: error: {exc}"), file=sys.stderr)
        return EXIT_USAGE
    finally:
        core.close()


def _unwind(args: argparse.Namespace, prog: str, core: CoreFile,
            overrides: dict[str, str]) -> int:
    from ..unwind.modules import exe_mapping_path, load_modules
    from ..unwind.unwinder import Unwinder

    if args.exe is not None:
        exe_path = exe_mapping_path(core)
        if exe_path is not None:
            overrides[exe_path] = args.exe
    if core.abi is None:
        print(f"{prog}: error: {args.core}: unsupported machine {core.machine} "
              "(amd64, aarch64 and s390x cores are supported)", file=sys.stderr)
        return EXIT_USAGE
    if not core.threads:
        print(f"{prog}: error: {args.core}: no thread registers (NT_PRSTATUS) in the core",
              file=sys.stderr)
        return EXIT_USAGE
    if args.thread is not None and args.thread > len(core.threads):
        print(f"{prog}: error: --thread {args.thread}: the core has "
              f"{plural(len(core.threads), 'thread')}", file=sys.stderr)
        return EXIT_USAGE
    modules = _Modules(load_modules(core, args.exe))
    if not core.mappings and args.exe is None:
        print(escape(f"{prog}: warning: {args.core} has no NT_FILE note; pass --exe to load "
                     "the executable's SFrame data"), file=sys.stderr)
    if core.mappings_dropped:
        print(escape(f"{prog}: warning: {args.core}: NT_FILE lists "
                     f"{len(core.mappings) + core.mappings_dropped} file mappings; only the "
                     f"first {len(core.mappings)} are used"), file=sys.stderr)
    tables = [t for m in modules for t in m.tables]
    if not args.json:
        for line in _module_warnings(prog, modules):
            print(line, file=sys.stderr)
    threads = core.threads if args.thread is None else [core.threads[args.thread - 1]]
    unwinder = Unwinder(tables, core, max_frames=args.max_frames, abi=core.abi,
                        pac_mask=_pac_mask(core))
    budget = args.max_total_frames
    walked: list[_Walked] = []
    for thread in threads:
        if budget <= 0:
            walked.append(_Walked(thread, [], None))
            continue
        unwinder.max_frames = min(args.max_frames, budget)
        frames, stop = unwinder.unwind(thread.registers)
        budget -= len(frames)
        walked.append(_Walked(thread, frames, stop, len(frames)))
        if not args.json:
            _text_thread(walked[-1], modules, len(walked) > 1)
            walked[-1].frames = []  # printed: a core with many threads stays small
    summary = _summary(walked, modules)
    if not args.json:
        for line in _changed_warnings(prog, core):
            print(line, file=sys.stderr)
    if args.json:
        json.dump(_json(args.core, core, walked, modules, summary), sys.stdout, indent=2)
        print()
    else:
        for w in walked:
            if w.stop is None:
                print(f"\nThread {w.thread.number} (LWP {w.thread.pid}): not walked (the "
                      f"budget of {args.max_total_frames} frames for all threads is spent)")
        _text_summary(summary)
    worst = any(w.stop is not None and w.stop.reason.is_error for w in walked)
    return EXIT_WALK_ERROR if worst else EXIT_OK


def _module_warnings(prog: str, modules: _Modules) -> list[str]:
    """One line per kind of failure (a hostile core may map a million missing files): the
    path itself when only one file has it, else the count and the first few. Data files
    (not ELF) are no failure: the summary counts them."""
    kinds: dict[str, list[str]] = {}
    counts: dict[str, int] = {}
    for m in modules:
        if m.error and m.path.startswith("/") and not m.not_elf:
            counts[m.error] = counts.get(m.error, 0) + 1
            named = kinds.setdefault(m.error, [])
            if len(named) < MAX_NAMED:
                named.append(m.path)
    lines = []
    for kind, named in kinds.items():
        n = counts[kind]
        if n == 1:
            lines.append(escape(f"{prog}: warning: {named[0]}: {kind}"))
            continue
        more = f", and {n - len(named)} more" if n > len(named) else ""
        lines.append(escape(f"{prog}: warning: {n} mapped files: {kind} ({', '.join(named)}"
                            f"{more})"))
    return lines


def _changed_warnings(prog: str, core: CoreFile) -> list[str]:
    """The mapped files that changed while the walk read them (their code bytes or
    symbols; those that changed while their SFrame data was read are module warnings,
    printed before the walk): one line each, the first few."""
    changed = [(p, r) for p, r in core.unreadable.items()
               if r.startswith("changed while read")]
    lines = [escape(f"{prog}: warning: {p}: {r}") for p, r in changed[:MAX_NAMED]]
    if len(changed) > MAX_NAMED:
        lines.append(escape(f"{prog}: warning: {len(changed) - MAX_NAMED} more mapped files "
                            "changed while read"))
    return lines


# aarch64 Linux user space has 48-bit virtual addresses unless a program asks for more (52-bit
# mappings are opt-in): a signed return address has its PAC in the bits above.
_AARCH64_PAC_BITS = ((1 << 64) - 1) ^ ((1 << 48) - 1)


def _pac_mask(core: CoreFile) -> int:
    """What to clear from return addresses an FRE marks as signed (aarch64 PAC): the core's
    NT_ARM_PAC_MASK when it has one (kernel cores on PAC hardware), else the bits above a
    48-bit address (qemu-user cores have no such note)."""
    if core.abi not in (constants.ABI_AARCH64_LE, constants.ABI_AARCH64_BE):
        return 0
    return core.pac_mask if core.pac_mask else _AARCH64_PAC_BITS


def _text_thread(w: _Walked, modules: _Modules, gap: bool) -> None:
    """The thread's frames; paths and symbol names come from the core and its files, so
    every line is escaped (report.escape): no name can forge a line or reach the terminal."""
    assert w.stop is not None
    if gap:
        print()
    print(f"Thread {w.thread.number} (LWP {w.thread.pid}):")
    for f, exact in zip(w.frames, _exact_pcs(w.frames), strict=True):
        mod = _module_of(modules, f.pc)
        name, off = _symbol(mod, f, exact)
        sym = "??" if name is None else (f"{name}+{off:#x}" if off else name)
        where = f" ({mod.path})" if mod is not None else ""
        mangled = " [RA mangled]" if f.ra_mangled else ""
        if f.signal:
            known = "" if name is None else f" {sym}"
            print(escape(f"#{f.index:<2} {f.pc:#018x} in <signal handler called>{known}{where}"))
        else:
            print(escape(f"#{f.index:<2} {f.pc:#018x} in {sym}{where}{mangled}"))
    print(escape(f"Stopped at frame #{w.frames[-1].index} ({_where(w.stop, modules)}): "
                 f"{w.stop.reason.value}: {_stop_detail(w.stop, modules)}"))


def _summary(walked: Sequence[_Walked], modules: _Modules) -> dict[str, Any]:
    from ..unwind.unwinder import StopReason

    done = [w for w in walked if w.stop is not None]
    no_sframe: dict[str, int] = {}
    for w in done:
        assert w.stop is not None
        if w.stop.reason is StopReason.NO_FDE:
            mod = _module_of(modules, w.stop.pc)
            path = mod.path if mod else "no mapped file"
            if mod is not None and mod.tables:  # not to be blamed for having no SFrame
                path += " [has SFrame, but no FDE for that PC]"
            no_sframe[path] = no_sframe.get(path, 0) + 1
    return {
        "threads": len(walked),
        "walked": len(done),
        "frames": sum(w.count for w in walked),
        "outermost": sum(w.stop.reason is StopReason.OUTERMOST for w in done if w.stop),
        "no_sframe": sum(no_sframe.values()),
        "no_sframe_modules": sorted(no_sframe),
        "errors": sum(w.stop.reason.is_error for w in done if w.stop),
        "not_walked": len(walked) - len(done),
        "non_elf": sum(m.not_elf for m in modules),
    }


def _text_summary(s: dict[str, Any]) -> None:
    named = s["no_sframe_modules"]
    more = f", and {len(named) - MAX_NAMED} more" if len(named) > MAX_NAMED else ""
    mods = f" ({', '.join(named[:MAX_NAMED])}{more})" if named else ""
    not_walked = f", {s['not_walked']} not walked (frame budget)" if s["not_walked"] else ""
    non_elf = (f"; {plural(s['non_elf'], 'mapped file')} not ELF (data)"
               if s["non_elf"] else "")
    print()
    print(escape(f"Summary: {plural(s['walked'], 'thread')} walked, "
                 f"{plural(s['frames'], 'frame')}; "
                 f"{s['outermost']} reached their outermost frame, {s['no_sframe']} stopped in "
                 f"code without SFrame{mods}, {s['errors']} stopped on an error{not_walked}"
                 f"{non_elf}"))


def _json(core_path: str, core: CoreFile, walked: Sequence[_Walked],
          modules: _Modules, summary: dict[str, Any]) -> dict[str, Any]:
    threads = []
    for w in walked:
        out_frames = []
        for f, exact in zip(w.frames, _exact_pcs(w.frames), strict=True):
            mod = _module_of(modules, f.pc)
            name, off = _symbol(mod, f, exact)
            out_frames.append({
                "index": f.index, "pc": f.pc, "sp": f.sp, "fp": f.fp, "cfa": f.cfa,
                "module": mod.path if mod else None, "symbol": name, "offset": off,
                "section": f.section, "fde": f.fde, "fre": f.fre, "func_start": f.func_start,
                "ra_mangled": f.ra_mangled, "signal": f.signal,
            })
        stop = None if w.stop is None else {
            "reason": w.stop.reason.value, "name": w.stop.reason.name,
            "error": w.stop.reason.is_error, "detail": _stop_detail(w.stop, modules),
            "where": _where(w.stop, modules), "pc": w.stop.pc, "section": w.stop.section,
            "offset": w.stop.offset}
        threads.append({"number": w.thread.number, "pid": w.thread.pid,
                        "frames": out_frames, "stop": stop})
    refused = getattr(core.path_resolver, "refused", {})
    # Bounded whatever the core maps: modules with SFrame and the executable first.
    listed = sorted(modules, key=lambda m: (not (m.tables or m.is_exe), m.start))
    return {
        "core": core_path,
        "abi": constants.ABI_NAMES.get(core.abi or 0),
        "threads_in_core": len(core.threads),
        "threads": threads,
        "summary": summary,
        "modules": [{
            "path": m.path, "local": m.local, "start": m.start, "end": m.end, "bias": m.bias,
            "executable": m.is_exe, "error": m.error, "not_elf": m.not_elf,
            "sframe": [{"section": t.name, "version": t.version,
                        "error": str(t.error) if t.error else None} for t in m.tables],
        } for m in listed[:MAX_JSON_MODULES]],
        "modules_omitted": max(0, len(listed) - MAX_JSON_MODULES),
        "mappings_dropped": core.mappings_dropped,
        "refused": [{"path": p, "reason": r}
                    for p, r in sorted(refused.items())[:MAX_JSON_MODULES]],
        "refused_omitted": max(0, len(refused) - MAX_JSON_MODULES),
        "unreadable": [{"path": p, "reason": r}
                       for p, r in sorted(core.unreadable.items())[:MAX_JSON_MODULES]],
        "unreadable_omitted": max(0, len(core.unreadable) - MAX_JSON_MODULES),
    }


def main(argv: Sequence[str] | None = None) -> int:
    """Stand-alone entry point (`python -m sfcheck.cli.unwind --core ...`)."""
    parser = argparse.ArgumentParser(prog="sfcheck")
    sub = parser.add_subparsers(dest="command", required=True)
    add_parser(sub)
    args = parser.parse_args(["unwind", *(sys.argv[1:] if argv is None else argv)])
    try:
        return int(args.func(args))
    except BrokenPipeError:
        sys.stderr.close()
        return EXIT_OK


if __name__ == "__main__":
    sys.exit(main())
