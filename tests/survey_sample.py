"""Survey report data (the dict of sfcheck/survey/survey-report.schema.json) built without a
survey: for the HTML report's tests, and any test that needs a plausible archive.

Packages are made first and every aggregate (totals, histogram, versions, producers, rules,
profiles) is summed from them, so the data is consistent as the real engine's is: a test may
check a figure on the page against the packages. Some packages have no ELF file (data,
documentation), some have ELF files without .sframe; SFrame versions 2 and 3 appear, several
producers and rules, and with_diff a diff against a previous snapshot."""

from __future__ import annotations

import random
from collections import Counter, defaultdict
from typing import Any

PROFILES = ("strict", "kernel", "glibc-2.42", "libsframe-2.46", "llvm-22")
# (rule, severity, profiles that refuse a file carrying it)
RULES = (
    ("fde-unsorted", "error", ("strict", "kernel", "glibc-2.42", "libsframe-2.46")),
    ("fre-cfa-offset", "error", ("strict", "kernel")),
    ("fde-overlap", "warning", ("kernel",)),
    ("elf-not-pcrel", "warning", ("kernel", "llvm-22")),
    ("elf-text-coverage", "info", ()),
    ("fde-no-fres", "info", ()),
)
PRODUCERS = ("GCC: (Debian 14.2.0-19) 14.2.0", "GCC: (Debian 15.2.0-4) 15.2.0",
             "clang version 19.1.7", "unknown")
FLAGS = {2: "FDE_SORTED", 3: "FDE_SORTED|FDE_FUNC_START_PCREL"}
WORDS = ("ssl", "z", "ffi", "curl", "xml2", "png", "glib", "dbus", "pcre", "sqlite", "lzma",
         "bz2", "expat", "uuid", "gmp", "mpfr", "zstd", "yaml", "jpeg", "tiff")
SEVERITIES = ("error", "warning", "info")


