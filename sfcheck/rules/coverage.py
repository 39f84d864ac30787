"""Text coverage: which executable bytes no SFrame FDE describes.

A profiler that unwinds with SFrame alone (the kernel's user unwinder, glibc's backtrace)
cannot unwind a sample taken in code without an FDE: it falls back to frame pointers or
stops. The section can be perfectly valid and still cover little of the text (gas skips
functions it cannot describe; hand-written assembly, PLT stubs, crt code have no CFI), so
this is information, reported per PF_X segment: the uncovered ranges, their bytes and the
share of the segment.
"""

from __future__ import annotations

from collections.abc import Sequence
from itertools import accumulate, compress, islice, repeat
from operator import add, and_, gt, itemgetter, le, lt

from ..elf.model import ElfSFrameInfo
from ..record import NamedTuple
from ..walk.context import SectionContext, range_columns
from ..wording import plural
from .registry import rule

MAX_LISTED = 8  # ranges named in the message; the byte count covers all of them

COVERAGE = rule(
    "elf-text-coverage", "elf", "info", "executable bytes no FDE covers",
    """For each executable PT_LOAD segment, the bytes outside every FDE's [start, start +
    size): a sample taken there cannot be unwound with SFrame (the kernel falls back to
    frame pointers, glibc's backtrace to DWARF). Alignment padding between functions is
    counted too, so 100% is rare even for complete data; large or many ranges point to
    functions gas skipped or code without CFI.""",
    "Check gas's warnings for skipped FDEs; add CFI to hand-written assembly.")


def uncovered(lo: int, hi: int, ranges: list[tuple[int, int, int]]) -> list[tuple[int, int]]:
    """The parts of [lo, hi) outside every (pc, size, _) range.

    Walking the ranges by start, `at` (how far [lo, ...) is covered) is the running
    maximum of the ends so far, and a gap [at, pc) opens wherever a range starts past
    it: C-level passes (accumulate, compress) instead of a loop over 10^5 FDEs."""
    live = ranges if _plain(ranges, hi) else [r for r in ranges if r[1] > 0 and r[0] < hi]
    pcs = list(map(itemgetter(0), live))
    if not all(map(le, pcs, islice(pcs, 1, None))):
        live = sorted(live)
        pcs = list(map(itemgetter(0), live))
    ats = list(accumulate(map(add, pcs, map(itemgetter(1), live)), max, initial=lo))
    opens = list(map(gt, pcs, ats))  # ats[k]: covered up to here before range k
    out = list(zip(compress(ats, opens), compress(pcs, opens), strict=True))
    if ats[-1] < hi:
        out.append((ats[-1], hi))
    return out


class Gaps(NamedTuple):
    """What check_text_coverage reports of uncovered(): its byte total, how many ranges,
    the first `listed` of them."""
    missing: int
    count: int
    first: list[tuple[int, int]]


def gap_summary(lo: int, hi: int, ranges: Sequence[tuple[int, int, int]],
                listed: int) -> Gaps:
    """uncovered()'s total, count and first `listed` gaps, from the range columns without
    a tuple per gap (a large library has a gap between almost every two functions:
    ~900k tuples at 1M FDEs for a message that names 8)."""
    pcs, sizes = range_columns(ranges)
    if pcs and (min(sizes) <= 0 or max(pcs) >= hi):  # some range to leave out
        keep = bytes(map(and_, map(gt, sizes, repeat(0)), map(lt, pcs, repeat(hi))))
        pcs, sizes = list(compress(pcs, keep)), list(compress(sizes, keep))
    if not all(map(le, pcs, islice(pcs, 1, None))):
        pairs = sorted(zip(pcs, sizes, strict=True))
        pcs, sizes = list(map(itemgetter(0), pairs)), list(map(itemgetter(1), pairs))
    ats = list(accumulate(map(add, pcs, sizes), max, initial=lo))
    opens = bytes(map(gt, pcs, ats))  # as in uncovered(): a gap [ats[k], pcs[k])
    count = opens.count(1)
    missing = sum(compress(pcs, opens)) - sum(compress(ats, opens))
    first = list(islice(zip(compress(ats, opens), compress(pcs, opens), strict=True), listed))
    if ats[-1] < hi:  # the tail after the last range
        missing += hi - ats[-1]
        count += 1
        if len(first) < listed:
            first.append((ats[-1], hi))
    return Gaps(missing, count, first)


def _plain(ranges: list[tuple[int, int, int]], hi: int) -> bool:
    """Every range has a positive size and starts below `hi` (nothing to leave out)."""
    return (all(map(gt, map(itemgetter(1), ranges), repeat(0)))
            and all(map(lt, map(itemgetter(0), ranges), repeat(hi))))


def check_text_coverage(ctx: SectionContext, info: ElfSFrameInfo) -> tuple[int, int]:
    """Report the uncovered executable bytes; returns (executable bytes, uncovered bytes)
    over every PF_X segment, (0, 0) for an object (no segments yet)."""
    total = uncovered_total = 0
    if info.e_type not in ("ET_EXEC", "ET_DYN") or ctx.relocatable:
        return total, uncovered_total
    for seg in info.load_segments:
        if not seg.flags & 1 or not seg.memsz:
            continue
        lo, hi = seg.vaddr, seg.vaddr + seg.memsz
        missing, count, first = gap_summary(lo, hi, ctx.ranges, MAX_LISTED)
        total += hi - lo
        uncovered_total += missing
        if not missing:
            continue
        shown = ", ".join(f"[{a:#x}, {b:#x})" for a, b in first)
        more = f" and {count - MAX_LISTED} more" if count > MAX_LISTED else ""
        ctx.emit(COVERAGE, f"PT_LOAD[{seg.index}] [{lo:#x}, {hi:#x}): {missing} of "
                 f"{plural(hi - lo, 'executable byte')} ({100 * missing / (hi - lo):.1f}%) in "
                 f"{plural(count, 'range')} no FDE covers: {shown}{more}")
    return total, uncovered_total
