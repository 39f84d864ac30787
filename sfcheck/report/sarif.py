"""SARIF 2.1.0 renderer: one run, every rule with its help text, one result per finding.

Archive members are nested artifacts: the package is an artifact of its own and the
member's artifact points at it with `parentIndex`, its URI relative to the package
(SARIF 2.1.0 §3.24.3), taken from FileResult.package/.member (a name is never split on
':'). URIs percent-encode the name's bytes, so names that are not UTF-8 survive.
Findings with an FDE carry the function start as a
`physicalLocation.address` and, when known, the function name as a logical location.
Waived findings carry an accepted external suppression with the waiver's reason.
"""

from __future__ import annotations

import json
import os
from typing import Any, TextIO
from urllib.parse import quote

from .. import __version__
from ..result import FileResult, Finding, Result, Severity
from ..rules import RULES
from . import ReportOptions

SARIF_VERSION = "2.1.0"
SARIF_SCHEMA = "https://json.schemastore.org/sarif-2.1.0.json"
INFO_URI = "https://sourceware.org/binutils/docs/sframe-spec.html"
_LEVEL = {Severity.ERROR: "error", Severity.WARNING: "warning", Severity.INFO: "note"}


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

    def location(self, res: FileResult) -> dict[str, Any]:
        """The artifactLocation of a checked file or archive member."""
        if res.package is None or res.member is None:
            uri, base = _uri(res.path)
            loc: dict[str, Any] = {"uri": uri, "index": self.add(uri, base, None)}
            if base:
                loc["uriBaseId"] = base
            return loc
        uri, base = _uri(res.package)
        parent = self.add(uri, base, None)
        # The member is one artifact under its package: its name may hold ':' and is
        # never split (an inner archive's member path is part of that one name).
        uri = quote(os.fsencode(res.member).removeprefix(b"./"))
        return {"uri": uri, "index": self.add(uri, None, parent)}


def _rule(rule_id: str) -> dict[str, Any]:
    r = RULES[rule_id]
    return {"id": r.id, "name": "".join(w.capitalize() for w in r.id.split("-")),
            "shortDescription": {"text": r.title},
            "fullDescription": {"text": r.explanation},
            "help": {"text": f"{r.explanation}\n\nFix: {r.hint}",
                     "markdown": f"{r.explanation}\n\n**Fix:** {r.hint}"},
            "defaultConfiguration": {"level": _LEVEL[r.severity]},
            "properties": {"group": r.group, "tags": ["sframe", r.group]}}


def _result(f: Finding, res: FileResult, artifacts: _Artifacts,
            rule_index: dict[str, int]) -> dict[str, Any]:
    loc = f.location
    physical: dict[str, Any] = {"artifactLocation": artifacts.location(res)}
    if loc.pc is not None:
        address: dict[str, Any] = {"absoluteAddress": loc.pc, "kind": "function"}
        if loc.function:
            address["name"] = loc.function
        physical["address"] = address
    location: dict[str, Any] = {"physicalLocation": physical}
    where = loc.describe()
    if where:
        location["message"] = {"text": where}
    if loc.function:
        location["logicalLocations"] = [{"name": loc.function, "kind": "function"}]
    props = {k: v for k, v in (("section", loc.section), ("sectionOffset", loc.offset),
                               ("fde", loc.fde), ("fre", loc.fre), ("frePc", loc.fre_pc))
             if v is not None}
    out: dict[str, Any] = {"ruleId": f.rule, "level": _LEVEL[f.severity],
                           "message": {"text": f"{where}: {f.message}" if where else f.message},
                           "locations": [location]}
    if f.rule in rule_index:
        out["ruleIndex"] = rule_index[f.rule]
    if props:
        out["properties"] = props
    if f.waived is not None:
        out["suppressions"] = [{"kind": "external", "status": "accepted",
                                "justification": f.waived}]
    return out


def to_dict(result: Result, exit_status: int = 0) -> dict[str, Any]:
    rules = [_rule(rid) for rid in RULES]
    rule_index = {r["id"]: i for i, r in enumerate(rules)}
    artifacts = _Artifacts()
    results: list[dict[str, Any]] = []
    notifications: list[dict[str, Any]] = []
    for res in result.files:
        if res.error:
            notifications.append({
                "level": "error", "message": {"text": f"{res.path}: {res.error}"},
                "locations": [{"physicalLocation": {
                    "artifactLocation": artifacts.location(res)}}]})
            continue
        results.extend(_result(f, res, artifacts, rule_index) for f in res.findings)
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
    json.dump(to_dict(result, opts.exit_status), out, indent=2, ensure_ascii=True)
    out.write("\n")