def _file(rng: random.Random, path: str, with_sframe: bool) -> dict[str, Any]:
    text = rng.randrange(4_096, 2_000_000)
    eh = text // rng.randrange(12, 30)
    if with_sframe:
        version = rng.choice((2, 3, 3))
        fdes = max(1, text // rng.randrange(200, 900))
        fres = fdes * rng.randrange(2, 6)
        share = rng.choice((1.0, 1.0, rng.uniform(0.9, 1.0), rng.uniform(0.5, 0.9),
                            rng.uniform(0.0, 0.5)))
        covered = min(text, int(text * share))
        sframe = 28 + fdes * 20 + fres * 3
    else:
        version = fdes = fres = covered = sframe = 0
    findings = []
    if with_sframe:
        for rule, severity, _ in RULES:
            if rng.random() < 0.12:
                findings.append({"rule": rule, "severity": severity,
                                 "count": rng.randrange(1, 40)})
    return {"path": path, "sframe": with_sframe, "version": version if with_sframe else None,
            "flags": FLAGS[version] if with_sframe else None, "fdes": fdes, "fres": fres,
            "text_bytes": text, "text_bytes_covered": covered, "sframe_bytes": sframe,
            "eh_frame_bytes": eh, "producer": rng.choice(PRODUCERS), "findings": findings}


def _package(rng: random.Random, i: int, arch: str) -> dict[str, Any]:
    word = WORDS[i % len(WORDS)]
    name = f"lib{word}{i // len(WORDS) + 1}"
    kind = rng.random()
    n_files = 0 if kind < 0.25 else rng.randrange(1, 6)
    all_sframe = kind > 0.4  # 0.25..0.4: ELF files but no .sframe at all
    files = [_file(rng, f"usr/lib/x86_64-linux-gnu/{name}.so.{k}",
                   all_sframe and rng.random() > 0.1)
             for k in range(n_files)]
    findings = Counter()
    rules: Counter[str] = Counter()
    for f in files:
        for x in f["findings"]:
            findings[x["severity"]] += x["count"]
            rules[x["rule"]] += x["count"]
    profiles = {}
    refusing = {p for rule, _, refuse in RULES if rules[rule] for p in refuse}
    for p in PROFILES:
        profiles[p] = ("no-sframe" if not any(f["sframe"] for f in files)
                       else "refuses" if p in refusing else "accepts")
    text = sum(f["text_bytes"] for f in files if f["sframe"])
    covered = sum(f["text_bytes_covered"] for f in files if f["sframe"])
    return {"id": f"pkg-{rng.getrandbits(48):012x}", "name": name,
            "version": f"{rng.randrange(1, 9)}.{rng.randrange(0, 20)}-{rng.randrange(1, 5)}",
            "source": f"{word}-src", "architecture": arch,
            "suite": rng.choice(("trixie", "trixie", "forky")),
            "elf_files": len(files), "elf_files_with_sframe": sum(f["sframe"] for f in files),
            "coverage": covered / text if text else None,
            "sframe_bytes": sum(f["sframe_bytes"] for f in files),
            "eh_frame_bytes": sum(f["eh_frame_bytes"] for f in files),
            "findings": {s: findings[s] for s in SEVERITIES}, "rules": dict(rules),
            "profiles": profiles, "files": files}


def _aggregate(packages: list[dict[str, Any]]) -> dict[str, Any]:
    files = [(p, f) for p in packages for f in p["files"]]
    sf = [f for _, f in files if f["sframe"]]
    bins = [0] * 10
    for f in sf:
        if f["text_bytes"]:
            bins[min(9, int(10 * f["text_bytes_covered"] / f["text_bytes"]))] += 1
    versions = Counter((f["version"], f["flags"]) for f in sf)
    producers: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    for _, f in files:
        producers[f["producer"]][0] += 1
        producers[f["producer"]][1] += f["sframe"]
    rules = []
    for rule, severity, _ in RULES:
        hits = [(p, f, x) for p, f in files for x in f["findings"] if x["rule"] == rule]
        if hits:
            rules.append({"rule": rule, "severity": severity,
                          "findings": sum(x["count"] for _, _, x in hits),
                          "files": len(hits), "packages": len({p["id"] for p, _, _ in hits})})
    profiles = []
    for prof in PROFILES:
        refused = accepted = 0
        for _, f in files:
            if not f["sframe"]:
                continue
            refuse = any(prof in r[2] for r in RULES for x in f["findings"] if x["rule"] == r[0])
            refused += refuse
            accepted += not refuse
        profiles.append({"profile": prof, "files_accepted": accepted, "files_refused": refused,
                         "packages_refused": sum(p["profiles"][prof] == "refuses"
                                                 for p in packages)})
    return {
        "totals": {
            "packages": len(packages),
            "packages_with_elf": sum(bool(p["elf_files"]) for p in packages),
            "packages_with_sframe": sum(bool(p["elf_files_with_sframe"]) for p in packages),
            "elf_files": len(files), "elf_files_with_sframe": len(sf),
            "text_bytes": sum(f["text_bytes"] for _, f in files),
            "text_bytes_covered": sum(f["text_bytes_covered"] for _, f in files),
            "sframe_bytes": sum(f["sframe_bytes"] for _, f in files),
            "eh_frame_bytes": sum(f["eh_frame_bytes"] for _, f in files),
            "findings": {s: sum(p["findings"][s] for p in packages) for s in SEVERITIES}},
        "coverage_histogram": [{"lo": k / 10, "hi": (k + 1) / 10, "files": bins[k]}
                               for k in range(10)],
        "versions": [{"version": v, "flags": fl, "files": n}
                     for (v, fl), n in sorted(versions.items())],
        "producers": [{"producer": name, "files": n, "files_with_sframe": s}
                      for name, (n, s) in sorted(producers.items(), key=lambda kv: -kv[1][0])],
        "rules": rules, "profiles": profiles}


def _diff(rng: random.Random, packages: list[dict[str, Any]]) -> dict[str, Any]:
    def key(p: dict[str, Any]) -> str:
        return f"{p['name']}/{p['architecture']}"

    with_errors = [p for p in packages if p["findings"]["error"]]
    covered = [p for p in packages if p["coverage"] is not None and p["coverage"] < 0.95]
    no_sframe = [p for p in packages if p["elf_files"] and not p["elf_files_with_sframe"]]
    with_sframe = [p for p in packages if p["elf_files_with_sframe"]]
    new_errors = []
    for p in rng.sample(with_errors, min(3, len(with_errors))):
        rule = next(r for r, sev, _ in RULES if sev == "error" and p["rules"].get(r))
        new_errors.append({"package": key(p), "rule": rule, "before": 0,
                           "after": p["rules"][rule]})
    drops = [{"package": key(p), "before": round(min(1.0, p["coverage"] + 0.2), 4),
              "after": p["coverage"]} for p in rng.sample(covered, min(2, len(covered)))]
    lost = [key(p) for p in no_sframe[:2]]
    added = [key(packages[-1])] if packages else []
    gained = [key(p) for p in with_sframe[-2:] if key(p) not in added][:1]
    changed = sorted({x["package"] for x in new_errors} | {x["package"] for x in drops}
                     | set(lost) | set(gained))
    return {"against": {"id": 1, "label": "trixie 2026-11-19"}, "new_errors": new_errors,
            "coverage_drops": drops, "lost_sframe": lost, "gained_sframe": gained,
            "added_packages": added, "removed_packages": ["libgone1/amd64"],
            "changed_packages": changed}


def sample_report_data(n_packages: int = 30, seed: int = 0,
                       with_diff: bool = True) -> dict[str, Any]:
    """A report of `n_packages` packages, the same for the same seed."""
    rng = random.Random(seed)
    packages = [_package(rng, i, "amd64" if i % 7 else "arm64") for i in range(n_packages)]
    data: dict[str, Any] = {
        "schema": "sfcheck-survey-report/1", "sfcheck_version": "0.1.0",
        "generated": "2026-11-26T12:00:00Z",
        "snapshot": {"id": 2, "label": "trixie 2026-11-26",
                     "repositories": ["file:///srv/mirror/debian"],
                     "taken": "2026-11-26T11:00:00Z"},
        "previous": ({"id": 1, "label": "trixie 2026-11-19", "taken": "2026-11-19T11:00:00Z"}
                     if with_diff else None),
        **_aggregate(packages),
        "packages": packages,
        "diff": _diff(rng, packages) if with_diff else None,
    }
    return data
