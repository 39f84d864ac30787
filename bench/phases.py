"""Where one `sfcheck FILE` spends its time, phase by phase (the floor analysis of issue 16).

    python bench/phases.py FILE [--reps N]

Times `check_elf(FILE)` in this process, wrapping the checker's phases (the names the
checker calls them by) with timers, and prints each phase's median inclusive time and
its share of the whole check, then the process-level costs measured the same way as
bench/run.py (`python -c pass`, the imports of a plain check, the text report). Phases
nest (the FRE walk is inside the structure check), so shares do not add up to 100 %.
"""

from __future__ import annotations

import argparse
import gc
import importlib
import statistics
import subprocess
import sys
import time
from collections import defaultdict
from collections.abc import Callable
from pathlib import Path

# (module, attribute, label): the attribute is replaced by a timed wrapper while measuring.
PHASES = [
    ("sfcheck.checker", "load_elf", "ELF read (headers, sections, .eh_frame prepared)"),
    ("sfcheck.checker", "check_section", "structure check (all of it)"),
    ("sfcheck.walk.section", "Table", "  fast path: FDE table columns + FRE walk (regex or C)"),
    ("sfcheck.walk.section", "block_ends_distinct", "  FRE block ends by offset"),
    ("sfcheck.rules.layout", "check_overlaps", "  overlap checks"),
    ("sfcheck.checker", "check_consumer", "consumer profile"),
    ("sfcheck.checker", "check_section_defects", "toolchain-defect rules"),
    ("sfcheck.checker", "check_stubs_only", "stub rule"),
    ("sfcheck.rules.elf", "check_elf_section", "ELF section rules"),
    ("sfcheck.rules.elf", "check_function_ranges", "function ranges vs segments"),
    ("sfcheck.checker", "check_text_coverage", "text coverage"),
    ("sfcheck.checker", "cross_check", ".eh_frame cross-check"),
    ("sfcheck.rules.semantic.check", "decode_eh_frame", "  .eh_frame read, CFI programs run"),
    ("sfcheck.checker", "name_functions", "function names for findings"),
]


def _timed(fn: Callable, label: str, acc: dict[str, float]) -> Callable:
    """`fn` (a function, or a class: its construction) adding its time to acc[label]."""
    def call(*a, **k):
        t = time.perf_counter()
        try:
            return fn(*a, **k)
        finally:
            acc[label] += time.perf_counter() - t
    return call


def in_process(path: Path, reps: int) -> tuple[float, dict[str, float]]:
    """Median whole-check time and median per-phase times over `reps` runs."""
    from sfcheck.checker import check_elf
    totals: list[float] = []
    per: dict[str, list[float]] = defaultdict(list)
    patched = []
    for mod_name, attr, label in PHASES:
        mod = importlib.import_module(mod_name)
        if hasattr(mod, attr):
            patched.append((mod, attr, label, getattr(mod, attr)))
    for _ in range(reps):
        acc: dict[str, float] = defaultdict(float)
        for mod, attr, label, fn in patched:
            setattr(mod, attr, _timed(fn, label, acc))
        try:
            gc.collect()
            t = time.perf_counter()
            check_elf(str(path))
            totals.append(time.perf_counter() - t)
        finally:
            for mod, attr, _label, fn in patched:
                setattr(mod, attr, fn)
        for _m, _a, label, _f in patched:
            per[label].append(acc.get(label, 0.0))
    return statistics.median(totals), {k: statistics.median(v) for k, v in per.items()}


def process(args: list[str], reps: int) -> float:
    """Median wall time of a fresh process."""
    out = []
    for _ in range(reps):
        t = time.perf_counter()
        subprocess.run(args, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False)
        out.append(time.perf_counter() - t)
    return statistics.median(out)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("file", type=Path)
    p.add_argument("--reps", type=int, default=5)
    a = p.parse_args(argv)
    total, per = in_process(a.file, a.reps)
    py = sys.executable
    whole = process([py, "-m", "sfcheck", str(a.file)], a.reps)
    floor = process([py, "-c", "pass"], a.reps)
    imports = process([py, "-c", "import sfcheck.cli, sfcheck.checker"], a.reps) - floor
    print(f"{a.file}: whole process {whole:.3f} s = interpreter {floor:.3f} s + imports "
          f"{imports:.3f} s + check {total:.3f} s (in-process median of {a.reps}) + the rest "
          f"(report, exit) {max(whole - floor - imports - total, 0):.3f} s")
    print("| phase | median s | share of the check |\n|---|---|---|")
    for label, t in per.items():
        print(f"| {label} | {t:.4f} | {100 * t / total:.0f} % |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
