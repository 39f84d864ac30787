"""The optional C FRE walk (sfcheck.walk._frewalk) gives the regex walk's verdicts exactly.

fast.regex_verdicts is the reference; _frewalk.verdicts reads tables built from
the same predicates (fre_patterns.walk_spec). Both get the same bytes and FDE columns from
fuzz/frewalk.make_case (near-valid FREs: class-edge CFA words, s390x, big-endian, start
sizes 1/2/4, truncated and overlong blocks, counts and sizes off by one, starts equal or
decreasing, bounds out of range); misuse raises; without the module Table falls back to
the regex walk with the same findings.
"""

from __future__ import annotations

import random
import sys

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import sfcheck
from fuzz.frewalk import Case, both, make_case
from sfcheck.format import constants as C
from sfcheck.walk import fast
from sfcheck.walk.fast import regex_verdicts
from sfcheck.walk.fre_patterns import SPEC_LEN, walk_spec

frewalk = pytest.importorskip("sfcheck.walk._frewalk", reason="the C walk was not built")


@settings(max_examples=3000, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.randoms(use_true_random=False))
def test_same_verdicts(rng: random.Random) -> None:
    c = make_case(rng)
    fast, ref = both(c, frewalk)
    assert fast == ref


def test_cases_reach_both_verdicts() -> None:
    """The generator is not trivial: many FDEs are accepted, many rejected by the walk."""
    ok = rejected = 0
    rng = random.Random(16)
    for _ in range(2000):
        c = make_case(rng)
        fast, ref = both(c, frewalk)
        assert fast == ref
        ok += fast.count(0)
        rejected += sum(1 for a, b in zip(c.bad, fast, strict=True) if b and not a)
    assert ok > 1000 and rejected > 1000, (ok, rejected)


def _clean(big: bool = False, abi: int = C.ABI_AMD64_LE) -> Case:
    """Two FDEs: type 0 (starts 0, 4; SP-based CFA 16) and type 1 (start 0, FP-based)."""
    o = "big" if big else "little"
    b0 = bytes([0, 0x03, 16, 4, 0x03, 16])  # info 0x03: SP, one 1-byte word
    b1 = (0).to_bytes(2, o) + bytes([0x02, 8])  # info 0x02: FP, one word
    data = b0 + b1
    return Case(data, [0, 6], [6, len(data)], bytes([0, 1]), [2, 1], [5, 1],
                bytearray(2), abi, 2, big, 0)


@pytest.mark.parametrize("big", [False, True])
def test_hand_made(big: bool) -> None:
    c = _clean(big)
    for walk in (lambda c: both(c, frewalk)[0], lambda c: both(c, frewalk)[1]):
        assert walk(c) == bytearray(2)
        d = bytearray(c.data)
        d[5] = 12  # CFA offset not 8-aligned
        assert walk(Case(**{**vars(c), "data": bytes(d)})) == bytearray([1, 0])
        assert walk(Case(**{**vars(c), "sizes": [4, 1]})) == bytearray([1, 0])
        assert walk(Case(**{**vars(c), "nfs": [2, 2]})) == bytearray([0, 1])
        assert walk(Case(**{**vars(c), "ends": [5, len(c.data)]})) == bytearray([1, 0])


def test_misuse_raises() -> None:
    c = _clean()
    spec = walk_spec(c.abi, c.version, c.big, c.fixed)
    assert len(spec) == SPEC_LEN
    args = [c.data, c.walk_from, c.ends, c.types, c.nfs, c.sizes, bytearray(2), spec]
    for k, bad_value, exc in ((1, [0], ValueError), (2, [0, -1], ValueError),
                              (4, [1, -1], OverflowError), (5, [1, 1 << 64], OverflowError),
                              (3, b"\0", ValueError), (7, spec[:-1], ValueError),
                              (7, b"\x02" + spec[1:], ValueError), (6, b"\0\0", TypeError),
                              (6, bytearray(b"\0\2"), ValueError),
                              (1, None, TypeError), (4, [1, "x"], TypeError)):
        wrong = list(args)
        wrong[k] = bad_value
        with pytest.raises(exc):
            frewalk.verdicts(*wrong)
    frewalk.verdicts(*args)  # and the right arguments pass
    assert args[6] == bytearray(2)


def test_empty_and_huge_bounds() -> None:
    spec = walk_spec(C.ABI_AMD64_LE, 2, False, 0)
    bad = bytearray(3)
    frewalk.verdicts(b"", [0, 5, 1 << 40], [0, 1 << 40, 3], b"\0\0\0", [0, 0, 1],
                     [0, 0, 0], bad, spec)
    ref = bytearray(3)
    regex_verdicts(b"", [0, 5, 1 << 40], [0, 1 << 40, 3], b"\0\0\0", [0, 0, 1], [0, 0, 0],
                   ref, C.ABI_AMD64_LE, 2, False, 0)
    assert bad == ref == bytearray([0, 0, 1])
    frewalk.verdicts(b"", [], [], b"", [], [], bytearray(), spec)


def test_module_optional(monkeypatch) -> None:
    """Without the module (not built, or SFCHECK_PURE_PYTHON set) Table walks with the
    regex, with the same findings on a realistic section with flipped bytes."""
    from bench.synth import encode_tiled, plan
    from sfcheck.walk.context import SectionContext
    from sfcheck.walk.section import check_section

    lay = plan(300, 3, seed=3)
    data = bytearray(encode_tiled(lay))
    data[len(data) // 2] ^= 8
    data[len(data) * 3 // 4] ^= 1

    def findings() -> list:
        ctx = SectionContext("x", ".sframe", lay.sframe_vma, bytes(data), relocatable=False)
        check_section(ctx)
        ctx.finish()
        return [f.text() for f in ctx.findings]

    assert fast.FREWALK is frewalk
    with_c = findings()
    monkeypatch.setitem(sys.modules, "sfcheck.walk._frewalk", None)  # import fails
    monkeypatch.delattr(sfcheck.walk, "_frewalk")
    monkeypatch.setattr(fast, "FREWALK", fast._load_frewalk())
    assert fast.FREWALK is None
    assert findings() == with_c and with_c
    monkeypatch.undo()
    monkeypatch.setenv("SFCHECK_PURE_PYTHON", "1")
    assert fast._load_frewalk() is None


def test_harness_replays_and_fails_on_difference(monkeypatch) -> None:
    """fuzz/frewalk.py's entry point accepts fuzzer bytes, and a C walk that differs from
    the regex walk on some FDE is a finding (AssertionError)."""
    pytest.importorskip("atheris")
    import fuzz.frewalk as harness

    monkeypatch.setattr(harness, "FREWALK", frewalk)
    inputs = [bytes(random.Random(k).randrange(256) for _ in range(200)) for k in range(200)]
    for data in inputs:
        harness.test_one_input(data)

    class Flipped:
        @staticmethod
        def verdicts(*args) -> None:
            frewalk.verdicts(*args)
            bad = args[6]
            if len(bad):
                bad[0] ^= 1

    monkeypatch.setattr(harness, "FREWALK", Flipped)
    fails = 0
    for data in inputs:
        try:
            harness.test_one_input(data)
        except AssertionError:
            fails += 1
    assert fails > 50
