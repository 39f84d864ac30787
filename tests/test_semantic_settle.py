"""The cross-check's shortcut (semantic._Settle: FDEs settled from raw FRE tokens) against
the exact comparison alone: the findings must be the same, on every corpus file and on
files whose .sframe FRE bytes are damaged at random."""

from __future__ import annotations

import random
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sfcheck.checker import check_elf
from sfcheck.elf import load_elf
from sfcheck.rules import semantic

from helpers import CORPUS

FILES = sorted(p for p in CORPUS.rglob("*")
               if p.is_file() and "src" not in p.parts and p.read_bytes()[:4] == b"\x7fELF"
               and (lambda i: i.cfi.eh_frame is not None and i.sections)(
                   load_elf(p.read_bytes(), str(p), cfi=True)))


def _findings(data: bytes | Path, shortcut: bool, monkeypatch) -> list[str]:
    with monkeypatch.context() as m:
        if not shortcut:
            m.setattr(semantic._Settle, "quiet", lambda *a, **k: False)
        res = check_elf(data)
    return sorted(f.text() for f in res.findings) + [str(res.error)]


def test_files_with_eh_frame_exist() -> None:
    assert len(FILES) > 40


@pytest.mark.parametrize("path", FILES, ids=lambda p: str(p.relative_to(CORPUS)))
def test_same_findings_with_and_without_shortcut(path: Path, monkeypatch) -> None:
    assert _findings(path, True, monkeypatch) == _findings(path, False, monkeypatch)


def test_shortcut_settles_most_fdes(monkeypatch) -> None:
    """It is taken (else this file is no test of it): on a gcc-built library most FDEs."""
    calls = {"quiet": 0, "yes": 0}
    real = semantic._Settle.quiet

    def counting(self, *args):
        calls["quiet"] += 1
        got = real(self, *args)
        calls["yes"] += got
        return got

    monkeypatch.setattr(semantic._Settle, "quiet", counting)
    check_elf(CORPUS / "v3" / "libcorpus.so")
    assert calls["yes"] >= 3 and calls["yes"] >= calls["quiet"] // 2


@settings(max_examples=60, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(pick=st.integers(0, 10_000), seed=st.integers(0, 2**32 - 1),
       flips=st.integers(1, 4))
def test_same_findings_on_damaged_fres(pick: int, seed: int, flips: int, monkeypatch) -> None:
    path = FILES[pick % len(FILES)]
    raw = bytearray(path.read_bytes())
    sec = load_elf(bytes(raw), str(path)).sections[0]
    rng = random.Random(seed)
    lo = sec.offset + 28  # past the header: FDE records and FREs
    if sec.size <= 28:
        return
    for _ in range(flips):
        at = rng.randrange(lo, sec.offset + sec.size)
        raw[at] = rng.randrange(256)
    data = bytes(raw)
    assert _findings(data, True, monkeypatch) == _findings(data, False, monkeypatch)
