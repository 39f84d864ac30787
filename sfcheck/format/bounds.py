"""Bounds on the FRE sub-section, each stated once: the decoder, the FRE-block walk
(fre_blocks.py) and the section walk (sfcheck/walk/) apply these functions, and
rules/layout.py reports under them (layout-fde-fres-bounds, layout-fre-overlap)."""

from __future__ import annotations

from collections.abc import Sequence
from itertools import repeat
from operator import gt, le, or_


def over_budget(walked: int, fre_len: int) -> bool:
    """FRE blocks walked so far (`walked` bytes) use more than the FRE sub-section: blocks
    alias. A valid section uses each FRE byte once, so a walk stops here rather than let
    a small section make it build num_fdes * num_fres rows."""
    return walked > fre_len


def block_within(first: int, end: int, limit: int) -> bool:
    """An FRE block [first, end) (its walk start, and where the next block or the FRE data
    ends) is a real span inside the FRE sub-section that ends at `limit`."""
    return first <= end <= limit


def blocks_outside(firsts: Sequence[int], ends: Sequence[int], limit: int) -> bytes | None:
    """block_within over whole columns, in C-level calls: None when every block is within,
    else a 0/1 flag per block that is not (tests/test_walk_paths.py pins it to
    block_within)."""
    if all(map(le, firsts, ends)) and max(ends, default=limit) <= limit:
        return None
    return bytes(map(or_, map(gt, firsts, ends), map(gt, ends, repeat(limit, len(ends)))))


def min_fres_len(count: int, asz: int) -> int:
    """The fewest bytes `count` FREs with `asz`-byte starts take (no data words): a count
    that needs more than the FRE data left is rejected before any loop runs on it."""
    return count * (asz + 1)
