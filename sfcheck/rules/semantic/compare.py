"""The exact comparison of one SFrame FDE with the .eh_frame FDEs overlapping it.

The method (rows merged, intervals compared) is described in the package docstring.
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from collections.abc import Sequence
from itertools import islice, repeat
from math import gcd
from operator import lt

from ...dwarf.cfi import UNDEFINED, CfaExpr, CfiRow, EhFde, Opaque, Rule
from ...dwarf.linear import eval_linear_each
from ...format import constants
from ...format.abi import Abi
from ...format.bounds import start_out_of_order
from ...format.fre_rules import RegRule, fre_rules, intern
from ...format.model import FDE, FRE, Header
from ...record import NamedTuple
from .catalog import Mismatch

# Work bound (the interval bound scales with the section sizes, in cross_check).
MAX_EXPR_PCS = 1 << 16  # PCs evaluated one by one under a CFA expression, per section
# On: every PC under an expression that reads no PC is compared on its own, as under any
# other expression (the reference _windows' shortcut is pinned against, in tests).
PC_BY_PC = False
PHASES_AT_ONCE = 64  # a periodic expression's values, all phases evaluated in one pass


class Budget:
    __slots__ = ("intervals", "expr_pcs", "exhausted", "fre_rules", "expr_values", "steps")

    def __init__(self, intervals: int) -> None:
        self.intervals = intervals
        self.expr_pcs = MAX_EXPR_PCS
        self.exhausted = False
        # Memo tables: FRE rules and periodic CFA expressions repeat across a section.
        self.fre_rules: dict = {}
        self.expr_values: dict = {}
        self.steps: dict = {}  # id(.eh_frame rows) -> eh_steps of all of them

    def spend(self, n: int) -> bool:
        """Charge n intervals; False (and exhausted) once the bound is passed."""
        self.intervals -= n
        return self._within(self.intervals)

    def spend_pcs(self, n: int) -> bool:
        """Charge n PCs of expression evaluation; False (and exhausted) past that bound."""
        self.expr_pcs -= n
        return self._within(self.expr_pcs)

    def _within(self, left: int) -> bool:
        if left < 0:
            self.exhausted = True
        return left >= 0


class Window(NamedTuple):
    """[x, y) compared at the points (each starting an interval); [x, y) is a tile whose
    rules repeat every y - x bytes up to ``end`` (end == y: no repeat)."""
    x: int
    y: int
    points: list[int]
    free: bool
    end: int


# -- SFrame side ---------------------------------------------------------------------------

class _SRow(NamedTuple):
    fre: int
    cfa: RegRule | None  # None: outermost (no data words)
    ra: Rule
    fp: Rule


def _sframe_rows(h: Header, fde: FDE, abi: Abi, memo: dict) -> list[_SRow] | None:
    """(CFA, RA, FP) per FRE, or None when the FREs cannot be read as rules
    (structural rules report why)."""
    flex = fde.flex(h.version)
    rows = []
    prev = -1
    for j, fre in enumerate(fde.fres):
        if start_out_of_order(prev, fre.start):  # fre-start-order's finding says why
            return None
        prev = fre.start
        if fre.count == 0:
            if h.version == constants.VERSION_1:
                return None
            rows.append(_SRow(j, None, UNDEFINED, None))
            continue
        key = (flex, fre.info, fre.words)
        got = memo.get(key)
        if got is None:
            got = memo[key] = rules_of(h, flex, fre, abi)
        if got is None:
            return None
        rows.append(_SRow(j, *got))
    return rows


def rules_of(h: Header, flex: bool, fre: FRE, abi: Abi) -> tuple | None:
    """(CFA, RA, FP) of an FRE with data words, interned; None when it cannot be read as
    rules (the structural rules report why). An RA the ABI keeps at a fixed offset comes
    from the header."""
    try:
        cfa, ra, fp = fre_rules(h, flex, fre, abi)
    except ValueError:
        return None
    if cfa is None:
        return None
    if ra is None and abi.ra is None:
        ra = RegRule(None, h.fixed_ra, True) if h.fixed_ra else None
    return (intern(cfa), intern(ra), intern(fp))


def _rep(fde: FDE, h: Header) -> int:
    return fde.rep_size if h.version >= constants.VERSION_2 else 16  # v1 has no rep_size: ld's 16


def _block_points(start: int, fde: FDE, rep: int, lo: int, hi: int) -> list[int]:
    """PCMASK row boundaries inside [lo, hi)."""
    out = []
    first = max(0, (lo - start) // rep)
    for block in range(start + first * rep, hi, rep):
        out.extend(block + f.start for f in fde.fres
                   if f.start < rep and lo <= block + f.start < hi)
    return out


def _srow_at(pc: int, start: int, fde: FDE, h: Header, starts: list[int],
             rows: list[_SRow]) -> _SRow | None:
    off = pc - start
    if fde.pcmask:
        off %= _rep(fde, h)
    i = bisect_right(starts, off) - 1
    return rows[i] if i >= 0 else None


# -- comparison ------------------------------------------------------------------------------

def _eh_at(eh: EhFde, pcs: list[int], pc: int, pc_reg: int | None,
           memo: dict) -> tuple[object, CfiRow] | None:
    i = bisect_right(pcs, pc) - 1
    if i < 0:
        return None
    row = eh.rows[i]
    cfa = row.cfa
    if isinstance(cfa, CfaExpr):
        # Keyed by identity: decode_eh_frame makes one CfaExpr per distinct expression,
        # and they live as long as this check.
        period = memo.get(id(cfa))
        if period is None:
            period = memo[id(cfa)] = cfa.period(pc_reg) or 0
        if period:  # the value depends on pc & (period - 1) only
            key: tuple = (id(cfa), pc & (period - 1))
        else:
            # (not the period's entry: _windows reads that one to choose the PCs it compares)
            if not _pc_free(cfa, pc_reg, memo):
                return cfa.at(pc, pc_reg), row
            key = (id(cfa), None)  # read at no PC: one value for all
        value = memo.get(key)
        if value is None:
            if period and period <= PHASES_AT_ONCE:
                # Every phase at once (_windows reads a whole period after each boundary),
                # at the PCs of this period: value(pc) depends on pc & (period - 1) alone.
                base = pc - (pc & (period - 1))
                for phase, v in enumerate(eval_linear_each(cfa.ops, range(base, base + period),
                                                           pc_reg, None)):
                    memo[(id(cfa), phase)] = v
                return memo[key], row
            value = memo[key] = cfa.at(pc, pc_reg)
        return value, row
    return cfa, row


def _windows(start: int, fde: FDE, h: Header, eh: EhFde, lo: int, hi: int,
             pc_reg: int | None, budget: Budget) -> list[Window] | None:
    """The ranges to compare, each point starting a constant-rule interval.

    Every .eh_frame row gives a window. Inside it, a rule that is constant (or a CFA
    expression periodic in the PC, like the PLT's) against PCINC rows changes only at FRE
    starts, and against PCMASK rows repeats with the block: so one joint period, a tile,
    shows every pair of rules that occurs, and compare_fde replays it over the rest of the
    row (``end``) only where it found a difference, for the counts. Under a periodic
    expression a PCINC row gives a tile of one period, every PC a point, after each FRE
    start. Other expressions are evaluated PC by PC, within the work budget. ``free`` is
    True for an expression that reads no PC (DRAP's ``breg6 -8; deref``) in rows sorted by
    PC: its value is one for the whole row (see _eh_at), which _eh_at finds at every PC of
    the window, so the points are the constant rule's and each interval [p, q) stands for
    the q - p one-PC intervals of the reference (PC_BY_PC), charged to the budget as those.
    """
    out: list[Window] = []
    rep = _rep(fde, h) if fde.pcmask else 0
    if fde.pcmask and rep <= 0:
        return None
    fre_pcs = [] if fde.pcmask else [start + f.start for f in fde.fres]
    pcs = [r.pc for r in eh.rows]
    for k, r in enumerate(eh.rows):
        x = max(lo, r.pc)
        y = end = min(hi, eh.rows[k + 1].pc if k + 1 < len(eh.rows) else eh.end)
        if x >= y:
            continue
        period = 1
        free = False  # an expression whose value is the same at every PC
        if isinstance(r.cfa, CfaExpr):
            period = budget.expr_values.get(id(r.cfa))
            if period is None:
                period = budget.expr_values[id(r.cfa)] = r.cfa.period(pc_reg) or 0
            free = (not period and not PC_BY_PC and _pc_free(r.cfa, pc_reg, budget.expr_values)
                    and all(map(lt, pcs, islice(pcs, 1, None))))
        if fde.pcmask:
            if period:
                y = min(y, x + rep * period // gcd(rep, period))
            pts = _block_points(start, fde, rep, x, y)
            # a block start is a point too: before its first FRE SFrame has no row
            pts.extend(range(start + ((x - start) // rep + 1) * rep, y, rep))
        else:
            pts = [p for p in fre_pcs if x < p < y]
        pts.append(x)
        if free:
            # The reference's one span [x, y), every PC a point: all of [x, y), which holds
            # the points above.
            if not (budget.spend_pcs(y - x) and budget.spend(y - x)):
                return None
            out.append(Window(x, y, sorted(set(pts)), True, end))
            continue
        tiles = [(x, y, end)]
        if isinstance(r.cfa, CfaExpr):
            # every PC of the tile (PCMASK), of the row (no period), or of one period after
            # each FRE start (PCINC), whose copies fill the row up to the next one
            if period and not fde.pcmask:
                marks = sorted(set(pts))
                tiles = [(m, min(n, m + period), n)
                         for m, n in zip(marks, marks[1:] + [y], strict=True)]
            pts = []
            for sx, sy, _end in tiles:
                if not budget.spend_pcs(sy - sx):
                    return None
                pts.extend(range(sx, sy))
        pts = sorted(set(pts))
        if not budget.spend(len(pts)):
            return None
        out.extend(Window(sx, sy, pts[bisect_left(pts, sx):bisect_left(pts, sy)], False, n)
                   for sx, sy, n in tiles)
    return out


def _pc_free(cfa: CfaExpr, pc_reg: int | None, memo: dict) -> bool:
    """_eh_at's test (and memo entry): the expression reads no PC."""
    free = memo.get((id(cfa), "pc-free"))
    if free is None:
        free = memo[(id(cfa), "pc-free")] = not cfa.reads_pc(pc_reg)
    return free


def compare_fde(i: int, start: int, size: int, fde: FDE, h: Header, abi: Abi,
                 overlaps: Sequence[EhFde], budget: Budget,
                 out: dict[str, Mismatch], opaque: list[str]) -> None:
    rows = _sframe_rows(h, fde, abi, budget.fre_rules)
    if not rows:
        return
    if len(overlaps) == 1 and _same_rows(start, size, fde, rows, overlaps[0], budget.steps):
        return  # the common case, decided without walking intervals
    starts = [f.start for f in fde.fres]
    pc_reg = abi.pc
    end = start + size
    for eh in overlaps:
        lo, hi = max(start, eh.start), min(end, eh.end)
        if lo >= hi or not eh.rel:
            continue
        pcs = [r.pc for r in eh.rows]
        windows = _windows(start, fde, h, eh, lo, hi, pc_reg, budget)
        if windows is None:
            return
        args = (i, start, fde, h, starts, rows, eh, pcs, pc_reg, budget, out, opaque)
        for x, y, pts, free, tile_end in windows:
            seen = _seen(out, opaque) if tile_end > y else None
            _compare_points(pts, y, 0, y, free, args)
            # A tile that differs somewhere differs in each copy of it up to tile_end, which
            # the counts must hold. (A tile without difference has none in its copies.)
            if (seen is not None and _seen(out, opaque) != seen
                    and not _replay(x, y, pts, tile_end, args)):
                return


def _compare_points(pts: list[int], y: int, d: int, end: int, free: bool, args: tuple) -> None:
    """Compare the intervals the points start ([p, next point or y)), shifted by d and cut
    at end; a free window's interval stands for its q - p one-PC intervals (_windows)."""
    for n, p in enumerate(pts):
        a = p + d
        if a >= end:
            break
        b = min(end, (pts[n + 1] if n + 1 < len(pts) else y) + d)
        _compare_at(a, b, *args, b - a if free else 1)


def _replay(x: int, y: int, pts: list[int], end: int, args: tuple) -> bool:
    """Compare the copies of the tile [x, y) (its points `pts`) up to `end`: the first copy
    and a partial last one at the tile's points, those between counted as the first, so a
    PLT of any size costs two copies (each copy holds the same intervals, shifted; a range
    joining two copies joins every two). False when the work bound is reached."""
    *_, budget, out, opaque = args
    tile = y - x
    full, part = divmod(end - y, tile)

    def copy(d: int) -> bool:
        if not budget.spend(len(pts)):
            return False
        _compare_points(pts, y, d, end, False, args)
        return True

    if full:
        before = {k: (m.ranges, m.nbytes) for k, m in out.items()}
        noted = len(opaque)
        if not copy(tile):
            return False
        more = full - 1  # copies 2..full: what copy 1 added, each
        notes = (len(opaque) - noted) * more
        if not budget.spend(notes):  # the notes are kept one by one
            return False
        opaque.extend(opaque[-1:] * notes)
        for k, (ranges, nbytes) in before.items():
            m = out[k]
            if m.nbytes != nbytes:
                m.ranges += (m.ranges - ranges) * more
                m.nbytes += (m.nbytes - nbytes) * more
                m.last = (m.last[0] + tile * more, *m.last[1:])
                if m.ranges == 1:
                    m.first = (m.first[0], m.last[0])
    return not part or copy((full + 1) * tile)


def _seen(out: dict[str, Mismatch], opaque: list[str]) -> tuple:
    """What the comparison has noted so far: changed by any difference or opaque rule."""
    return len(opaque), [(m.ranges, m.nbytes) for m in out.values()]


def _same_rows(start: int, size: int, fde: FDE, rows: list[_SRow], eh: EhFde,
               memo: dict) -> bool:
    """True when a PCINC FDE and the one .eh_frame FDE covering it list the same rules at
    the same offsets (after merging repeated rows): then every PC agrees."""
    if fde.pcmask or eh.start != start or eh.end < start + size or not eh.rel:
        return False
    mine: list[tuple[int, tuple]] = []
    for f, r in zip(fde.fres, rows, strict=True):
        if f.start >= size:
            break
        if r.cfa is None:
            return False
        rules = (r.cfa, r.ra, r.fp)
        if not mine or mine[-1][1] != rules:
            mine.append((f.start, rules))
    return mine == eh_steps(eh.rel, size, memo)


def eh_steps(rel: tuple[CfiRow, ...], size: int,
             memo: dict | None = None) -> list[tuple[int, tuple]] | None:
    """An FDE's relative rows `rel` at offsets below `size` as (offset, (CFA, RA, FP)),
    repeated rules merged; None when a CFA there is not register + offset. With `memo`
    (keyed by the shared rows' identity), computed once per distinct program. The rules of
    decode_eh_frame's rows are one object per value (CfaExpr aside, which ends the steps):
    a rule repeats exactly when it is the same object."""
    if memo is not None and (not rel or size > rel[-1].pc):
        got = memo.get(id(rel), memo)
        if got is memo:
            got = memo[id(rel)] = eh_steps(rel, size)
        return got
    steps: list[tuple[int, tuple]] = []
    lc = lr = lf = _NONE  # the last step's rules
    for pc, cfa, ra, fp in rel:
        if pc >= size:
            break
        if not isinstance(cfa, RegRule):
            return None
        if cfa is not lc or ra is not lr or fp is not lf:
            steps.append((pc, (cfa, ra, fp)))
            lc, lr, lf = cfa, ra, fp
    return steps


_NONE = object()  # no rule yet (None is one: FP kept)


def _compare_at(p: int, q: int, i: int, start: int, fde: FDE, h: Header, starts: list[int],
                rows: list[_SRow], eh: EhFde, pcs: list[int], pc_reg: int | None,
                budget: Budget, out: dict[str, Mismatch], opaque: list[str],
                reps: int = 1) -> None:
    """Compare the rules both sides give for [p, q); `reps`: how many one-PC intervals
    of the reference [p, q) stands for (_windows), each noting its opaque rules."""
    srow = _srow_at(p, start, fde, h, starts, rows)
    got = _eh_at(eh, pcs, p, pc_reg, budget.expr_values)
    if srow is None or got is None:
        return
    eh_cfa, erow = got
    if srow.cfa is None:  # SFrame: outermost frame
        pairs = [("RA", UNDEFINED, erow.ra)]
    else:
        pairs = [("CFA", srow.cfa, eh_cfa), ("RA", srow.ra, erow.ra), ("FP", srow.fp, erow.fp)]
    for kind, s_rule, e_rule in pairs:
        if isinstance(e_rule, Opaque):
            # one note per one-PC interval [p, q) stands for: the finding shows the first
            # and counts them
            opaque.extend(repeat(f"{kind} {e_rule.why} at {p:#x}", reps))
            continue
        if s_rule is e_rule or s_rule == e_rule:
            continue
        m = out.get(kind)
        if m is None:
            out[kind] = Mismatch(kind, i, start, (p, q), srow.fre, s_rule, e_rule, 1, q - p)
        else:
            m.add(p, q, s_rule, e_rule)
