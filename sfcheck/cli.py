"""Command line: `sfcheck dump ...` (and, as they land, the checker's commands)."""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

from . import __version__
from .argtypes import positive

# Each command imports what it needs: `sfcheck FILE` never loads the dumper, the
# unwinder or the archive readers (start-up is most of a small file's check).
if TYPE_CHECKING:
    from .elf import ElfSFrameInfo
    from .result import Result

EXIT_OK, EXIT_FINDINGS, EXIT_USAGE = 0, 1, 2

_BFD_NAMES = {("EM_X86_64", 64, True): "elf64-x86-64", ("EM_386", 32, True): "elf32-i386",
              ("EM_AARCH64", 64, True): "elf64-littleaarch64",
              ("EM_AARCH64", 64, False): "elf64-bigaarch64", ("EM_S390", 64, False): "elf64-s390"}


def bfd_name(info: ElfSFrameInfo) -> str:
    """The format name objdump prints on its `file format` line."""
    key = (info.e_machine, info.elfclass, info.little_endian)
    endian = "little" if info.little_endian else "big"
    return _BFD_NAMES.get(key, f"elf{info.elfclass}-{endian}")




def parse_address(text: str) -> int:
    try:
        value = int(text, 0)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not an address: {text!r} (decimal or 0x-hex)") from None
    if not 0 <= value < 1 << 64:
        raise argparse.ArgumentTypeError(f"address out of range: {text}")
    return value


class _Out:
    """stdout/stderr writers; keeps the exit status."""

    def __init__(self) -> None:
        self.status = EXIT_OK

    def err(self, path: str, message: str, status: int) -> None:
        print(f"{path}: error: {message}", file=sys.stderr)
        self.status = max(self.status, status)

    def note(self, path: str, message: str) -> None:
        print(f"{path}: {message}", file=sys.stderr)


def _read_raw(path: str, out: _Out) -> bytes | None:
    """A bare section file's bytes, or None after reporting why it cannot be read."""
    try:
        with open(path, "rb") as f:
            return f.read()
    except OSError as exc:
        out.err(path, f"cannot read file: {exc.strerror or exc}", EXIT_USAGE)
        return None


def _sections(path: str, args: argparse.Namespace, out: _Out):
    """(name, vma, bytes) for each SFrame section of `path`, or None after reporting."""
    from .elf import ElfError, load_elf

    if args.raw:
        data = _read_raw(path, out)
        return None if data is None else (None, [(args.section or ".sframe", args.vma, data)])
    try:
        info = load_elf(path)
    except ElfError as exc:
        out.err(path, exc.message, EXIT_USAGE)
        return None
    found = [(s.name, s.vma, s.raw_data if args.no_relocs else s.data) for s in info.sections
             if args.section is None or s.name == args.section]
    if not found:
        out.note(path, "no SFrame section")
    return info, found


def cmd_dump(args: argparse.Namespace) -> int:
    from .dump.json_out import dump_json
    from .dump.objdump import dump_chunks
    from .errors import DecodeError

    out = _Out()
    files = []
    for path in args.files:
        got = _sections(path, args, out)
        if got is None:
            continue
        info, sections = got
        if args.json:
            files.append({"path": path, "sections": [dump_json(d, vma, name)
                                                     for name, vma, d in sections]})
            for sec in files[-1]["sections"]:
                if sec["error"]:
                    out.status = max(out.status, EXIT_FINDINGS)
            continue
        if info is not None:
            print(f"\n{path}:     file format {bfd_name(info)}\n")
        for name, vma, data in sections:
            if not data:
                out.note(path, f"section {name} is empty: no SFrame data")
                continue
            try:
                for chunk in dump_chunks(data, vma, name):  # thousands of lines a write
                    sys.stdout.write(chunk)
                    sys.stdout.write("\n")
            except DecodeError as exc:
                sys.stdout.flush()
                out.err(path, f"{name}: SFrame decode failure: {exc}", EXIT_FINDINGS)
    if args.json:
        json.dump({"sfcheck_version": __version__, "files": files}, sys.stdout, indent=2)
        print()
    return out.status


