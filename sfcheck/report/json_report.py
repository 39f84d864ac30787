"""JSON renderer: the whole scan as one document (schema: sfcheck-result.schema.json)."""

from __future__ import annotations

import json
from dataclasses import asdict
from importlib import resources
from typing import Any, TextIO

from .. import __version__
from ..effects import judged, verdict, verdicts
from ..result import FileResult, Finding, Result
from ..rules import RULES
from . import ReportOptions
from .summary import summarize

# 1.1: summary.archive_members and summary.archives; 1.2: under --profile, profile,
# each finding's effect, each file's verdict and summary.verdicts (sfcheck.effects);
# findings (about the scan as a whole), files[].eh_frame_size,
# summary.sframe_bytes/eh_frame_bytes/sframe_to_eh_frame
SCHEMA_VERSION = "1.2"
SCHEMA_FILE = "sfcheck-result.schema.json"


def schema() -> dict[str, Any]:
    """The JSON Schema (draft 2020-12) this renderer's output follows; shipped as package data."""
    return json.loads(resources.files(__package__).joinpath(SCHEMA_FILE).read_text("utf-8"))


def _finding(f: Finding) -> dict[str, Any]:
    loc = {k: v for k, v in asdict(f.location).items() if k != "path" and v is not None}
    rule = RULES.get(f.rule)
    out = {"rule": f.rule, "group": rule.group if rule else None,
           "severity": str(f.severity), "message": f.message, "location": loc,
           "waived": f.waived is not None, "waiver_reason": f.waived}
    if f.effect is not None:
        out["effect"] = f.effect
    return out


def _file(res: FileResult, profile: str | None = None) -> dict[str, Any]:
    out = {"path": res.path, "package": res.package, "member": res.member, "error": res.error,
           "sections": [asdict(s) for s in res.sections], "eh_frame_size": res.eh_frame_size,
           "findings": [_finding(f) for f in res.findings]}
    if profile is not None and judged(res):
        what, n = verdict(res)
        out["verdict"] = {"verdict": what, "findings": n}
    return out


def to_dict(result: Result, fail_on: str = "error", exit_status: int = 0) -> dict[str, Any]:
    s = summarize(result)
    out = {
        "schema_version": SCHEMA_VERSION,
        "tool": {"name": "sfcheck", "version": __version__},
        "fail_on": fail_on,
        "exit_status": exit_status,
        "files": [_file(r, result.profile) for r in result.files],
        "findings": [_finding(f) for f in result.findings],
        "skipped": asdict(result.skipped),
        "unused_waivers": result.unused_waivers,
        "summary": {
            "files_checked": s.files_checked, "archive_members": s.archive_members,
            "archives": s.archives, "with_sframe": s.with_sframe,
            "debug_only": s.debug_only,
            "without_sframe": s.without_sframe, "unreadable": s.unreadable,
            "versions": {str(v): n for v, n in s.versions.items()},
            "sframe_bytes": s.sframe_bytes, "eh_frame_bytes": s.eh_frame_bytes,
            "sframe_to_eh_frame": s.sframe_ratio(),
            "findings": s.severities, "waived": s.waived,
            "rules": [asdict(r) for r in s.rules]},
    }
    if result.profile is not None:  # strict output stays as it was
        out["profile"] = result.profile
        out["summary"]["verdicts"] = verdicts(result)
    return out


def render(result: Result, out: TextIO, opts: ReportOptions) -> None:
    # ensure_ascii: a name byte that is not UTF-8 (held as U+DCXX) is written as the
    # escape \\udcXX, never as an unencodable character (README: "Names that are not UTF-8").
    json.dump(to_dict(result, opts.fail_on, opts.exit_status), out, indent=2, ensure_ascii=True)
    out.write("\n")
