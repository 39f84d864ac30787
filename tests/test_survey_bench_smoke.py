"""bench/survey_bench.py keeps working: a few packages, corpus files only."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from helpers import ROOT


def test_survey_bench_writes_its_table(tmp_path: Path) -> None:
    for tool in ("dpkg-deb", "readelf"):
        if shutil.which(tool) is None:
            pytest.skip(f"{tool} is not installed (the pipeline the benchmark compares with)")
    out = tmp_path / "bench.md"
    r = subprocess.run([sys.executable, str(ROOT / "bench" / "survey_bench.py"), "--packages",
                        "6", "--rounds", "2", "--corpus-only",
                        "--out", str(out)],
                       capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stderr
    text = out.read_text()
    for row in ("| survey -j 1 |", "| survey -j 2 |", "| rerun -j 2 (unchanged) |",
                "| dpkg-deb -x + readelf --sframe (6 packages) |"):  # every package by default
        assert row in text
    assert "Repository: 6 packages, 8 distinct ELF images" in text
    assert "2 round(s)" in text and "(rounds " in text  # medians of two rounds
