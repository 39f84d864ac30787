"""The cross-check's shortcuts (semantic.settle.Settle: FDEs settled from raw FRE tokens;
_SectionPass.fast: FDEs no .eh_frame FDE overlaps) against the exact comparison alone:
the findings must be the same, on every corpus file, on files whose .sframe FRE bytes
are damaged at random, and on files whose .eh_frame is damaged or emptied."""

from __future__ import annotations

import random
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sfcheck.checker import Options, check_elf
from sfcheck.elf.loader import load_elf
from sfcheck.rules.semantic import check as semantic_check
from sfcheck.rules.semantic.check import _SectionPass
from sfcheck.rules.semantic.settle import Settle

from helpers import CORPUS

FILES = sorted(p for p in CORPUS.rglob("*")
               if p.is_file() and "src" not in p.parts and p.read_bytes()[:4] == b"\x7fELF"
               and (lambda i: i.cfi.eh_frame is not None and i.sections)(
                   load_elf(p.read_bytes(), str(p), cfi=True)))


def _findings(data: bytes | Path, shortcut: bool, monkeypatch,
              options: Options | None = None) -> list[str]:
    with monkeypatch.context() as m:
        if not shortcut:
            m.setattr(Settle, "quiet", lambda *a, **k: False)
            m.setattr(_SectionPass, "fast", False)
        res = check_elf(data, options=options)
    return sorted(f.text() for f in res.findings) + [str(res.error)]


def test_files_with_eh_frame_exist() -> None:
    assert len(FILES) > 40


@pytest.mark.parametrize("path", FILES, ids=lambda p: str(p.relative_to(CORPUS)))
def test_same_findings_with_and_without_shortcut(path: Path, monkeypatch) -> None:
    assert _findings(path, True, monkeypatch) == _findings(path, False, monkeypatch)


def test_shortcut_settles_most_fdes(monkeypatch) -> None:
    """It is taken (else this file is no test of it): on a gcc-built library most FDEs."""
    calls = {"quiet": 0, "yes": 0}
    real = Settle.quiet

    def counting(self, *args):
        calls["quiet"] += 1
        got = real(self, *args)
        calls["yes"] += got
        return got

    monkeypatch.setattr(Settle, "quiet", counting)
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


def _eh_frame_of(path: Path) -> tuple[bytearray, int, int]:
    """(file bytes, offset, size) of the .eh_frame section."""
    from elftools.elf.elffile import ELFFile

    with open(path, "rb") as f:
        sec = ELFFile(f).get_section_by_name(".eh_frame")
        return bytearray(path.read_bytes()), sec["sh_offset"], sec["sh_size"]


@pytest.mark.parametrize("disable", [(), ("semantic",), ("semantic-no-eh-frame-fde",)])
def test_emptied_eh_frame_same_findings(monkeypatch, disable: tuple[str, ...]) -> None:
    """No .eh_frame FDE at all (only terminators): every SFrame FDE is uncovered, and past
    the per-rule cap (lowered to 3 here: corpus files are small) the findings are only
    counted. Same report both ways, "N more findings" included."""
    from sfcheck.walk import context

    monkeypatch.setattr(context, "MAX_PER_RULE", 3)
    monkeypatch.setattr(semantic_check, "MAX_PER_RULE", 3)
    capped = 0
    for path in FILES:
        raw, off, size = _eh_frame_of(path)
        raw[off:off + size] = bytes(size)
        opts = Options(disable=set(disable))
        got = _findings(bytes(raw), True, monkeypatch, opts)
        assert got == _findings(bytes(raw), False, monkeypatch, opts)
        capped += any("[semantic-no-eh-frame-fde]" in f and "more finding" in f
                      for f in got)
    assert (capped > 10) == (not disable)


@settings(max_examples=40, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(pick=st.integers(0, 10_000), seed=st.integers(0, 2**32 - 1),
       flips=st.integers(1, 6))
def test_same_findings_on_damaged_eh_frame(pick: int, seed: int, flips: int,
                                           monkeypatch) -> None:
    """Damaged FDE starts and sizes move .eh_frame FDEs off the SFrame ones (no overlap)."""
    path = FILES[pick % len(FILES)]
    raw, off, size = _eh_frame_of(path)
    rng = random.Random(seed)
    for _ in range(flips):
        raw[off + rng.randrange(size)] = rng.randrange(256)
    data = bytes(raw)
    assert _findings(data, True, monkeypatch) == _findings(data, False, monkeypatch)
