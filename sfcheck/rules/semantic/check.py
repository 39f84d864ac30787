"""The cross-check's driver: each SFrame section of a file against its .eh_frame.

Over 400 lines because one pass, _SectionPass, holds the shared walk's state (the FRE
blocks, the .eh_frame rows in reach, the settle cache, the per-rule counts) across its
token, decoded and uncovered paths; split across modules, each would take that state
as arguments.
"""

from __future__ import annotations

import gc
import struct
from array import array
from bisect import bisect_right
from collections.abc import Iterator, Sequence
from itertools import compress, repeat
from operator import add, and_, ge, gt, itemgetter, lt, mul, or_, sub

from ...dwarf.cfi import CfiError, EhFde, EhFdes, decode_eh_frame
from ...elf.model import Buffer, ElfSFrameInfo, addresses
from ...errors import DecodeError
from ...format.abi import ABIS
from ...format.decode import Decoder
from ...format.fde_table import block_ends
from ...format.fre_blocks import FreBlocks, Tokens
from ...format.model import FDE, Header
from ...result import Severity
from ...walk.context import SectionContext
from ...wording import plural
from .catalog import (
    CFA_MISMATCH,
    CLASSIFIERS,
    COVERAGE_CLASSIFIERS,
    FP_MISMATCH,
    NO_EH_FDE,
    NO_EH_FRAME,
    NO_SFRAME_FDE,
    OPAQUE,
    RA_MISMATCH,
    TRUNCATED,
    Facts,
    Mismatch,
)
from .compare import Budget, compare_fde
from .settle import Settle
from .show import func_name, show_cfa, show_slot


class _Stop(Exception):
    """The work bound was reached: the rest of the section is not compared."""


def cross_check(ctxs: Sequence[SectionContext], headers: Sequence[Header | None],
                info: ElfSFrameInfo) -> None:
    """Compare every SFrame section of `info` with its `.eh_frame` (needs info.cfi)."""
    # Rows, FDEs and memo entries are made by the hundred thousand and hold no cycles:
    # the cyclic collector would walk the growing heap again and again (a third of the
    # time on a large library). Reference counting still frees everything.
    enabled = gc.isenabled()
    gc.disable()
    try:
        _cross_check(ctxs, headers, info)
    finally:
        if enabled:
            gc.enable()


