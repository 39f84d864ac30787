"""Text renderer: `PATH: SEVERITY: [RULE-ID] location: message` lines, most severe first.

Only findings at or above `--show` are printed (README: "Reports"). One file (the lint use)
ends with its own summary line and, when findings were hidden, a hint how to see them. A
multi-file scan prints no line for a file with nothing to show, never an `elf-no-sframe`
info (files without SFrame are counted in the summary), and ends with the summary; a
producer defect (`defect-*` rule) seen in more than one file is said once there, not per
file (unless -I). Names are escaped (report.escape) so no name forges a line.
"""

from __future__ import annotations

from collections import Counter

from ..effects import VERDICT_TEXT, counted, judged, note, verdict_text, verdicts
from ..result import FileResult, Finding, Result, Severity, scan_text
from ..wording import plural
from .escape import escape
from .summary import Summary, producer, summarize

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing at run time
if TYPE_CHECKING:
    from typing import TextIO

    from . import ReportOptions

_COLOURS = {Severity.ERROR: "\033[31m", Severity.WARNING: "\033[33m", Severity.INFO: "\033[36m"}
_DIM, _RESET = "\033[2m", "\033[0m"
_NONE = -1  # sorts a missing location field first


def _order(f: Finding) -> tuple[int, str, int, int, int, str]:
    """Most severe first, then by place in the file."""
    loc = f.location
    return (-f.severity, loc.section or "", _NONE if loc.offset is None else loc.offset,
            _NONE if loc.fde is None else loc.fde, _NONE if loc.fre is None else loc.fre, f.rule)


def counts_text(errors: int, warnings: int, infos: int, waived: int = 0) -> str:
    """The one wording of finding counts, used by the file line and the summary."""
    text = ", ".join((plural(errors, "error"), plural(warnings, "warning"),
                      plural(infos, "info", many="info")))
    return text + (f", {waived} waived" if waived else "")


def _line(f: Finding, colour: bool, profile: str | None = None) -> str:
    return _coloured(escape(f.text() + note(f, profile)), f, colour)


def _scan_line(f: Finding, colour: bool) -> str:
    return _coloured(escape(scan_text(f)), f, colour)


def _coloured(line: str, f: Finding, colour: bool) -> str:
    """A report line with its waiver, dimmed when waived, its severity coloured otherwise."""
    if f.waived is not None:
        line += f" (waived: {escape(f.waived)})"
        return _DIM + line + _RESET if colour else line
    if colour:
        sev = str(f.severity)
        line = line.replace(f": {sev}: ", f": {_COLOURS[f.severity]}{sev}{_RESET}: ", 1)
    return line


def collapsed(result: Result, opts: ReportOptions) -> set[str]:
    """Producer-defect rules a scan lists once in the summary instead of per file: those
    found in more than one file, unless -I asked for every line. Errors are always listed:
    a file that fails the gate is named."""
    if opts.single or opts.show == Severity.INFO:
        return set()
    return {r.rule for r in summarize(result).rules
            if producer(r.rule) and r.files > 1 and Severity.parse(r.severity) < Severity.ERROR}


def shown(res: FileResult, opts: ReportOptions, skip: set[str] = frozenset()) -> list[Finding]:
    """The findings of `res` the text report prints, in print order."""
    return sorted((f for f in res.findings if f.severity >= opts.show and f.rule not in skip
                   and (opts.single or f.rule != "elf-no-sframe" or f.severity > Severity.INFO)),
                  key=_order)


def render_file(res: FileResult, out: TextIO, opts: ReportOptions,
                skip: set[str] = frozenset(), profile: str | None = None) -> int:
    """Print one file's lines; the number of findings below --show (not printed). Under a
    consumer `profile` each line says what its reader does, and a single file ends with
    the verdict."""
    if res.error:
        print(f"{escape(res.path)}: error: {escape(res.error)}", file=out)
        return 0
    lines = shown(res, opts, skip)
    for f in lines:
        print(_line(f, opts.colour, profile), file=out)
    if opts.single:
        counts = Counter(f.severity for f in res.findings if counted(f))
        waived = sum(f.waived is not None for f in res.findings)
        versions = sorted({s.version for s in res.sections if s.version})
        what = (plural(len(res.sections), "SFrame section")
                + (f" (v{', v'.join(map(str, versions))})" if versions else ""))
        print(f"{escape(res.path)}: {what}: " + counts_text(
            counts[Severity.ERROR], counts[Severity.WARNING], counts[Severity.INFO], waived)
            + _not_counted(res), file=out)
        if profile is not None and judged(res):
            print(f"{escape(res.path)}: {verdict_text(profile, res)}", file=out)
    # elf-no-sframe infos of a scan are not "hidden": -I does not list them either
    return sum(f.severity < opts.show and (opts.single or f.rule != "elf-no-sframe")
               for f in res.findings)


