"""Text coverage: which executable bytes no SFrame FDE describes.

A profiler that unwinds with SFrame alone (the kernel's user unwinder, glibc's backtrace)
cannot unwind a sample taken in code without an FDE: it falls back to frame pointers or
stops. The section can be perfectly valid and still cover little of the text (gas skips
functions it cannot describe; hand-written assembly, PLT stubs, crt code have no CFI), so
this is information, reported per PF_X segment: the uncovered ranges, their bytes and the
share of the segment.
"""

from __future__ import annotations

from itertools import accumulate, compress, islice, repeat
from operator import add, gt, itemgetter, le, lt

from ..elf import ElfSFrameInfo
from .context import SectionContext
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


def _plain(ranges: list[tuple[int, int, int]], hi: int) -> bool:
    """Every range has a positive size and starts below `hi` (nothing to leave out)."""
    return (all(map(gt, map(itemgetter(1), ranges), repeat(0)))
            and all(map(lt, map(itemgetter(0), ranges), repeat(hi))))


def check_text_coverage(ctx: SectionContext, info: ElfSFrameInfo) -> None:
    if info.e_type not in ("ET_EXEC", "ET_DYN") or ctx.relocatable:
        return
    for seg in info.load_segments:
        if not seg.flags & 1 or not seg.memsz:
            continue
        lo, hi = seg.vaddr, seg.vaddr + seg.memsz
        gaps = uncovered(lo, hi, ctx.ranges)
        missing = sum(b - a for a, b in gaps)
        if not missing:
            continue
        shown = ", ".join(f"[{a:#x}, {b:#x})" for a, b in gaps[:MAX_LISTED])
        more = f" and {len(gaps) - MAX_LISTED} more" if len(gaps) > MAX_LISTED else ""
        ctx.emit(COVERAGE, f"PT_LOAD[{seg.index}] [{lo:#x}, {hi:#x}): {missing} of "
                 f"{hi - lo} executable byte(s) ({100 * missing / (hi - lo):.1f}%) in "
                 f"{len(gaps)} range(s) no FDE covers: {shown}{more}")
