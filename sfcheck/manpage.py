"""The man page sfcheck(1): every command, option and help text comes from the argument
parser (cli.build_parser), so the page cannot drift from `--help`; the sections a parser
does not hold (exit status, environment, files, the waiver format, examples) are written
here. setup.py's build step renders it (`python -m sfcheck.manpage OUT`); sfcheck never
imports this module at run time."""

from __future__ import annotations

import argparse
import datetime
import os
import re
import signal
import sys
from collections.abc import Iterable

from . import __version__, config
from .cli import EXIT_FINDINGS, EXIT_INTERNAL, EXIT_INTERRUPTED, EXIT_OK, EXIT_USAGE, build_parser

# The NAME line is what whatis/apropos index (lexgrog reads it): "sfcheck \- ...".
SUMMARY = "validate, dump and unwind with SFrame (.sframe) stack-trace sections"

EXIT_STATUS: tuple[tuple[int, str], ...] = (
    (EXIT_OK, "Success: no finding (other than waived ones) at or above `--fail-on` "
              "(default error)."),
    (EXIT_FINDINGS, "Findings at or above `--fail-on`, or SFrame data that could not be "
                    "decoded."),
    (EXIT_USAGE, "Usage error, bad waiver file or path list, an input that could not be read "
                 "(missing, not a regular file, not ELF when named explicitly, an archive "
                 "refused as malformed or hostile), or a report that could not be written. "
                 "One line on standard error."),
    (EXIT_INTERNAL, "Internal error: a bug in sfcheck. One line names the exception, the "
                    "command and the input, never a traceback; a gate tells \"sfcheck "
                    "crashed\" from \"package bad\" (1)."),
    (EXIT_INTERRUPTED, "Interrupted (SIGINT): one line, `sfcheck: interrupted`."),
    # scan._terminated: the shell's 128 + signal number, after the scan's clean-up.
    (128 + signal.SIGTERM, "Terminated (SIGTERM): workers stopped, temporary files removed."),
)

# Commands whose epilog is the table of the EXIT STATUS section (not repeated under COMMANDS).
EPILOG_IN_EXIT_STATUS = frozenset({"check"})

ENVIRONMENT = (
    ("NO_COLOR", "When set and not empty, `--color auto` (the default) does not colour "
                 "severities."),
    ("SFCHECK_PURE_PYTHON", "When set, the fast path walks FREs and the .eh_frame "
                            "cross-check reads CFI in Python instead of the optional compiled "
                            "code (the findings are the same)."),
    ("TMPDIR", "Where archive members too large to hold in memory are spilled while they "
               "are checked (a private directory, removed when the scan ends)."),
    ("COLUMNS", "Width of `--help` output (default: the terminal's, else 80)."),
    ("XDG_CONFIG_DIRS", "`python -m sfcheck.integrations.rpmlint_run` appends sfcheck's "
                        "rpmlint configuration to it (last: a system configuration wins)."),
)

FILES = (
    ("sfcheck.toml, pyproject.toml", "Project configuration: default options of `check` "
     f"({', '.join(config.KEYS)}) in "
     "`sfcheck.toml`, or in the `[tool.sfcheck]` table of `pyproject.toml`, found from the "
     "working directory upwards (in one directory `sfcheck.toml` wins; the search stops at the "
     "first file with sfcheck settings and never leaves a repository's root, a directory "
     "holding `.git`). `--config FILE` names one, `--no-config` reads none; options on the "
     "command line win."),
    ("waivers file", "Accepted findings, given with `--waivers FILE`: see WAIVER FILE."),
    ("share/bash-completion/completions/sfcheck", "Bash completion (needs the `argcomplete` "
     "Python package: `pip install 'sfcheck[completion]'`)."),
)

WAIVER_TEXT = (
    "A TOML file of `[[waiver]]` tables. Each accepts the findings of one rule (or of every "
    "waivable rule of a group) on the files whose reported path or archive member path "
    "matches a glob (`*` also matches `/`), and must say why. Keys:",
)
WAIVER_KEYS = (
    ("rule", "Rule ID or group (see `sfcheck rules`). Required."),
    ("path", "Glob on the reported path or member path; `\"*\"` for every file. Required."),
    ("reason", "Why the finding is acceptable; shown with the waived finding. Required."),
    ("function", "Only findings in this function (symbol glob)."),
    ("pc", "Only the FDE starting at this address (an integer; TOML allows 0x hex)."),
    ("package", "Only in this package (glob on the .deb or .rpm file name)."),
)
WAIVER_EXAMPLE = """\
[[waiver]]
rule = "defect-ld-plt-got-cfa"
path = "*/usr/lib/*/libfoo.so.*"
reason = "known GNU ld .plt.got defect; drop after the toolchain upgrade"
"""
WAIVER_AFTER = (
    "A waived finding is still printed, marked `(waived: REASON)`, and no longer counts for "
    "`--fail-on`. Waivers that matched nothing are listed on standard error so stale ones "
    "get removed. Findings saying the SFrame data points outside its own bytes cannot be "
    "waived; a waiver file naming such a rule is rejected.",
)

