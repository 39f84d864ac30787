"""bench/unwind_bench.py walks its synthetic stack correctly (no assertion on speed)."""

from __future__ import annotations

import subprocess
import sys

from bench import unwind_bench

from helpers import ROOT


def test_bench_synthetic_stack_is_walked_fully() -> None:
    r = unwind_bench.run(depth=50, runs=2, funcs=7)
    assert r["frames_per_walk"] == 51 and r["runs"] == 2
    assert r["frames_per_s"] > 0


def test_bench_cli(capsys) -> None:  # type: ignore[no-untyped-def]
    assert unwind_bench.main(["--depth", "20", "--runs", "1", "--funcs", "3"]) == 0
    assert "21 frames x 1 walks" in capsys.readouterr().out


def test_bench_runs_as_a_script_from_the_checkout() -> None:
    """The command docs/benchmarks.md gives (the installed sfcheck, no package path)."""
    proc = subprocess.run([sys.executable, "bench/unwind_bench.py", "--depth", "10", "--runs",
                           "1", "--funcs", "2"], cwd=ROOT, capture_output=True, text=True,
                          timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith("11 frames x 1 walks: ")
