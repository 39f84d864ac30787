"""The report's data: one dict, shaped as /the survey report data contract/
(`sfcheck-survey-report/1`), read from the database. `sfcheck survey report --json`
writes it; sfcheck.survey.html renders the same dict."""

from __future__ import annotations

import hashlib
from collections import Counter, defaultdict
from typing import Any

from .. import __version__
from ..profiles import PROFILES
from .db import SurveyDB, now

SCHEMA = "sfcheck-survey-report/1"
SEVERITIES = ("error", "warning", "info")
CONSUMERS = tuple(p for p in PROFILES if p != "strict")
BINS = 10


def _ratio(covered: int, total: int) -> float | None:
    return covered / total if total else None


def load_packages(db: SurveyDB, snapshot: int) -> list[dict[str, Any]]:
    return _load(db, db.snapshot(snapshot))


def _load(db: SurveyDB, snap: dict[str, Any]) -> list[dict[str, Any]]:
    snapshot = snap["id"]
    """The packages of a snapshot with their files, findings and verdicts (contract
    shape), sorted by (suite, name, architecture, version)."""
    rows = db.db.execute(
        "SELECT p.repo, p.path, p.name, p.version, p.source, p.architecture, p.suite, "
        "r.id, r.error, r.digest FROM packages p JOIN results r ON r.id = p.result_id "
        "WHERE p.snapshot_id = ? ORDER BY p.suite, p.name, p.architecture, p.version, p.path",
        (snapshot,)).fetchall()
    rids = {r[7] for r in rows}
    files: dict[int, list[dict[str, Any]]] = defaultdict(list)
    fids: dict[int, dict[str, Any]] = {}
    q = ("SELECT id, result_id, path, sframe, version, flags, fdes, fres, text_bytes, "
         "text_bytes_covered, sframe_bytes, eh_frame_bytes, producer FROM files "
         "WHERE result_id IN (SELECT result_id FROM packages WHERE snapshot_id = ?) ORDER BY id")
    for (fid, rid, path, sframe, version, flags, fdes, fres, text, cov, sfb, ehb,
         producer) in db.db.execute(q, (snapshot,)):
        f = {"path": path, "sframe": bool(sframe), "version": version, "flags": flags,
             "fdes": fdes, "fres": fres, "text_bytes": text, "text_bytes_covered": cov,
             "sframe_bytes": sfb, "eh_frame_bytes": ehb, "producer": producer,
             "findings": [], "_refused": set()}
        files[rid].append(f)
        fids[fid] = f
    sub = "SELECT id FROM files WHERE result_id IN (SELECT result_id FROM packages " \
          "WHERE snapshot_id = ?)"
    for fid, rule, sev, n in db.db.execute(
            f"SELECT file_id, rule, severity, count FROM findings WHERE file_id IN ({sub}) "
            "ORDER BY file_id, rule, severity", (snapshot,)):
        fids[fid]["findings"].append({"rule": rule, "severity": sev, "count": n})
    for fid, profile in db.db.execute(
            f"SELECT file_id, profile FROM refusals WHERE file_id IN ({sub})", (snapshot,)):
        fids[fid]["_refused"].add(profile)
    assert rids >= set(files)
    out = []
    for repo, path, name, version, source, arch, suite, rid, error, _digest in rows:
        pkg_files = [dict(f) for f in files.get(rid, [])]  # two suites may share a result
        out.append(_package(repo, path, name, version, source, arch, suite, error, pkg_files,
                            snap["profiles"]))
    return out


