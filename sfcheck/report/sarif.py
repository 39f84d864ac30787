"""SARIF 2.1.0 renderer: one run, every rule with its help text, one result per listed
finding, fit for GitHub code scanning ("SARIF support for code scanning").

Results are the findings at or above --show (default warning, report.ci): a scan of a
library directory raises no alert per file without SFrame. At most 25,000 results (more
and GitHub rejects the upload), the most severe kept, a notification counting the rest.

Archive members are nested artifacts: the package is an artifact of its own and the
member's artifact points at it with `parentIndex`, its URI relative to the package
(SARIF 2.1.0 §3.4.3), taken from FileResult.package/.member (a name is never split on
':'). A result's location is on the package, though: code scanning reads only the first
location's `artifactLocation.uri` (no artifacts, no parentIndex), and a member path
names no file in the repository. The member is named first in the message, as a
`module` logical location, and the nested artifact is a related location.
URIs percent-encode the name's bytes, so names that are not UTF-8 survive.
A binary has no lines: locations have no `region` (upload-sarif then hashes nothing and
keeps our `partialFingerprints`; GitHub matches alerts across runs on
`primaryLocationLineHash`, here the hash of rule, file, member and place, report.ci).
Findings with an FDE carry the function start as a
`physicalLocation.address` and, when known, the function name as a logical location.
Waived findings carry an accepted external suppression with the waiver's reason.
Rule descriptions are cut to GitHub's 1024 characters (the help text keeps it all).
"""

from __future__ import annotations

import json
import os
from typing import Any, TextIO
from urllib.parse import quote

from .. import __version__
from ..effects import ci_severity, note
from ..result import FileResult, Finding, Result, Severity
from ..rules import RULES
from . import ReportOptions
from .ci import Fingerprints, listed, scan_fingerprint, scan_listed

SARIF_VERSION = "2.1.0"
SARIF_SCHEMA = "https://json.schemastore.org/sarif-2.1.0.json"
INFO_URI = "https://sourceware.org/binutils/docs/sframe-spec.html"
_LEVEL = {Severity.ERROR: "error", Severity.WARNING: "warning", Severity.INFO: "note"}
_PROBLEM = {Severity.ERROR: "error", Severity.WARNING: "warning",
            Severity.INFO: "recommendation"}
MAX_RESULTS = 25_000  # GitHub rejects a run with more
MAX_DESCRIPTION = 1024  # GitHub's limit on shortDescription/fullDescription


def _uri(path: str) -> tuple[str, str | None]:
    """(uri, uriBaseId) for a file path: relative paths are relative to %SRCROOT%."""
    # fsencode gives back the name's bytes (surrogateescape), so any byte is percent-encoded
    posix = os.fsencode(path.replace(os.sep, "/"))
    if os.path.isabs(path):
        return "file://" + quote(posix), None
    return quote(posix.removeprefix(b"./")), "%SRCROOT%"


class _Artifacts:
    """run.artifacts, each file or package once, members nested under their package."""

    def __init__(self) -> None:
        self.items: list[dict[str, Any]] = []
        self.index: dict[tuple[int | None, str], int] = {}

    def add(self, uri: str, base: str | None, parent: int | None) -> int:
        key = (parent, uri)
        if key not in self.index:
            loc: dict[str, Any] = {"uri": uri}
            if base:
                loc["uriBaseId"] = base
            item: dict[str, Any] = {"location": loc}
            if parent is not None:
                item["parentIndex"] = parent
            self.index[key] = len(self.items)
            self.items.append(item)
        return self.index[key]

    def top(self, path: str) -> dict[str, Any]:
        """The artifactLocation of a file named on input or found in a tree."""
        uri, base = _uri(path)
        loc: dict[str, Any] = {"uri": uri, "index": self.add(uri, base, None)}
        if base:
            loc["uriBaseId"] = base
        return loc

    def location(self, res: FileResult) -> dict[str, Any]:
        """The artifactLocation of a checked file or archive member."""
        if res.package is None or res.member is None:
            return self.top(res.path)
        parent = self.top(res.package)["index"]
        # The member is one artifact under its package: its name may hold ':' and is
        # never split (an inner archive's member path is part of that one name).
        uri = quote(os.fsencode(res.member).removeprefix(b"./"))
        return {"uri": uri, "index": self.add(uri, None, parent)}

    def primary(self, res: FileResult) -> dict[str, Any]:
        """Where code scanning shows a result: the file, or a member's package."""
        return self.top(res.path if res.package is None else res.package)


def _cut(text: str, limit: int = MAX_DESCRIPTION) -> str:
    """`text` within `limit` characters: whole sentences when they fit, else cut with '...'."""
    if len(text) <= limit:
        return text
    end = text.rfind(". ", 0, limit - 1)
    return text[:end + 1] if end > 0 else text[:limit - 3] + "..."


def _rule(rule_id: str) -> dict[str, Any]:
    r = RULES[rule_id]
    return {"id": r.id, "name": "".join(w.capitalize() for w in r.id.split("-")),
            "shortDescription": {"text": _cut(r.title)},
            "fullDescription": {"text": _cut(r.explanation)},
            "help": {"text": f"{r.explanation}\n\nFix: {r.hint}",
                     "markdown": f"{r.explanation}\n\n**Fix:** {r.hint}"},
            "defaultConfiguration": {"level": _LEVEL[r.severity]},
            "properties": {"group": r.group, "tags": ["sframe", r.group],
                           "problem.severity": _PROBLEM[r.severity]}}


