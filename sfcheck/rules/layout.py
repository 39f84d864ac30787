"""Layout rules: where the sub-sections are, and whether the counts add up.

The declarations and their checks: `check_layout` (the sub-sections against the
section, before any FDE is read), `check_totals` (the FDEs' counts against the
header, after the walk), `check_overlaps` and `check_trailing`. walk/section.py
runs them in that order.
"""

from __future__ import annotations

from array import array
from collections.abc import Sequence
from itertools import islice
from operator import add, itemgetter, le

from ..format import constants
from ..format.model import Header
from ..walk.columns import FdeColumns
from ..walk.context import Ranges
from ..wording import plural
from . import fde as fde_rules
from .registry import MODEL_ONLY, PROFILE_ONLY, rule

READER_OFFSETS = rule(
    "layout-offsets-ignored", "layout", "error", "reader assumes the canonical layout",
    f"""glibc 2.42 places the FDE array right after the header and the FREs right after the
    FDE array, ignoring sfh_fdeoff and sfh_freoff; LLVM 22 ignores sfh_freoff the same way.
    Any other layout is valid SFrame but makes these readers read the wrong bytes.
    {PROFILE_ONLY}""",
    "Write fdeoff = 0 and freoff = num_fdes * FDE size, as gas and ld do.")
MODEL_PAST = rule(
    "layout-reader-past", "layout", "error", "reader reads outside the section",
    f"""The reader trusts a count or offset and reads bytes outside the section (it knows
    no section size). {MODEL_ONLY}""",
    "Keep every count and offset inside the section.")
FDEOFF_AFTER_FREOFF = rule(
    "layout-fdeoff-after-freoff", "layout", "error", "FDE sub-section starts after the FREs",
    """sfh_fdeoff must not exceed sfh_freoff: the FDE array comes first. This is the only layout
    check libsframe makes (sframe_header_sanity_check_p).""",
    "Write fdeoff = 0 and freoff = num_fdes * FDE size, as gas and ld do.")
FDE_ARRAY_BOUNDS = rule(
    "layout-fde-array-bounds", "layout", "error", "FDE array runs past the end of the section",
    """header + fdeoff + num_fdes * FDE size must fit in the section. libsframe does not check
    this for native-endian input and over-reads the heap (binutils 2.46 libsframe/sframe.c,
    sframe_decode; reproduced under ASan).""",
    "Fix sfh_num_fdes or the section size; the section is truncated or the count is wrong.")
FDE_ARRAY_OVERLAP = rule(
    "layout-fde-array-overlap", "layout", "error", "FDE array runs into the FRE sub-section",
    """fdeoff + num_fdes * FDE size must not exceed freoff, or FDE records and FREs share
    bytes. The kernel requires fres_start >= fdes_end (sframe_read_header in
    kernel/unwind/sframe.c of the V3 kernel series, v13: lkml.iu.edu/2602.1/04596.html).""",
    "Lay the FDE array out before the FRE sub-section (freoff = fdeoff + num_fdes * size).")
FRE_BOUNDS = rule(
    "layout-fre-bounds", "layout", "error", "FRE sub-section runs past the end of the section",
    """header + freoff + fre_len must fit in the section. libsframe copies fre_len bytes
    without comparing with the section size (an over-read; binutils 2.46 libsframe/sframe.c,
    sframe_decode).""",
    "Fix sfh_fre_len / sfh_freoff, or the section size.")
FDEOFF_NONZERO = rule(
    "layout-fdeoff-nonzero", "layout", "warning", "FDE sub-section does not start at offset 0",
    """gas and ld always write fdeoff = 0. libsframe computes PC-relative function starts as if
    it were 0 (sframe_decoder_get_offsetof_fde_start_addr ignores it), so objdump and every
    libsframe user get every function address wrong by fdeoff.""",
    "Write the FDE array right after the header (fdeoff = 0).")
FDE_FRES_BOUNDS = rule(
    "layout-fde-fres-bounds", "layout", "error", "an FDE's FREs lie outside the FRE sub-section",
    """Each FDE's FREs (and in v3 its 5-byte attribute record) must lie inside the fre_len bytes
    of the FRE sub-section. libsframe reads them without a bounds check (a SEGV or over-read
    for the v3 attribute, sframe.c sframe_fde_tbl_init).""",
    "Fix the FDE's start_fre_off / num_fres, or fre_len.")
NUM_FRES = rule(
    "layout-num-fres", "layout", "error", "sum of per-FDE FRE counts differs from sfh_num_fres",
    """sfh_num_fres counts every FRE in the section. libsframe checks the sum only on its
    byte-swapping path; native readers trust each FDE's count, so a mismatch means one of the
    counts is wrong.""",
    "Make sfh_num_fres the sum of the FDEs' num_fres.")
