"""Command line: the parser, `main` (exit statuses, last-resort handler) and the small
commands; `dump` is in cli_dump.py, report writing and display options in cli_output.py."""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Callable, Sequence

from . import __version__, completion
from .argtypes import positive
from .cli_output import add_display_options, drop_stdout
from .report.escape import escape

# Each command imports what it needs: `sfcheck FILE` never loads the dumper, the
# unwinder or the archive readers (start-up is most of a small file's check).
# 70 (EX_SOFTWARE): sfcheck itself failed; a gate tells it from "package bad" (1).
EXIT_OK, EXIT_FINDINGS, EXIT_USAGE, EXIT_INTERNAL, EXIT_INTERRUPTED = 0, 1, 2, 70, 130

def parse_address(text: str) -> int:
    try:
        value = int(text, 0)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not an address: {text!r} (decimal or 0x-hex)") from None
    if not 0 <= value < 1 << 64:
        raise argparse.ArgumentTypeError(f"address out of range: {text}")
    return value


def cmd_dump(args: argparse.Namespace) -> int:
    from .cli_dump import cmd_dump as run

    return run(args)


def cmd_check(args: argparse.Namespace) -> int:
    from .checker import Options
    from .fileio import InputFileError
    from .inputs import Limits, read_path_list
    from .result import Severity
    from .scan import INTERNAL_ERROR, ScanConfig, default_jobs, progress_stream, scan

    try:
        _configure(args)
    except ValueError as exc:  # ConfigError: one line naming the file and the key
        print(f"sfcheck: error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    if args.waivers:  # the waivers module (tomllib, dataclasses) only when asked for
        from .waivers import WaiverError, apply_waivers, load_waivers
    else:
        WaiverError = ValueError  # noqa: N806  (load_waivers is not called: nothing to catch)
    options = Options(enable=set(args.enable), disable=set(args.disable),
                      require_sframe=args.require_sframe, profile=args.profile)
    try:
        options.validate()
        waivers = load_waivers(args.waivers) if args.waivers else []
        limits = Limits(args.max_archive_bytes, args.max_archive_members)
        from .inputs.spill import tmpdir_problem
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
        result.unused_waivers = [w.as_dict() for w in apply_waivers(result.files, waivers)]
    threshold = None if args.fail_on == "none" else Severity.parse(args.fail_on)
    status = EXIT_OK
    for res in result.files:
        if res.error:  # a bug in sfcheck on one file is told apart from an unreadable one
            status = max(status, EXIT_INTERNAL if res.error.startswith(INTERNAL_ERROR)
                         else EXIT_USAGE)
        elif threshold is not None and (res.worst() or -1) >= threshold:
            status = max(status, EXIT_FINDINGS)
    from .cli_output import write_report
    args.status_so_far = status  # main() returns it if stdout closes while writing
    return write_report(args, result, status)


# What `check` uses when neither the command line nor a configuration file says.
CHECK_DEFAULTS = {"format": "text", "fail_on": "error", "profile": "strict", "enable": [],
                  "disable": []}


def _configure(args: argparse.Namespace) -> None:
    """Fill the options the command line left unset from the configuration file (unless
    --no-config), then from CHECK_DEFAULTS."""
    if not args.no_config:
        from pathlib import Path

        from . import config

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


def cmd_rules(args: argparse.Namespace) -> int:
    from .rules import GROUPS, RULES
    from .wording import did_you_mean

    groups = [g for g in GROUPS if any(r.group == g for r in RULES.values())]
    for name in args.groups:  # a group, or one rule ID (its line under its group)
        if name not in groups and name not in RULES:
            hint = did_you_mean(name, [*groups, *RULES])
            print(escape(f"sfcheck: error: no rule group or rule {name!r}{hint}; groups: "
                         f"{', '.join(groups)}"), file=sys.stderr)
            return EXIT_USAGE
    wanted = set(args.groups)
    for group in groups:
        rules = [r for r in RULES.values() if r.group == group
                 and (not wanted or group in wanted or r.id in wanted)]
        if not rules:
            continue
        print(f"{group}:")
        for r in rules:
            print(f"  {r.id:<28} {str(r.severity):<8} {r.title}")
    return EXIT_OK


def cmd_explain(args: argparse.Namespace) -> int:
    import textwrap

    from .rules import GROUPS, RULES
    from .wording import did_you_mean

    r = RULES.get(args.rule)
    if r is None:
        hint = (f": a group; `sfcheck rules {args.rule}` lists its rules" if args.rule in GROUPS
                else did_you_mean(args.rule, list(RULES)) or " (see `sfcheck rules`)")
        print(escape(f"sfcheck: error: unknown rule {args.rule!r}{hint}"), file=sys.stderr)
        return EXIT_USAGE
    print(f"{r.id} ({r.group}, default severity {r.severity}): {r.title}\n")
    print(textwrap.fill(r.explanation, 78) + "\n")
    print(textwrap.fill("Fix: " + r.hint, 78))
    _explain_profiles(r.id)
    return EXIT_OK


def _explain_profiles(rule_id: str) -> None:
    """What each consumer profile says about a rule, with its source."""
    import textwrap

    from .profiles import PROFILES

    lines = []
    for p in PROFILES.values():
        if rule_id in p.consumer:
            fact = p.consumer[rule_id]
            lines.append(f"--profile {p.name}: error. {fact.text} [{fact.source}]")
        elif rule_id in p.overrides:
            o = p.overrides[rule_id]
            sev = "not reported" if o.severity is None else str(o.severity)
            lines.append(f"--profile {p.name}: {sev}. {o.why} [{o.source}]")
    if lines:
        print("\nUnder consumer profiles (see `sfcheck profiles`):")
        for line in lines:
            print(textwrap.fill(line, 78, initial_indent="  ", subsequent_indent="    ",
                                break_on_hyphens=False, break_long_words=False))


def cmd_profiles(args: argparse.Namespace) -> int:
    from .profiles import PROFILES, describe

    unknown = [n for n in args.names if n not in PROFILES]
    if unknown:
        from .wording import did_you_mean

        print(escape(f"sfcheck: error: unknown profile {unknown[0]!r}"
                     f"{did_you_mean(unknown[0], PROFILES)} (one of {', '.join(PROFILES)})"),
              file=sys.stderr)
        return EXIT_USAGE
    if not args.names:
        for line in profile_table():
            print(line)
        return EXIT_OK
    for i, name in enumerate(args.names):
        if i:
            print()
        for line in describe(PROFILES[name]):
            print(line)
    return EXIT_OK


TABLE_WIDTH = 100  # `sfcheck profiles` fits a 100-column terminal


def profile_table(width: int = TABLE_WIDTH) -> list[str]:
    """One row per profile, from the profile data: versions, required flags, what else it
    rejects (wrapped in its column), then each profile's sources, all within `width`."""
    import textwrap

    from .profiles import PROFILES, flag_names

    rows = [("PROFILE", "VERSIONS", "REQUIRED FLAGS", "ALSO REJECTS")]
    for p in PROFILES.values():
        flags = sorted({flag_names(f) for f in p.required_flags.values()}) or ["none"]
        rejects = [what for on, what in (
            (p.rejects_auxhdr, "auxhdr"), (p.rejects_empty, "num_fdes/num_fres 0"),
            (p.ignores_fdeoff, "fdeoff != 0"), (p.ignores_freoff, "a gap before the FREs"),
            (p.increasing_starts, "equal FDE starts"),
            (p.one_text_segment, "FDEs in several PF_X segments")) if on]
        versions = ", ".join(f"v{v}" for v in sorted(p.versions)) if p.consumer or \
            p.name != "strict" else "all"
        rows.append((p.name, versions, "; ".join(flags), ", ".join(rejects) or "-"))
    widths = [max(len(r[i]) for r in rows) for i in range(3)]
    indent = sum(widths) + 2 * len(widths)
    lines = []
    for row in rows:
        head = "  ".join(c.ljust(w) for c, w in zip(row, widths, strict=False)) + "  "
        # break at the commas between items, never inside one
        rest = textwrap.wrap(row[3].replace(" ", "\0").replace(",\0", ", "),
                             width - indent) or [""]
        lines.append((head + rest[0].replace("\0", " ")).rstrip())
        lines.extend(" " * indent + more.replace("\0", " ") for more in rest[1:])
    lines += ["", "Sources:"]
    for p in PROFILES.values():
        for source in p.sources[:1]:
            lines += textwrap.wrap(f"{p.name}: {source}", width, initial_indent="  ",
                                   subsequent_indent="    ", break_long_words=False,
                                   break_on_hyphens=False)
    return [*lines, "", "`sfcheck profiles NAME` prints every fact and override with its source."]


SUBCOMMANDS = ("check", "dump", "rules", "explain", "unwind", "profiles", "proc", "survey")


def _terminal_columns() -> int:
    """What shutil.get_terminal_size() gives as columns: $COLUMNS, else stdout's terminal,
    else 80."""
    try:
        columns = int(os.environ["COLUMNS"])
    except (KeyError, ValueError):
        columns = 0
    if columns > 0:
        return columns
    try:
        columns = os.get_terminal_size(sys.__stdout__.fileno()).columns  # type: ignore[union-attr]
    except (AttributeError, ValueError, OSError):
        columns = 0
    return columns or 80


class _Formatter(argparse.HelpFormatter):
    """argparse's formatter at the same width, without importing shutil (and with it bz2,
    lzma, zlib): argparse makes one for every argument added, so every run paid for it."""

    def __init__(self, prog: str, indent_increment: int = 2, max_help_position: int = 24,
                 width: int | None = None) -> None:
        super().__init__(prog, indent_increment, max_help_position,
                         _terminal_columns() - 2 if width is None else width)


class _RawDescriptionFormatter(argparse.RawDescriptionHelpFormatter, _Formatter):
    pass


def build_parser(command: str | None = None) -> argparse.ArgumentParser:
    """The argument parser. Given the `command` about to run, only that command's parser is
    built: building all of them (the unwinder's and proc's modules, the profile list) is
    a large part of a small file's check. Without one (--help, the man page, completion)
    every command is there."""
    parser = argparse.ArgumentParser(
        prog="sfcheck", formatter_class=_Formatter,
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
                "proc": _add_proc, "survey": lambda sub: __import__(
                    "sfcheck.cli_survey", fromlist=["add_parser"]).add_parser(sub)}
    for name in builders if command is None else (command,):  # --help lists them in this order
        builders[name](sub)
    return parser


def _add_dump(sub: argparse._SubParsersAction) -> None:
    dump = sub.add_parser(
        "dump", help="print SFrame sections as `objdump --sframe` does", formatter_class=_Formatter,
        description="Print every SFrame section of each FILE in the text `objdump --sframe` "
                    "prints (binutils 2.46 style, for v1, v2 and v3), or as JSON. FILE is "
                    "what `check` takes: an ELF file, a directory, a .deb, .rpm, .a or tar.")
    dump.add_argument("files", nargs="+", metavar="FILE",
                      help="an ELF file, a directory, or a .deb, .rpm, .a or tar archive")
    dump.add_argument("--raw", action="store_true",
                      help="FILE holds a bare SFrame section, not an ELF file")
    dump.add_argument("--vma", type=parse_address, default=0, metavar="ADDR",
                      help="section address for --raw (decimal or 0x-hex; default 0)")
    dump.add_argument("--section", metavar="NAME", help="only the section called NAME")
    dump.add_argument("--json", action="store_true", help="JSON instead of text")
    dump.add_argument("--no-relocs", action="store_true",
                      help="in .o files show the stored start fields without applying "
                           ".rela.sframe (what readelf 2.44 and older print)")
    dump.set_defaults(func=cmd_dump)


def _add_check(sub: argparse._SubParsersAction) -> None:
    check = sub.add_parser(
        "check", help="lint SFrame sections (the default command: `sfcheck FILE...`)",
        formatter_class=_RawDescriptionFormatter,
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
    from .profiles import PROFILE_NAMES
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
    check.set_defaults(func=cmd_check)


def _add_rules(sub: argparse._SubParsersAction) -> None:
    rules = sub.add_parser(
        "rules", help="list the rules by group", formatter_class=_Formatter,
        description="List every rule with its ID, default severity and title, by group; "
                    "with GROUP, only that group's rules (with a rule ID, that rule). "
                    "`sfcheck explain RULE-ID` explains one.")
    rules.add_argument("groups", nargs="*", metavar="GROUP",
                       help="only these groups (header, layout, fde, fre, elf, semantic, "
                            "defect) or rule IDs"
                       ).completer = completion.groups  # type: ignore[attr-defined]
    rules.set_defaults(func=cmd_rules)


def _add_explain(sub: argparse._SubParsersAction) -> None:
    explain = sub.add_parser(
        "explain", help="explain one rule", formatter_class=_Formatter,
        description="Explain a rule: what it checks, the source of the requirement, a fix "
                    "hint, and what each consumer profile says about it.")
    explain.add_argument("rule", metavar="RULE-ID", help="a rule ID, as `sfcheck rules` "
                         "lists them").completer = completion.rule_ids  # type: ignore[attr-defined]
    explain.set_defaults(func=cmd_explain)


def _add_profiles(sub: argparse._SubParsersAction) -> None:
    profiles = sub.add_parser(
        "profiles", help="list the consumer profiles (--profile) with their sources",
        formatter_class=_Formatter,
        description="Print what each reader accepts and rejects, the rules it turns on and "
                    "the severities it changes, each with the source it comes from.")
    profiles.add_argument("names", nargs="*", metavar="NAME", help="only these profiles"
                          ).completer = completion.profiles  # type: ignore[attr-defined]
    profiles.set_defaults(func=cmd_profiles)


def _add_unwind(sub: argparse._SubParsersAction) -> None:
    from .unwind.cli import add_parser

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


if __name__ == "__main__":
    sys.exit(main())
