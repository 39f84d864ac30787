"""The command line: `main` (exit statuses, the last-resort handler) and the parser.

One module per subcommand, each with its parser (`add_parser`) and its run function:
check.py (the default command), dump.py, unwind.py, proc.py, and catalogue.py (rules,
explain, profiles); output.py writes check's report, args.py holds what the parsers share.
The engines they drive (scan, dump, unwind, proc) hold no argparse code.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Callable, Sequence

from .. import __version__, completion
from ..report.escape import escape
from .args import Formatter

# Each command imports what it needs: `sfcheck FILE` never loads the dumper, the
# unwinder or the archive readers (start-up is most of a small file's check).
# 70 (EX_SOFTWARE): sfcheck itself failed; a gate tells it from "package bad" (1).
EXIT_OK, EXIT_FINDINGS, EXIT_USAGE, EXIT_INTERNAL, EXIT_INTERRUPTED = 0, 1, 2, 70, 130

SUBCOMMANDS = ("check", "dump", "rules", "explain", "unwind", "profiles", "proc", "survey")


def build_parser(command: str | None = None) -> argparse.ArgumentParser:
    """The argument parser. Given the `command` about to run, only that command's parser is
    built: building all of them (the unwinder's and proc's modules, the profile list) is
    a large part of a small file's check. Without one (--help, the man page, completion)
    every command is there."""
    parser = argparse.ArgumentParser(
        prog="sfcheck", formatter_class=Formatter,
        description="Validate, dump and unwind with SFrame stack-trace sections. "
        "`sfcheck FILE...` means `sfcheck check FILE...`.",
        epilog="Exit status: 0 success, 1 findings or undecodable SFrame data, "
               "2 usage error or unreadable/non-ELF file or unwritable report, "
               "70 internal error (a bug in sfcheck), 130 interrupted.")
    parser.add_argument("--version", action="version", version=f"sfcheck {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND",
                                help="the command (`sfcheck FILE...` means `check`)")
    builders = {"dump": _add_dump, "check": _add_check, "rules": _add_rules,
                "explain": _add_explain, "profiles": _add_profiles, "unwind": _add_unwind,
                "proc": _add_proc, "survey": _add_survey}
    for name in builders if command is None else (command,):  # --help lists them in this order
        builders[name](sub)
    return parser


def _add_check(sub: argparse._SubParsersAction) -> None:
    from .check import add_parser

    add_parser(sub)


def _add_survey(sub: argparse._SubParsersAction) -> None:
    from .survey import add_parser

    add_parser(sub)


def _add_dump(sub: argparse._SubParsersAction) -> None:
    from .dump import add_parser

    add_parser(sub)


def _add_rules(sub: argparse._SubParsersAction) -> None:
    from .catalogue import add_rules

    add_rules(sub)


def _add_explain(sub: argparse._SubParsersAction) -> None:
    from .catalogue import add_explain

    add_explain(sub)


def _add_profiles(sub: argparse._SubParsersAction) -> None:
    from .catalogue import add_profiles

    add_profiles(sub)


def _add_unwind(sub: argparse._SubParsersAction) -> None:
    from .unwind import add_parser

    add_parser(sub)


def _add_proc(sub: argparse._SubParsersAction) -> None:
    from .proc import add_parser

    add_parser(sub)


def suggest_command(word: str) -> str | None:
    """The subcommand a mistyped first argument was probably meant to be."""
    if word.startswith("-") or os.path.lexists(word) or "/" in word or "." in word:
        return None
    import difflib
    close = difflib.get_close_matches(word, SUBCOMMANDS, n=1, cutoff=0.6)
    return close[0] if close else None


def main(argv: Sequence[str] | None = None) -> int:
    """Run one command; every way out is an exit status and at most one line on stderr."""
    argv = list(sys.argv[1:] if argv is None else argv)
    args: argparse.Namespace | None = None
    _complete()
    try:
        if argv and argv[0] not in SUBCOMMANDS and argv[0] not in ("-h", "--help", "--version"):
            guess = suggest_command(argv[0])
            if guess is not None:
                print(f"sfcheck: error: no such file or command {argv[0]!r}; "
                      f"did you mean `{guess}`?", file=sys.stderr)
                return EXIT_USAGE
            argv.insert(0, "check")  # `sfcheck FILE...` means `sfcheck check FILE...`
        parser = build_parser(argv[0] if argv and argv[0] in SUBCOMMANDS else None)
        args = parser.parse_args(argv)
        if args.command is None:
            parser.print_help(sys.stderr)
            return EXIT_USAGE
        if getattr(args, "vma", 0) and not args.raw:
            parser.error("--vma applies to --raw sections only (ELF files give the address)")
        func: Callable[[argparse.Namespace], int] = args.func
        return func(args)
    except BrokenPipeError:  # `sfcheck DIR | head`: stop quietly, keep the findings' status
        from .output import drop_stdout

        drop_stdout()
        return getattr(args, "status_so_far", EXIT_OK)
    except KeyboardInterrupt:
        print("sfcheck: interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED
    except Exception as exc:  # last resort: a bug, told apart from findings (1) and usage (2)
        # A layer that knows the file being read names it with exc.add_note("input: PATH").
        notes = [n for n in getattr(exc, "__notes__", []) if n.startswith("input: ")]
        inputs = (notes[-1].removeprefix("input: ") if notes else
                  " ".join(getattr(args, "files", None) or [])[:200] or "(no input)")
        print(escape(f"sfcheck: internal error (a bug in sfcheck, please report it): "
                     f"{type(exc).__name__}: {exc} [command {getattr(args, 'command', None)}, "
                     f"input {inputs}]"), file=sys.stderr)
        return EXIT_INTERNAL


def _complete() -> None:
    """Shell completion (argcomplete, optional): only when the shell asks, so a normal run
    never imports it. `eval "$(register-python-argcomplete sfcheck)"` turns it on."""
    if "_ARGCOMPLETE" in os.environ:
        completion.complete(build_parser())  # prints the candidates and exits

