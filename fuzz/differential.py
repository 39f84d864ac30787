"""What the differential harnesses share (libsframe, glibc, the reader models): recording
the smallest input per disagreement key during a campaign (Recorder, its `#sfdiff` lines),
and after it, replaying and minimising each key into report rows (keyed_rows)."""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

from . import common


class Recorder:
    def __init__(self, directory: str | None, lib: str) -> None:
        self.dir = Path(directory) if directory else None
        self.lib = lib
        self.best: dict[str, tuple[int, int]] = {}  # key -> (number of keys, size)
        self.t0 = time.monotonic()

    def note(self, kind: str, key: str, data: bytes, score: int = 0, detail: str = "") -> None:
        full = f"{kind}:{key}" if kind not in key.split(":", 1)[0] else key
        rank = (score, len(data))
        old = self.best.get(full)
        if old is not None and old <= rank:
            return
        self.best[full] = rank
        if self.dir is not None:
            self.dir.mkdir(parents=True, exist_ok=True)
            name = common.slug(full)
            (self.dir / f"{name}.bin").write_bytes(data)
            (self.dir / f"{name}.json").write_text(json.dumps(
                {"key": full, "kind": kind, "lib": self.lib, "detail": detail}))
        print(f"#sfdiff kind={kind} key={full} len={len(data)} "
              f"t={time.monotonic() - self.t0:.2f}", file=sys.stderr, flush=True)


def first_found(job) -> dict[str, float]:  # type: ignore[no-untyped-def]
    """Key -> seconds from the job's start to its first `#sfdiff` line (the runner records
    them as `<kind>:<key>`, and keys start with their kind)."""
    first: dict[str, float] = {}
    for t, sig, _n in job.findings:
        kind, _, rest = sig.partition(":")
        key = rest if rest.startswith(kind + ":") else sig
        first[key] = min(first.get(key, t), t)
    return first


def keyed_rows(job, findings: Path, budget: float, keys_of,  # type: ignore[no-untyped-def]
               describe) -> list[dict]:
    """Replay and minimise each recorded key of a differential harness while `keys_of`
    still gives it; `describe(key)` adds the row's status (and note)."""
    from .minimize import minimize
    first = first_found(job)
    rows = []
    files = sorted(findings.glob("*.json"))
    per = max(2.0, budget / max(1, len(files)))
    for meta_path in files:
        key = json.loads(meta_path.read_text())["key"]
        data = meta_path.with_suffix(".bin").read_bytes()

        def keep(d: bytes, key: str = key) -> bool:
            return key in keys_of(d)

        row = {"target": job.target, "label": job.label, "signature": key, "size": len(data),
               "input": str(meta_path.with_suffix(".bin")),
               "first_s": round(first.get(key, -1.0), 1)}
        if not keep(data):
            rows.append(row | {"status": "not reproducible", "reproducer": row["input"]})
            continue
        small = minimize(data, keep, per)
        dest = meta_path.with_suffix(".min.bin")
        dest.write_bytes(small)
        rows.append(row | describe(key) | {"min_size": len(small), "reproducer": str(dest),
                                           "hex": small.hex() if len(small) <= 160 else ""})
    return rows