FRE_LEN = rule(
    "layout-fre-len", "layout", "error", "FRE bytes used differ from sfh_fre_len",
    """The attribute records and FREs of all FDEs must use exactly fre_len bytes. Unused bytes
    hide data no reader sees; a shortfall means FREs run into whatever follows.""",
    "Make sfh_fre_len the size of all FRE blocks.")
FRE_OVERLAP = rule(
    "layout-fre-overlap", "layout", "error", "FRE blocks of two FDEs overlap",
    """Two FDEs whose FREs share bytes give both functions the same (or shifted) rows. No
    reader checks this: neither libsframe 2.46 (libsframe/sframe.c), glibc 2.43
    (sysdeps/generic/sframe-read.c) nor the kernel V3 series (kernel/unwind/sframe.c) checks
    it.""",
    "Give each FDE its own FRE block.")
TRAILING = rule(
    "layout-trailing-bytes", "layout", "error", "nonzero bytes after the SFrame data",
    """Only zero padding may follow the FRE sub-section; libsframe's byte-swapping path
    rejects anything else. Nonzero bytes are often a second SFrame section concatenated by a
    linker that does not merge (lld, mold, zig).""",
    "Remove the extra bytes, or merge the sections properly.")
GAP_BYTES = rule(
    "layout-gap-bytes", "layout", "error", "nonzero bytes between the header, FDEs and FREs",
    """With a nonzero sfh_fdeoff, or an FRE sub-section that starts after the end of the FDE
    array, the bytes in between belong to no structure. Readers skip them (glibc and LLVM even
    assume there are none and read the FDEs or FREs from the wrong place); nonzero bytes there
    are data some tool wrote that no reader sees, and a decoder that re-encodes the section
    loses them.""",
    "Write sfh_fdeoff = 0 and put the FREs right after the FDE array (what gas and ld do).")
EMPTY = rule(
    "layout-no-fdes", "layout", "info", "section has no FDEs",
    """A section without FDEs covers no code. The kernel refuses to register one
    (num_fdes != 0 && num_fres != 0 is required by sframe_read_header in
    kernel/unwind/sframe.c of the V3 kernel series, v13: lkml.iu.edu/2602.1/04596.html).""",
    "Nothing to do if the file really has no code with CFI.")