# (what it shows, exit status, command). The test runs each one in a directory holding
# libfoo.so, root/usr/lib/x86_64-linux-gnu/libfoo.so.1 (one warning, some info) and the
# WAIVER FILE example as waivers.toml, and expects the status given here.
EXAMPLES: tuple[tuple[str, int, str], ...] = (
    ("Check one library; only errors fail by default", EXIT_OK, "sfcheck libfoo.so"),
    ("Fail on warnings too", EXIT_FINDINGS, "sfcheck --fail-on warning libfoo.so"),
    ("Check a tree with the waivers of WAIVER FILE", EXIT_OK,
     "sfcheck --fail-on warning --waivers waivers.toml root"),
    ("Write a SARIF report for a code-scanning service", EXIT_OK,
     "sfcheck check --format sarif -o sfcheck.sarif root"),
    ("Check the files another command lists", EXIT_OK,
     "find root -name '*.so*' -print0 | sfcheck --from-file -"),
    ("A file that cannot be read is a usage error", EXIT_USAGE, "sfcheck missing.so"),
    ("Print the SFrame section as objdump --sframe does", EXIT_OK, "sfcheck dump libfoo.so"),
    ("What a rule means and how to fix it", EXIT_OK, "sfcheck explain defect-ld-plt-got-cfa"),
)

SEE_ALSO = r"\fBobjdump\fR(1), \fBreadelf\fR(1), \fBgdb\fR(1), \fBld\fR(1)"


def text(s: str) -> str:
    """Roff for prose: backslashes and minus signs escaped, `code` in bold, and no line
    starting with a control character."""
    s = s.replace("\\", "\\e").replace("-", "\\-")
    s = re.sub(r"`([^`]+)`", r"\\fB\1\\fR", s)
    return re.sub(r"^([.'])", r"\\&\1", s, flags=re.M)


def literal(s: str) -> str:
    """Roff for a verbatim line (commands, TOML): what a user copies must be ASCII."""
    s = s.replace("\\", "\\e").replace("-", "\\-").replace("'", "\\(aq")
    return re.sub(r"^([.'])", r"\\&\1", s, flags=re.M)


def _metavar(action: argparse.Action) -> str:
    if action.metavar is not None:
        return str(action.metavar)
    if action.choices is not None:
        return "{" + ",".join(map(str, action.choices)) + "}"
    return action.dest.upper()


def _arg(action: argparse.Action) -> str:
    """A positional as the synopsis shows it: NAME, [NAME], NAME... or [NAME...]."""
    name = f"\\fI{text(_metavar(action))}\\fR"
    return {"?": f"[{name}]", "*": f"[{name}...]", "+": f"{name}..."}.get(
        str(action.nargs), name)


def _option(action: argparse.Action) -> str:
    names = ", ".join(f"\\fB{text(o)}\\fR" for o in action.option_strings)
    return names if action.nargs == 0 else f"{names} \\fI{text(_metavar(action))}\\fR"


def _help(action: argparse.Action, prog: str) -> str:
    helptext = action.help or ""
    if "%" in helptext:  # argparse's own expansion: %(default)s, %(prog)s
        helptext = helptext % {**vars(action), "prog": prog}
    return text(helptext)


def _paragraphs(s: str, raw: bool) -> list[str]:
    """A description or epilog as roff: filled, unless the parser's formatter keeps the
    author's line breaks."""
    if raw:
        lines = (text(line) if line.strip() else "" for line in s.splitlines())
        return [".PP", ".nf", *lines, ".fi"]
    out: list[str] = []
    for para in re.split(r"\n\s*\n", s.strip()):
        out += [".PP", text(" ".join(para.split()))]
    return out


def _options(parser: argparse.ArgumentParser, with_help: bool = False) -> list[str]:
    """The options (and the positionals that have a help text) as a tagged list."""
    out: list[str] = []
    for action in parser._actions:
        if (action.help == argparse.SUPPRESS or not action.help
                or isinstance(action, argparse._SubParsersAction)
                or (isinstance(action, argparse._HelpAction) and not with_help)):
            continue
        head = _option(action) if action.option_strings else _arg(action)
        out += [".TP", head, _help(action, parser.prog)]
    return out


def _synopsis(parser: argparse.ArgumentParser) -> str:
    parts = [f"\\fB{text(parser.prog)}\\fR"]
    if any(a.option_strings and not a.required and not isinstance(a, argparse._HelpAction)
           for a in parser._actions):
        parts.append("[\\fIoptions\\fR]")
    for a in parser._actions:
        if a.option_strings and a.required:
            parts.append(_option(a))
        elif not a.option_strings and not isinstance(a, argparse._SubParsersAction):
            parts.append(_arg(a))
    return " ".join(parts)


