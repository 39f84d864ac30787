"""Campaign reports: reports/fuzz-<target>[-<label>]-<date>.md plus one PNG of plots each."""

from __future__ import annotations

import os
import platform
import subprocess
import time
from pathlib import Path

from . import common
from .runner import Campaign, Job


def _git_rev() -> str:
    """The commit fuzzed; a `git archive` snapshot has no .git, but may name it in .commit."""
    try:
        return subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=common.ROOT,
                              capture_output=True, text=True, check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        mark = common.ROOT / ".commit"
        return mark.read_text().strip() if mark.is_file() else "?"


def _rates(job: Job) -> list[tuple[float, float]]:
    """(t, exec/s) between consecutive #sfstat samples."""
    out = []
    for (t0, n0), (t1, n1) in zip(job.execs, job.execs[1:], strict=False):
        if t1 > t0:
            out.append((t1, (n1 - n0) / (t1 - t0)))
    return out


def mean_rate(job: Job) -> float:
    if not job.execs:
        return 0.0
    t, n = job.execs[-1]
    return n / t if t else 0.0


def plot(jobs: list[Job], title: str, path: Path) -> None:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, (ax1, ax2) = plt.subplots(2, 1, figsize=(8, 6.5), sharex=True)
    ax1b = ax1.twinx()
    for job in jobs:
        name = f"job {job.index}" + (f" ({job.label})" if job.label else "")
        if job.cov:
            ts = [c[0] / 60 for c in job.cov] + [job.ended / 60]
            cov = [c[1] for c in job.cov] + [job.cov[-1][1]]
            ft = [c[2] for c in job.cov] + [job.cov[-1][2]]
            ax1.step(ts, cov, where="post", label=f"{name}: edges (cov, left)")
            ax1b.step(ts, ft, where="post", linestyle="--", color="tab:orange",
                      label=f"{name}: features (ft, right)")
        rates = _rates(job)
        if rates:
            ax2.plot([r[0] / 60 for r in rates], [r[1] for r in rates], label=name, lw=0.8)
    ax1b.set_ylabel("features")
    ax1b.legend(fontsize=8, loc="center right")
    ax1.set_ylabel("edges")
    ax1.set_title(title)
    ax1.legend(fontsize=8, loc="lower right")
    ax1.grid(alpha=0.3)
    ax2.set_ylabel("exec/s (2 s windows)")
    ax2.set_xlabel("minutes")
    ax2.set_ylim(bottom=0)
    ax2.legend(fontsize=8, loc="lower right")
    ax2.grid(alpha=0.3)
    fig.tight_layout()
    fig.savefig(path, dpi=90)
    plt.close(fig)


def _atheris_version() -> str:
    try:
        from importlib.metadata import version
        return version("atheris")
    except Exception:  # noqa: BLE001
        return "?"


def write_reports(camp: Campaign, command: str, report_dir: Path, title: str = "",
                  bench: dict[str, dict] | None = None) -> list[Path]:
    report_dir.mkdir(parents=True, exist_ok=True)
    date = time.strftime("%Y-%m-%d")
    groups: dict[tuple[str, str], list[Job]] = {}
    for job in camp.jobs:
        groups.setdefault((job.target, job.label), []).append(job)
    written = []
    for (target, label), jobs in groups.items():
        stem = "-".join(x for x in ("fuzz", target, label, title, date) if x)
        png = report_dir / f"{stem}.png"
        plot(jobs, f"{target}{' ' + label if label else ''}: coverage and exec/s", png)
        md = report_dir / f"{stem}.md"
        rows = [r for r in camp.results
                if r.get("target") == target and r.get("label", "") == label]
        if target in ("libsframe", "kernel_rfc2023", "kernel", "glibc"):
            rows = _keep_reproducers(rows, report_dir / f"{stem}-repro")
        text = _markdown(camp, command, target, label, jobs, rows, png.name)
        if bench and target in bench:
            text += _bench_text(target, bench[target])
        md.write_text(text)
        written.append(md)
    return written


def _keep_reproducers(rows: list[dict], dest: Path) -> list[dict]:
    """libsframe reproducers live in the run directory: copy them next to the report."""
    import shutil
    out = []
    for r in rows:
        src = Path(r.get("reproducer", ""))
        if src.is_file() and not src.is_relative_to(common.ROOT / "corpus"):
            dest.mkdir(parents=True, exist_ok=True)
            name = common.slug(str(r.get("signature", src.stem)))[:80] + ".bin"
            shutil.copyfile(src, dest / name)
            try:
                r = r | {"reproducer": str((dest / name).resolve().relative_to(common.ROOT))}
            except ValueError:
                r = r | {"reproducer": str(dest / name)}
        out.append(r)
    return out


def _bench_text(target: str, b: dict) -> str:
    return "\n".join([
        "", "## Rate on seed-sized inputs", "",
        f"`python -m fuzz bench {target} --runs {b['asked']}` (run right after the campaign, "
        f"load average {b.get('load', 0):.2f}): {b['runs']} runs from the seeds alone, inputs "
        f"at most {b['max_len']} bytes, **{b['exec_s']:.0f} exec/s** (libFuzzer's "
        "average_exec_per_sec; instrumented sfcheck).", ""])


