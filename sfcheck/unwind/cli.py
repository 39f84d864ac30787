"""`sfcheck unwind --core CORE`: a backtrace from SFrame data alone.

Wire it into the main parser with `add_parser(subparsers)`; the command's
function returns 0 (walk ended normally), 1 (walk ended with an error-type
reason: bad data, unreadable memory, CFA not moving up, ...) or 2 (usage
error, unreadable core).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from ..argtypes import positive
from ..errors import ElfError
from ..format import constants as C

if TYPE_CHECKING:  # imported by cmd_unwind: building the parser must stay cheap
    from .core import CoreFile, Thread
    from .modules import Module
    from .unwinder import Frame, Stop

DEFAULT_MAX_FRAMES = 512  # == unwinder.DEFAULT_MAX_FRAMES (tests/test_unwind_cli.py checks)

EXIT_OK, EXIT_WALK_ERROR, EXIT_USAGE = 0, 1, 2


def add_parser(subparsers: Any) -> argparse.ArgumentParser:
    """Register `unwind` on an argparse subparsers object; returns its parser."""
    p = subparsers.add_parser(
        "unwind", help="backtrace a core file using SFrame data only",
        description="Walk the stack of one thread of CORE with the SFrame sections of the "
                    "executable and of every mapped shared object that can be found. There is "
                    "no frame-pointer or DWARF fallback: the walk stops at the first frame "
                    "SFrame cannot unwind, and says why.",
        epilog="Exit status: 0 the walk ended normally (outermost frame, code without "
               "SFrame, frame cap), 1 it ended on an error (malformed data, unreadable "
               "memory, CFA not moving up, ...), 2 usage error or unreadable core.")
    p.add_argument("--core", required=True, metavar="CORE", help="ELF core file")
    p.add_argument("--exe", metavar="PATH",
                   help="the executable (default: the path the core records)")
    p.add_argument("--sysroot", metavar="DIR",
                   help="look for mapped files under DIR (e.g. a copy of the target's /)")
    p.add_argument("--json", action="store_true", help="JSON instead of text")
    p.add_argument("--max-frames", type=positive, default=DEFAULT_MAX_FRAMES, metavar="N",
                   help=f"stop after N frames (default {DEFAULT_MAX_FRAMES})")
    p.add_argument("--thread", type=positive, default=1, metavar="N",
                   help="thread number, 1-based in the core's order (default 1: the thread "
                        "that received the signal)")
    p.set_defaults(func=cmd_unwind)
    return p


def _module_of(modules: Sequence[Module], pc: int) -> Module | None:
    for m in modules:
        if m.start <= pc < m.end:
            return m
    return None


def _symbol(mod: Module | None, frame: Frame) -> tuple[str | None, int | None]:
    if mod is None:
        return None, None
    # Caller PCs are return addresses: name the function holding the call (PC-1).
    adjust = 1 if frame.index > 0 else 0
    got = mod.symbolize(frame.pc - adjust)
    if got is None:
        return None, None
    return got[0], got[1] + adjust


def _stop_detail(stop: Stop, modules: Sequence[Module]) -> str:
    """The walker's detail plus what we know about the module the PC is in."""
    detail = stop.detail
    from .unwinder import StopReason

    if stop.reason is StopReason.NO_FDE:
        mod = _module_of(modules, stop.pc)
        if mod is None:
            detail += " (no file is mapped there)"
        elif mod.error:
            detail += f" ({mod.path}: {mod.error})"
        elif not mod.tables:
            detail += f" ({mod.path} has no SFrame section)"
    return detail