def _subparsers(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    return dict(_subparsers_action(parser).choices)


def _is_raw(parser: argparse.ArgumentParser) -> bool:
    return issubclass(parser.formatter_class, argparse.RawDescriptionHelpFormatter)


def _date() -> str:
    """SOURCE_DATE_EPOCH when set (reproducible builds: Debian sets it), else today."""
    epoch = os.environ.get("SOURCE_DATE_EPOCH")
    when = (datetime.datetime.fromtimestamp(int(epoch), datetime.UTC) if epoch
            else datetime.datetime.now(datetime.UTC))
    return when.strftime("%Y-%m-%d")


def _definitions(items: Iterable[tuple[str, str]], bold: bool = True) -> list[str]:
    out: list[str] = []
    for term, meaning in items:
        out += [".TP", f"\\fB{text(term)}\\fR" if bold else text(term), text(meaning)]
    return out


def _verbatim(lines: str) -> list[str]:
    return [".PP", ".RS 4", ".EX", *map(literal, lines.splitlines()), ".EE", ".RE"]


def render(parser: argparse.ArgumentParser | None = None) -> str:
    """The whole page, in roff (man macros)."""
    parser = parser or build_parser()
    commands = _subparsers(parser)
    help_of = {a.dest: a.help for a in _subparsers_action(parser)._choices_actions}
    out = [f'.TH SFCHECK 1 "{_date()}" "sfcheck {__version__}" "User Commands"',
           ".SH NAME", f"sfcheck \\- {text(SUMMARY)}",
           ".SH SYNOPSIS",
           "\\fBsfcheck\\fR [\\fIoptions\\fR] \\fIFILE\\fR...", ".br",
           "\\fBsfcheck\\fR \\fICOMMAND\\fR [\\fIoptions\\fR] [\\fIargs\\fR...]", ".br",
           "\\fBsfcheck\\fR \\fB\\-\\-help\\fR | \\fB\\-\\-version\\fR",
           ".SH DESCRIPTION", *_paragraphs(parser.description or "", False)[1:],
           ".PP", "Options:", *_options(parser, with_help=True),
           ".SH COMMANDS"]
    for name, sub in commands.items():
        summary = (help_of.get(name) or "").rstrip(".")
        out += [".SS " + f'"{text(name)}"', _synopsis(sub), ".PP",
                text(summary[:1].upper() + summary[1:] + ".")]
        if sub.description:
            out += _paragraphs(sub.description, _is_raw(sub))
        options = _options(sub)
        if options:
            out += [".PP", "Arguments and options:", *options]
        if sub.epilog and name not in EPILOG_IN_EXIT_STATUS:
            out += _paragraphs(sub.epilog, _is_raw(sub))
    out += [".SH EXIT STATUS",
            ".PP", text("For `check` (the default command); each command's own meanings "
                        "are under COMMANDS."),
            *_definitions(((str(code), meaning) for code, meaning in EXIT_STATUS))]
    out += [".SH ENVIRONMENT", *_definitions(ENVIRONMENT)]
    out += [".SH FILES", *_definitions(FILES, bold=False)]
    out += [".SH WAIVER FILE", ".PP", text(WAIVER_TEXT[0]), *_definitions(WAIVER_KEYS)]
    out += [".PP", "Example:", *_verbatim(WAIVER_EXAMPLE), ".PP", text(WAIVER_AFTER[0])]
    out += [".SH EXAMPLES"]
    for what, status, command in EXAMPLES:
        out += [".PP", text(f"{what} (exit status {status}):"), *_verbatim(f"$ {command}")]
    out += [".SH SEE ALSO", SEE_ALSO,
            ".PP", "The SFrame format: the GNU binutils manual, \\fIThe SFrame Format\\fR."]
    return "\n".join(out) + "\n"


def _subparsers_action(parser: argparse.ArgumentParser) -> argparse._SubParsersAction:
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            return action
    raise ValueError("the parser has no commands")


def main(argv: list[str] | None = None) -> int:
    """`python -m sfcheck.manpage OUT`: write the page to OUT (- for stdout)."""
    parser = argparse.ArgumentParser(prog="python -m sfcheck.manpage",
                                     description="Write the sfcheck(1) man page.")
    parser.add_argument("out", metavar="OUT", help="the file to write (- for stdout)")
    args = parser.parse_args(argv)  # `--help` prints this, never becomes a file name
    page = render()
    if args.out == "-":
        sys.stdout.write(page)
    else:
        with open(args.out, "w", encoding="utf-8") as f:
            f.write(page)
    return 0


if __name__ == "__main__":
    sys.exit(main())
