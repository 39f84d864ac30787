"""Shared test helpers: where the upstream data lives, and skipping cleanly without it."""

from __future__ import annotations

import io
import os
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SHARED = ROOT.parent / "shared"
UPSTREAM = SHARED / "testdata" / "upstream"
CORPUS = ROOT / "corpus"


def installed_run() -> bool:
    """CI's run against the installed wheel: sfcheck must not come from the checkout."""
    return os.environ.get("SFCHECK_TEST_INSTALLED") == "1"


def in_checkout(path: str | Path) -> bool:
    return ROOT in Path(path).resolve().parents


def _absent(path: Path) -> str:
    return f"upstream test data not present: {path} (CI has ../shared beside the checkout)"


def upstream_path(*parts: str) -> Path:
    """A path under ../shared/testdata/upstream, or skip the test with the reason."""
    path = UPSTREAM.joinpath(*parts)
    if not path.exists():
        pytest.skip(_absent(path))
    return path


def upstream_absent(arity: int = 1) -> list:
    """For parametrize lists that add upstream cases to the corpus's: without ../shared, one
    case that skips naming what is missing, so the skip count shows what was not tested
    (an empty list would make those cases vanish at collection)."""
    if UPSTREAM.is_dir():
        return []
    values = (None,) * arity
    return [pytest.param(*values, marks=pytest.mark.skip(reason=_absent(UPSTREAM)),
                         id="upstream-absent")]


def upstream_files(subdir: str, pattern: str) -> list:
    """For parametrize: the matching files, or without them one case that skips with the
    reason (see upstream_absent)."""
    base = UPSTREAM / subdir
    if base.is_dir():
        return sorted(base.glob(pattern))
    return [pytest.param(None, marks=pytest.mark.skip(reason=_absent(base)),
                         id=f"{subdir}-absent")]


def file_id(p: object) -> str:
    """A parametrize id for a data file: its stem. pytest before 8 (Debian 12 has 7.2) also
    asks it for the placeholder of an empty list (no ../shared), which has no stem."""
    return p.stem if isinstance(p, Path) else str(p)


def uleb(v: int) -> bytes:
    """ULEB128 encoding of v >= 0 (DWARF test data)."""
    out = bytearray()
    while True:
        b, v = v & 0x7F, v >> 7
        out.append(b | (0x80 if v else 0))
        if not v:
            return bytes(out)


def sleb(v: int) -> bytes:
    """SLEB128 encoding of v (DWARF test data)."""
    out = bytearray()
    while True:
        b, v = v & 0x7F, v >> 7
        done = (v == 0 and not b & 0x40) or (v == -1 and b & 0x40)
        out.append(b | (0 if done else 0x80))
        if done:
            return bytes(out)


class Recorded(io.BytesIO):
    """A stream that records the size of every read asked of it (None, -1 or a count): for
    tests that a reader asks for bounded pieces, never the whole rest."""

    def __init__(self, data: bytes) -> None:
        super().__init__(data)
        self.sizes: list[int | None] = []

    def read(self, size: int | None = -1) -> bytes:
        self.sizes.append(size)
        return super().read(size)
