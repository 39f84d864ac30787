"""Writing what `sfcheck check` reports: display options, colour, and the output file.

A report goes to a temporary file in the target's directory and is renamed over the
target when complete, so a failed run never leaves half a report. A target that is not
a regular file (`/dev/stdout`, a FIFO, `/dev/full`) is written in place. Any write
failure is one line on stderr and exit status 2; a closed stdout pipe ends quietly
with the status the findings give (cli.main).
"""

from __future__ import annotations

import os
import stat
import sys

from ..result import Severity
from . import EXIT_USAGE

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing at run time
if TYPE_CHECKING:
    import argparse
    from typing import TextIO

    from ..result import Result


def add_display_options(check: argparse.ArgumentParser) -> None:
    """The options of `check` that change only what the text report prints."""
    check.add_argument("--show", choices=("error", "warning", "info"), default=None,
                       help="lowest severity listed by text (default: info for one file, "
                            "warning for a scan) and by sarif, github and gitlab (default "
                            "warning: no alert per file without SFrame); JSON and JUnit "
                            "carry everything")
    check.add_argument("-I", dest="show", action="store_const", const="info",
                       help="same as --show info")
    check.add_argument("--color", "--colour", choices=("auto", "always", "never"),
                       default="auto", help="colour severities (default auto: on a terminal "
                                            "when NO_COLOR is unset or empty)")
    check.add_argument("--no-color", dest="color", action="store_const", const="never",
                       help="same as --color never")


def use_colour(choice: str, stream: TextIO) -> bool:
    """--color: `always`, `never`, or `auto` (a terminal, and NO_COLOR unset or empty)."""
    if choice == "always":
        return True
    if choice == "never" or os.environ.get("NO_COLOR"):
        return False
    try:
        return stream.isatty()
    except (AttributeError, ValueError):
        return False


def _single(args: argparse.Namespace, result: Result) -> bool:
    """One ELF file named on the command line (the lint use), not a tree or archive."""
    sk = result.skipped
    return (len(result.files) == 1 and result.files[0].package is None
            and sk.non_elf + sk.links + sk.special == 0)


def show_threshold(args: argparse.Namespace, single: bool) -> Severity:
    """--show, or its default: everything for one file, warnings and up for a scan; the
    CI formats (whose every result is an alert or annotation) warnings and up always."""
    from ..report import CI_FORMATS

    if args.show:
        return Severity.parse(args.show)
    return Severity.INFO if single and args.format not in CI_FORMATS else Severity.WARNING


def _regular_or_missing(path: str) -> bool:
    try:
        return stat.S_ISREG(os.stat(path).st_mode)
    except FileNotFoundError:
        return True


def write_report(args: argparse.Namespace, result: Result, status: int) -> int:
    """Render the scan in --format to --output (or stdout); the exit status stays, or
    becomes 2 when the report cannot be written."""
    from ..report import ReportOptions, render, text
    from ..report.escape import escape

    if args.quiet and not args.output:
        return status
    single = _single(args, result)
    target = sys.stdout if not args.output else None
    opts = ReportOptions(
        fail_on=args.fail_on, exit_status=status, show=show_threshold(args, single),
        colour=target is not None and use_colour(args.color, target), single=single,
        summary=not args.no_summary)
    if target is not None:
        try:
            render(args.format, result, target, opts)
            target.flush()  # a full disk or closed pipe shows here, not at exit
        except BrokenPipeError:
            raise  # cli.main: quiet, with the findings' status
        except OSError as exc:  # `sfcheck DIR > /dev/full`
            drop_stdout()
            print(f"sfcheck: error: cannot write the report to stdout: {exc.strerror or exc}",
                  file=sys.stderr)
            return EXIT_USAGE
    else:
        try:
            _write_file(args.output, lambda f: render(args.format, result, f, opts))
        except OSError as exc:
            print(f"sfcheck: error: cannot write {escape(args.output)}: "
                  f"{exc.strerror or exc}", file=sys.stderr)
            return EXIT_USAGE
    if not args.quiet:
        text.render_unused_waivers(result, sys.stderr)
    return status


def _write_file(path: str, write) -> None:  # noqa: ANN001  (a callable taking the stream)
    import contextlib
    import tempfile  # only for -o FILE: it imports shutil, random, bz2, lzma

    if not _regular_or_missing(path):
        with open(path, "w", encoding="utf-8", errors="surrogateescape") as f:
            write(f)
        return
    directory = os.path.dirname(os.path.abspath(path))
    fd, tmp = tempfile.mkstemp(prefix=".sfcheck-", suffix=".tmp", dir=directory)
    try:
        with os.fdopen(fd, "w", encoding="utf-8", errors="surrogateescape") as f:
            write(f)
            f.flush()
            os.fsync(f.fileno())
        os.chmod(tmp, 0o666 & ~_umask())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def drop_stdout() -> None:
    """Point stdout at /dev/null so the interpreter's final flush cannot fail again."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
    except (OSError, ValueError):
        pass
