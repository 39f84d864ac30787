"""bench/run.py keeps working: the smallest size, one repetition, no real inputs.

A smoke test only: it checks the benchmark builds its input, runs every tool and
prints its table, never how fast anything is (speed is judged by the benchmark's
ratios against readelf, not by tests).
"""

from __future__ import annotations

import re
import subprocess
import sys

from helpers import ROOT


def test_benchmark_prints_a_table(tmp_path) -> None:
    out_md = tmp_path / "bench.md"
    proc = subprocess.run(
        [sys.executable, str(ROOT / "bench" / "run.py"), "--sizes", "1000", "--versions", "3",
         "--reps", "1", "--no-real", "--out", str(out_md)],
        capture_output=True, text=True, timeout=600, cwd=ROOT)
    assert proc.returncode == 0, proc.stderr[-2000:]
    text = proc.stdout
    # A compiled 1k-function library (gcc + .toolchains), else the synthetic stand-in.
    rows = [line for line in text.splitlines()  # the main table has 10 columns
            if line.startswith(("| lib 1k fns v3 |", "| synthetic 1k FDEs v3 |"))
            and line.count("|") == 11]
    tools = {line.split("|")[5].strip() for line in rows}
    assert {"sfcheck", "sfcheck dump", "decoder alone (in-process)"} <= tools, text
    compiled = any(line.startswith("| lib 1k fns v3 |") for line in rows)
    assert ("sfcheck structure only" in tools) == compiled
    assert "## Targets (issue 16)" in text and "imports of `sfcheck FILE`" in text
    for line in rows:  # every timed row has a positive time and a per-FRE cost
        cells = [c.strip() for c in line.split("|")]
        assert float(cells[6]) > 0 and re.fullmatch(r"[\d,]+", cells[7]), line
    # readelf columns appear only when an installed readelf reads v3; otherwise none.
    has_readelf = "readelf --sframe" in tools
    assert ("x readelf --sframe" in text) == has_readelf
    assert "frames/s" in text
    assert out_md.read_text().startswith("# sfcheck benchmark")


def _point(n: int, fres: int, seconds: float):
    from bench.run import Input, Timing
    return Input(f"lib {n}", [], "compiled", fres=fres, n=n), {
        "sfcheck": Timing("sfcheck", seconds, 0, 0)}


def test_marginal_cost_is_the_slope_between_sizes() -> None:
    from bench.run import marginal_row
    # 0.05 s fixed + 700 ns per FRE: whole-process ns/FRE falls 10x, the slope stays 700.
    pts = [_point(n, 6 * n, 0.05 + 700e-9 * 6 * n) for n in (10_000, 100_000, 1_000_000)]
    row = marginal_row("v3", pts)
    assert "700 (10k-100k), 700 (100k-1M)" in row and row.endswith("| yes |"), row
    # Work per FRE doubling from 100k on is not flat.
    pts[2] = _point(1_000_000, 6_000_000, 0.05 + 700e-9 * 600_000 + 1400e-9 * 5_400_000)
    assert marginal_row("v3", pts).endswith("| **no** |")
    assert "nothing to compare" in marginal_row("v3", pts[:2])


def test_identical_reads_every_upstream_input(tmp_path) -> None:
    """bench/identical.py compares the regression corpus and every upstream section and object."""
    import json

    from bench.identical import upstream_inputs

    from helpers import UPSTREAM, upstream_path
    upstream_path("simple-frame-rs")
    got = {p.name: (p, vma) for p, vma in upstream_inputs(tmp_path)}
    assert "fixed-fp-extra-data-word.bin" in got
    cases = sorted((UPSTREAM / "simple-frame-rs").glob("*.json"))
    for case in cases:
        path, vma = got[case.stem + ".bin"]
        body = json.loads(case.read_text())
        assert path.read_bytes() == bytes(body["content"]) and vma == body["section_base"]
    blobs = [p for p in (UPSTREAM / "binutils").iterdir()
             if p.suffix != ".dump" and "README" not in p.name]
    assert len(got) == len(cases) + len(blobs) + len(list(
        (ROOT / "corpus" / "regressions").glob("*/*.bin")))
    for p in blobs:  # bare sections (SFrame magic, either byte order) or ELF objects
        path, vma = got[p.name.removesuffix(".bz2") + ".bin"]
        head = path.read_bytes()[:4]
        assert (vma is None) == (head == b"\x7fELF") and (vma is None
                                                      or head[:2] in (b"\xe2\xde", b"\xde\xe2"))


def test_phases_time_the_checker_inside_the_whole_check() -> None:
    from bench.phases import in_process
    total, per = in_process(ROOT / "corpus" / "v3" / "libcorpus.so", reps=1)
    structure = per["structure check (all of it)"]
    assert 0 < structure <= total
    assert 0 < per[".eh_frame cross-check"] <= total  # the file has .eh_frame FDEs
    # Wrappers are removed afterwards: the checker's names are its own functions again.
    from sfcheck import checker
    assert checker.check_section.__module__ == "sfcheck.walk.section"
