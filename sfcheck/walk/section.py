"""The structural check of one SFrame section: the reference pass over header, layout,
FDEs and FREs, driving the checks that live beside their rules (header.py, layout.py,
fde.py, fre.py).

One pass, bounded by the bytes present: only FDE records that exist are read,
and each FDE's FREs are walked through the decoder, which checks every count
against the FRE sub-section before looping. fast.Table only decides which
runs of FDEs this pass would accept silently; it never emits (`fast=False` runs
the reference alone, tests/test_fastpath_equivalence.py compares the two).
"""

from __future__ import annotations

import gc
from array import array
from collections.abc import Iterator
from contextlib import contextmanager
from itertools import accumulate
from operator import sub

from ..errors import DecodeError
from ..format import constants
from ..format.bounds import over_budget
from ..format.decode import Decoder
from ..format.fde_table import block_ends_distinct
from ..format.layout import fre_size
from ..format.model import FRE, Header
from ..rules import fde as fde_rules
from ..rules import fre as fre_rules
from ..rules import header as header_rules
from ..rules import layout as layout_rules
from .context import SectionContext
from .fast import Table, TableSource


def check_section(ctx: SectionContext, fast: bool = True) -> Header | None:
    """Run every structural rule; returns the header when it could be read. `fast=False`
    checks every FDE on the reference path (the findings are the same)."""
    h = header_rules.read_header(ctx)
    if h is None:
        return None
    header_rules.check_header(ctx, h)
    if h.num_fdes > NO_GC_MIN:
        with no_gc():
            _walk(ctx, h, fast)
    else:
        _walk(ctx, h, fast)
    return h


NO_GC_MIN = 1024  # FDEs: below this the pass allocates too little for the collector to matter


@contextmanager
def no_gc() -> Iterator[None]:
    """Pause the cyclic garbage collector: the pass allocates one list or tuple per FDE and
    creates no reference cycles, and collections triggered by those allocations would
    rescan every object made so far (2-3x the time of a 100k-FDE check)."""
    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was:
            gc.enable()


def _walk(ctx: SectionContext, h: Header, fast: bool) -> None:
    readable = layout_rules.check_layout(ctx, h)
    dec = Decoder(ctx.input.data, h)
    walk = _Walk(field_relative=h.pcrel or ctx.input.relocatable,
                 complete=readable == h.num_fdes)
    if readable:
        _walk_fdes(ctx, h, dec, readable, walk, fast)
    if walk.complete:
        layout_rules.check_totals(ctx, h, walk.total_fres, walk.walked)
    # walk.walked sums what format.fre_blocks charges per FDE ([first, end of last FRE)), so
    # within fre_len its budget is never exceeded either.
    ctx.pass_state.fres_walked = walk.complete and not over_budget(walk.walked, h.fre_len)
    ranges = [] if ctx.input.relocatable else ctx.pass_state.ranges
    layout_rules.check_overlaps(ctx, walk.blocks, ranges, walk.next_start)
    layout_rules.check_trailing(ctx, h)


class _Walk:
    """State of the pass over the FDEs, shared by the fast path and the exact one."""

    __slots__ = ("field_relative", "complete", "total_fres", "walked", "prev_pc", "blocks",
                 "next_start")

    def __init__(self, field_relative: bool, complete: bool) -> None:
        self.field_relative = field_relative
        self.complete = complete
        self.total_fres = self.walked = 0
        self.prev_pc: int | None = None
        self.blocks = layout_rules.Blocks()
        # Per FDE, the next greater block start when no two FDEs share one (else None):
        # layout_rules.Blocks.disjoint.
        self.next_start: array | None = None


CHUNK = 1 << 15  # FDEs per Table: its working lists stay small whatever the table size
# Below this many FDEs the exact path alone is cheaper than setting up a Table (and
# compiling its patterns): many small sections, e.g. under the fuzzer.
FAST_MIN = 16


