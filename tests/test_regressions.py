"""Replay every input the fuzz campaigns ever found (corpus/regressions/<harness>/*.bin).

Each file made a harness fail once (an exception other than sfcheck's own, or a
property such as "a clean section never makes the unwinder stop on malformed
data"); it is kept minimised, and must pass the same harness now.
"""

from __future__ import annotations

import importlib

import pytest

from helpers import ROOT

REGRESSIONS = ROOT / "corpus" / "regressions"
HARNESSES = ("section", "elf", "unwind", "libsframe")


def _cases() -> list[tuple[str, str]]:
    out = []
    for name in HARNESSES:
        d = REGRESSIONS / name
        if d.is_dir():
            out += [(name, p.name) for p in sorted(d.glob("*.bin"))]
    return out


CASES = _cases()


def _open() -> dict[str, str]:
    """open.txt: `<harness>/<file>  <why>` for findings whose fix is still pending."""
    path = REGRESSIONS / "open.txt"
    out = {}
    if path.is_file():
        for line in path.read_text().splitlines():
            if line.strip() and not line.startswith("#"):
                key, _, why = line.partition(" ")
                out[key] = why.strip()
    return out


OPEN = _open()


def test_regression_corpus_is_not_empty() -> None:
    assert CASES, f"no regression inputs under {REGRESSIONS}"


@pytest.mark.parametrize(("harness", "name"), CASES, ids=[f"{h}/{n}" for h, n in CASES])
def test_replay(harness: str, name: str, request: pytest.FixtureRequest) -> None:
    why = OPEN.get(f"{harness}/{name}")
    if why is not None:  # strict: once fixed, the entry must leave open.txt
        request.applymarker(pytest.mark.xfail(reason=f"open finding: {why}", strict=True))
    module = importlib.import_module(f"fuzz.{harness}")
    data = (REGRESSIONS / harness / name).read_bytes()
    module.test_one_input(data)  # raises on the old failure
