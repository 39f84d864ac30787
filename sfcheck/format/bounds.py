"""Bounds on the FRE sub-section, each stated once: the decoder, the FRE-block walk
(fre_blocks.py) and the section walk (sfcheck/walk/) apply these functions, and
rules/layout.py reports under them (layout-fde-fres-bounds, layout-fre-overlap).

The fast walks (fre_blocks.py's tokens, walk/fast.py's regex walk, walk/_frewalk.c) take a
block only when it splits into exactly its FDE's FREs; tests/test_walk_paths.py holds
each such form to the function here it stands in for. The FRE-start predicates at the end
are the start rules of rules/fre.py, here so the cross-check's row reader shares them."""

from __future__ import annotations

from collections.abc import Sequence
from itertools import repeat
from operator import ge, gt, le, or_, truth


def over_budget(walked: int, fre_len: int) -> bool:
    """FRE blocks walked so far (`walked` bytes) use more than the FRE sub-section: blocks
    alias. A valid section uses each FRE byte once, so a walk stops here rather than let
    a small section make it build num_fdes * num_fres rows."""
    return walked > fre_len


def block_starts_within(fre_off: int, attr: int, fre_len: int) -> bool:
    """An FDE's FRE block, `fre_off` bytes into the FRE sub-section and led by an `attr`-byte
    attribute record (v3: 5, else 0), starts inside the sub-section's fre_len bytes (an
    empty block may start at its end). block_within of the walk start against the FRE data
    end implies it."""
    return fre_off + attr <= fre_len


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
    """The fewest bytes `count` FREs with `asz`-byte starts take: each has its start address
    and info byte, data words being optional."""
    return count * (asz + 1)


def fres_fit(count: int, asz: int, first: int, end: int) -> bool:
    """An FDE's `count` FREs (its num_fres) can lie in [first, end). The decoder asks this of
    the FRE data left before it reads one FRE, so a count no bytes back never drives a loop
    (layout-fde-fres-bounds); a fast walk that found exactly `count` FREs in the block has
    this for free."""
    return min_fres_len(count, asz) <= end - first


# The FRE-start rules (rules/fre.py: fre-start-order, fre-first-start, the start-range rules),
# each stated once, as operator functions so that the fast path (walk/fast.py) maps them over
# whole tables at C speed; the C walk (walk/_frewalk.c) states them again in C and
# tests/test_walk_paths.py runs every case through all three.
start_out_of_order = ge  # (prev, start): fre-start-order fires, start <= prev
first_start_off = truth  # (first start): fre-first-start fires, start != 0
start_past = ge  # (start, limit): a start-range rule fires (limit: fde.size, or rep_size)