def _result(f: Finding, res: FileResult, artifacts: _Artifacts,
            rule_index: dict[str, int], fingerprint: str,
            profile: str | None = None) -> dict[str, Any]:
    loc = f.location
    member = res.member if res.package is not None else None
    physical: dict[str, Any] = {"artifactLocation": artifacts.primary(res)}
    if loc.pc is not None:
        address: dict[str, Any] = {"absoluteAddress": loc.pc, "kind": "function"}
        if loc.function:
            address["name"] = loc.function
        physical["address"] = address
    location: dict[str, Any] = {"physicalLocation": physical}
    where = loc.describe()
    if where:
        location["message"] = {"text": where}
    logical = []
    if member is not None:
        logical.append({"name": member.rsplit("/", 1)[-1], "fullyQualifiedName": member,
                        "kind": "module"})
    if loc.function:
        logical.append({"name": loc.function, "kind": "function"})
    if logical:
        location["logicalLocations"] = logical
    props: dict[str, Any] = {k: v for k, v in (
        ("archiveMember", member), ("section", loc.section), ("sectionOffset", loc.offset),
        ("fde", loc.fde), ("fre", loc.fre), ("frePc", loc.fre_pc), ("profile", profile),
        ("effect", f.effect)) if v is not None}
    text = (f"{where}: {f.message}" if where else f.message) + note(f, profile)
    out: dict[str, Any] = {"ruleId": f.rule, "level": _LEVEL[ci_severity(f)],
                           "message": {"text": f"{member}: {text}" if member else text},
                           "locations": [location],
                           "partialFingerprints": {"primaryLocationLineHash": fingerprint,
                                                   "sfcheckFinding/v1": fingerprint}}
    if member is not None:
        out["relatedLocations"] = [{
            "id": 1, "physicalLocation": {"artifactLocation": artifacts.location(res)},
            "message": {"text": f"archive member {member}"}}]
    if f.rule in rule_index:
        out["ruleIndex"] = rule_index[f.rule]
    if props:
        out["properties"] = props
    if f.waived is not None:
        out["suppressions"] = [{"kind": "external", "status": "accepted",
                                "justification": f.waived}]
    return out


def to_dict(result: Result, exit_status: int = 0,
            opts: ReportOptions | None = None) -> dict[str, Any]:
    opts = ReportOptions(show=Severity.INFO) if opts is None else opts
    rules = [_rule(rid) for rid in RULES]
    rule_index = {r["id"]: i for i, r in enumerate(rules)}
    artifacts = _Artifacts()
    notifications: list[dict[str, Any]] = []
    for res in result.files:
        if res.error:
            notifications.append({
                "level": "error", "message": {"text": f"{res.path}: {res.error}"},
                "locations": [{"physicalLocation": {
                    "artifactLocation": artifacts.location(res)}}]})
    chosen = listed(result, opts)
    if len(chosen) > MAX_RESULTS:  # keep the most severe, in order; count the rest
        keep = sorted(range(len(chosen)), key=lambda i: -chosen[i][1].severity)[:MAX_RESULTS]
        notifications.append({"level": "warning", "message": {"text": (
            f"{len(chosen) - MAX_RESULTS} of {len(chosen)} results left out: code scanning "
            f"takes at most {MAX_RESULTS} per run (raise --show or waive known defects)")}})
        chosen = [chosen[i] for i in sorted(keep)]
    prints = Fingerprints()
    results = [_result(f, res, artifacts, rule_index, prints.of(res, f), result.profile)
               for res, f in chosen]
    # About the files together. SARIF allows a result without a location, but code
    # scanning refuses the upload ("expected at least one location", github/codeql-action
    # #2459): such a result is placed on the scan's first checked file, and says so.
    first = next((r for r in result.files if not r.error), None)
    for f in scan_listed(result, opts):
        if f.rule in rule_index and first is not None:
            res: dict[str, Any] = {
                "ruleId": f.rule, "ruleIndex": rule_index[f.rule], "level": _LEVEL[f.severity],
                "message": {"text": f.message}, "properties": {"scope": "scan"},
                "locations": [{"physicalLocation": {"artifactLocation":
                                                    artifacts.primary(first)},
                               "message": {"text": "the scan as a whole (placed on its "
                                                   "first file)"}}],
                "partialFingerprints": {"primaryLocationLineHash": scan_fingerprint(f),
                                        "sfcheckFinding/v1": scan_fingerprint(f)}}
            if f.waived is not None:
                res["suppressions"] = [{"kind": "external", "status": "accepted",
                                        "justification": f.waived}]
            results.append(res)
    config_notes = [{"level": "warning",
                     "message": {"text": f"waiver #{w['index']} ({w['rule']} on {w['path']}) "
                                         "matched no finding"}}
                    for w in result.unused_waivers]
    invocation: dict[str, Any] = {"executionSuccessful": exit_status != 2,
                                  "exitCode": exit_status}
    if notifications:
        invocation["toolExecutionNotifications"] = notifications
    if config_notes:
        invocation["toolConfigurationNotifications"] = config_notes
    run: dict[str, Any] = {
        "tool": {"driver": {"name": "sfcheck", "version": __version__,
                            "informationUri": INFO_URI, "rules": rules}},
        "invocations": [invocation],
        "artifacts": artifacts.items,
        "results": results,
        "columnKind": "unicodeCodePoints",
    }
    return {"$schema": SARIF_SCHEMA, "version": SARIF_VERSION, "runs": [run]}


def render(result: Result, out: TextIO, opts: ReportOptions) -> None:
    json.dump(to_dict(result, opts.exit_status, opts), out, indent=2, ensure_ascii=True)
    out.write("\n")
