"""The timing helper walks its synthetic stack correctly (no assertion on speed)."""

from __future__ import annotations

from sfcheck.unwind import bench


def test_bench_synthetic_stack_is_walked_fully() -> None:
    r = bench.run(depth=50, runs=2, funcs=7)
    assert r["frames_per_walk"] == 51 and r["runs"] == 2
    assert r["frames_per_s"] > 0


def test_bench_cli(capsys) -> None:  # type: ignore[no-untyped-def]
    assert bench.main(["--depth", "20", "--runs", "1", "--funcs", "3"]) == 0
    assert "21 frames x 1 walks" in capsys.readouterr().out