def _not_counted(res: FileResult) -> str:
    n = sum(f.waived is None and not counted(f) for f in res.findings)
    return f", {n} not counted (nothing to the reader)" if n else ""


def render_unused_waivers(result: Result, out: TextIO) -> None:
    for w in result.unused_waivers:
        where = str(w["path"]) + (f" in {w['package']}" if "package" in w else "")
        extra = (f", function {w['function']}" if "function" in w else "") + (
            f", pc {w['pc']:#x}" if isinstance(w.get("pc"), int) else "")
        print(escape(f"sfcheck: warning: waiver #{w['index']} ({w['rule']} on {where}{extra}) "
                     "matched no finding"), file=out)


def _objects(s: Summary) -> str:
    """What the objects checked are, when archives were expanded: `(2185 files, 7899
    members of 12 archives)`."""
    if not s.archive_members:
        return ""
    files = s.files_checked - s.archive_members
    members = f"{plural(s.archive_members, 'member')} of {plural(s.archives, 'archive')}"
    return f"  ({plural(files, 'file')}, {members})" if files else f"  ({members})"


def render_summary(result: Result, out: TextIO, show: Severity, hidden: int,
                   skip: set[str]) -> None:
    """The table at the end of a multi-file scan."""
    s = summarize(result)
    rows = [("objects checked" if s.archive_members else "files checked", s.files_checked),
            ("  with SFrame", s.with_sframe),
            *((f"    v{v}", n) for v, n in s.versions.items()),
            *((("    .sframe bytes", s.sframe_bytes), ("    .eh_frame bytes", s.eh_frame_bytes))
              if s.with_sframe else ()),
            ("  debug files (no data)", s.debug_only),
            ("  without SFrame", s.without_sframe),
            ("unreadable or refused", s.unreadable),
            ("skipped: not ELF", s.skipped_non_elf),
            ("skipped: links", s.skipped_links),
            ("skipped: special files", s.skipped_special)]
    print("\nsfcheck summary", file=out)
    ratio = s.sframe_ratio()
    for i, (name, n) in enumerate(rows):
        if n or not name.startswith(("skipped: s", "  debug")):
            extra = _objects(s) if i == 0 else ""
            if name == "    .eh_frame bytes" and ratio is not None:
                extra = f"  (.sframe/.eh_frame {ratio:.2f})"
            print(f"  {name:<24}{n:>8}" + extra, file=out)
    sev = s.severities
    print("  findings: " + counts_text(sev["error"], sev["warning"], sev["info"], s.waived)
          + (f" ({hidden} below --show {show} not listed; -I lists them)" if hidden else ""),
          file=out)
    if result.profile is not None:
        counts = verdicts(result)
        said = ", ".join(f"{VERDICT_TEXT[v]} {n}" for v, n in counts.items() if n)
        unread = sum(not counted(f) for r in result.files for f in r.findings
                     if f.waived is None)
        print(f"  {result.profile}: {said or 'no file with SFrame'}"
              f" (of {plural(sum(counts.values()), 'file')} with SFrame; "
              f"{plural(unread, 'finding')} nothing to it, not counted)", file=out)
    if s.rules:
        width = max(len(r.rule) for r in s.rules)
        print(f"  {'rule':<{width}}  {'severity':<8} {'count':>7} {'files':>7} {'waived':>7}",
              file=out)
        for r in s.rules:
            print(f"  {r.rule:<{width}}  {r.severity:<8} {r.count:>7} {r.files:>7} "
                  f"{r.waived:>7}", file=out)
    for r in s.rules:
        if r.rule in skip and Severity.parse(r.severity) >= show:
            print(f"  {producer(r.rule)} defect [{r.rule}] in {r.files} files: one producer "
                  "bug, not listed per file (-I lists them)", file=out)


def render(result: Result, out: TextIO, opts: ReportOptions) -> None:
    skip = collapsed(result, opts)
    hidden = sum(render_file(res, out, opts, skip, result.profile) for res in result.files)
    for f in sorted(result.findings, key=_order):  # about the files together: after them
        if f.severity >= opts.show:
            print(_scan_line(f, opts.colour), file=out)
        else:
            hidden += 1
    if opts.single and hidden:
        print(f"sfcheck: {plural(hidden, 'finding')} below --show {opts.show} not listed; "
              "-I lists them", file=out)
    if opts.summary and not opts.single:
        render_summary(result, out, opts.show, hidden, skip)
