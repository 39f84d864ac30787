"""Run fuzz campaigns: start the harnesses, follow their progress, collect findings.

Each job is one harness process (`python fuzz/NAME.py ...`) fed the seed
directory and a working corpus shared by the jobs of its target. Progress
comes from libFuzzer's own lines (NEW/REDUCE/pulse: coverage, features, corpus)
and from the harness's `#sfstat` lines (executions every 2 s). Findings are
the harness's kept inputs (campaign mode, see common.Counter) and libFuzzer's
crash/timeout/oom artifacts; the libsframe harness writes its own.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import threading
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

from . import common

LINE = re.compile(r"^#(\d+)\s+(\w+)\s+(?:cov: (\d+) )?(?:ft: (\d+) )?"
                  r"(?:corp: (\d+)/\S+ )?.*?exec/s: (\d+)")
STAT = re.compile(r"^#sfstat t=([\d.]+) execs=(\d+)")
FOUND = re.compile(r"^#sffinding sig=(.*) len=(\d+) t=([\d.]+)")
DIFF = re.compile(r"^#sfdiff kind=(\S+) key=(.*) len=(\d+) t=([\d.]+)")
FINAL = re.compile(r"^stat::(\w+):\s+(\d+)")


@dataclass
class Job:
    target: str
    index: int
    label: str
    argv: list[str]
    log: Path
    cov: list[tuple[float, int, int, int]] = field(default_factory=list)  # t, cov, ft, corp
    execs: list[tuple[float, int]] = field(default_factory=list)  # t, executions
    findings: list[tuple[float, str, int]] = field(default_factory=list)  # t, sig, len
    final: dict[str, int] = field(default_factory=dict)
    env: dict[str, str] = field(default_factory=dict)  # extra environment for this job
    returncode: int | None = None
    started: float = 0.0
    ended: float = 0.0

    @property
    def last_execs(self) -> int:
        return self.execs[-1][1] if self.execs else 0

    @property
    def last_cov(self) -> tuple[int, int, int]:
        return self.cov[-1][1:] if self.cov else (0, 0, 0)


def _follow(job: Job, proc: subprocess.Popen[str]) -> None:
    assert proc.stderr is not None
    with job.log.open("w") as log:
        for line in proc.stderr:
            log.write(line)
            t = time.monotonic() - job.started
            m = LINE.match(line)
            if m and m.group(3):
                job.cov.append((t, int(m.group(3)), int(m.group(4) or 0),
                                int(m.group(5) or 0)))
                continue
            m = STAT.match(line)
            if m:
                job.execs.append((float(m.group(1)), int(m.group(2))))
                continue
            m = FOUND.match(line)
            if m:
                job.findings.append((t, m.group(1), int(m.group(2))))
                continue
            m = DIFF.match(line)
            if m:
                job.findings.append((t, f"{m.group(1)}:{m.group(2)}", int(m.group(3))))
                continue
            m = FINAL.match(line)
            if m:
                job.final[m.group(1)] = int(m.group(2))


@dataclass
class Campaign:
    out: Path
    duration: int
    seed: int
    max_len: int
    mutator: bool = True
    jobs: list[Job] = field(default_factory=list)
    command: str = ""
    results: list[dict] = field(default_factory=list)  # processed findings (findings.py)
    bench: dict[str, dict] = field(default_factory=dict)  # seed-sized exec/s (bench.py)
    started_at: str = ""
    load_start: float = 0.0
    load_end: float = 0.0

    def dirs(self, target: str, label: str) -> tuple[Path, Path, Path, Path]:
        base = self.out / f"{target}{'-' + label if label else ''}"
        return base / "seeds", base / "corpus", base / "artifacts", base / "findings"

    def add(self, target: str, jobs: int, label: str = "", extra: list[str] | None = None,
            seeds_from: set[int] | None = None, env: dict[str, str] | None = None) -> None:
        seeds, corpus, artifacts, findings = self.dirs(target, label)
        for d in (corpus, artifacts, findings):
            d.mkdir(parents=True, exist_ok=True)
        if not seeds.is_dir():
            common.write_seeds(target, seeds, versions=seeds_from)
        for j in range(jobs):
            argv = [sys.executable, str(common.FUZZ_DIR / f"{target}.py"), *(extra or []),
                    f"-seed={self.seed + j}", f"-max_total_time={self.duration}",
                    f"-max_len={self.max_len}", "-timeout=10", "-rss_limit_mb=2048",
                    "-print_final_stats=1", f"-reload={60 if jobs > 1 else 0}",
                    f"-artifact_prefix={artifacts}/",
                    str(corpus), str(seeds)]
            log = self.out / f"{target}{'-' + label if label else ''}-job{j}.log"
            self.jobs.append(Job(target, j, label, argv, log, env=dict(env or {})))

    def run(self, progress_every: float = 10.0) -> None:
        self.started_at = time.strftime("%Y-%m-%d %H:%M:%S %Z")
        self.load_start = os.getloadavg()[0]
        threads = []
        procs = []
        for job in self.jobs:
            env = dict(os.environ)
            env["SFCHECK_FUZZ_FINDINGS"] = str(self.dirs(job.target, job.label)[3])
            env["SFCHECK_FUZZ_MUTATOR"] = "1" if self.mutator else "0"
            env |= job.env
            # The checkout last: it provides fuzz/ and bench/, and an installed sfcheck wins.
            env["PYTHONPATH"] = os.pathsep.join(
                p for p in (env.get("PYTHONPATH"), str(common.ROOT)) if p)
            job.started = time.monotonic()
            proc = subprocess.Popen(job.argv, stderr=subprocess.PIPE, stdout=subprocess.DEVNULL,
                                    text=True, errors="replace", env=env, cwd=self.out)
            th = threading.Thread(target=_follow, args=(job, proc), daemon=True)
            th.start()
            procs.append(proc)
            threads.append(th)
        t0 = time.monotonic()
        try:
            while any(p.poll() is None for p in procs):
                time.sleep(min(progress_every, 1.0))
                if time.monotonic() - t0 >= progress_every:
                    t0 = time.monotonic()
                    self.print_progress()
        except KeyboardInterrupt:
            for p in procs:
                p.terminate()
        for job, proc, th in zip(self.jobs, procs, threads, strict=True):
            job.returncode = proc.wait()
            th.join(timeout=10)
            job.ended = time.monotonic() - job.started
        self.load_end = os.getloadavg()[0]
        self.print_progress()

    def print_progress(self) -> None:
        parts = []
        for job in self.jobs:
            cov, ft, corp = job.last_cov
            rate = _rate(job.execs)
            name = f"{job.target}{'-' + job.label if job.label else ''}#{job.index}"
            parts.append(f"{name}: {job.last_execs} execs ({rate:.0f}/s) cov {cov} ft {ft} "
                         f"corp {corp} findings {len({f[1] for f in job.findings})}")
        stamp = time.strftime("%H:%M:%S")
        print(f"[{stamp}] " + " | ".join(parts), flush=True)

    def save(self) -> Path:
        path = self.out / "campaign.json"
        path.write_text(json.dumps({
            "duration": self.duration, "seed": self.seed, "max_len": self.max_len,
            "mutator": self.mutator, "command": self.command, "results": self.results,
            "bench": self.bench,
            "started_at": self.started_at, "load_start": self.load_start,
            "load_end": self.load_end,
            "jobs": [asdict(j) | {"log": str(j.log)} for j in self.jobs],
        }, indent=1, default=str))
        return path

    @classmethod
    def load(cls, out: Path) -> Campaign:
        raw = json.loads((out / "campaign.json").read_text())
        jobs = []
        for j in raw.pop("jobs"):
            j["log"] = Path(j["log"])
            j["cov"] = [tuple(x) for x in j["cov"]]
            j["execs"] = [tuple(x) for x in j["execs"]]
            j["findings"] = [tuple(x) for x in j["findings"]]
            jobs.append(Job(**j))
        return cls(out=out.resolve(), jobs=jobs, **raw)


def _rate(execs: list[tuple[float, int]], window: float = 20.0) -> float:
    if len(execs) < 2:
        return 0.0
    t1, n1 = execs[-1]
    k = len(execs) - 2
    while k > 0 and t1 - execs[k][0] < window:
        k -= 1
    t0, n0 = execs[k]
    return (n1 - n0) / (t1 - t0) if t1 > t0 else 0.0