def check_layout(ctx, h: Header) -> int:
    """The sub-sections against the section; returns how many FDE records exist."""
    size = len(ctx.data)
    n = h.num_fdes
    fdes_end = h.fdes_end
    if h.fdeoff > h.freoff:
        ctx.emit(FDEOFF_AFTER_FREOFF, f"fdeoff {h.fdeoff:#x} > freoff {h.freoff:#x}",
                 offset=0x14)
    if h.fdeoff:
        ctx.emit(FDEOFF_NONZERO, f"fdeoff is {h.fdeoff:#x}; libsframe-based readers compute "
                 f"every PC-relative function start {h.fdeoff:#x} bytes off", offset=0x14)
    readable = n
    if fdes_end > size:
        readable = max(0, (size - h.fdes_start) // h.fde_size)
        ctx.emit(FDE_ARRAY_BOUNDS, f"{n} FDEs of {h.fde_size} bytes end at {fdes_end:#x}, "
                 f"the section has {size:#x} bytes ({plural(readable, 'FDE')} readable)", offset=8)
    elif h.fdeoff <= h.freoff and fdes_end > h.fres_start:
        ctx.emit(FDE_ARRAY_OVERLAP, f"FDE array ends at {fdes_end:#x}, FRE sub-section starts "
                 f"at {h.fres_start:#x}", offset=0x18)
    if h.fres_end > size:
        ctx.emit(FRE_BOUNDS, f"FRE sub-section [{h.fres_start:#x}, {h.fres_end:#x}) "
                 f"ends past the section's {size:#x} bytes", offset=0x10)
    if n == 0:
        ctx.emit(EMPTY, "num_fdes is 0", offset=8)
    _check_gaps(ctx, h, fdes_end, size)
    return readable


def check_totals(ctx, h: Header, total_fres: int, walked: int) -> None:
    """After a complete walk: the FDEs' FRE counts and bytes against the header."""
    if total_fres != h.num_fres:
        ctx.emit(NUM_FRES, f"FDEs hold {plural(total_fres, 'FRE')}, the header says {h.num_fres}",
                 offset=0x0C)
    if walked != h.fre_len and h.fres_end <= len(ctx.data):
        ctx.emit(FRE_LEN, f"FRE blocks use {walked:#x} bytes, sfh_fre_len is "
                 f"{h.fre_len:#x}", offset=0x10)


def check_trailing(ctx, h: Header) -> None:
    end = h.data_end
    tail = ctx.data[end:]
    if tail.strip(b"\0"):
        first = end + next(k for k, b in enumerate(tail) if b)
        ctx.emit(TRAILING, f"{plural(len(tail), 'byte')} after the SFrame data, nonzero from "
                 f"{first:#x}" + (" (another SFrame section?)"
                                  if ctx.data[first:first + 2] in (constants.MAGIC_LE,
                                                                   constants.MAGIC_BE)
                                  else ""), offset=first)


class Blocks(FdeColumns):
    """The FRE blocks walked, [first, end) of each FDE, in table order: a toolchain's table
    is checked without building a tuple per block (check_overlaps)."""

    __slots__ = ()

    @property
    def firsts(self) -> array | list[int]:
        return self._a

    @property
    def ends(self) -> array | list[int]:
        return self._b

    def disjoint(self, next_start: Sequence[int] | None) -> bool:
        """True when no two blocks share a byte, by C-level tests that need no sort: each
        block ends before the next in table order (what linkers write), or before
        next_start[fde], the next greater block start of all FDEs (gcc's .cold blocks lie
        out of table order). next_start is only valid when no two FDEs share a start.
        False: undecided (the caller sorts)."""
        firsts, ends = self.firsts, self.ends
        if all(map(le, ends, islice(firsts, 1, None))):
            return True
        if next_start is None:
            return False
        nxt = next_start if self.fdes is None else map(next_start.__getitem__, self.fdes)
        return all(map(le, ends, nxt))

    def tuples(self) -> list[tuple[int, int, int]]:
        """(first, end, fde) per block, sorted: for the pairwise overlap test."""
        fdes = range(len(self.firsts)) if self.fdes is None else self.fdes
        return sorted(zip(self.firsts, self.ends, fdes, strict=True))


def check_overlaps(ctx, blocks: Blocks, ranges: Sequence[tuple[int, int, int]],
                   next_start: Sequence[int] | None = None) -> None:
    """FRE blocks sharing bytes; function ranges (pc, size, fde) sharing PCs (fde-overlap:
    a table-wide FDE rule, checked here with the blocks). `next_start`: see
    Blocks.disjoint."""
    spans = [] if blocks.disjoint(next_start) else blocks.tuples()
    for (s1, e1, i1), (s2, _e2, i2) in zip(spans, spans[1:], strict=False):
        if s2 < e1:
            ctx.emit(FRE_OVERLAP, f"FRE blocks of FDE {i1} [{s1:#x}, {e1:#x}) and FDE {i2} "
                     f"(from {s2:#x}) overlap", offset=s2, fde=i2)
    ranges = [] if _in_order(ranges) else sorted(r for r in ranges if r[1] > 0)
    for (p1, z1, i1), (p2, _z2, i2) in zip(ranges, ranges[1:], strict=False):
        if p2 < p1 + z1:
            ctx.emit(fde_rules.OVERLAP, f"function [{p2:#x}, ...) of FDE {i2} starts inside "
                     f"FDE {i1}'s [{p1:#x}, {p1 + z1:#x})", fde=i2, pc=p2)


def _in_order(ranges: Sequence[tuple[int, int, int]]) -> bool:
    """True when each (pc, size, fde) range, in table order, ends at or before the next one
    starts; then sorting them finds no overlap either. C-level, over the columns of a
    Ranges, so a clean 100k-FDE table is not sorted and compared pair by pair."""
    if len(ranges) < 2:
        return True
    if isinstance(ranges, Ranges):
        pcs, sizes = ranges.pcs, ranges.sizes
    else:
        pcs, sizes = list(map(itemgetter(0), ranges)), map(itemgetter(1), ranges)
    return all(map(le, map(add, pcs, sizes), islice(pcs, 1, None)))


def _check_gaps(ctx, h: Header, fdes_end: int, size: int) -> None:
    """Bytes between the header and the FDE array, or the FDE array and the FREs, belong
    to nothing: zero padding is harmless, anything else is data no reader sees."""
    gaps = [(h.size, min(h.fdes_start, size))]
    if fdes_end <= h.fres_start:
        gaps.append((fdes_end, min(h.fres_start, size)))
    for a, b in gaps:
        chunk = ctx.data[a:b]
        if chunk.strip(b"\0"):
            first = a + next(k for k, x in enumerate(chunk) if x)
            ctx.emit(GAP_BYTES, f"{plural(b - a, 'byte')} in [{a:#x}, {b:#x}) belong to no header, "
                     f"FDE or FRE, nonzero from {first:#x}", offset=first)
