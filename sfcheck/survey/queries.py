"""The questions a distribution asks of a survey, as text tables (`sfcheck survey
top-rules`, `worst-packages`, `coverage`, `size`, `diff`): each reads a snapshot's
packages (data.load_packages) and returns rows."""

from __future__ import annotations

from collections import defaultdict
from typing import Any

from .data import diff, load_packages, summarise
from .db import SurveyDB

Rows = list[tuple[Any, ...]]


def _pct(x: float | None) -> str:
    return "-" if x is None else f"{100 * x:.1f}%"


def top_rules(db: SurveyDB, snapshot: int, limit: int) -> Rows:
    data = summarise(load_packages(db, snapshot), db.snapshot(snapshot)["profiles"])
    return [("rule", "severity", "findings", "files", "packages")] + [
        (r["rule"], r["severity"], r["findings"], r["files"], r["packages"])
        for r in data["rules"][:limit]]


def worst_packages(db: SurveyDB, snapshot: int, limit: int) -> Rows:
    pkgs = load_packages(db, snapshot)
    pkgs.sort(key=lambda p: (-p["findings"]["error"], -p["findings"]["warning"],
                             p["name"], p["architecture"]))
    return [("package", "suite", "version", "errors", "warnings", "refused by")] + [
        (f"{p['name']}/{p['architecture']}", p["suite"] or "-", p["version"],
         p["findings"]["error"], p["findings"]["warning"],
         ",".join(k for k, v in p["profiles"].items() if v == "refuses") or "-")
        for p in pkgs[:limit] if p["findings"]["error"] or p["findings"]["warning"]]


def coverage(db: SurveyDB, snapshot: int, by: str) -> Rows:
    """Executable bytes SFrame covers, per package or per source package (files with
    SFrame only; the `without` column counts ELF files that have none)."""
    groups: dict[str, list[int]] = defaultdict(lambda: [0, 0, 0, 0])
    for p in load_packages(db, snapshot):
        key = p["source"] if by == "source" else f"{p['name']}/{p['architecture']}"
        g = groups[key]
        for f in p["files"]:
            if f["sframe"]:
                g[0] += f["text_bytes"]
                g[1] += f["text_bytes_covered"]
                g[2] += 1
            else:
                g[3] += 1
    rows = sorted(groups.items(), key=lambda kv: (kv[1][1] / kv[1][0] if kv[1][0] else 2,
                                                  kv[0]))
    return [(by, "coverage", "covered bytes", "text bytes", "with SFrame", "without")] + [
        (k, _pct(c / t if t else None), c, t, n, m) for k, (t, c, n, m) in rows]


def size(db: SurveyDB, snapshot: int, limit: int) -> Rows:
    """.sframe against .eh_frame bytes, total first, then the largest overheads."""
    pkgs = load_packages(db, snapshot)
    pkgs.sort(key=lambda p: (-p["sframe_bytes"], p["name"]))
    sf = sum(p["sframe_bytes"] for p in pkgs)
    eh = sum(p["eh_frame_bytes"] for p in pkgs)
    rows: Rows = [("package", ".sframe bytes", ".eh_frame bytes", ".sframe/.eh_frame"),
                  ("(all)", sf, eh, _pct(sf / eh if eh else None))]
    return rows + [(f"{p['name']}/{p['architecture']}", p["sframe_bytes"], p["eh_frame_bytes"],
                    _pct(p["sframe_bytes"] / p["eh_frame_bytes"] if p["eh_frame_bytes"]
                         else None)) for p in pkgs[:limit] if p["sframe_bytes"]]


def snapshot_diff(db: SurveyDB, old: str, new: str) -> dict[str, Any]:
    a, b = db.snapshot(old), db.snapshot(new)
    return diff(load_packages(db, a["id"]), load_packages(db, b["id"]), a)


def diff_rows(d: dict[str, Any]) -> Rows:
    rows: Rows = [("change", "package", "detail")]
    rows += [("new error", e["package"], f"{e['rule']}: {e['before']} -> {e['after']}")
             for e in d["new_errors"]]
    rows += [("coverage drop", c["package"], f"{_pct(c['before'])} -> {_pct(c['after'])}")
             for c in d["coverage_drops"]]
    rows += [("lost SFrame", p, "") for p in d["lost_sframe"]]
    rows += [("gained SFrame", p, "") for p in d["gained_sframe"]]
    rows += [("added", p, "") for p in d["added_packages"]]
    rows += [("removed", p, "") for p in d["removed_packages"]]
    rows += [("changed", p, "findings or coverage") for p in d["changed_packages"]]
    return rows


def table(rows: Rows) -> str:
    """Rows as aligned text columns (the first row is the header)."""
    text = [[str(c) for c in r] for r in rows]
    widths = [max(len(r[k]) for r in text) for k in range(len(text[0]))]
    return "\n".join("  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)).rstrip()
                     for r in text)
