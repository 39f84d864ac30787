"""The section harness's fast-pass comparison: which inputs take it, that it holds on the
seeds, that it fails when the passes disagree, and that the checker's threshold is left
as found."""

from __future__ import annotations

import zlib
from dataclasses import replace

import pytest

from fuzz import common, section  # noqa: E402
from sfcheck.walk import section as section_pass  # noqa: E402


def _seeds() -> list[bytes]:
    return [d for _n, d, _v in common.corpus_sections()]


def _sampled(data: bytes) -> bool:
    return zlib.crc32(data) % section.FAST_EVERY == 0


def test_both_passes_agree_on_the_seeds_and_threshold_is_restored() -> None:
    default = section_pass.FAST_MIN
    for data in _seeds():
        ref = section._check(data, section.REFERENCE)
        fast = section._check(data, 0)
        assert fast.findings == ref.findings
        assert fast.sections == ref.sections
        section.test_one_input(data)
        assert default == section_pass.FAST_MIN


def test_a_disagreement_is_a_finding(monkeypatch: pytest.MonkeyPatch) -> None:
    """A fast pass that loses a finding fails the harness on a sampled input only."""
    data = next(d for d in _seeds() if section._check(d, section.REFERENCE).findings)
    real = section._check

    def lossy(data: bytes, fast_min: int):  # type: ignore[no-untyped-def]
        res = real(data, fast_min)
        return replace(res, findings=res.findings[1:]) if fast_min == 0 else res

    monkeypatch.setattr(section, "_check", lossy)
    # Trailing bytes change the CRC, not the findings that matter here: find one of
    # each kind (sampled, not sampled) and check both behaviours.
    variants = [data + bytes(k) for k in range(64)]
    picked = next(v for v in variants if _sampled(v))
    skipped = next(v for v in variants if not _sampled(v))
    with pytest.raises(AssertionError, match="fast pass's findings differ"):
        section.check_clean(picked)
    section.check_clean(skipped)


def test_sample_is_about_one_in_fast_every() -> None:
    n = sum(_sampled(i.to_bytes(4, "little")) for i in range(4096))
    assert 4096 / section.FAST_EVERY / 2 < n < 4096 / section.FAST_EVERY * 2
