"""GitHub Actions workflow commands: one annotation per listed finding.

`::error file=PATH,title=TITLE::MESSAGE` (warning -> `::warning`, info -> `::notice`), the
runner turns each into an annotation on the job and, for a file in the pull request, on
the file. A binary has no lines, so an annotation carries `file=` alone (GitHub shows it
on the file, not on a made-up line 1). An archive member is annotated on its archive
(`file=pool/foo.deb`), the member named in the title and the message.

Escaping is the one the runner undoes (actions/toolkit `command.ts`): `%`, CR and LF as
`%25`, `%0D`, `%0A` in the message, and also `:` and `,` as `%3A`, `%2C` in properties.
Names are first escaped as in text (report.escape): no control character reaches the log.
Errors come first: GitHub shows 10 error and 10 warning annotations per step, 50 per job
(actions/toolkit docs/problem-matchers.md); past that a last plain line says so (every
command stays in the log).
Waived findings are accepted ones and get no annotation; an unreadable input is an error.
"""

from __future__ import annotations

from collections import Counter
from typing import TextIO

from ..effects import ci_severity, note
from ..result import FileResult, Finding, Result, Severity
from . import ReportOptions
from .ci import artifact, listed, repo_path, scan_listed
from .escape import escape

SHOWN_PER_STEP = 10  # annotations of one kind GitHub shows for a step
_COMMAND = {Severity.ERROR: "error", Severity.WARNING: "warning", Severity.INFO: "notice"}


def escape_data(text: str) -> str:
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def escape_property(text: str) -> str:
    return escape_data(text).replace(":", "%3A").replace(",", "%2C")


def command(name: str, message: str, **props: str) -> str:
    fields = ",".join(f"{k}={escape_property(escape(v))}" for k, v in props.items())
    return f"::{name} {fields}::{escape_data(escape(message))}"


def render(result: Result, out: TextIO, opts: ReportOptions) -> None:
    for res in result.files:
        if res.error:
            print(command("error", res.error, file=repo_path(res.path),
                          title="sfcheck: input not checked"), file=out)
    items: list[tuple[FileResult | None, Finding]] = [
        (res, f) for res, f in listed(result, opts) if f.waived is None]
    # findings about the files together (res None) annotate no file
    items += [(None, f) for f in scan_listed(result, opts) if f.waived is None]
    items.sort(key=lambda item: -item[1].severity)  # stable: input order within a severity
    for res, f in items:
        title = f"sfcheck [{f.rule}]"
        if res is None:
            print(command(_COMMAND[f.severity], f.message, title=title), file=out)
            continue
        path, member = artifact(res)
        where = f.location.describe()
        text = (f"{where}: {f.message}" if where else f.message) + note(f, result.profile)
        title = f"sfcheck [{f.rule}]"
        if member is not None:
            title += f" in {member}"
            text = f"{member}: {text}"
        print(command(_COMMAND[ci_severity(f)], text, file=path, title=title), file=out)
    counts = Counter(ci_severity(f) for _res, f in items)
    if max(counts.values(), default=0) > SHOWN_PER_STEP:
        print(f"sfcheck: {counts[Severity.ERROR]} error, {counts[Severity.WARNING]} warning "
              f"and {counts[Severity.INFO]} notice annotations; GitHub shows the first "
              f"{SHOWN_PER_STEP} of each kind per step, this log has them all", file=out)