def _cross_check(ctxs: Sequence[SectionContext], headers: Sequence[Header | None],
                 info: ElfSFrameInfo) -> None:
    view = info.cfi
    if view is None or not ctxs:
        return
    first = ctxs[0]
    if view.eh_frame is None:
        first.emit(NO_EH_FRAME, "no .eh_frame section: SFrame not compared with DWARF CFI"
                   + (f" ({view.error})" if view.error else ""))
        return
    abi_id = next((h.abi for h in headers if h is not None and h.abi in ABIS), None)
    if abi_id is None:
        return
    abi = ABIS[abi_id]
    try:
        ehs = decode_eh_frame(view.eh_frame, view.eh_frame_vma, info.little_endian,
                              8 if info.elfclass == 64 else 4, abi)
    except CfiError as exc:
        first.emit_as(NO_EH_FRAME, Severity.WARNING, f".eh_frame cannot be decoded: {exc}")
        return
    if ehs.limits:
        k = min(ehs.limits)
        first.emit(OPAQUE, f"{plural(len(ehs.limits), '.eh_frame FDE')} not interpreted, first at "
                   f".eh_frame+{ehs.offsets[k]:#x}: {ehs.limits[k]}")
    covered = array("q", [0]) * len(ehs)  # bytes of each eh FDE some SFrame FDE covers
    text = sorted((t.start, t.end, t.name) for t in view.text_ranges)
    text_starts = [t[0] for t in text]

    def section_of(pc: int) -> str | None:
        k = bisect_right(text_starts, pc) - 1
        return text[k][2] if k >= 0 and pc < text[k][1] else None

    # ctxs holds the sections with bytes only (a NOBITS one gets no context): pair each
    # with its own bytes, not with the NOBITS section's place in view.sframe.
    nobits = {k for k, sec in enumerate(info.sections) if sec.nobits}
    frames = [f for k, f in enumerate(view.sframe) if k not in nobits]
    for ctx, h, (vma, data) in zip(ctxs, headers, frames, strict=False):
        if h is None or h.abi != abi_id:
            continue
        facts = Facts(h, abi, section_of)
        budget = Budget(intervals=64 * (len(data) + len(view.eh_frame)) + 4096)
        # The structure check walked these very bytes without error: the walk here cannot
        # stop early, so blocks of FDEs nothing overlaps need not be walked again.
        walked = ctx.fres_walked and data == ctx.data
        try:
            _SectionPass(ctx, facts, vma, ehs, covered, budget).run(data, walked)
        except (DecodeError, _Stop):
            continue  # the structural rules report a DecodeError; _Stop: reported

    symbols = view.symbols
    addrs: list[int] | None = None  # read when a finding names the first function
    # Only the FDEs not wholly covered are looked at (and get an EhFde).
    for k in compress(range(len(ehs)), map(lt, covered, map(sub, ehs.ends, ehs.starts))):
        e, got = ehs[k], covered[k]
        size = e.end - e.start
        if addrs is None:
            addrs = addresses(symbols)
        name = func_name(symbols, addrs, e.start, section_of)
        where = f"{name} [{e.start:#x}, {e.end:#x}) (.eh_frame+{e.offset:#x})"
        if got == 0:
            known = next((c for c in (f(e, abi) for f in COVERAGE_CLASSIFIERS) if c), None)
            if known:
                first.emit(known[0], f"{where} has no SFrame FDE: {known[1]}")
            else:
                first.emit(NO_SFRAME_FDE, f"{where} has no SFrame FDE")
        else:
            first.emit_as(NO_SFRAME_FDE, Severity.WARNING,
                          f"{where}: only {got} of its {plural(size, 'byte')} are covered by "
                          "SFrame FDEs")


def _single_overlaps(eh_starts: Sequence[int], eh_ends: Sequence[int], starts: Sequence[int],
                     sizes: Sequence[int]) -> array[int]:
    """Per FDE, the index of the .eh_frame FDE when _SectionPass.overlapping() would find
    that one alone (-1: none or several; then it runs), found in bulk: its loop starts at
    k, the last .eh_frame FDE starting at or before the FDE's start, and finds ehs[k] alone
    when ehs[k] meets [start, end) and ehs[k + 1] starts at or after `end`."""
    m, n = len(eh_starts), len(starts)
    if not m:
        return array("q", [-1]) * n
    # The .eh_frame starts as a list while this runs: bisect probes it ~log2(m) times per
    # FDE, and an array makes an int object at each probe (lib10000: 150k of them).
    eh_list = list(eh_starts)
    # Arrays, not lists: a million int objects each at 1M FDEs, alive together.
    ks = array("q", map(max, map(sub, map(bisect_right, repeat(eh_list), starts),
                                 repeat(1, n)), repeat(0, n)))
    ends: Sequence[int]
    try:
        ends = array("q", map(add, starts, sizes))
    except OverflowError:
        ends = list(map(add, starts, sizes))
    after = eh_list[1:]  # the next .eh_frame FDE's start (none: beyond all)
    after.append(1 << 128)
    alone = map(and_, map(and_, map(lt, map(eh_list.__getitem__, ks), ends),
                          map(gt, map(eh_ends.__getitem__, ks), starts)),
                map(ge, map(after.__getitem__, ks), ends))
    # (k + 1) * alone - 1: k, or -1. An array: kept for the whole walk, a list would add
    # an int object per FDE.
    return array("q", map(sub, map(mul, map(add, ks, repeat(1, n)), alone), repeat(1, n)))