def cmd_unwind(args: argparse.Namespace) -> int:
    from .core import CoreFile
    from .modules import exe_mapping_path, load_modules, make_resolver
    from .unwinder import Unwinder

    prog = "sfcheck unwind"
    overrides: dict[str, str] = {}
    if args.exe is not None and not os.path.isfile(args.exe):
        print(f"{prog}: error: {args.exe}: no such file", file=sys.stderr)
        return EXIT_USAGE
    if args.sysroot is not None and not os.path.isdir(args.sysroot):
        print(f"{prog}: error: {args.sysroot}: not a directory", file=sys.stderr)
        return EXIT_USAGE
    resolver = make_resolver(args.sysroot, overrides)
    try:
        core = CoreFile.open(args.core, resolver)
    except ElfError as exc:
        print(f"{prog}: error: {exc}", file=sys.stderr)
        return EXIT_USAGE
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
    if args.thread > len(core.threads):
        print(f"{prog}: error: --thread {args.thread}: the core has {len(core.threads)} "
              "thread(s)", file=sys.stderr)
        return EXIT_USAGE
    thread = core.threads[args.thread - 1]
    modules = load_modules(core, args.exe)
    if not core.mappings and args.exe is None:
        print(f"{prog}: warning: {args.core} has no NT_FILE note; pass --exe to load the "
              "executable's SFrame data", file=sys.stderr)
    tables = [t for m in modules for t in m.tables]
    if not args.json:
        for m in modules:
            if m.error and m.path.startswith("/"):
                print(f"{prog}: warning: {m.path}: {m.error}", file=sys.stderr)
    unwinder = Unwinder(tables, core, max_frames=args.max_frames, abi=core.abi)
    frames, stop = unwinder.unwind(thread.registers)
    if args.json:
        json.dump(_json(args.core, core, thread, modules, frames, stop), sys.stdout, indent=2)
        print()
    else:
        _text(thread, modules, frames, stop)
    return EXIT_WALK_ERROR if stop.reason.is_error else EXIT_OK


def _text(thread: Thread, modules: Sequence[Module], frames: Sequence[Frame],
          stop: Stop) -> None:
    print(f"Thread {thread.number} (LWP {thread.pid}):")
    for f in frames:
        mod = _module_of(modules, f.pc)
        name, off = _symbol(mod, f)
        sym = "??" if name is None else (f"{name}+{off:#x}" if off else name)
        where = f" ({mod.path})" if mod is not None else ""
        mangled = " [RA mangled]" if f.ra_mangled else ""
        print(f"#{f.index:<2} {f.pc:#018x} in {sym}{where}{mangled}")
    print(f"Stopped at frame #{frames[-1].index}: {stop.reason.value}: "
          f"{_stop_detail(stop, modules)}")


def _json(core_path: str, core: CoreFile, thread: Thread, modules: Sequence[Module],
          frames: Sequence[Frame], stop: Stop) -> dict[str, Any]:
    out_frames = []
    for f in frames:
        mod = _module_of(modules, f.pc)
        name, off = _symbol(mod, f)
        out_frames.append({
            "index": f.index, "pc": f.pc, "sp": f.sp, "fp": f.fp, "cfa": f.cfa,
            "module": mod.path if mod else None, "symbol": name, "offset": off,
            "section": f.section, "fde": f.fde, "fre": f.fre, "func_start": f.func_start,
            "ra_mangled": f.ra_mangled,
        })
    return {
        "core": core_path,
        "abi": C.ABI_NAMES.get(core.abi or 0),
        "thread": {"number": thread.number, "pid": thread.pid, "threads": len(core.threads)},
        "frames": out_frames,
        "stop": {"reason": stop.reason.value, "name": stop.reason.name,
                 "error": stop.reason.is_error, "detail": _stop_detail(stop, modules),
                 "pc": stop.pc, "section": stop.section, "offset": stop.offset},
        "modules": [{
            "path": m.path, "local": m.local, "start": m.start, "end": m.end, "bias": m.bias,
            "executable": m.is_exe, "error": m.error,
            "sframe": [{"section": t.name, "version": t.version,
                        "error": str(t.error) if t.error else None} for t in m.tables],
        } for m in modules],
    }


def main(argv: Sequence[str] | None = None) -> int:
    """Stand-alone entry point (`python -m sfcheck.unwind.cli --core ...`)."""
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
