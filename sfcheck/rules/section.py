"""Structural checks of one SFrame section: header, layout, FDEs, FREs.

One pass, bounded by the bytes present: only FDE records that exist are read,
and each FDE's FREs are walked through the decoder, which checks every count
against the FRE sub-section before looping.
"""

from __future__ import annotations

import gc
from array import array
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from itertools import islice
from operator import add, itemgetter, le

from ..errors import DecodeError
from ..format import constants as C
from ..format.datawords import cfa_offset
from ..format.decode import Decoder, byte_order, decode_header
from ..format.layout import fre_size
from ..format.model import FDE, FRE, Header
from . import fde as F
from . import fre as R
from . import header as H
from . import layout as L
from .context import SectionContext
from .section_fast import Table, fixed_words, legal_counts

MAX_REG = {C.ABI_AMD64_LE: 16, C.ABI_AARCH64_LE: 31, C.ABI_AARCH64_BE: 31, C.ABI_S390X_BE: 31}


def check_section(ctx: SectionContext) -> Header | None:
    """Run every structural rule; returns the header when it could be read."""
    data = ctx.data
    try:
        byte_order(data)
    except DecodeError as exc:
        rule = H.TOO_SHORT if len(data) < 2 else H.BAD_MAGIC
        ctx.emit(rule, exc.message, offset=0)
        return None
    if len(data) < C.HEADER_SIZE:
        ctx.emit(H.TOO_SHORT, f"{len(data)} bytes; the header alone needs {C.HEADER_SIZE}",
                 offset=0)
        return None
    if data[2] not in C.VERSIONS:
        ctx.emit(H.VERSION_UNKNOWN, f"version byte is {data[2]}", offset=2)
        return None
    try:
        h = decode_header(data)
    except DecodeError as exc:
        ctx.emit(H.TOO_SHORT, exc.message, offset=7)
        return None
    H.check_header(ctx, h)
    if h.num_fdes > NO_GC_MIN:
        with no_gc():
            _walk(ctx, h)
    else:
        _walk(ctx, h)
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


