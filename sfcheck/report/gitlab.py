"""GitLab Code Quality report (`artifacts:reports:codequality`): a JSON array of issues.

Each issue has the fields GitLab reads (docs.gitlab.com, "Code Quality", custom tool
format): `description`, `check_name` (the rule ID), `fingerprint`, `severity`,
`location.path` and `location.lines.begin`. GitLab needs a line; a binary has none, so
every issue is on line 1 of its file. An archive member is reported on its archive, the
member named first in the description. The fingerprint hashes rule, file, member and
place (report.ci), not the message: the same finding keeps its identity across pipelines
while its figures change. Severity: error -> critical (a reader rejects or mis-unwinds
with the data), warning -> minor, info -> info; an input sfcheck could not read ->
blocker (nothing in it was checked). Waived findings are accepted ones and are left out.
Written as ASCII JSON without a byte order mark (GitLab's parser refuses one).
"""

from __future__ import annotations

import hashlib
import json
from typing import Any, TextIO

from ..effects import ci_severity, note
from ..result import Result, Severity
from . import ReportOptions
from .ci import Fingerprints, artifact, listed, repo_path, scan_fingerprint, scan_listed

SEVERITY = {Severity.ERROR: "critical", Severity.WARNING: "minor", Severity.INFO: "info"}
INPUT_ERROR = "input-not-checked"  # check_name of an unreadable or refused input


def _issue(description: str, check: str, fingerprint: str, severity: str,
           path: str) -> dict[str, Any]:
    return {"description": description, "check_name": check, "fingerprint": fingerprint,
            "severity": severity, "location": {"path": path, "lines": {"begin": 1}}}


def to_list(result: Result, opts: ReportOptions) -> list[dict[str, Any]]:
    prints = Fingerprints()
    issues = []
    for res in result.files:
        if res.error:
            digest = hashlib.sha256(f"{INPUT_ERROR}\0{res.path}".encode(
                "utf-8", "surrogateescape")).hexdigest()
            issues.append(_issue(f"{res.path}: {res.error}", INPUT_ERROR, digest, "blocker",
                                 repo_path(res.package or res.path)))
    for res, f in listed(result, opts):
        if f.waived is not None:
            continue
        path, member = artifact(res)
        where = f.location.describe()
        text = (f"{where}: {f.message}" if where else f.message) + note(f, result.profile)
        if member is not None:
            text = f"{member}: {text}"
        issues.append(_issue(text, f.rule, prints.of(res, f), SEVERITY[ci_severity(f)], path))
    for f in scan_listed(result, opts):  # about the files together: placed on the tree
        if f.waived is not None:
            continue
        issues.append(_issue(f.message, f.rule, scan_fingerprint(f), SEVERITY[f.severity],
                             "."))
    return issues


def render(result: Result, out: TextIO, opts: ReportOptions) -> None:
    # ensure_ascii: a name byte that is not UTF-8 (U+DCXX) is written as an escape
    json.dump(to_list(result, opts), out, indent=2, ensure_ascii=True)
    out.write("\n")