def _maybe_overlapping(eh_starts: Sequence[int], eh_ends: Sequence[int], starts: Sequence[int],
                       sizes: Sequence[int]) -> bytes:
    """Per FDE, 1 when [start, start + size) meets an .eh_frame FDE: a superset of the FDEs
    _SectionPass.overlapping() finds anything for. Each FDE is tested against the union
    of the .eh_frame ranges, merged, with C-level calls in bulk."""
    n = len(starts)
    if not eh_starts:
        return bytes(n)
    lo: list[int] = []
    hi: list[int] = []
    for s, e in zip(eh_starts, eh_ends, strict=True):  # sorted: merge into disjoint [lo, hi]
        # An empty (or inverted) FDE is still found strictly inside an SFrame FDE: a point.
        end = max(s, e)
        if hi and s <= hi[-1]:
            hi[-1] = max(hi[-1], end)
        else:
            lo.append(s)
            hi.append(end)
    # j: how many merged ranges start at or before the FDE's start. The FDE meets the
    # union iff range j - 1 reaches past its start or range j starts before its end
    # (later ranges start later still).
    js = list(map(bisect_right, repeat(lo), starts))
    lo.append(1 << 128)  # sentinel: no range j
    hi.insert(0, -(1 << 128))  # no range j - 1 (hi shifted by one: hi[j] is range j - 1's)
    return bytes(map(or_, map(gt, map(hi.__getitem__, js), starts),
                     map(lt, map(lo.__getitem__, js), map(add, starts, sizes))))


def _nonzero_sizes(table: Buffer, fmt: str, size: int) -> int:
    """How many records of `table` (each `size` bytes, struct format `fmt`: byte order and
    one code per field, the FDE's size second) have a nonzero size field: the field's
    byte columns ORed as integers, so no record is unpacked (a zero stays zero in either
    byte order)."""
    n = len(table) // size
    at, width = struct.calcsize(fmt[:2]), struct.calcsize(fmt[0] + fmt[2])
    raw = bytes(table[:n * size])
    bits = 0
    for j in range(at, at + width):
        bits |= int.from_bytes(raw[j::size], "little")
    return n - bits.to_bytes(n, "little").count(0)