def cmd_check(args: argparse.Namespace) -> int:
    from .checker import Options
    from .inputs import Limits, read_path_list
    from .result import Severity
    from .scan import ScanConfig, default_jobs, progress_stream, scan
    from .waivers import WaiverError, apply_waivers, load_waivers, needs_symbols

    options = Options(enable=set(args.enable), disable=set(args.disable),
                      require_sframe=args.require_sframe, profile=args.profile)
    try:
        options.validate()
        waivers = load_waivers(args.waivers) if args.waivers else []
        limits = Limits(args.max_archive_bytes, args.max_archive_members)
        paths = list(args.files)
        if args.from_file:
            paths += read_path_list(args.from_file)
    except (ValueError, WaiverError) as exc:
        print(f"sfcheck: error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except OSError as exc:
        print(f"sfcheck: error: cannot read {args.from_file}: {exc.strerror or exc}",
              file=sys.stderr)
        return EXIT_USAGE
    if not paths:
        print("sfcheck: error: no input files (give FILE... or --from-file)", file=sys.stderr)
        return EXIT_USAGE
    config = ScanConfig(options, args.jobs or default_jobs(), limits, args.raw, args.vma,
                        symbols=needs_symbols(waivers) or args.format in ("json", "sarif"),
                        progress=progress_stream(args.quiet))
    result = scan(paths, config)
    result.unused_waivers = [w.as_dict() for w in apply_waivers(result.files, waivers)]
    threshold = None if args.fail_on == "none" else Severity.parse(args.fail_on)
    status = EXIT_OK
    for res in result.files:
        if res.error:
            status = EXIT_USAGE
        elif threshold is not None and (res.worst() or -1) >= threshold:
            status = max(status, EXIT_FINDINGS)
    return _write_report(args, result, status)


def _write_report(args: argparse.Namespace, result: Result, status: int) -> int:
    """Render the scan in --format to --output (or stdout); the exit status stays."""
    from .report import text  # the others load only when asked for

    if args.quiet and not args.output:
        return status
    try:
        out = open(args.output, "w", encoding="utf-8") if args.output else sys.stdout  # noqa: SIM115
    except OSError as exc:
        print(f"sfcheck: error: cannot write {args.output}: {exc.strerror or exc}",
              file=sys.stderr)
        return EXIT_USAGE
    try:
        if args.format == "json":
            from .report import json_out
            json_out.render(result, out, args.fail_on, status)
        elif args.format == "sarif":
            from .report import sarif
            sarif.render(result, out, status)
        elif args.format == "junit":
            from .report import junit
            junit.render(result, out, args.fail_on)
        else:
            colour = out is sys.stdout and sys.stdout.isatty() and not args.no_color
            sk = result.skipped
            many = len(result.files) > 1 or sk.non_elf + sk.links + sk.special > 0
            text.render(result, out, colour, summary=many and not args.no_summary)
    finally:
        if out is not sys.stdout:
            out.close()
    if not args.quiet:
        text.render_unused_waivers(result, sys.stderr)
    return status


def cmd_rules(args: argparse.Namespace) -> int:
    from .rules import GROUPS, RULES

    for group in GROUPS:
        rules = [r for r in RULES.values() if r.group == group]
        if not rules:
            continue
        print(f"{group}:")
        for r in rules:
            print(f"  {r.id:<28} {str(r.severity):<8} {r.title}")
    return EXIT_OK


def cmd_explain(args: argparse.Namespace) -> int:
    import textwrap

    from .rules import RULES

    r = RULES.get(args.rule)
    if r is None:
        print(f"sfcheck: error: unknown rule {args.rule!r} (see `sfcheck rules`)",
              file=sys.stderr)
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

    names = args.names or list(PROFILES)
    unknown = [n for n in names if n not in PROFILES]
    if unknown:
        print(f"sfcheck: error: unknown profile {unknown[0]!r} (one of {', '.join(PROFILES)})",
              file=sys.stderr)
        return EXIT_USAGE
    for i, name in enumerate(names):
        if i:
            print()
        for line in describe(PROFILES[name]):
            print(line)
    return EXIT_OK


SUBCOMMANDS = ("check", "dump", "rules", "explain", "unwind", "profiles", "proc")


def build_parser(command: str | None = None) -> argparse.ArgumentParser:
    """The argument parser; given the `command` about to run, it skips what only other
    commands need (the profile list loads the rule catalogue: `sfcheck dump` need not)."""
    parser = argparse.ArgumentParser(
        prog="sfcheck", description="Validate, dump and fuzz SFrame stack-trace sections.",
        epilog="Exit status: 0 success, 1 findings or undecodable SFrame data, "
               "2 usage error or unreadable/non-ELF file.")
    parser.add_argument("--version", action="version", version=f"sfcheck {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    dump = sub.add_parser(
        "dump", help="print SFrame sections as `objdump --sframe` does",
        description="Print every SFrame section of each FILE in the text `objdump --sframe` "
                    "prints (binutils 2.46 style, for v1, v2 and v3), or as JSON.")
    dump.add_argument("files", nargs="+", metavar="FILE")
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

    check = sub.add_parser(
        "check", help="lint SFrame sections (the default command: `sfcheck FILE...`)",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        description="Check every SFrame section of each ELF file and print findings as\n"
                    "`PATH: SEVERITY: [RULE-ID] location: message`.\n"
                    "FILE may be an ELF file, a directory (searched recursively; files that "
                    "are\nneither ELF nor an archive are skipped and counted), a .deb, .rpm, "
                    ".a or tar\narchive (read in memory; each member is reported as "
                    "ARCHIVE:MEMBER).",
        epilog="exit status:\n  0  nothing (not waived) at or above --fail-on\n"
               "  1  findings at or above --fail-on\n"
               "  2  usage error, or a file that could not be read (unreadable, not ELF,\n"
               "     or an archive refused as malformed or hostile)")
    check.add_argument("files", nargs="*", metavar="FILE")
    check.add_argument("--from-file", metavar="LIST",
                       help="also read input paths from LIST, one per line or NUL-separated "
                            "(- for stdin)")
    check.add_argument("--format", choices=("text", "json", "sarif", "junit"), default="text",
                       help="report format (default text)")
    check.add_argument("-o", "--output", metavar="FILE", help="write the report to FILE")
    check.add_argument("-j", "--jobs", type=positive, default=0, metavar="N",
                       help="worker processes (default: the number of CPUs)")
    check.add_argument("-q", "--quiet", action="store_true",
                       help="no report on stdout and no progress: only the exit status "
                            "(--output is still written)")
    check.add_argument("--no-summary", action="store_true",
                       help="text format: no summary table after a multi-file scan")
    check.add_argument("--waivers", metavar="TOML",
                       help="waiver file: accepted findings, each with a reason (see README)")
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
                       default="error", help="lowest severity that makes the exit status 1")
    check.add_argument("--enable", action="append", default=[], metavar="ID",
                       help="switch a rule or group on (repeatable)")
    check.add_argument("--disable", action="append", default=[], metavar="ID",
                       help="switch a rule or group off (repeatable)")
    check.add_argument("--require-sframe", action="store_true",
                       help="a file without SFrame data is an error")
    check.add_argument("--no-color", action="store_true", help="no colour even on a terminal")
    if command in (None, "check"):
        from .profiles import PROFILE_NAMES
    else:
        PROFILE_NAMES = None  # noqa: N806  (this parser will not parse `check` arguments)
    check.add_argument("--profile", choices=PROFILE_NAMES, default="strict",
                       help="judge as this reader would (default strict: every rule); "
                            "see `sfcheck profiles`")
    check.set_defaults(func=cmd_check)

    rules = sub.add_parser("rules", help="list the rules by group")
    rules.set_defaults(func=cmd_rules)
    explain = sub.add_parser("explain", help="explain one rule")
    explain.add_argument("rule", metavar="RULE-ID")
    explain.set_defaults(func=cmd_explain)
    profiles = sub.add_parser(
        "profiles", help="list the consumer profiles (--profile) with their sources",
        description="Print what each reader accepts and rejects, the rules it turns on and "
                    "the severities it changes, each with the source it comes from.")
    profiles.add_argument("names", nargs="*", metavar="NAME", help="only these profiles")
    profiles.set_defaults(func=cmd_profiles)

    from .unwind.cli import add_parser as add_unwind_parser
    add_unwind_parser(sub)
    from .proc import add_parser as add_proc_parser
    add_proc_parser(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv and argv[0] not in SUBCOMMANDS and argv[0] not in ("-h", "--help", "--version"):
        argv.insert(0, "check")  # `sfcheck FILE...` means `sfcheck check FILE...`
    parser = build_parser(argv[0] if argv and argv[0] in SUBCOMMANDS else None)
    args = parser.parse_args(argv)
    if args.command is None:
        parser.print_help(sys.stderr)
        return EXIT_USAGE
    if getattr(args, "vma", 0) and not args.raw:
        parser.error("--vma applies to --raw sections only (ELF files give the address)")
    func: Callable[[argparse.Namespace], int] = args.func
    try:
        return func(args)
    except BrokenPipeError:  # `sfcheck dump big.so | head`
        sys.stderr.close()
        return EXIT_OK


if __name__ == "__main__":
    sys.exit(main())
