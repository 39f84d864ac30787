"""Shared test helpers: where the upstream data lives, and skipping cleanly without it."""

from __future__ import annotations

from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SHARED = ROOT.parent / "shared"
UPSTREAM = SHARED / "testdata" / "upstream"
CORPUS = ROOT / "corpus"


def upstream_path(*parts: str) -> Path:
    """A path under ../shared/testdata/upstream, or skip the test with the reason."""
    path = UPSTREAM.joinpath(*parts)
    if not path.exists():
        pytest.skip(f"upstream test data not present: {path} (CI has ../shared beside the "
                    "checkout)")
    return path


def upstream_files(subdir: str, pattern: str) -> list[Path]:
    """For parametrize: the matching files, or [] (the test then reports no cases)."""
    base = UPSTREAM / subdir
    return sorted(base.glob(pattern)) if base.is_dir() else []
