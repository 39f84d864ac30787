"""After a campaign: replay, minimise and file what the harnesses kept.

sfcheck findings (an exception other than sfcheck's own, or a failed property)
are replayed in this process, minimised while the same signature fails, and
compared with corpus/regressions/<target>/: a signature no regression input
already fails with is new, and its minimised input is added there. libFuzzer's
own artifacts (timeout, oom, crash) are kept as they are. The libsframe
harness's findings (libsframe crashes and disagreements) go through
libsframe.process_findings instead.
"""

from __future__ import annotations

import hashlib
import importlib
import shutil
from pathlib import Path

from . import common
from .minimize import minimize, same_failure
from .runner import Campaign


def current_signature(test_one_input, data: bytes) -> str | None:  # type: ignore[no-untyped-def]
    try:
        test_one_input(data)
    except common.sfcheck_errors():
        return None
    except Exception as exc:  # noqa: BLE001
        return common.signature(exc)
    return None


def known_signatures(target: str, test_one_input) -> dict[str, Path]:  # type: ignore[no-untyped-def]
    """Signature -> regression file, for the regression inputs that still fail."""
    out: dict[str, Path] = {}
    d = common.REGRESSIONS / target
    for p in sorted(d.glob("*.bin")) if d.is_dir() else []:
        sig = current_signature(test_one_input, p.read_bytes())
        if sig is not None:
            out.setdefault(sig, p)
    return out


def process(camp: Campaign, budget: float = 60.0, save: bool = True) -> int:
    """Fill camp.results; returns the number of new findings."""
    results: list[dict] = []
    seen_dirs: set[Path] = set()
    for job in camp.jobs:
        key = (job.target, job.label)
        _seeds, _corpus, artifacts, findings = camp.dirs(*key)
        if findings in seen_dirs:
            continue
        seen_dirs.add(findings)
        if job.target == "libsframe":
            from .libsframe import process_findings
            results += process_findings(job, findings, budget)
        elif job.target == "glibc":
            from .glibc import process_findings as glibc_findings
            results += glibc_findings(job, findings, budget)
        elif job.target in ("kernel_rfc2023", "kernel"):
            from .reader_models import process_findings as model_findings
            results += model_findings(job, findings, budget)
        else:
            results += _sfcheck_findings(job.target, findings, budget, save)
        results += _artifacts(job.target, artifacts, save)
    camp.results = results
    camp.save()
    return sum(1 for r in camp.results if r.get("status") == "new")


def _sfcheck_findings(target: str, findings: Path, budget: float, save: bool) -> list[dict]:
    mod = importlib.import_module(f"fuzz.{target}")
    known = known_signatures(target, mod.test_one_input)
    out = []
    for p in sorted(findings.glob("*.bin")):
        data = p.read_bytes()
        recorded = (p.with_suffix(".txt").read_text().splitlines() or ["?"])[0]
        sig = current_signature(mod.test_one_input, data)
        row = {"target": target, "signature": recorded, "size": len(data), "input": str(p)}
        if sig is None:
            row |= {"status": "not reproducible", "reproducer": str(p)}
            out.append(row)
            continue
        if sig in known:
            row |= {"status": "known", "reproducer": _rel(known[sig])}
            out.append(row)
            continue
        small = minimize(data, same_failure(mod.test_one_input, sig), budget)
        row |= {"status": "new", "min_size": len(small), "signature": sig}
        dest = p.with_suffix(".min.bin")
        dest.write_bytes(small)
        if save:
            reg = common.REGRESSIONS / target
            reg.mkdir(parents=True, exist_ok=True)
            dest = reg / f"{common.slug(sig)[:60]}-{hashlib.sha1(small).hexdigest()[:8]}.bin"
            dest.write_bytes(small)
            known[sig] = dest
        row["reproducer"] = _rel(dest)
        out.append(row)
    return out


def _artifacts(target: str, artifacts: Path, save: bool) -> list[dict]:
    out = []
    for p in sorted(artifacts.glob("*-*")):
        kind = p.name.split("-", 1)[0]
        if kind not in ("crash", "timeout", "oom", "leak", "slow"):
            continue
        row = {"target": target, "signature": f"libFuzzer {kind}", "size": p.stat().st_size,
               "input": str(p), "status": "new"}
        if save:
            reg = common.REGRESSIONS / target
            reg.mkdir(parents=True, exist_ok=True)
            dest = reg / p.name
            shutil.copyfile(p, dest)
            row["reproducer"] = _rel(dest)
        else:
            row["reproducer"] = str(p)
        out.append(row)
    return out


def _rel(p: Path) -> str:
    try:
        return str(Path(p).resolve().relative_to(common.ROOT))
    except ValueError:
        return str(p)