class _SectionPass:
    """One SFrame section against the .eh_frame FDEs: each SFrame FDE is settled from its
    raw FRE tokens when possible (Settle), else compared exactly (_check_fde). An FDE no
    .eh_frame FDE overlaps costs only its coverage finding (counted once past the cap).
    `fast` off takes the exact path for every FDE (the tests compare both)."""

    fast = True
    share = True  # off: walk every FRE block even when the structure check has (tests)

    def __init__(self, ctx: SectionContext, facts: Facts, vma: int, ehs: EhFdes,
                 covered: array[int], budget: Budget) -> None:
        self.ctx, self.facts, self.vma, self.budget = ctx, facts, vma, budget
        self.ehs, self.eh_starts, self.eh_ends, self.covered = ehs, ehs.starts, ehs.ends, covered
        h = self.h = facts.header
        self.rel = h.pcrel or ctx.relocatable
        self.settle = Settle(h, facts.abi)
        self.dec: Decoder | None = None
        self.starts: Sequence[int] = ()  # the shared walk's: every FDE's start
        self.single: Sequence[int] = ()  # and the one .eh_frame FDE overlapping it, or -1

    def run(self, data: bytes, walked: bool = False) -> None:
        """`walked`: the structure check walked every FRE block of `data` cleanly (see
        SectionContext.fres_walked), so the walk here would not stop before the last FDE."""
        self.dec = Decoder(data)
        blocks = FreBlocks(self.dec)
        # Blocks out of table order (gcc's .cold parts) are walked as tokens too, not sent
        # to the decoder and the exact comparison: a block walked as tokens is exactly its
        # FREs and is charged its own length either way, so the walk stops where it did.
        if walked:  # the structure check's, for the same bytes and every FDE
            by_offset = self.ctx.block_ends
        else:
            by_offset = block_ends(self.dec.data, self.dec.header, self.h.num_fdes,
                                   self.dec.fre_limit)
        if by_offset is not None:
            blocks.nexts = by_offset
        if not (walked and self.fast and self.share):
            blocks.run(0, self.h.num_fdes, self.on_tokens, self.on_decoded)
            return
        self.shared(blocks)

    def shared(self, blocks: FreBlocks) -> None:
        """What run() reports, FDE by FDE in the same order, with FRE blocks walked only for
        runs of FDEs that may meet an .eh_frame FDE (the walk's own callbacks decide, as in
        run()); the others cost their start, size and coverage finding. Valid only when no
        walk stops early."""
        n = self.h.num_fdes
        if not len(self.ehs):
            self.none_overlap(blocks)
            return
        base, stride = self.h.start_base(self.rel, True)
        first = self.vma + base
        def column() -> Iterator[int]:
            return map(add, map(itemgetter(0), blocks.records(0, n)),
                       range(first, first + n * stride, stride) if stride else repeat(first, n))

        # Arrays, not lists of int objects: both live through the whole walk.
        starts: Sequence[int]
        try:
            starts = array("q", column())
        except OverflowError:  # a start at or past 2**63 (kernel addresses): as a list
            starts = list(column())
        sizes = array("q", map(itemgetter(1), blocks.records(0, n)))
        self.starts, self.single = starts, _single_overlaps(self.eh_starts, self.eh_ends,
                                                            starts, sizes)
        # (the bulk pre-filter is needed only for FDEs not overlapping exactly one)
        maybe = (_maybe_overlapping(self.eh_starts, self.eh_ends, starts, sizes)
                 if -1 in self.single else b"\x01" * n)
        on_tokens, on_decoded = self.on_tokens_single, self.on_decoded_single
        known = self.known_single
        i = 0
        while i < n:  # alternate runs: FDEs that overlap nothing, FDEs that may
            j = maybe.find(1, i)
            if j < 0:
                j = n
            self.uncovered_run(i, j, starts, sizes)
            if j == n:
                break
            i = maybe.find(0, j)
            if i < 0:
                i = n
            blocks.run(j, i, on_tokens, on_decoded, known)

    def none_overlap(self, blocks: FreBlocks) -> None:
        """shared() when .eh_frame has no FDE: uncovered_run() for every FDE, with starts
        computed only for the findings kept (the first MAX_PER_RULE) and the rest counted
        from the size fields in bulk: no column of starts, no walk."""
        ctx = self.ctx
        seen = 0  # FDEs of nonzero size so far
        for i, rec in enumerate(blocks.records(0, self.h.num_fdes)):
            if not rec[1]:
                continue
            seen += 1
            if ctx.count_only(NO_EH_FDE):
                ctx.count_more(NO_EH_FDE, _nonzero_sizes(
                    blocks.table, blocks.dec._fde_struct.format, blocks.fsz) - seen)
                return
            start = self.h.func_start(i, rec[0], self.vma, field_relative=self.rel)
            ctx.emit(NO_EH_FDE, f"[{start:#x}, {start + rec[1]:#x}) of this function is "
                     "covered by no .eh_frame FDE", fde=i, pc=start)

    def uncovered_run(self, a: int, b: int, starts: Sequence[int], sizes: Sequence[int]) -> None:
        """uncovered() for FDEs a..b-1; once the rule only counts, the rest in one step."""
        ctx = self.ctx
        for i in range(a, b):
            if not sizes[i]:
                continue
            if ctx.count_only(NO_EH_FDE):
                # From here on count_only would say the same for each FDE of nonzero size
                # (it just counted this one): count the others at once.
                ctx.count_more(NO_EH_FDE, b - i - 1 - sizes[i + 1:b].count(0))
                return
            start = starts[i]
            ctx.emit(NO_EH_FDE, f"[{start:#x}, {start + sizes[i]:#x}) of this function is "
                     "covered by no .eh_frame FDE", fde=i, pc=start)

    def on_tokens_single(self, i: int, rec: tuple, info: int, info2: int, asz: int,
                         toks: Tokens) -> None:
        """on_tokens() in the shared walk: the FDE's start and, when one .eh_frame FDE alone
        overlaps it, that FDE's index were found in bulk (_single_overlaps)."""
        k = self.single[i]
        if k < 0:
            self.on_tokens(i, rec, info, info2, asz, toks)
            return
        es, ee, start, size = self.eh_starts[k], self.eh_ends[k], self.starts[i], rec[1]
        self.covered[k] += min(start + size, ee) - max(start, es)
        # Settled from the columns: no EhFde unless the exact path runs.
        if self.settle.quiet(start, size, info, info2, asz, toks, es, ee, self.ehs.rels[k]):
            return
        assert self.dec is not None
        self.exact(i, start, self.dec.fde(i), [self.ehs[k]])

    def known_single(self, i: int, rec: tuple, info: int, info2: int, nf: int, walk_from: int,
                     end: int) -> bool:
        """FreBlocks.run's `known` in the shared walk: True (the FDE's coverage counted)
        when the one .eh_frame FDE overlapping it settles it as on_tokens_single would
        from the block's bytes alone (Settle.known); else the tokens are found."""
        k = self.single[i]
        if k < 0:
            return False
        es, ee, start, size = self.eh_starts[k], self.eh_ends[k], self.starts[i], rec[1]
        assert self.dec is not None
        if not self.settle.known(start, size, info, info2, nf, self.dec.data[walk_from:end],
                                 es, ee, self.ehs.rels[k]):
            return False
        self.covered[k] += min(start + size, ee) - max(start, es)
        return True

    def on_decoded_single(self, i: int, fde: FDE) -> None:
        k = self.single[i]
        if k < 0:
            self.on_decoded(i, fde)
            return
        start = self.starts[i]
        self.covered[k] += min(start + fde.size, self.eh_ends[k]) - max(start, self.eh_starts[k])
        self.exact(i, start, fde, [self.ehs[k]])

    def overlapped(self, i: int, start: int, size: int, overlaps: list[EhFde],
                   raw: tuple[int, int, int, Tokens]) -> None:
        """on_tokens() for an FDE with overlaps: settled, else compared exactly."""
        if len(overlaps) == 1:
            e = overlaps[0]
            if self.settle.quiet(start, size, *raw, e.start, e.end, e.rel):
                return
        assert self.dec is not None
        self.exact(i, start, self.dec.fde(i), overlaps)

    def overlapping(self, start: int, end: int) -> list[EhFde]:
        """The .eh_frame FDEs overlapping [start, end); counts the bytes they cover."""
        eh_starts, eh_ends, covered = self.eh_starts, self.eh_ends, self.covered
        k = max(bisect_right(eh_starts, start) - 1, 0)
        found = []
        while k < len(eh_starts) and eh_starts[k] < end:
            if eh_ends[k] > start:
                found.append(self.ehs[k])
                covered[k] += min(end, eh_ends[k]) - max(start, eh_starts[k])
            k += 1
        return found

    def on_tokens(self, i: int, rec: tuple, info: int, info2: int, asz: int,
                  toks: Tokens) -> None:
        start = self.h.func_start(i, rec[0], self.vma, field_relative=self.rel)
        overlaps = self.overlapping(start, start + rec[1])
        if not overlaps and self.fast:
            self.uncovered(i, start, rec[1])
            return
        self.overlapped(i, start, rec[1], overlaps, (info, info2, asz, toks))

    def on_decoded(self, i: int, fde: FDE) -> None:
        start = self.h.func_start(i, fde.start, self.vma, field_relative=self.rel)
        overlaps = self.overlapping(start, start + fde.size)
        if not overlaps and self.fast:
            self.uncovered(i, start, fde.size)
            return
        self.exact(i, start, fde, overlaps)

    def uncovered(self, i: int, start: int, size: int) -> None:
        """What _check_fde reports for an FDE no .eh_frame FDE overlaps: nothing to compare."""
        if size and not self.ctx.count_only(NO_EH_FDE):
            self.ctx.emit(NO_EH_FDE, f"[{start:#x}, {start + size:#x}) of this function is "
                          "covered by no .eh_frame FDE", fde=i, pc=start)

    def exact(self, i: int, start: int, fde: FDE, overlaps: list[EhFde]) -> None:
        _check_fde(self.ctx, self.facts, i, start, fde, overlaps, self.budget)
        if self.budget.exhausted:
            self.ctx.emit(TRUNCATED, f"cross-check stopped at FDE {i} (work bound reached)",
                          fde=i, pc=start)
            raise _Stop


