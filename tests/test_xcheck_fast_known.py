"""The cross-check's block shortcut (FreBlocks.run's `known` hook, Settle.known): an FDE
whose raw FRE block Settle already found quiet against the same .eh_frame rows is settled
before its tokens are found. Pinned to the token path it is derived from: the same
findings with the hook off, on the corpus and the upstream cases; and Settle.known says
True only where quiet() would (same bytes, FRE type and count, rows, a size past the
memo's reach, the FDE wholly covered)."""

from __future__ import annotations

from itertools import chain
from pathlib import Path

import pytest

from sfcheck.checker import check_elf
from sfcheck.rules.semantic.check import _SectionPass
from sfcheck.rules.semantic.settle import Settle

from helpers import CORPUS, UPSTREAM


def _elf_files(root: Path) -> list[Path]:
    if not root.is_dir():
        return []
    return sorted(p for p in root.rglob("*")
                  if p.is_file() and "src" not in p.parts and p.read_bytes()[:4] == b"\x7fELF")


FILES = _elf_files(CORPUS) + _elf_files(UPSTREAM)


def _findings(path: Path, monkeypatch: pytest.MonkeyPatch, hook: bool) -> list[str]:
    with monkeypatch.context() as m:
        if not hook:
            m.setattr(_SectionPass, "known_single", lambda *a: False)
        res = check_elf(path.read_bytes(), str(path))
    return [f.text() for f in res.findings] + [str(res.error)]


@pytest.mark.parametrize("path", FILES, ids=str)
def test_same_findings_without_the_hook(path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    assert _findings(path, monkeypatch, True) == _findings(path, monkeypatch, False)


def test_the_hook_settles_fdes(monkeypatch: pytest.MonkeyPatch) -> None:
    """Else the test above compares the token path with itself."""
    hits = []
    real = _SectionPass.known_single

    def counting(self, *a):
        got = real(self, *a)
        hits.append(got)
        return got

    monkeypatch.setattr(_SectionPass, "known_single", counting)
    for path in FILES:
        check_elf(path.read_bytes(), str(path))
    assert sum(hits) > 20 and not all(hits)


def test_known_only_where_quiet_said_so(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every quiet() verdict the memo keeps, asked again through known(): True for its
    block as it lies in the section, False for another FRE count, a size within the
    memo's reach, an FDE the .eh_frame FDE does not wholly cover, or a PCMASK FDE."""
    seen: list[tuple] = []
    real = Settle.quiet

    def recording(self, start, size, info, info2, asz, toks, es, ee, rel) -> bool:
        got = real(self, start, size, info, info2, asz, toks, es, ee, rel)
        seen.append((self, start, size, info, info2, toks, es, ee, rel, got))
        return got

    monkeypatch.setattr(Settle, "quiet", recording)
    monkeypatch.setattr(_SectionPass, "known_single", lambda *a: False)  # every FDE asks
    for path in FILES:
        check_elf(path.read_bytes(), str(path))
    checked = 0
    for settle, start, size, info, info2, toks, es, ee, rel, got in seen:
        if not toks:
            continue
        block, nf = b"".join(chain.from_iterable(toks)), len(toks)
        known = settle.known(start, size, info, info2, nf, block, es, ee, rel)
        assert not known or got  # never True where quiet() said False
        if not known:
            continue
        checked += 1
        assert not settle.known(start, size, info, info2, nf + 1, block, es, ee, rel)
        assert not settle.known(start, size, info | 0x10, info2, nf, block, es, ee, rel)
        assert not settle.known(start, size, info, info2, nf, block, start + 1, ee, rel)
        if size:  # the .eh_frame FDE ends one byte short (the same key otherwise)
            assert not settle.known(start, size, info, info2, nf, block, es, start + size - 1,
                                    rel)
        assert not settle.known(start, size, info, info2, nf, block + b"\0", es, ee, rel)
        reach = settle.verdicts[(settle_asz(info), nf, id(rel), es == start, block)][1]
        assert not settle.known(start, reach, info, info2, nf, block, es, max(ee, start + reach),
                                rel)
    assert checked > 100


def settle_asz(info: int) -> int:
    return {0: 1, 1: 2, 2: 4}[info & 0xF]
