"""Text renderer of check results: `PATH: SEVERITY: [RULE-ID] message` lines."""

from __future__ import annotations

from collections import Counter
from typing import TextIO

from .result import FileResult, Severity

_COLOURS = {Severity.ERROR: "\033[31m", Severity.WARNING: "\033[33m", Severity.INFO: "\033[36m"}


def render_file(res: FileResult, out: TextIO, colour: bool = False) -> None:
    if res.error:
        print(f"{res.path}: error: {res.error}", file=out)
        return
    for f in res.findings:
        line = f.text()
        if colour:
            sev = str(f.severity)
            line = line.replace(f": {sev}: ", f": {_COLOURS[f.severity]}{sev}\033[0m: ", 1)
        print(line, file=out)
    counts = Counter(f.severity for f in res.findings)
    versions = sorted({s.version for s in res.sections if s.version})
    what = (f"{len(res.sections)} SFrame section(s)"
            + (f" (v{', v'.join(map(str, versions))})" if versions else ""))
    print(f"{res.path}: {what}: {counts[Severity.ERROR]} error(s), "
          f"{counts[Severity.WARNING]} warning(s), {counts[Severity.INFO]} info", file=out)
