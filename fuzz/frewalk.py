"""Harness `frewalk`: bytes -> FRE blocks and FDE columns -> the C walk and the regex walk.

The property (an AssertionError is a finding): sfcheck.walk._frewalk.verdicts and
walk/fast.regex_verdicts, the reference, set exactly the same `bad` flags on the
same bytes and columns. The input drives make_case's choices (a header's ABI, version,
byte order and fixed words; FDEs of FRE type 0-2 or others; FREs mostly near-valid:
accepted info bytes, CFA words on the byte-class edges, starts equal or decreasing,
blocks truncated or one byte long, counts and sizes off by one, block bounds out of
range), so most inputs reach the walk's deep cases. tests/test_frewalk.py runs the same
generator under hypothesis.

With SFCHECK_FREWALK_SO=path/to/_frewalk*.so the harness loads that build (the ASan one
of fuzz/build-frewalk-asan.sh) instead of the installed module.

    python fuzz/frewalk.py [libFuzzer flags] [corpus dirs]
"""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass
from types import ModuleType
from typing import Protocol

# Last, after site-packages: an installed sfcheck (the one CI tests) wins over the checkout.
sys.path.append(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from fuzz import common  # noqa: E402

# The regex walk and the table builder are the reference: their coverage steers.
with common.instrumented_imports(__name__ == "__main__", dataflow=False):
    from sfcheck.format import constants as C
    from sfcheck.walk.fast import regex_verdicts
    from sfcheck.walk.fre_patterns import _cfa_classes, pattern_abi, walk_spec


class Choices(Protocol):
    def randrange(self, n: int) -> int: ...


class FromBytes:
    """Choices read from a fuzzer's bytes (0 once they run out)."""

    def __init__(self, data: bytes) -> None:
        import atheris
        self.fdp = atheris.FuzzedDataProvider(data)

    def randrange(self, n: int) -> int:
        return self.fdp.ConsumeIntInRange(0, n - 1) if n > 1 else 0


@dataclass
class Case:
    data: bytes
    walk_from: list[int]
    ends: list[int]
    types: bytes
    nfs: list[int]
    sizes: list[int]
    bad: bytearray
    abi: int
    version: int
    big: bool
    fixed: int


ABIS = (C.ABI_AMD64_LE, C.ABI_AARCH64_LE, C.ABI_AARCH64_BE, C.ABI_S390X_BE)


def _edges(cls: list[int]) -> list[int]:
    """Byte values at and beside the ends of a class (and 0, 0xff)."""
    out = {0, 0xFF}
    for v in cls[:1] + cls[-1:]:
        out.update(b & 0xFF for b in (v - 1, v, v + 1))
    return sorted(out)


def _word(r: Choices, w: int, abi: int, big: bool) -> bytes:
    """A data word, its low and top bytes mostly on the CFA classes' edges."""
    if r.randrange(4) == 0:
        return bytes(r.randrange(256) for _ in range(w))
    low, top, neg = _cfa_classes(w, abi)
    lows = _edges(low) + _edges(neg)
    b = [lows[r.randrange(len(lows))]]
    if w > 1:
        fill = (0, 0xFF, r.randrange(256))[r.randrange(3)]
        b += [fill] * (w - 2)
        tops = _edges(top) + [0xFF]
        b.append(fill if r.randrange(4) == 0 else tops[r.randrange(len(tops))])
    return bytes(reversed(b)) if big else bytes(b)


def make_case(r: Choices) -> Case:
    abi = pattern_abi(ABIS[r.randrange(4)] if r.randrange(4) else r.randrange(256))
    version, big, fixed = 1 + r.randrange(3), bool(r.randrange(2)), r.randrange(3)
    spec = walk_spec(abi, version, big, fixed)
    accepted = [i for i in range(256) if spec[i]]
    order = "big" if big else "little"
    data = bytearray(r.randrange(256) for _ in range(r.randrange(4)))
    walk_from: list[int] = []
    ends: list[int] = []
    types = bytearray()
    nfs: list[int] = []
    sizes: list[int] = []
    for _ in range(r.randrange(7)):
        t = (0, 1, 2, 0, 1, 2, 255, r.randrange(256))[r.randrange(8)]
        asz = {1: 2, 2: 4}.get(t, 1)
        block = bytearray()
        k = r.randrange(5)
        start = 0 if r.randrange(6) else r.randrange(3)
        for j in range(k):
            if j:  # strictly increasing, mostly; else equal or decreasing
                start += 1 + r.randrange(3) if r.randrange(6) else -r.randrange(2)
            start %= 1 << (8 * asz)
            info = accepted[r.randrange(len(accepted))] if accepted and r.randrange(6) \
                else r.randrange(256)
            w = C.WORD_SIZE.get(info >> C.FRE_INFO_SIZE_SHIFT & 3, 1)
            block += start.to_bytes(asz, order) + bytes([info])
            for _ in range((info & C.FRE_INFO_COUNT) >> 1):
                block += _word(r, w, abi, big)
        cut = r.randrange(10)
        if cut == 0 and block:  # truncated
            del block[-1 - r.randrange(min(3, len(block))):]
        elif cut == 1:  # a byte too many
            block.append(r.randrange(256))
        walk_from.append(len(data))
        data += block
        ends.append(len(data))
        nfs.append(max(0, k + (0 if r.randrange(4) else r.randrange(3) - 1)))
        sizes.append(max(0, start + 1 + (0 if r.randrange(3) else r.randrange(3) - 1)))
        types.append(t)
    data += bytes(r.randrange(256) for _ in range(r.randrange(3)))
    for i in range(len(ends)):  # bounds the caller would have rejected, and odd ones
        pick = r.randrange(16)
        if pick == 0:
            ends[i] = len(data) + r.randrange(4)
        elif pick == 1:
            walk_from[i] = ends[i] + 1 + r.randrange(3)
        elif pick == 2:
            ends[i] = max(0, ends[i] - 1)
    bad = bytearray(int(r.randrange(5) == 0) for _ in ends)
    return Case(bytes(data), walk_from, ends, bytes(types), nfs, sizes, bad, abi, version,
                big, fixed)


def load_frewalk() -> ModuleType | None:
    """The C walk: the build named by SFCHECK_FREWALK_SO, else the installed one."""
    built = common.load_extension("SFCHECK_FREWALK_SO", "sfcheck.walk._frewalk")
    if built is not None:
        return built
    try:
        from sfcheck.walk import _frewalk
    except ImportError:
        return None
    return _frewalk


def both(c: Case, frewalk: ModuleType) -> tuple[bytearray, bytearray]:
    """`bad` after the C walk and after the regex walk, from the same start."""
    fast, ref = bytearray(c.bad), bytearray(c.bad)
    frewalk.verdicts(c.data, c.walk_from, c.ends, c.types, c.nfs, c.sizes, fast,
                     walk_spec(c.abi, c.version, c.big, c.fixed))
    regex_verdicts(c.data, c.walk_from, c.ends, c.types, c.nfs, c.sizes, ref, c.abi,
                   c.version, c.big, c.fixed)
    return fast, ref


FREWALK = load_frewalk() if __name__ == "__main__" else None


def test_one_input(data: bytes) -> None:
    assert FREWALK is not None
    c = make_case(FromBytes(data))
    fast, ref = both(c, FREWALK)
    assert fast == ref, f"C walk {list(fast)} != regex walk {list(ref)} on {c}"


def _instrument() -> None:
    """Coverage of the generator and of the reference walk's Python steers the fuzzer (the
    C module is not instrumented: gcc has no libFuzzer coverage)."""
    import atheris

    from sfcheck.walk import fast
    g = globals()
    for name in ("make_case", "_word", "_edges", "regex_verdicts"):
        g[name] = atheris.instrument_func(g[name])
    fast._check_starts = atheris.instrument_func(fast._check_starts)


if __name__ == "__main__":
    if FREWALK is None:
        sys.exit("sfcheck.walk._frewalk is not built (pip install -e . with a C compiler)")
    _instrument()
    common.run("frewalk", test_one_input)