def _walk(ctx: SectionContext, h: Header) -> None:
    size = len(ctx.data)
    n = h.num_fdes
    fdes_end = h.fdes_start + n * h.fde_size
    if h.fdeoff > h.freoff:
        ctx.emit(L.FDEOFF_AFTER_FREOFF, f"fdeoff {h.fdeoff:#x} > freoff {h.freoff:#x}",
                 offset=0x14)
    if h.fdeoff:
        ctx.emit(L.FDEOFF_NONZERO, f"fdeoff is {h.fdeoff:#x}; libsframe-based readers compute "
                 f"every PC-relative function start {h.fdeoff:#x} bytes off", offset=0x14)
    readable = n
    if fdes_end > size:
        readable = max(0, (size - h.fdes_start) // h.fde_size)
        ctx.emit(L.FDE_ARRAY_BOUNDS, f"{n} FDEs of {h.fde_size} bytes end at {fdes_end:#x}, "
                 f"the section has {size:#x} bytes ({readable} FDE(s) readable)", offset=8)
    elif h.fdeoff <= h.freoff and fdes_end > h.fres_start:
        ctx.emit(L.FDE_ARRAY_OVERLAP, f"FDE array ends at {fdes_end:#x}, FRE sub-section starts "
                 f"at {h.fres_start:#x}", offset=0x18)
    if h.fres_end > size:
        ctx.emit(L.FRE_BOUNDS, f"FRE sub-section [{h.fres_start:#x}, {h.fres_end:#x}) "
                 f"ends past the section's {size:#x} bytes", offset=0x10)
    if n == 0:
        ctx.emit(L.EMPTY, "num_fdes is 0", offset=8)
    _check_gaps(ctx, h, fdes_end, size)

    dec = Decoder(ctx.data, h)
    st = _Walk(field_relative=h.pcrel or ctx.relocatable, complete=readable == n)
    if readable:
        _walk_fdes(ctx, h, dec, readable, st)
    total_fres, walked, complete, blocks = st.total_fres, st.walked, st.complete, st.blocks
    if complete:
        if total_fres != h.num_fres:
            ctx.emit(L.NUM_FRES, f"FDEs hold {total_fres} FREs, the header says {h.num_fres}",
                     offset=0x0C)
        if walked != h.fre_len and h.fres_end <= size:
            ctx.emit(L.FRE_LEN, f"FRE blocks use {walked:#x} bytes, sfh_fre_len is "
                     f"{h.fre_len:#x}", offset=0x10)
    _check_overlaps(ctx, blocks, [] if ctx.relocatable else ctx.ranges)
    end = max(fdes_end, h.fres_end)
    tail = ctx.data[end:]
    if tail.strip(b"\0"):
        first = end + next(k for k, b in enumerate(tail) if b)
        ctx.emit(L.TRAILING, f"{len(tail)} bytes follow the SFrame data, nonzero from "
                 f"{first:#x}" + (" (another SFrame section?)"
                                  if ctx.data[first:first + 2] in (C.MAGIC_LE, C.MAGIC_BE)
                                  else ""), offset=first)


class _Walk:
    """State of the pass over the FDEs, shared by the fast path and the exact one."""

    __slots__ = ("field_relative", "complete", "total_fres", "walked", "prev_pc", "blocks",
                 "fast")

    def __init__(self, field_relative: bool, complete: bool) -> None:
        self.field_relative = field_relative
        self.complete = complete
        self.total_fres = self.walked = 0
        self.prev_pc: int | None = None
        self.blocks: list[tuple[int, int, int]] = []
        # Runs of FDEs accepted by the fast path: (first index, block starts, block ends).
        self.fast: list[tuple[int, array, array]] = []


CHUNK = 1 << 15  # FDEs per Table: its working lists stay small whatever the table size
# Below this many FDEs the exact path alone is cheaper than setting up a Table (and
# compiling its patterns): many small sections, e.g. under the fuzzer.
FAST_MIN = 16


def _walk_fdes(ctx: SectionContext, h: Header, dec: Decoder, readable: int, st: _Walk) -> None:
    """Check FDEs 0..readable-1 and their FREs, in table order.

    section_fast.Table reads the FDE table column-wise, CHUNK FDEs at a time, and
    walks every FRE block with one regex call per FDE, all in C; it accepts only
    FDEs that provably have no finding. Runs of accepted FDEs are booked in bulk;
    every other FDE goes through _exact_fde, which emits. Both keep the same state,
    so findings come out exactly as from _exact_fde alone
    (tests/test_fastpath_equivalence.py).
    """
    if readable < FAST_MIN:
        for i in range(readable):
            _exact_fde(ctx, h, dec, i, st)
        return
    check_order = h.sorted and not ctx.relocatable
    prev_pc: int | None = None
    carry = False
    for a in range(0, readable, CHUNK):
        b = min(readable, a + CHUNK)
        tab = Table(ctx.data, h, a, b, readable, dec.fre_limit, ctx.vma, st.field_relative,
                    check_order, prev_pc, carry)
        prev_pc, carry = tab.pcs[-1], tab.carry
        bad = tab.bad
        pcs, sizes, nfs, firsts, ends = tab.pcs, tab.sizes, tab.nfs, tab.firsts, tab.ends
        i = 0
        n = b - a
        while i < n:
            j = bad.find(1, i)
            if j < 0:
                j = n
            if i < j:  # FDEs a+i..a+j-1 are clean
                if st.walked + firsts[j - 1] - firsts[i] > h.fre_len:
                    for k in range(i, j):  # the budget runs out inside: exact, one by one
                        _exact_fde(ctx, h, dec, a + k, st)
                else:
                    st.fast.append((a + i, array("q", firsts[i:j]), array("q", ends[i:j])))
                    ctx.ranges.extend(zip(pcs[i:j], sizes[i:j], range(a + i, a + j),
                                          strict=True))
                    st.prev_pc = pcs[j - 1]
                    st.total_fres += sum(nfs[i:j])
                    st.walked += ends[j - 1] - firsts[i]
            if j < n:
                _exact_fde(ctx, h, dec, a + j, st)
            i = j + 1
    # One run of clean FDEs holds adjacent blocks in table order: no overlap among them.
    # Anything else: list every block for the overlap check.
    runs = st.fast
    merged = all(r2[0] == r1[0] + len(r1[1]) for r1, r2 in zip(runs, runs[1:], strict=False))
    if runs and (st.blocks or not merged):
        for start, firsts_, ends_ in runs:
            st.blocks.extend(zip(firsts_, ends_, range(start, start + len(firsts_)),
                                 strict=True))
    st.fast = []


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
    # (h.func_start(i, fde.start, ctx.vma, field_relative=st.field_relative), inline.)
    pc = ctx.vma + fde.start + (off if st.field_relative else 0)
    loc = {"offset": off, "fde": i, "pc": pc}
    ctx.ranges.append((pc, fde.size, i))
    prev_pc = st.prev_pc
    if (h.sorted and prev_pc is not None and pc < prev_pc and not ctx.relocatable
            and not ctx.counts[F.UNSORTED.id]):
        ctx.emit(F.UNSORTED, f"function start {pc:#x} is below the previous FDE's "
                 f"{prev_pc:#x}", **loc)
    st.prev_pc = pc
    _check_fde(ctx, h, fde, loc)
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
    fre_type = fde.info & 0xF
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
        st.blocks.append((first, end, i))
        st.walked += end - first
    if fres:
        _check_fres(ctx, h, fde, fres, pc, loc)


def _check_overlaps(ctx: SectionContext, blocks: list[tuple[int, int, int]],
                    ranges: list[tuple[int, int, int]]) -> None:
    if _in_order(blocks, sized=False):
        blocks = []
    if _in_order(ranges, sized=True):
        ranges = []
    blocks.sort()
    for (s1, e1, i1), (s2, _e2, i2) in zip(blocks, blocks[1:], strict=False):
        if s2 < e1:
            ctx.emit(L.FRE_OVERLAP, f"FRE blocks of FDE {i1} [{s1:#x}, {e1:#x}) and FDE {i2} "
                     f"(from {s2:#x}) overlap", offset=s2, fde=i2)
    ranges = sorted(r for r in ranges if r[1] > 0)
    for (p1, z1, i1), (p2, _z2, i2) in zip(ranges, ranges[1:], strict=False):
        if p2 < p1 + z1:
            ctx.emit(F.OVERLAP, f"function [{p2:#x}, ...) of FDE {i2} starts inside FDE {i1}'s "
                     f"[{p1:#x}, {p1 + z1:#x})", fde=i2, pc=p2)


def _in_order(spans: list[tuple[int, int, int]], sized: bool) -> bool:
    """True when each span, in list order, ends at or before the next one starts; then
    sorting them finds no overlap either. C-level, so a clean 100k-FDE table is not
    sorted and compared pair by pair. Spans are (start, end, index), or with
    `sized` (start, size, index)."""
    if len(spans) < 2:
        return True
    starts = list(map(itemgetter(0), spans))
    seconds = map(itemgetter(1), spans)
    ends = map(add, starts, seconds) if sized else seconds
    return all(map(le, ends, islice(starts, 1, None)))


_AARCH64 = (C.ABI_AARCH64_BE, C.ABI_AARCH64_LE)


def _check_fde(ctx: SectionContext, h: Header, fde: FDE, loc: dict) -> None:
    # The info bits are read inline (fre_type, pcmask, pauth_key): this runs per FDE.
    info, v = fde.info, h.version
    fre_type = info & 0xF
    if fre_type > C.FRE_TYPE_ADDR4:
        ctx.emit(F.FRE_TYPE, f"FRE type {fre_type}", **loc)
    reserved = info & (0x40 | (0x80 if v < C.VERSION_3 else 0))
    if reserved or (v == C.VERSION_3 and fde.info2 & 0xE0) or fde.padding:
        ctx.emit(F.RESERVED, f"info {info:#04x}" + (
            f", info2 {fde.info2:#04x}" if v == C.VERSION_3 else "") + (
            f", padding {fde.padding:#x}" if fde.padding else ""), **loc)
    if v == C.VERSION_3 and fde.info2 & 0x1F > C.FDE_TYPE_FLEX:
        ctx.emit(F.FDE_TYPE, f"FDE type {fde.fde_type}", **loc)
    pcmask = info & 0x10
    if v == C.VERSION_1:
        pass  # v1 FDEs have no rep_size field
    elif pcmask and fde.rep_size == 0:
        ctx.emit(F.REP_SIZE_ZERO, "PCMASK FDE with rep_size 0", **loc)
    elif not pcmask and fde.rep_size:
        ctx.emit(F.REP_SIZE_UNUSED, f"rep_size {fde.rep_size} on a PCINC FDE", **loc)
    if info & 0x20 and h.abi not in _AARCH64:
        ctx.emit(F.PAUTH_ABI, f"info {info:#04x} selects pauth key B", **loc)
    if fre_type <= C.FRE_TYPE_ADDR4 and not pcmask:
        size = fde.size
        need = (C.FRE_TYPE_ADDR1 if size < 0x100 else
                C.FRE_TYPE_ADDR2 if size < 0x10000 else C.FRE_TYPE_ADDR4)
        if fre_type > need:
            ctx.emit(F.FRE_TYPE_SIZE, f"ADDR{C.FRE_ADDR_SIZE[fre_type]} for a "
                     f"{size}-byte function (ADDR{C.FRE_ADDR_SIZE[need]} holds it)", **loc)
        elif fre_type < need:
            ctx.emit(F.FRE_TYPE_SMALL, f"ADDR{C.FRE_ADDR_SIZE[fre_type]} cannot address a "
                     f"{size}-byte function", **loc)


def _check_gaps(ctx: SectionContext, h: Header, fdes_end: int, size: int) -> None:
    """Bytes between the header and the FDE array, or the FDE array and the FREs, belong
    to nothing: zero padding is harmless, anything else is data no reader sees."""
    gaps = [(h.size, min(h.fdes_start, size))]
    if fdes_end <= h.fres_start:
        gaps.append((fdes_end, min(h.fres_start, size)))
    for a, b in gaps:
        chunk = ctx.data[a:b]
        if chunk.strip(b"\0"):
            first = a + next(k for k, x in enumerate(chunk) if x)
            ctx.emit(L.GAP_BYTES, f"{b - a} bytes in [{a:#x}, {b:#x}) belong to no header, "
                     f"FDE or FRE, nonzero from {first:#x}", offset=first)


_LEGAL: dict[tuple[int, int, bool], frozenset[int]] = {}


def _legal_counts(h: Header, flex: bool) -> frozenset[int]:
    key = (h.version, fixed_words(h), flex)
    got = _LEGAL.get(key)
    if got is None:
        got = _LEGAL[key] = frozenset({0, 2, 4, 5, 6}) if flex else legal_counts(*key[:2])
    return got


_QUIET: dict[tuple[frozenset[int], bool], bytes] = {}


def _quiet_infos(legal: frozenset[int], aarch64: bool) -> bytes:
    """fre_info byte -> 1 when fre-datawords-size, fre-word-count and fre-mangled-ra-abi
    all accept it, so a clean FRE costs one table lookup for the three."""
    key = (legal, aarch64)
    got = _QUIET.get(key)
    if got is None:
        got = _QUIET[key] = bytes(
            int(n * C.WORD_SIZE.get(b >> 5 & 3, 1) <= C.MAX_DATAWORD_BYTES and n in legal
                and (aarch64 or not b & 0x80))
            for b in range(256) for n in ((b >> 1) & 0xF,))
    return got


def _check_fres(ctx: SectionContext, h: Header, fde: FDE, fres: list[FRE], pc: int,
                loc: dict) -> None:
    flex = fde.flex(h.version)
    legal = _legal_counts(h, flex)
    aarch64 = h.abi in _AARCH64
    quiet = _quiet_infos(legal, aarch64)
    max_reg = MAX_REG.get(h.abi, 31)
    pcmask = fde.pcmask
    size = fde.size
    # Starts at or past `limit` need the range rules below; under it none fires.
    if pcmask:
        limit = fde.rep_size if h.version > C.VERSION_1 and fde.rep_size else 1 << 64
    else:
        limit = size or 1  # a zero-size function: only a start past 0 is wrong
    s390x = h.abi == C.ABI_S390X_BE
    prev = -1

    def floc() -> dict:
        """The current FRE's location: built only when a finding needs it, not per FRE."""
        return dict(loc, offset=fre.offset, fre=j,
                    fre_pc=fre.start if pcmask else pc + fre.start)

    for j, fre in enumerate(fres):  # noqa: B007  (floc reads j and fre)
        info = fre.info
        if not quiet[info]:
            n = fre.count
            if n * fre.word_size > C.MAX_DATAWORD_BYTES:
                ctx.emit(R.DATAWORDS_SIZE, f"{n} words of {fre.word_size} bytes", **floc())
            if n not in legal:
                kind = "FLEX" if flex else f"{C.ABI_NAMES.get(h.abi, 'unknown-ABI')} DEFAULT"
                ctx.emit(R.WORD_COUNT, f"{n} data words in a {kind} FRE (allowed: "
                         f"{', '.join(map(str, sorted(legal)))})", **floc())
            if info & 0x80 and not aarch64:
                ctx.emit(R.MANGLED_ABI, f"fre_info {info:#04x}", **floc())
        start = fre.start
        if start <= prev:
            ctx.emit(R.START_ORDER, f"start {start:#x} after {prev:#x}", **floc())
        prev = start
        if j == 0 and start != 0:
            ctx.emit(R.FIRST_START, f"first row starts at {start:#x}", **floc())
        if start >= limit:
            if pcmask:
                ctx.emit(R.START_BEYOND_REP, f"start {start:#x} >= rep_size "
                         f"{fde.rep_size}", **floc())
            elif start > size:
                ctx.emit(R.START_BEYOND, f"start {start:#x} > function size {size:#x}",
                         **floc())
            else:  # start == size != 0
                ctx.emit(R.START_AT_SIZE, f"start {start:#x} == function size", **floc())
        if flex:
            _check_flex(ctx, fre, max_reg, floc)
        elif not info & 0x1E:  # no data words
            pass
        elif s390x:
            _check_default(ctx, h, fre, max_reg, floc)
        elif info & 1:  # SP-based CFA: word 0 is the offset (cfa_offset, inline)
            cfa = fre.words[0]
            if cfa < 0 or cfa % 8:
                ctx.emit(R.CFA_OFFSET, f"CFA = SP{cfa:+d}", **floc())


def _check_flex(ctx: SectionContext, fre: FRE, max_reg: int, floc: Callable[[], dict]) -> None:
    n = fre.count
    if n < 2:
        return
    words = [fre.uword(k) or 0 for k in range(n)]
    if not words[0] & 1:
        ctx.emit(R.FLEX_CFA_REG, f"CFA control word {words[0]:#x} has reg_p clear", **floc())
    ctl_positions = [0]
    if n >= 3:
        if words[2] == 0:
            if n != 5:
                ctx.emit(R.FLEX_PADDING, f"RA padding word with {n} words (needs an FP pair: "
                         "5 words)", **floc())
            if n >= 4:
                ctl_positions.append(3)
        else:
            ctl_positions.append(2)
            if n == 5:
                ctx.emit(R.FLEX_PADDING, "5 words but no padding in the RA position", **floc())
            if n >= 5:
                ctl_positions.append(4)
    for k in ctl_positions[1:]:
        if k < n and words[k] == 0 and k != 2:
            ctx.emit(R.FLEX_PADDING, f"zero control word at word {k}", **floc())
    for k in ctl_positions:
        if k < n and words[k] & 1 and (words[k] >> 3) > max_reg:
            ctx.emit(R.REGISTER, f"control word {k} names register {words[k] >> 3}", **floc())


def _check_default(ctx: SectionContext, h: Header, fre: FRE, max_reg: int,
                   floc: Callable[[], dict]) -> None:
    cfa = cfa_offset(h, fre, False)
    if fre.base_sp and cfa is not None and (cfa < 0 or cfa % 8):
        ctx.emit(R.CFA_OFFSET, f"CFA = SP{cfa:+d}", **floc())
    if h.abi != C.ABI_S390X_BE:
        return
    for k in range(1, fre.count):
        w = fre.words[k]
        if w & 1:
            if h.version >= C.VERSION_3:
                ctx.emit(R.S390X_REGNUM, f"word {k} is {w}", **floc())
            elif (w >> 1) > max_reg or w < 0:
                ctx.emit(R.REGISTER, f"word {k} encodes register {w >> 1}", **floc())
