"""`sfcheck check` (the default command: `sfcheck FILE...`): its parser, its options'
defaults from a configuration file, the scan and the exit status."""

from __future__ import annotations

import argparse
import sys

from .. import completion
from . import EXIT_FINDINGS, EXIT_INTERNAL, EXIT_OK, EXIT_USAGE
from .args import RawDescriptionFormatter, parse_address, positive
from .output import add_display_options

# What `check` uses when neither the command line nor a configuration file says.
CHECK_DEFAULTS = {"format": "text", "fail_on": "error", "profile": "strict", "enable": [],
                  "disable": []}


def add_parser(sub: argparse._SubParsersAction) -> None:
    check = sub.add_parser(
        "check", help="lint SFrame sections (the default command: `sfcheck FILE...`)",
        formatter_class=RawDescriptionFormatter,
        description="Check every SFrame section of each ELF file and print findings as\n"
                    "`PATH: SEVERITY: [RULE-ID] location: message`.\n"
                    "FILE may be an ELF file, a directory (searched recursively; files that "
                    "are\nneither ELF nor an archive are skipped and counted), a .deb, .rpm, "
                    ".a or tar\narchive (never extracted: members up to 64 MiB are read in memory, "
                    "larger ones\nstream to a temporary file; each is reported as "
                    "ARCHIVE:MEMBER).",
        epilog="exit status:\n  0  nothing (not waived) at or above --fail-on\n"
               "  1  findings at or above --fail-on\n"
               "  2  usage error or a bad configuration file, or a file that could not be\n"
               "     read (unreadable, not ELF, changed while read, or an archive refused as\n"
               "     malformed or hostile), or the report could not be written\n"
               " 70  internal error: a bug in sfcheck (one line names it and the input)\n"
               "130  interrupted (SIGINT)\n"
               "143  terminated (SIGTERM; workers and temporary files are removed)\n"
               "A closed stdout (`sfcheck DIR | head`) ends quietly with the status the\n"
               "findings give.")
    check.add_argument("files", nargs="*", metavar="FILE",
                       help="an ELF file, a directory, or a .deb, .rpm, .a or tar archive "
                            "(with --raw: a bare SFrame section)")
    check.add_argument("--from-file", metavar="LIST",
                       help="also read input paths from LIST, one per line or NUL-separated "
                            "(- for stdin)")
    check.add_argument("--format", choices=("text", "json", "sarif", "junit", "github", "gitlab"),
                       help="report format (default text); github: workflow-command "
                            "annotations, gitlab: Code Quality JSON")
    check.add_argument("-o", "--output", metavar="FILE", help="write the report to FILE")
    check.add_argument("-j", "--jobs", type=positive, metavar="N",
                       help="worker processes (default: the CPUs this process may run on)")
    check.add_argument("-q", "--quiet", action="store_true",
                       help="no report on stdout and no progress: only the exit status "
                            "(--output is still written)")
    check.add_argument("--no-summary", action="store_true",
                       help="text format: no summary table after a multi-file scan")
    check.add_argument("--waivers", metavar="TOML",
                       help="waiver file: accepted findings, each with a reason (see the "
                            "man page's WAIVER FILE)")
    check.add_argument("--max-archive-bytes", type=positive, default=8 << 30, metavar="N",
                       help="refuse an archive that expands to more than N bytes "
                            "(default 8 GiB)")
    check.add_argument("--max-archive-members", type=positive, default=1_000_000,
                       metavar="N", help="refuse an archive with more than N members "
                                         "(default 1000000)")
    check.add_argument("--raw", action="store_true", help="FILE is a bare SFrame section")
    check.add_argument("--vma", type=parse_address, default=0, metavar="ADDR",
                       help="section address for --raw")
    check.add_argument("--fail-on", choices=("error", "warning", "info", "none"),
                       help="lowest severity that makes the exit status 1 (default error)")
    check.add_argument("--enable", action="append", metavar="ID",
                       help="switch a rule or group on (repeatable)"
                       ).completer = completion.rules_and_groups  # type: ignore[attr-defined]
    check.add_argument("--disable", action="append", metavar="ID",
                       help="switch a rule or group off (repeatable)"
                       ).completer = completion.rules_and_groups  # type: ignore[attr-defined]
    check.add_argument("--require-sframe", action="store_true",
                       help="a file without SFrame data is an error")
    add_display_options(check)
    from ..profiles import PROFILE_NAMES
    check.add_argument("--profile", choices=PROFILE_NAMES,
                       help="judge as this reader would (default strict: every rule); "
                            "see `sfcheck profiles`")
    where = check.add_mutually_exclusive_group()
    where.add_argument("--config", metavar="FILE",
                       help="read option defaults from FILE (sfcheck.toml keys, or "
                            "[tool.sfcheck] of a pyproject.toml) instead of looking for one")
    where.add_argument("--no-config", action="store_true",
                       help="read no configuration file (default: sfcheck.toml or "
                            "pyproject.toml's [tool.sfcheck], from the working directory "
                            "up to the repository root; the command line wins over it)")
    check.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from ..checker import Options
    from ..fileio import InputFileError
    from ..inputs import Limits, read_path_list
    from ..profiles import get as get_profile
    from ..result import Severity
    from ..scan import ScanConfig, default_jobs, progress_stream, scan
    from ..scan_worker import INTERNAL_ERROR

    try:
        _configure(args)
    except ValueError as exc:  # ConfigError: one line naming the file and the key
        print(f"sfcheck: error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    if args.waivers:  # the waivers module (tomllib, dataclasses) only when asked for
        from ..waivers import WaiverError, apply_waivers, load_waivers
    else:
        WaiverError = ValueError  # noqa: N806  (load_waivers is not called: nothing to catch)
    try:
        # The profile is looked up once, here: the checker is given the object.
        options = Options(enable=set(args.enable), disable=set(args.disable),
                          require_sframe=args.require_sframe, profile=get_profile(args.profile))
        options.validate()
        waivers = load_waivers(args.waivers) if args.waivers else []
        limits = Limits(args.max_archive_bytes, args.max_archive_members)
        from ..inputs.spill import tmpdir_problem
        if (problem := tmpdir_problem()) is not None:  # never a silent fallback to /tmp
            raise ValueError(f"{problem} (temporary copies of large archive members go "
                             "there)")
        paths = list(args.files)
        if args.from_file:
            paths += read_path_list(args.from_file)
    except (ValueError, WaiverError, InputFileError) as exc:
        print(f"sfcheck: error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    if not paths:
        print("sfcheck: error: no input files (give FILE... or --from-file)", file=sys.stderr)
        return EXIT_USAGE
    config = ScanConfig(options, args.jobs or default_jobs(), limits, args.raw, args.vma,
                        progress=progress_stream(args.quiet), waivers=waivers)
    result = scan(paths, config)
    if waivers:
        result.unused_waivers = [w.as_dict() for w in apply_waivers(result.files, waivers,
                                                                    result.findings)]
    threshold = None if args.fail_on == "none" else Severity.parse(args.fail_on)
    status = EXIT_OK
    for res in result.files:
        if res.error:  # a bug in sfcheck on one file is told apart from an unreadable one
            status = max(status, EXIT_INTERNAL if res.error.startswith(INTERNAL_ERROR)
                         else EXIT_USAGE)
        elif threshold is not None and (res.worst() or -1) >= threshold:
            status = max(status, EXIT_FINDINGS)
    if threshold is not None and any(f.severity >= threshold and f.waived is None
                                     for f in result.findings):
        status = max(status, EXIT_FINDINGS)  # a finding about the scan as a whole
    from .output import write_report
    args.status_so_far = status  # main() returns it if stdout closes while writing
    return write_report(args, result, status)


def _configure(args: argparse.Namespace) -> None:
    """Fill the options the command line left unset from the configuration file (unless
    --no-config), then from CHECK_DEFAULTS."""
    if not args.no_config:
        from pathlib import Path

        from .. import config

        if args.config:
            path: Path | None = Path(args.config)
            table = config.load(path)  # type: ignore[arg-type]
        else:
            try:
                start: Path | None = Path.cwd()
            except OSError:  # the working directory was removed: nothing to find
                start = None
            found = config.discover(start) if start is not None else None
            path, table = found if found else (None, {})
        if path is not None:
            config.apply(args, config.settings(path, table))
    for dest, value in CHECK_DEFAULTS.items():
        if getattr(args, dest) is None:
            setattr(args, dest, list(value) if isinstance(value, list) else value)