def _package(repo: str, path: str, name: str, version: str, source: str, arch: str,
             suite: str, error: str | None, files: list[dict[str, Any]],
             asked: tuple[str, ...]) -> dict[str, Any]:
    sev: Counter[str] = Counter()
    rules: Counter[str] = Counter()
    for f in files:
        for x in f["findings"]:
            sev[x["severity"]] += x["count"]
            rules[x["rule"]] += x["count"]
    if error is not None:  # the package itself could not be read: one error finding
        sev["error"] += 1
        rules["input-unreadable"] += 1
    with_sf = [f for f in files if f["sframe"]]
    text = sum(f["text_bytes"] for f in with_sf)
    covered = sum(f["text_bytes_covered"] for f in with_sf)
    profiles = {}
    for p in asked:
        if not with_sf:
            profiles[p] = "no-sframe"
        else:
            profiles[p] = "refuses" if any(p in f["_refused"] for f in with_sf) else "accepts"
    ident = hashlib.sha256(f"{repo}\0{suite}\0{path}".encode()).hexdigest()[:16]
    return {
        "id": f"pkg-{ident}", "name": name, "version": version, "source": source,
        "architecture": arch, "suite": suite, "elf_files": len(files),
        "elf_files_with_sframe": len(with_sf), "coverage": _ratio(covered, text),
        "sframe_bytes": sum(f["sframe_bytes"] for f in files),
        "eh_frame_bytes": sum(f["eh_frame_bytes"] for f in files),
        "findings": {s: sev[s] for s in SEVERITIES}, "rules": dict(sorted(rules.items())),
        "profiles": profiles, "files": files,
    }


def report_data(db_path: str, snapshot: int | str | None = None,
                previous: int | str | None = None) -> dict[str, Any]:
    """The report of `snapshot` (default: the newest complete one), with the diff against
    `previous` (default: the complete snapshot before it, if any)."""
    db = SurveyDB(db_path)
    try:
        snap = db.snapshot(snapshot)
        prev = db.snapshot(previous) if previous is not None else db.previous(snap["id"])
        pkgs = _load(db, snap)
        old = _load(db, prev) if prev is not None else None
    finally:
        db.close()
    data = summarise(pkgs, snap["profiles"])
    for p in pkgs:
        for f in p["files"]:
            del f["_refused"]
    data.update({
        "schema": SCHEMA, "sfcheck_version": __version__, "generated": now(),
        "snapshot": {"id": snap["id"], "label": snap["label"],
                     "repositories": snap["repositories"], "taken": snap["taken"]},
        "previous": None if prev is None else {"id": prev["id"], "label": prev["label"],
                                               "taken": prev["taken"]},
        "packages": pkgs,
        "diff": None if prev is None or old is None else diff(old, pkgs, prev),
    })
    return data


def summarise(pkgs: list[dict[str, Any]], asked: tuple[str, ...] = CONSUMERS
              ) -> dict[str, Any]:
    files = [f for p in pkgs for f in p["files"]]
    with_sf = [f for f in files if f["sframe"]]
    hist = [0] * BINS
    for f in with_sf:
        r = _ratio(f["text_bytes_covered"], f["text_bytes"])
        if r is not None:
            hist[min(int(r * BINS), BINS - 1)] += 1
    versions: Counter[tuple[int, str]] = Counter(
        (f["version"], f["flags"] or "none") for f in with_sf if f["version"] is not None)
    producers: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    for f in files:
        producers[f["producer"]][0] += 1
        producers[f["producer"]][1] += f["sframe"]
    rule_rows: dict[tuple[str, str], list[int]] = defaultdict(lambda: [0, 0, 0])
    for p in pkgs:
        seen: set[tuple[str, str]] = set()
        for f in p["files"]:
            for x in f["findings"]:
                key = (x["rule"], x["severity"])
                rule_rows[key][0] += x["count"]
                rule_rows[key][1] += 1
                seen.add(key)
        if p["rules"].get("input-unreadable", 0) > sum(
                x["count"] for f in p["files"] for x in f["findings"]
                if x["rule"] == "input-unreadable"):
            key = ("input-unreadable", "error")
            rule_rows[key][0] += 1
            seen.add(key)
        for key in seen:
            rule_rows[key][2] += 1
    totals_sev = Counter()
    for p in pkgs:
        totals_sev.update(p["findings"])
    return {
        "totals": {
            "packages": len(pkgs),
            "packages_with_elf": sum(1 for p in pkgs if p["elf_files"]),
            "packages_with_sframe": sum(1 for p in pkgs if p["elf_files_with_sframe"]),
            "elf_files": len(files), "elf_files_with_sframe": len(with_sf),
            "text_bytes": sum(f["text_bytes"] for f in files),
            "text_bytes_covered": sum(f["text_bytes_covered"] for f in files),
            "sframe_bytes": sum(f["sframe_bytes"] for f in files),
            "eh_frame_bytes": sum(f["eh_frame_bytes"] for f in files),
            "findings": {s: totals_sev[s] for s in SEVERITIES},
        },
        "coverage_histogram": [{"lo": k / BINS, "hi": (k + 1) / BINS, "files": n}
                               for k, n in enumerate(hist)],
        "versions": [{"version": v, "flags": fl, "files": n}
                     for (v, fl), n in sorted(versions.items())],
        "producers": [{"producer": name, "files": a, "files_with_sframe": b}
                      for name, (a, b) in sorted(producers.items(), key=lambda x: -x[1][0])],
        "rules": [{"rule": r, "severity": s, "findings": a, "files": b, "packages": c}
                  for (r, s), (a, b, c) in sorted(rule_rows.items(),
                                                  key=lambda x: (-x[1][0], x[0]))],
        "profiles": [{"profile": p,
                      "files_accepted": sum(1 for f in with_sf if p not in f["_refused"]),
                      "files_refused": sum(1 for f in with_sf if p in f["_refused"]),
                      "packages_refused": sum(1 for x in pkgs if x["profiles"][p] == "refuses")}
                     for p in asked],
    }


