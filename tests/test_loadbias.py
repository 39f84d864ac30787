"""sfcheck.loadbias: the bias of a file mapped several times (proc and unwind share it)."""

from __future__ import annotations

from sfcheck.loadbias import Mapped, Segment, load_bias

# A PIE's PT_LOADs (vaddr, file offset): R at 0, R E at 0x1000, R at 0x2000, RW at 0x3db0.
SEGS = [Segment(0, 0), Segment(0x1000, 0x1000), Segment(0x2000, 0x2000),
        Segment(0x3DB0, 0x2DB0)]
B = 0x555555554000
LOADER = [Mapped(B, B + 0x1000, 0), Mapped(B + 0x1000, B + 0x2000, 0x1000),
          Mapped(B + 0x2000, B + 0x3000, 0x2000), Mapped(B + 0x3000, B + 0x5000, 0x2000)]


def test_plain_mapping() -> None:
    assert load_bias(SEGS, LOADER) == B


def test_stray_first_page_elsewhere_does_not_win() -> None:
    for stray in (0x10000, B + 0x100000):  # lower and higher than the loader's
        assert load_bias(SEGS, [Mapped(stray, stray + 0x1000, 0), *LOADER]) == B


def test_tie_goes_to_prefer_then_lowest() -> None:
    """Two whole copies: AT_ENTRY's choice, else the lowest."""
    other = [Mapped(m.start + 0x1000000, m.end + 0x1000000, m.offset) for m in LOADER]
    assert load_bias(SEGS, other + LOADER) == B
    assert load_bias(SEGS, LOADER + other, prefer=B + 0x1000000) == B + 0x1000000


def test_first_page_unlisted_uses_the_next_segment() -> None:
    assert load_bias(SEGS, LOADER[1:]) == B
    assert load_bias(SEGS, []) is None and load_bias([], LOADER) is None
