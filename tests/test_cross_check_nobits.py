"""A NOBITS .sframe before a real one: the real one is still compared with .eh_frame."""

from __future__ import annotations

from pathlib import Path

import pytest

import sfcheck.checker as K
from sfcheck.elf.loader import load_elf
from sfcheck.elf.model import SFrameSection
from sfcheck.record import replace

SAMPLE = Path(__file__).resolve().parents[1] / "corpus" / "v3" / "libcorpus.so"


def test_real_section_after_a_nobits_one_is_compared(monkeypatch) -> None:
    plain = K.check_elf(str(SAMPLE))
    compared = [f for f in plain.findings if f.rule.startswith(("semantic-", "defect-ld-plt"))]
    if not compared:
        pytest.skip("the sample has no cross-check finding to follow")

    def with_nobits_first(source, name=None, cfi=False):
        info = load_elf(source, name=name, cfi=cfi)
        real = info.sections[0]
        ghost = SFrameSection(".sframe", real.index, 8, real.sh_flags, real.vma, 0, real.size,
                              b"", 0, b"", nobits=True)
        view = replace(info.cfi, sframe=((real.vma, b""), *info.cfi.sframe))
        return replace(info, sections=(ghost, *info.sections), cfi=view)

    monkeypatch.setattr(K, "load_elf", with_nobits_first)
    got = K.check_elf(str(SAMPLE))
    for f in compared:
        assert any(g.rule == f.rule and g.message == f.message for g in got.findings), f
