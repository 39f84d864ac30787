"""Text renderer: `PATH: SEVERITY: [RULE-ID] location: message` lines, a summary line per
file, and for scans of more than one file a summary table."""

from __future__ import annotations

from collections import Counter
from typing import TextIO

from ..result import FileResult, Result, Severity
from .summary import summarize

_COLOURS = {Severity.ERROR: "\033[31m", Severity.WARNING: "\033[33m", Severity.INFO: "\033[36m"}
_DIM, _RESET = "\033[2m", "\033[0m"


def render_file(res: FileResult, out: TextIO, colour: bool = False) -> None:
    if res.error:
        print(f"{res.path}: error: {res.error}", file=out)
        return
    for f in res.findings:
        line = f.text()
        if f.waived is not None:
            line += f" (waived: {f.waived})"
            if colour:
                line = _DIM + line + _RESET
        elif colour:
            sev = str(f.severity)
            line = line.replace(f": {sev}: ", f": {_COLOURS[f.severity]}{sev}{_RESET}: ", 1)
        print(line, file=out)
    counts = Counter(f.severity for f in res.findings if f.waived is None)
    waived = sum(f.waived is not None for f in res.findings)
    versions = sorted({s.version for s in res.sections if s.version})
    what = (f"{len(res.sections)} SFrame section(s)"
            + (f" (v{', v'.join(map(str, versions))})" if versions else ""))
    print(f"{res.path}: {what}: {counts[Severity.ERROR]} error(s), "
          f"{counts[Severity.WARNING]} warning(s), {counts[Severity.INFO]} info"
          + (f", {waived} waived" if waived else ""), file=out)


def render_unused_waivers(result: Result, out: TextIO) -> None:
    for w in result.unused_waivers:
        where = str(w["path"]) + (f" in {w['package']}" if "package" in w else "")
        extra = (f", function {w['function']}" if "function" in w else "") + (
            f", pc {w['pc']:#x}" if isinstance(w.get("pc"), int) else "")
        print(f"sfcheck: warning: waiver #{w['index']} ({w['rule']} on {where}{extra}) "
              "matched no finding", file=out)


def render_summary(result: Result, out: TextIO) -> None:
    """The table at the end of a multi-file scan."""
    s = summarize(result)
    rows = [("files checked", s.files_checked),
            ("  with SFrame", s.with_sframe),
            *((f"    v{v}", n) for v, n in s.versions.items()),
            ("  without SFrame", s.without_sframe),
            ("unreadable or refused", s.unreadable),
            ("skipped: not ELF", s.skipped_non_elf),
            ("skipped: links", s.skipped_links),
            ("skipped: special files", s.skipped_special)]
    print("\nsfcheck summary", file=out)
    for name, n in rows:
        if n or not name.startswith("skipped: s"):
            print(f"  {name:<24}{n:>8}", file=out)
    sev = ", ".join(f"{n} {k}" for k, n in s.severities.items())
    print(f"  findings: {sev}" + (f", {s.waived} waived" if s.waived else ""), file=out)
    if s.rules:
        width = max(len(r.rule) for r in s.rules)
        print(f"  {'rule':<{width}}  {'severity':<8} {'count':>7} {'waived':>7}", file=out)
        for r in s.rules:
            print(f"  {r.rule:<{width}}  {r.severity:<8} {r.count:>7} {r.waived:>7}", file=out)


def render(result: Result, out: TextIO, colour: bool = False, summary: bool = True) -> None:
    for res in result.files:
        render_file(res, out, colour)
    if summary:
        render_summary(result, out)
