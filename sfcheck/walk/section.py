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
from ..format import constants as C
from ..format.decode import Decoder
from ..format.fde_table import block_ends_distinct
from ..format.layout import fre_size
from ..format.model import FRE, Header
from ..rules import fde as F
from ..rules import fre as R
from ..rules import header as H
from ..rules import layout as L
from .context import SectionContext
from .fast import Table


def check_section(ctx: SectionContext, fast: bool = True) -> Header | None:
    """Run every structural rule; returns the header when it could be read. `fast=False`
    checks every FDE on the reference path (the findings are the same)."""
    h = H.read_header(ctx)
    if h is None:
        return None
    H.check_header(ctx, h)
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
    readable = L.check_layout(ctx, h)
    dec = Decoder(ctx.data, h)
    st = _Walk(field_relative=h.pcrel or ctx.relocatable, complete=readable == h.num_fdes)
    if readable:
        _walk_fdes(ctx, h, dec, readable, st, fast)
    if st.complete:
        L.check_totals(ctx, h, st.total_fres, st.walked)
    # st.walked sums what format.fre_blocks charges per FDE ([first, end of last FRE)), so
    # within fre_len its budget is never exceeded either.
    ctx.fres_walked = st.complete and st.walked <= h.fre_len
    L.check_overlaps(ctx, st.blocks, [] if ctx.relocatable else ctx.ranges, st.next_start)
    L.check_trailing(ctx, h)


class _Walk:
    """State of the pass over the FDEs, shared by the fast path and the exact one."""

    __slots__ = ("field_relative", "complete", "total_fres", "walked", "prev_pc", "blocks",
                 "next_start")

    def __init__(self, field_relative: bool, complete: bool) -> None:
        self.field_relative = field_relative
        self.complete = complete
        self.total_fres = self.walked = 0
        self.prev_pc: int | None = None
        self.blocks = L.Blocks()
        # Per FDE, the next greater block start when no two FDEs share one (else None):
        # L.Blocks.disjoint.
        self.next_start: array | None = None


CHUNK = 1 << 15  # FDEs per Table: its working lists stay small whatever the table size
# Below this many FDEs the exact path alone is cheaper than setting up a Table (and
# compiling its patterns): many small sections, e.g. under the fuzzer.
FAST_MIN = 16


def _walk_fdes(ctx: SectionContext, h: Header, dec: Decoder, readable: int, st: _Walk,
               fast: bool) -> None:
    """Check FDEs 0..readable-1 and their FREs, in table order.

    fast.Table reads the FDE table column-wise, CHUNK FDEs at a time, and
    walks every FRE block (one regex call per FDE, or the optional C walk that gives the
    same verdicts: fast.FREWALK), all in C-level calls; it accepts only
    FDEs that provably have no finding. Runs of accepted FDEs are booked in bulk;
    every other FDE goes through _exact_fde, which emits. Both keep the same state,
    so findings come out exactly as from _exact_fde alone
    (tests/test_fastpath_equivalence.py).
    """
    # Where each block ends: at the next block by offset (kept for the cross-check's walk).
    # In table order (what linkers mostly write) that is the next FDE's; gcc's .cold parts
    # put blocks out of table order, which the fast path then walks too instead of sending
    # them to _exact_fde.
    by_offset, distinct = block_ends_distinct(ctx.data, h, readable, dec.fre_limit)
    ctx.block_ends = by_offset
    if distinct:
        st.next_start = by_offset
    if readable < FAST_MIN or not fast:
        for i in range(readable):
            _exact_fde(ctx, h, dec, i, st)
        return
    check_order = h.sorted and not ctx.relocatable
    prev_pc: int | None = None
    carry = False
    for a in range(0, readable, CHUNK):
        b = min(readable, a + CHUNK)
        tab = Table(ctx.data, h, a, b, readable, dec.fre_limit, ctx.vma, st.field_relative,
                    check_order, prev_pc, carry,
                    None if by_offset is None else by_offset[a:b])
        prev_pc, carry = tab.pcs[-1], tab.carry
        bad = tab.bad
        pcs, sizes, nfs, firsts, ends = tab.pcs, tab.size_col, tab.nfs, tab.firsts, tab.ends
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
                if st.walked + walked[j - 1] - walked[i] > h.fre_len:
                    for k in range(i, j):  # the budget runs out inside: exact, one by one
                        _exact_fde(ctx, h, dec, a + k, st)
                else:
                    # slices: an array slice (ends, sizes) extends an array as one copy
                    st.blocks.extend(a + i, firsts[i:j], ends[i:j])
                    ctx.ranges.extend(a + i, pcs[i:j], sizes[i:j])
                    st.prev_pc = pcs[j - 1]
                    st.total_fres += sum(nfs[i:j])
                    st.walked += walked[j] - walked[i]
            if j < n:
                _exact_fde(ctx, h, dec, a + j, st)
            i = j + 1


def _exact_fde(ctx: SectionContext, h: Header, dec: Decoder, i: int, st: _Walk) -> None:
    """FDE i and its FREs through the decoder, emitting every finding."""
    off = dec.fde_offset(i)
    try:
        fde = dec.fde(i, with_fres=False)
    except DecodeError as exc:
        ctx.emit(L.FDE_FRES_BOUNDS, exc.message, offset=exc.offset, fde=i)
        st.complete = False
        return
    # Objects carry PC-relative relocations on the start field whatever the flags say
    # (the cause of ld/32666), so after relocation their starts are field-relative.
    pc = h.func_start(i, fde.start, ctx.vma, field_relative=st.field_relative)
    loc = {"offset": off, "fde": i, "pc": pc}
    ctx.ranges.add(pc, fde.size, i)
    prev_pc = st.prev_pc
    if (h.sorted and prev_pc is not None and pc < prev_pc and not ctx.relocatable
            and not ctx.counts[F.UNSORTED.id]):
        ctx.emit(F.UNSORTED, f"function start {pc:#x} is below the previous FDE's "
                 f"{prev_pc:#x}", **loc)
    st.prev_pc = pc
    F.check_fde(ctx, h, fde, loc)
    st.total_fres += fde.num_fres
    first = h.fres_start + fde.fre_off
    if st.walked > h.fre_len:  # aliasing blocks: stop before the work outgrows the input
        if not ctx.counts[L.FRE_OVERLAP.id]:
            ctx.emit(L.FRE_OVERLAP, f"FRE blocks up to FDE {i} use more than the "
                     f"{h.fre_len:#x}-byte FRE sub-section; FREs of later FDEs not "
                     "walked", offset=first, fde=i)
        st.complete = False
        return
    end = first + (C.V3_ATTR_SIZE if h.version == C.VERSION_3 else 0)
    fre_type = fde.info & C.FDE_INFO_FRE_TYPE
    fres: list[FRE] = []
    try:
        # list.extend keeps the FREs read before a DecodeError (C-level: no Python loop).
        fres.extend(dec.iter_fres(i, fre_type, fde.num_fres, end))
        if fres:
            end = fres[-1].offset + fre_size(fres[-1], fre_type)
    except DecodeError as exc:
        st.complete = False
        if exc.field == "fre_info":
            ctx.emit(R.SIZE_CODE, exc.message, offset=exc.offset, fde=i, pc=pc,
                     fre=len(fres))
        elif exc.field != "info":  # an FRE type > 2 is reported by fde-fre-type
            ctx.emit(L.FDE_FRES_BOUNDS, exc.message, offset=exc.offset, fde=i, pc=pc)
    else:
        st.blocks.add(first, end, i)
        st.walked += end - first
    if fres:
        R.check_fres(ctx, h, fde, fres, pc, loc)