def package_key(p: dict[str, Any], suites: int) -> str:
    """How the diff names a package: name/architecture (the suite first when the
    snapshot spans several: the same name may be in each)."""
    key = f"{p['name']}/{p['architecture']}"
    return f"{p['suite']}:{key}" if suites > 1 else key


def diff(old: list[dict[str, Any]], new: list[dict[str, Any]],
         against: dict[str, Any]) -> dict[str, Any]:
    suites = len({p["suite"] for p in old + new})
    a = {package_key(p, suites): p for p in old}
    b = {package_key(p, suites): p for p in new}
    out: dict[str, Any] = {"against": {"id": against["id"], "label": against["label"]},
                           "new_errors": [], "coverage_drops": [], "lost_sframe": [],
                           "gained_sframe": [], "added_packages": sorted(set(b) - set(a)),
                           "removed_packages": sorted(set(a) - set(b)),
                           "changed_packages": []}
    for key in sorted(set(a) & set(b)):
        p, q = a[key], b[key]
        before = _error_rules(p)
        after = _error_rules(q)
        for rule in sorted(after):
            if after[rule] > before.get(rule, 0):
                out["new_errors"].append({"package": key, "rule": rule,
                                          "before": before.get(rule, 0), "after": after[rule]})
        if p["coverage"] is not None and q["coverage"] is not None \
                and q["coverage"] < p["coverage"]:
            out["coverage_drops"].append({"package": key, "before": p["coverage"],
                                          "after": q["coverage"]})
        if p["elf_files_with_sframe"] and not q["elf_files_with_sframe"]:
            out["lost_sframe"].append(key)
        if q["elf_files_with_sframe"] and not p["elf_files_with_sframe"]:
            out["gained_sframe"].append(key)
        if _findings_sig(p) != _findings_sig(q) or p["coverage"] != q["coverage"]:
            out["changed_packages"].append(key)
    return out


def _error_rules(p: dict[str, Any]) -> Counter[str]:
    c: Counter[str] = Counter()
    for f in p["files"]:
        for x in f["findings"]:
            if x["severity"] == "error":
                c[x["rule"]] += x["count"]
    if p["rules"].get("input-unreadable") and not any(
            x["rule"] == "input-unreadable" for f in p["files"] for x in f["findings"]):
        c["input-unreadable"] += 1
    return c


def _findings_sig(p: dict[str, Any]) -> tuple[Any, ...]:
    return tuple(sorted(p["rules"].items())) + tuple(sorted(p["findings"].items()))