def _walk_fdes(ctx: SectionContext, h: Header, dec: Decoder, readable: int, walk: _Walk,
               fast: bool) -> None:
    """Check FDEs 0..readable-1 and their FREs, in table order.

    fast.Table reads the FDE table column-wise, CHUNK FDEs at a time, and
    walks every FRE block (one regex call per FDE, or the optional C walk that gives the
    same verdicts: fast.FREWALK), all in C-level calls; it accepts only
    FDEs that provably have no finding. Runs of accepted FDEs are booked in bulk;
    every other FDE goes through _exact_fde, which emits. Both update the same _Walk,
    so findings come out exactly as from _exact_fde alone
    (tests/test_fastpath_equivalence.py).
    """
    # Where each block ends: at the next block by offset (kept for the cross-check's walk).
    # In table order (what linkers mostly write) that is the next FDE's; gcc's .cold parts
    # put blocks out of table order, which the fast path then walks too instead of sending
    # them to _exact_fde.
    by_offset, distinct = block_ends_distinct(ctx.input.data, h, readable, dec.fre_limit)
    ctx.pass_state.block_ends = by_offset
    if distinct:
        walk.next_start = by_offset
    if readable < FAST_MIN or not fast:
        for i in range(readable):
            _exact_fde(ctx, h, dec, i, walk)
        return
    check_order = h.sorted and not ctx.input.relocatable
    prev_pc: int | None = None
    prev_out_of_bounds = False
    source = TableSource(ctx.input.data, h, readable, dec.fre_limit, ctx.input.vma,
                         walk.field_relative, check_order)
    for a in range(0, readable, CHUNK):
        b = min(readable, a + CHUNK)
        tab = Table(source, a, b, prev_pc, prev_out_of_bounds,
                    None if by_offset is None else by_offset[a:b])
        prev_pc, prev_out_of_bounds = tab.pcs[-1], tab.prev_out_of_bounds
        bad = tab.bad
        pcs, sizes, fre_counts = tab.pcs, tab.size_col, tab.fre_counts
        firsts, ends = tab.firsts, tab.ends
        # walked[k]: bytes of blocks 0..k-1 of this chunk (blocks need not be adjacent)
        walked = [0, *accumulate(map(sub, ends, firsts))]
        i = 0
        n = b - a
        while i < n:
            j = bad.find(1, i)
            if j < 0:
                j = n
            if i < j:  # FDEs a+i..a+j-1 are clean
                # _exact_fde's bound, tested before each FDE: before the run's last one
                if over_budget(walk.walked + walked[j - 1] - walked[i], h.fre_len):
                    for k in range(i, j):  # the budget runs out inside: exact, one by one
                        _exact_fde(ctx, h, dec, a + k, walk)
                else:
                    # slices: an array slice (ends, sizes) extends an array as one copy
                    walk.blocks.extend(a + i, firsts[i:j], ends[i:j])
                    ctx.pass_state.ranges.extend(a + i, pcs[i:j], sizes[i:j])
                    walk.prev_pc = pcs[j - 1]
                    walk.total_fres += sum(fre_counts[i:j])
                    walk.walked += walked[j] - walked[i]
            if j < n:
                _exact_fde(ctx, h, dec, a + j, walk)
            i = j + 1


def _exact_fde(ctx: SectionContext, h: Header, dec: Decoder, i: int, walk: _Walk) -> None:
    """FDE i and its FREs through the decoder, emitting every finding."""
    off = dec.fde_offset(i)
    try:
        fde = dec.fde(i, with_fres=False)
    except DecodeError as exc:
        ctx.emit(layout_rules.FDE_FRES_BOUNDS, exc.message, offset=exc.offset, fde=i)
        walk.complete = False
        return
    # Objects carry PC-relative relocations on the start field whatever the flags say
    # (the cause of ld/32666), so after relocation their starts are field-relative.
    pc = h.func_start(i, fde.start, ctx.input.vma, field_relative=walk.field_relative)
    loc = {"offset": off, "fde": i, "pc": pc}
    ctx.pass_state.ranges.add(pc, fde.size, i)
    prev_pc = walk.prev_pc
    if (h.sorted and prev_pc is not None and fde_rules.out_of_order(prev_pc, pc)
            and not ctx.input.relocatable and not ctx.counts[fde_rules.UNSORTED.id]):
        ctx.emit(fde_rules.UNSORTED, f"function start {pc:#x} is below the previous FDE's "
                 f"{prev_pc:#x}", **loc)
    walk.prev_pc = pc
    fde_rules.check_fde(ctx, h, fde, loc)
    walk.total_fres += fde.num_fres
    first = h.fres_start + fde.fre_off
    if over_budget(walk.walked, h.fre_len):  # aliasing blocks: stop before the work outgrows it
        if not ctx.counts[layout_rules.FRE_OVERLAP.id]:
            ctx.emit(layout_rules.FRE_OVERLAP, f"FRE blocks up to FDE {i} use more than the "
                     f"{h.fre_len:#x}-byte FRE sub-section; FREs of later FDEs not "
                     "walked", offset=first, fde=i)
        walk.complete = False
        return
    end = first + (constants.V3_ATTR_SIZE if h.version == constants.VERSION_3 else 0)
    fre_type = fde.info & constants.FDE_INFO_FRE_TYPE
    fres: list[FRE] = []
    try:
        # list.extend keeps the FREs read before a DecodeError (C-level: no Python loop).
        fres.extend(dec.iter_fres(i, fre_type, fde.num_fres, end))
        if fres:
            end = fres[-1].offset + fre_size(fres[-1], fre_type)
    except DecodeError as exc:
        walk.complete = False
        if exc.field == "fre_info":
            ctx.emit(fre_rules.SIZE_CODE, exc.message, offset=exc.offset, fde=i, pc=pc,
                     fre=len(fres))
        elif exc.field != "info":  # an FRE type > 2 is reported by fde-fre-type
            ctx.emit(layout_rules.FDE_FRES_BOUNDS, exc.message, offset=exc.offset, fde=i, pc=pc)
    else:
        walk.blocks.add(first, end, i)
        walk.walked += end - first
    if fres:
        fre_rules.check_fres(ctx, h, fde, fres, pc, loc)