LIBSFRAME_KEYS = """\
Keys: `crash:<signal>:<call>[:<message>]` libsframe killed the worker during that API call
(the section ends at a PROT_NONE page, so SIGSEGV in `call_decode` is a read past the end of
the caller's buffer); `hang:<call>`; `accepts:<rule>` sframe_decode accepted a section that
breaks sfcheck's error rule `<rule>`; `rejects:v<N>:<error>` sframe_decode refused a section
sfcheck finds clean (expected for versions that library does not read); `funcdesc:*`,
`fre:*`, `find_fre:*` both accept the section but libsframe reads an FDE/FRE differently or
sframe_find_fre answers a section-relative PC differently from sfcheck's unwinder table.
Status `new`: a libsframe crash or hang not yet in fuzz/libsframe-known.txt; `libsframe`: a
disagreement, reported for the write-up, not an sfcheck failure. Each reproducer is the
smallest input found, minimised against the same library."""


MODEL_KEYS = """Keys: `<kind>:<cause>`, where kind is how the modelled reader's answer at one PC
differs from sfcheck's reference table (`wrong-row` mis-unwind, `uninit` uninitialised read,
`past` read outside the section, `lookup-fails`, `div0`, `gap-row` a PC in no function,
`walker` a frame the walker repeats) and cause the reader defect that explains it
(fuzz/reader_models.py maps each to its row of docs/kernel-readers.md). Status `known`: a
documented defect rediscovered; `reader`: a disagreement outside that list, for review.
"first found" is seconds from the job's start to the first input with that key; each
reproducer is the smallest input found, minimised against the model."""


GLIBC_KEYS = """Keys (fuzz/glibc.py): `crash:<signal>:<call>` glibc's reader killed the worker
(the section ends at a PROT_NONE page, so reads past it fault; SIGFPE is a division by zero);
`accepts:<rule>` __sframe_decode accepts a section breaking sfcheck error rule <rule>;
`rejects:v2` glibc refuses a v2 section sfcheck finds clean; `find:*` both accept but
__sframe_find_fre answers a section-relative PC differently from sfcheck's reference table
(`find:offsets-ignored`: a non-canonical sfh_fdeoff/sfh_freoff, which glibc ignores);
`crash:<signal>:call_walk:<where>`, `hang:call_walk` and `walk:*` are glibc's walker
(__stacktrace_sframe) against sfcheck's reference unwinder on the same stack (fuzz/glibc_walk.py).
Status `glibc`: glibc's behaviour, for the write-up (not an sfcheck failure). "first found" is
seconds from the job's start."""


def _markdown(camp: Campaign, command: str, target: str, label: str, jobs: list[Job],
              rows: list[dict], png: str) -> str:
    against = f" against libsframe {label}" if target == "libsframe" else (
        f" against {label}" if target == "glibc" else None) or (
        f" ({label})" if label else "")
    lines = [f"# Fuzz campaign: `{target}`{against}", "",
             "Produced by the campaign runner. Reproduce with (from the repository root, "
             "`pip install -e '.[fuzz]'`):", "", "```", command, "```", "",
             f"- started {camp.started_at}, commit `{_git_rev()}`, Python "
             f"{platform.python_version()}, atheris {_atheris_version()}, "
             f"{os.cpu_count()} cores",
             f"- {len(jobs)} job(s) of {camp.duration} s, libFuzzer seed {camp.seed}+job, "
             f"max_len {camp.max_len}, structure-aware mutator "
             f"{'on' if camp.mutator else 'off'}",
             f"- load average at start {camp.load_start:.2f}, at end {camp.load_end:.2f}: "
             "the 2 cores are shared with other work, so exec/s here is a lower bound of "
             "what an idle machine gives", "",
             "Coverage numbers are libFuzzer's (`cov`: instrumented edges of sfcheck's Python "
             "code, `ft`: features). A rerun with the same command and seed repeats the same "
             "mutations only as far as timing allows (the runs are time-bounded, and "
             "`-reload` merges the jobs' corpora at timing-dependent moments); findings "
             "reproduce exactly from their files.", "",
             "## Jobs", "",
             "| job | seconds | executions | mean exec/s | cov | ft | corpus | exit |",
             "|---|---|---|---|---|---|---|---|"]
    for job in jobs:
        cov, ft, corp = job.last_cov
        execs = job.final.get("number_of_executed_units", job.last_execs)
        lines.append(f"| {job.index}{' ' + job.label if job.label else ''} | "
                     f"{job.ended:.0f} | {execs} | {mean_rate(job):.0f} | {cov} | {ft} | "
                     f"{corp} | {job.returncode} |")
    lines += ["", f"![coverage and exec/s over time]({png})", "", "## Findings", ""]
    if target == "libsframe":
        lines += [LIBSFRAME_KEYS, ""]
    elif target in ("kernel_rfc2023", "kernel"):
        lines += [MODEL_KEYS, ""]
    elif target == "glibc":
        lines += [GLIBC_KEYS, ""]
    if not rows:
        lines.append("None: no exception other than sfcheck's own, no failed property, no "
                     "timeout or out-of-memory.")
    else:
        timed = any("first_s" in r for r in rows)  # reader models: time to first find
        lines += ["| status | signature | size (min) | " + ("first found (s) | " if timed else "")
                  + "reproducer |", "|---|---|---|" + ("---|" if timed else "") + "---|"]
        for r in rows:
            size = f"{r.get('size', '?')}" + (f" ({r['min_size']})" if "min_size" in r else "")
            sig = str(r.get("signature", "?")).replace("|", "\\|")
            first = f"{r.get('first_s', '?')} | " if timed else ""
            lines.append(f"| {r.get('status', '?')} | `{sig}` | {size} | {first}"
                         f"`{r.get('reproducer', r.get('input', '?'))}` |")
        notes = [r["note"] for r in rows if r.get("note")]
        if notes:
            lines += ["", *[f"- {n}" for n in notes]]
    lines.append("")
    return "\n".join(lines)
