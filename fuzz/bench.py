"""exec/s of a harness on seed-sized inputs: a fixed number of runs from the seeds
alone (fresh corpus, max_len = the largest seed), timed by libFuzzer itself."""

from __future__ import annotations

import os
import re
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from . import common


def bench(target: str, runs: int, seed: int = 1, libs: list[str] | None = None) -> dict:
    with tempfile.TemporaryDirectory(prefix=f"sfbench-{target}-") as tmp:
        seeds, corpus = Path(tmp) / "seeds", Path(tmp) / "corpus"
        corpus.mkdir()
        extra = []
        versions = None
        if target == "libsframe":
            from .libsframe import seed_versions
            if not libs:
                raise SystemExit("bench libsframe: give --libsframe PATH")
            extra = [f"--libsframe={libs[0]}"]
            versions = seed_versions(libs[0])
        common.write_seeds(target, seeds, versions=versions)
        max_len = max(p.stat().st_size for p in seeds.iterdir())
        argv = [sys.executable, str(common.FUZZ_DIR / f"{target}.py"), *extra, f"-runs={runs}",
                f"-seed={seed}", f"-max_len={max_len}", "-print_final_stats=1",
                f"-artifact_prefix={tmp}/", str(corpus), str(seeds)]
        env = dict(os.environ, SFCHECK_FUZZ_FINDINGS=str(Path(tmp) / "findings"))
        t0 = time.monotonic()
        cpu0 = _children_cpu()
        proc = subprocess.run(argv, capture_output=True, text=True, env=env, cwd=tmp,
                              errors="replace")
        wall = time.monotonic() - t0
        cpu = _children_cpu() - cpu0
        # Start-up (imports, instrumenting them) is CPU time no execution pays: measured
        # alone (one run on an empty corpus) and left out of the per-CPU-second rate.
        empty = Path(tmp) / "empty"
        empty.mkdir()
        cpu0 = _children_cpu()
        subprocess.run([*argv[:2 + len(extra)], "-runs=1", str(empty)], capture_output=True,
                       env=env, cwd=tmp)
        startup = _children_cpu() - cpu0
    m = re.search(r"Done (\d+) runs in (\d+) second", proc.stderr)
    rate = re.search(r"stat::average_exec_per_sec:\s+(\d+)", proc.stderr)
    done = int(m.group(1)) if m else 0
    return {"runs": done, "seconds": float(m.group(2)) if m else wall, "max_len": max_len,
            "exec_s": float(rate.group(1)) if rate else (done / wall if wall else 0.0),
            "wall": wall, "returncode": proc.returncode, "cpu": cpu, "startup_cpu": startup,
            # On a shared machine wall-clock exec/s follows the load; per CPU second does not.
            "exec_cpu_s": done / (cpu - startup) if cpu > startup else 0.0}


def _children_cpu() -> float:
    """User + system CPU seconds of the finished child processes."""
    ru = resource.getrusage(resource.RUSAGE_CHILDREN)
    return ru.ru_utime + ru.ru_stime
