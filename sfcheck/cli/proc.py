"""`sfcheck proc PID`: the parser and the report of sfcheck.proc's registration
prediction for a live process."""

from __future__ import annotations

import argparse
import sys

from . import EXIT_USAGE


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "proc", help="predict kernel SFrame registration for a live process (Linux)",
        description="For every ELF object mapped into process PID, predict what the Linux "
                    "V3-series unwinder would do: registration (by binfmt_elf at exec for the "
                    "executable and its interpreter, through the stacktrace_setup system call "
                    "RFC for any other object; PT_GNU_SFRAME in a PT_LOAD, "
                    "the sframe range in one readable mapping, each PF_X segment in exactly "
                    "one executable mapping, no registered text ranges overlapping or "
                    "touching) and the `kernel` profile on the section bytes as mapped, "
                    "compared with the file.",
        epilog="Exit status: 0 every object with SFrame would register and has no "
               "kernel-profile error, 1 otherwise or when an object could not be examined "
               "(unreadable, changed while read), 2 usage error or a process that cannot "
               "be read (none, a zombie, a kernel thread, not permitted), 3 the process "
               "exited during the read (the results are incomplete).")
    p.add_argument("pid", type=int, metavar="PID", help="the process ID")
    p.add_argument("--json", action="store_true", help="JSON instead of text")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from ..proc import examine, exit_status, render_text
    from ..procfs import ProcError

    try:
        scan = examine(args.pid)
    except ProcError as exc:
        print(f"sfcheck proc: {exc}", file=sys.stderr)
        return EXIT_USAGE
    if args.json:
        import json
        from dataclasses import asdict

        print(json.dumps({"pid": args.pid, "exited": scan.exited, "data_files": scan.data_files,
                          "objects": [asdict(r) | {"errors": r.errors} for r in scan.reports]},
                         indent=1))
    else:
        print("\n".join(render_text(scan)))
    return exit_status(scan)