def _check_fde(ctx: SectionContext, facts: Facts, i: int, start: int, fde: FDE,
               overlaps: list[EhFde], budget: Budget) -> None:
    h, abi = facts.header, facts.abi
    end = start + fde.size
    # Parts of the function no .eh_frame FDE covers.
    gaps, cursor = [], start
    for e in sorted(overlaps, key=lambda e: e.start):
        if e.start > cursor:
            gaps.append((cursor, min(e.start, end)))
        cursor = max(cursor, e.end)
    if cursor < end:
        gaps.append((cursor, end))
    if gaps and fde.size and not ctx.count_only(NO_EH_FDE):
        a, b = gaps[0]
        more = f" (and {plural(len(gaps) - 1, 'more range')})" if len(gaps) > 1 else ""
        ctx.emit(NO_EH_FDE, f"[{a:#x}, {b:#x}) of this function is covered by no .eh_frame "
                 f"FDE{more}", fde=i, pc=start)
    limited = [e for e in overlaps if e.limit]
    if limited:  # a work bound stopped its program: not compared, and said so
        e = limited[0]
        ctx.emit(OPAQUE, f"not compared with the .eh_frame FDE at .eh_frame+{e.offset:#x}: "
                 f"{e.limit}", fde=i, pc=start)
        overlaps = [e for e in overlaps if not e.limit]
    mism: dict[str, Mismatch] = {}
    opaque: list[str] = []
    compare_fde(i, start, fde.size, fde, h, abi, overlaps, budget, mism, opaque)
    if opaque:
        ctx.emit(OPAQUE, f"{plural(len(opaque), 'PC range')} not compared: {opaque[0]}",
                 fde=i, pc=start)
    generic = {"CFA": CFA_MISMATCH, "RA": RA_MISMATCH, "FP": FP_MISMATCH}
    for kind in ("CFA", "RA", "FP"):
        m = mism.get(kind)
        if m is None:
            continue
        claimed = next((c for c in (f(m, facts) for f in CLASSIFIERS) if c), None)
        show = show_cfa if kind == "CFA" else show_slot
        a, b = m.first
        fre_pc = start + fde.fres[m.fre].start if m.fre is not None else None
        detail = (f"{kind} differs from .eh_frame at {plural(m.ranges, 'PC range')}, "
                  f"{plural(m.nbytes, 'byte')}; first [{a:#x}, {b:#x}): "
                  f"SFrame {show(abi, m.sframe)}, .eh_frame {show(abi, m.eh)}")
        if claimed:
            r, note = claimed
            ctx.emit(r, f"{note}: {detail}", fde=i, pc=start, fre=m.fre, fre_pc=fre_pc)
        else:
            ctx.emit(generic[kind], detail, fde=i, pc=start, fre=m.fre, fre_pc=fre_pc)
