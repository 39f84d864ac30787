"""Semantic rules: does the SFrame data say what `.eh_frame` says, PC by PC?

For every SFrame FDE the rows of the `.eh_frame` FDEs covering the same PCs are
merged with the FRE rows (one pass over both row lists, not one lookup per PC;
only PCs whose CFA is a DWARF expression, i.e. PLT entries, are evaluated one by
one), and the CFA, RA and FP rules are compared on every PC interval where
neither side changes. Mismatches are reported once per FDE and kind, with the
first differing range and both rules.
"""

from __future__ import annotations

import gc
from bisect import bisect_left, bisect_right
from collections.abc import Callable, Sequence
from itertools import islice
from math import gcd
from operator import lt
from typing import NamedTuple

from ..dwarf.cfi import UNDEFINED, CfaExpr, CfiError, CfiRow, EhFde, Opaque, Rule, decode_eh_frame
from ..elf import ElfSFrameInfo, FuncSymbol
from ..errors import DecodeError
from ..format import constants as C
from ..format.abi import ABIS, Abi
from ..format.decode import Decoder
from ..format.fre_blocks import FreBlocks, Tokens, starts_of, token_fre
from ..format.fre_rules import RegRule, fre_rules, intern
from ..format.model import FDE, FRE, Header
from ..result import Severity
from .context import MAX_PER_RULE, SectionContext
from .registry import Rule as RuleDef
from .registry import rule

_DROPS = """Where gas documentedly records less than .eh_frame, nothing is reported: SFrame
    keeps only the CFA, RA and FP (other callee-saved registers are ignored); on x86-64 the RA
    is always at CFA-8 (the fixed RA offset); an FP or RA with no rule, the same-value rule or
    (FP) an undefined rule all mean "not saved"; .cfi_remember_state/.cfi_restore_state are
    flattened into plain rows; rows at or past the function end are unused; the aarch64
    pointer-authentication state (.cfi_negate_ra_state) is a separate FRE bit, not compared;
    functions gas cannot describe (DRAP and other stack realignment, a CFA in a register other
    than SP/FP, .cfi_escape with unknown effects, an RA not at a fixed CFA offset) get no
    SFrame FDE at all and are reported as coverage, not as a mismatch."""

CFA_MISMATCH = rule(
    "semantic-cfa-mismatch", "semantic", "error", "CFA rule differs from .eh_frame",
    f"""At these PCs the SFrame FRE gives a different CFA (base register or offset) than the
    DWARF CFI in .eh_frame, which compilers, debuggers and C++ exception handling use. An
    unwinder that trusts SFrame computes a wrong CFA, so a wrong return address and caller,
    for every sample taken there. {_DROPS}""",
    "Regenerate the SFrame section from the same CFI (a fixed gas/ld); compare `objdump "
    "--sframe` with `readelf --debug-dump=frames-interp` at the PC shown.")
RA_MISMATCH = rule(
    "semantic-ra-mismatch", "semantic", "error", "return-address rule differs from .eh_frame",
    f"""The SFrame FRE says the return address is somewhere else than .eh_frame does (another
    CFA offset, not saved, or the outermost frame marker where .eh_frame has an RA, or the
    other way round). {_DROPS}""",
    "Regenerate the SFrame section; check .cfi_offset/.cfi_undefined of the RA column.")
FP_MISMATCH = rule(
    "semantic-fp-mismatch", "semantic", "error", "frame-pointer rule differs from .eh_frame",
    f"""The SFrame FRE says the caller's frame pointer is saved somewhere else than .eh_frame
    does (or saved where .eh_frame has it unsaved, or the reverse). The CFA of the next frame
    up is then wrong whenever that frame's CFA is FP-based. {_DROPS}""",
    "Regenerate the SFrame section; check .cfi_offset/.cfi_restore of the frame pointer.")
NO_SFRAME_FDE = rule(
    "semantic-no-sframe-fde", "semantic", "info", ".eh_frame FDE without SFrame FDE",
    """A function described by .eh_frame has no SFrame FDE, so SFrame-only unwinders (the
    kernel, glibc's backtrace) cannot unwind through it. gas leaves such functions out on
    purpose when SFrame cannot express their CFI (DRAP or other stack realignment, a CFA in a
    register other than SP/FP, .cfi_escape, an unusual RA rule); start files and objects not
    assembled with --gsframe have none either. The message names the function and, where the
    CFI shows it, the reason. Only part of a function being covered is a warning.""",
    "Nothing to do for the known gas cases; build every object with -Wa,--gsframe.")
NO_EH_FDE = rule(
    "semantic-no-eh-frame-fde", "semantic", "warning", "SFrame FDE without .eh_frame FDE",
    """Code that an SFrame FDE describes is not covered by any .eh_frame FDE. gas derives SFrame
    from the same CFI directives, and ld generates both for its PLT sections, so in a file that
    has .eh_frame this points at a function start or size that is wrong in one of the two.""",
    "Check the FDE's start address and size against the symbol table and .eh_frame.")
OPAQUE = rule(
    "semantic-not-compared", "semantic", "info", "CFI rule sfcheck cannot compare",
    """.eh_frame gives a rule as a DWARF expression outside the subset sfcheck evaluates
    (register plus constant, optionally loaded, with arithmetic on the PC as in PLT entries),
    so those PCs were not compared. Also reported, with the reason, for .eh_frame FDEs whose
    call-frame program was stopped by a work bound (rows or instructions per FDE, per file:
    sfcheck.dwarf.ehframe), which hostile input cannot exceed.""",
    "Nothing to do; report the expression to sfcheck if it is common.")
NO_EH_FRAME = rule(
    "semantic-no-eh-frame", "semantic", "info", "no usable .eh_frame to cross-check against",
    """The file has no .eh_frame section (built with -fno-asynchronous-unwind-tables and
    .cfi_sections .sframe only, or stripped), or it could not be decoded (then a warning with
    the decoder's message), so the SFrame data was not compared with DWARF CFI.""",
    "Nothing to do if .eh_frame is absent on purpose.")
TRUNCATED = rule(
    "semantic-truncated", "semantic", "info", "cross-check stopped early",
    """The cross-check compares at most a fixed number of PC intervals per section (a bound
    proportional to the section sizes) so hostile input cannot make it run for long. The rest
    of the section was not compared.""",
    "Nothing to do unless the section is very large: then report it.")

# Work bound (the interval bound scales with the section sizes, in cross_check).
MAX_EXPR_PCS = 1 << 16  # PCs evaluated one by one under a CFA expression, per section


# Plain classes with __slots__ here and below, not dataclasses: every `sfcheck FILE`
# imports this module, and each dataclass costs about a millisecond to create.
class Mismatch:
    """Where SFrame and .eh_frame disagree on one thing (CFA, RA or FP) in one FDE."""

    __slots__ = ("kind", "fde", "func", "first", "fre", "sframe", "eh", "ranges", "nbytes")

    def __init__(self, kind: str, fde: int, func: int, first: tuple[int, int],
                 fre: int | None, sframe: object, eh: object, ranges: int = 1,
                 nbytes: int = 0) -> None:
        self.kind = kind  # "CFA" | "RA" | "FP"
        self.fde, self.func = fde, func  # FDE index, function start
        self.first = first  # [pc, end) of the first differing range
        self.fre, self.sframe, self.eh = fre, sframe, eh
        self.ranges, self.nbytes = ranges, nbytes


class _Budget:
    __slots__ = ("intervals", "expr_pcs", "exhausted", "fre_rules", "expr_values", "steps")

    def __init__(self, intervals: int) -> None:
        self.intervals = intervals
        self.expr_pcs = MAX_EXPR_PCS
        self.exhausted = False
        # Memo tables: FRE rules and periodic CFA expressions repeat across a section.
        self.fre_rules: dict = {}
        self.expr_values: dict = {}
        self.steps: dict = {}  # id(.eh_frame rows) -> _eh_steps of all of them


# A known-defect classifier (rules/defect.py) may claim a mismatch: it returns the rule
# and message to use instead of the generic one.
Classifier = Callable[["Mismatch", "Facts"], tuple[RuleDef, str] | None]
CLASSIFIERS: list[Classifier] = []
# Likewise for an .eh_frame FDE without SFrame FDE: (rule, reason) or None.
COVERAGE_CLASSIFIERS: list[Callable[[EhFde, Abi], tuple[RuleDef, str] | None]] = []


class Facts:
    """What a classifier may look at."""

    __slots__ = ("header", "abi", "section_of")

    def __init__(self, header: Header, abi: Abi,
                 section_of: Callable[[int], str | None]) -> None:
        self.header, self.abi = header, abi
        self.section_of = section_of  # name of the text section holding a PC


# -- formatting -------------------------------------------------------------------------

_X86_NAMES = ("rax", "rdx", "rcx", "rbx", "rsi", "rdi", "rbp", "rsp") + tuple(
    f"r{i}" for i in range(8, 16)) + ("rip",)


def reg_name(abi: Abi, reg: int) -> str:
    if abi.name == "amd64":
        return _X86_NAMES[reg] if 0 <= reg < len(_X86_NAMES) else f"r{reg}"
    if abi.name.startswith("aarch64"):
        return "sp" if reg == 31 else f"x{reg}" if 0 <= reg < 31 else f"r{reg}"
    return f"r{reg}" if 0 <= reg < 16 else f"f{reg - 16}" if reg < 32 else f"r{reg}"


def show_cfa(abi: Abi, r: object) -> str:
    if isinstance(r, RegRule) and r.reg is not None:
        text = f"{reg_name(abi, r.reg)}{r.offset:+d}"
        return f"*({text})" if r.deref else text
    return str(r)


def show_slot(abi: Abi, r: object) -> str:
    """RA/FP rules in objdump's terms: c-8 (saved at CFA-8), u (not saved)."""
    if r is None:
        return "u (not saved)"
    if r is UNDEFINED:
        return "undefined (outermost frame)"
    if isinstance(r, RegRule):
        if r.reg is None:
            return f"c{r.offset:+d}" if r.deref else f"value c{r.offset:+d}"
        base = f"{reg_name(abi, r.reg)}{r.offset:+d}" if r.offset else reg_name(abi, r.reg)
        return f"*({base})" if r.deref else f"in {base}"
    return str(r)


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
        if fre.start <= prev:
            return None
        prev = fre.start
        if fre.count == 0:
            if h.version == C.VERSION_1:
                return None
            rows.append(_SRow(j, None, UNDEFINED, None))
            continue
        key = (flex, fre.info, fre.words)
        got = memo.get(key)
        if got is None:
            got = memo[key] = _rules_of(h, flex, fre, abi)
        if got is None:
            return None
        rows.append(_SRow(j, *got))
    return rows


_NO_ROWS, _OUTERMOST = object(), object()


class _Stop(Exception):
    """The work bound was reached: the rest of the section is not compared."""


class _Settle:
    """Decides from an FDE's raw FRE tokens (format.fre_blocks) when the exact comparison
    would report nothing, without building FDE or FRE objects: the same answer as
    _sframe_rows + _same_rows for PCINC FDEs, or "don't know" (then the exact path runs).
    A large binary is mostly such FDEs, so this is what keeps the cross-check linear
    and cheap."""

    def __init__(self, h: Header, abi: Abi) -> None:
        self.h, self.abi = h, abi
        self.v3 = h.version == C.VERSION_3
        self.rules: dict[bytes, object] = {}  # info + data-word bytes -> (CFA, RA, FP)
        # (FRE tokens, .eh_frame rows, same start?) -> (verdict, reach): functions of one
        # shape share both sides; the verdict holds for any size past `reach`.
        self.verdicts: dict[tuple, tuple[bool, int]] = {}

    def _rules(self, rest: bytes) -> object:
        h, abi = self.h, self.abi
        # No data words: the outermost frame (v1 has no such FRE: _sframe_rows gives up).
        if not (rest[0] >> 1) & 0xF:
            return _NO_ROWS if h.version == C.VERSION_1 else _OUTERMOST
        got = _rules_of(h, False, token_fre(rest, h.big_endian), abi)
        return _NO_ROWS if got is None else got

    def quiet(self, start: int, size: int, info: int, info2: int, asz: int, toks: Tokens,
              eh: EhFde) -> bool:
        """True when _compare_fde against `eh` alone would find nothing to report."""
        if info & 0x10 or (self.v3 and info2 & 0x1F == C.FDE_TYPE_FLEX) or eh.limit:
            return False  # PCMASK and FLEX FDEs, .eh_frame not run: the exact path
        if eh.start > start or eh.end < start + size:
            return False  # a part no .eh_frame FDE covers: the exact path reports it
        if not toks:
            return True  # no FREs, no rows to compare
        key = (asz, id(eh.rel), eh.start == start, *toks)  # eh.rel lives as long as this
        got = self.verdicts.get(key)
        if got is not None and size > got[1]:
            return got[0]
        verdict = self._quiet(start, size, asz, toks, eh)
        starts = starts_of(toks, asz, self.h.big_endian)
        reach = max(max(starts), eh.rel[-1].pc if eh.rel else -1)
        if size > reach:  # nothing was cut at `size`: the same for every larger size
            self.verdicts[key] = (verdict, reach)
        return verdict

    def _quiet(self, start: int, size: int, asz: int, toks: Tokens, eh: EhFde) -> bool:
        starts = starts_of(toks, asz, self.h.big_endian)
        if not all(map(lt, starts, islice(starts, 1, None))):
            return True  # _sframe_rows gives up on unordered FREs (structural rules report)
        rules = self.rules
        mine: list[tuple[int, object]] = []
        last = None
        for st, (_b, rest) in zip(starts, toks, strict=True):
            r = rules.get(rest)
            if r is None:
                r = rules[rest] = self._rules(rest)
            if r is _NO_ROWS:
                return True  # every FRE is read, as _sframe_rows does, even past the end
            if st >= size or r is last:
                continue
            if r is _OUTERMOST:
                return False
            if r != last:
                mine.append((st, r))
            last = r
        if eh.start != start or not eh.rel:
            return False
        return mine == _eh_steps(eh, size)


def _rules_of(h: Header, flex: bool, fre: FRE, abi: Abi) -> tuple | None:
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
    return fde.rep_size if h.version >= C.VERSION_2 else 16  # v1 has no rep_size: ld's 16


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
            key = (id(cfa), pc & (period - 1))
            value = memo.get(key)
            if value is None:
                value = memo[key] = cfa.at(pc, pc_reg)
            return value, row
        return cfa.at(pc, pc_reg), row
    return cfa, row


def _windows(start: int, fde: FDE, h: Header, eh: EhFde, lo: int, hi: int,
             pc_reg: int | None, budget: _Budget) -> list[tuple[int, int, list[int]]] | None:
    """(from, to, points) ranges to compare, each point starting a constant-rule interval.

    Every .eh_frame row gives one window. Inside it, a rule that is constant (or a CFA
    expression periodic in the PC, like the PLT's) against PCINC rows changes only at FRE
    starts, and against PCMASK rows repeats with the block: so a window of one joint period
    shows every pair of rules that occurs, and the rest of the row adds nothing new. Other
    expressions are evaluated PC by PC, within the work budget.
    """
    out = []
    rep = _rep(fde, h) if fde.pcmask else 0
    if fde.pcmask and rep <= 0:
        return None
    fre_pcs = [] if fde.pcmask else [start + f.start for f in fde.fres]
    for k, r in enumerate(eh.rows):
        x = max(lo, r.pc)
        y = min(hi, eh.rows[k + 1].pc if k + 1 < len(eh.rows) else eh.end)
        if x >= y:
            continue
        period = 1
        if isinstance(r.cfa, CfaExpr):
            period = budget.expr_values.get(id(r.cfa))
            if period is None:
                period = budget.expr_values[id(r.cfa)] = r.cfa.period(pc_reg) or 0
        if fde.pcmask:
            if period:
                y = min(y, x + rep * period // gcd(rep, period))
            pts = _block_points(start, fde, rep, x, y)
        else:
            pts = [p for p in fre_pcs if x < p < y]
        pts.append(x)
        if isinstance(r.cfa, CfaExpr):
            # per PC: the whole row, or one period after each SFrame boundary
            marks = sorted(set(pts))
            spans = ([(x, y)] if not period else
                     [(m, min(y, m + period, n)) for m, n in zip(marks, marks[1:] + [y],
                                                                 strict=True)])
            for sx, sy in spans:
                budget.expr_pcs -= sy - sx
                if budget.expr_pcs < 0:
                    budget.exhausted = True
                    return None
                pts.extend(range(sx, sy))
        pts = sorted(set(pts))
        budget.intervals -= len(pts)
        if budget.intervals < 0:
            budget.exhausted = True
            return None
        out.append((x, y, pts))
    return out


def _compare_fde(i: int, start: int, size: int, fde: FDE, h: Header, abi: Abi,
                 overlaps: Sequence[EhFde], budget: _Budget,
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
        for _x, y, pts in windows:
            for n, p in enumerate(pts):
                q = pts[n + 1] if n + 1 < len(pts) else y
                _compare_at(p, q, i, start, fde, h, starts, rows, eh, pcs, pc_reg, budget,
                            out, opaque)


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
    return mine == _eh_steps(eh, size, memo)


def _eh_steps(eh: EhFde, size: int, memo: dict | None = None) -> list[tuple[int, tuple]] | None:
    """`eh`'s rows at offsets below `size` as (offset, (CFA, RA, FP)), repeated rules merged;
    None when a CFA there is not register + offset. Relative rows: no absolute ones built.
    With `memo` (keyed by the shared rows' identity), computed once per distinct program."""
    if memo is not None and (not eh.rel or size > eh.rel[-1].pc):
        got = memo.get(id(eh.rel), memo)
        if got is memo:
            got = memo[id(eh.rel)] = _eh_steps(eh, size)
        return got
    steps: list[tuple[int, tuple]] = []
    last = None
    for row in eh.rel:
        if row.pc >= size:
            break
        if not isinstance(row.cfa, RegRule):
            return None
        rules = (row.cfa, row.ra, row.fp)
        if rules != last:
            steps.append((row.pc, rules))
            last = rules
    return steps


def _compare_at(p: int, q: int, i: int, start: int, fde: FDE, h: Header, starts: list[int],
                rows: list[_SRow], eh: EhFde, pcs: list[int], pc_reg: int | None,
                budget: _Budget, out: dict[str, Mismatch], opaque: list[str]) -> None:
    """Compare the rules both sides give for [p, q)."""
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
            opaque.append(f"{kind} {e_rule.why} at {p:#x}")
            continue
        if s_rule is e_rule or s_rule == e_rule:
            continue
        m = out.get(kind)
        if m is None:
            out[kind] = Mismatch(kind, i, start, (p, q), srow.fre, s_rule, e_rule, 1, q - p)
        else:
            if m.first[1] == p and (m.sframe, m.eh) == (s_rule, e_rule) and m.ranges == 1:
                m.first = (m.first[0], q)
            else:
                m.ranges += 1
            m.nbytes += q - p


# -- coverage ------------------------------------------------------------------------------

def skip_reason(eh: EhFde, abi: Abi) -> str | None:
    """Why gas would leave this function out of SFrame, read from its CFI; None if no reason."""
    for r in eh.rel:  # the rules only: no absolute rows needed
        if isinstance(r.cfa, CfaExpr | Opaque):
            return "CFA given by a DWARF expression (DRAP, stack realignment, signal frame)"
        if r.cfa.reg not in (abi.sp, abi.fp):
            return f"CFA based on {reg_name(abi, r.cfa.reg)}, not SP or FP"
        if isinstance(r.ra, Opaque) or isinstance(r.fp, Opaque):
            return "RA or FP saved by a DWARF expression (.cfi_escape)"
        if isinstance(r.ra, RegRule) and abi.ra is None and r.ra.offset != -8:
            return f"RA at CFA{r.ra.offset:+d}, not at the fixed CFA-8"
    return None


def func_name(symbols: Sequence[FuncSymbol], addrs: list[int], pc: int,
              section_of: Callable[[int], str | None]) -> str:
    j = bisect_left(addrs, pc)  # symbols sort largest-first among equal addresses
    if j < len(addrs) and addrs[j] == pc:
        return symbols[j].name
    if j:
        sym = symbols[j - 1]
        if pc < sym.addr + sym.size:
            return f"{sym.name}+{pc - sym.addr:#x}"
    sec = section_of(pc)
    return f"code in {sec}" if sec else "an unnamed function"


# -- entry point ----------------------------------------------------------------------------

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
    limited = [e for e in ehs if e.limit]
    if limited:
        first.emit(OPAQUE, f"{len(limited)} .eh_frame FDE(s) not interpreted, first at "
                   f".eh_frame+{limited[0].offset:#x}: {limited[0].limit}")
    eh_starts = [e.start for e in ehs]
    covered = [0] * len(ehs)  # bytes of each eh FDE some SFrame FDE covers
    text = sorted((t.start, t.end, t.name) for t in view.text_ranges)
    text_starts = [t[0] for t in text]

    def section_of(pc: int) -> str | None:
        k = bisect_right(text_starts, pc) - 1
        return text[k][2] if k >= 0 and pc < text[k][1] else None

    for ctx, h, (vma, data) in zip(ctxs, headers, view.sframe, strict=False):
        if h is None or h.abi != abi_id:
            continue
        facts = Facts(h, abi, section_of)
        budget = _Budget(intervals=64 * (len(data) + len(view.eh_frame)) + 4096)
        try:
            _SectionPass(ctx, facts, vma, ehs, eh_starts, covered, budget).run(data)
        except (DecodeError, _Stop):
            continue  # the structural rules report a DecodeError; _Stop: reported

    symbols = view.symbols
    addrs = [s.addr for s in symbols]
    for e, got in zip(ehs, covered, strict=True):
        size = e.end - e.start
        if size <= 0 or got >= size:
            continue
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
                          f"{where}: only {got} of its {size} bytes are covered by SFrame FDEs")


def _count_only(ctx: SectionContext, rule: RuleDef) -> bool:
    """True when `ctx` would not keep a finding of `rule` (reported at its own severity):
    the rule is off or claimed (then emit drops it), or past the per-rule cap (then emit
    only counts it, as done here). Its message need not be built then."""
    key = (rule.id, rule.severity)
    if key not in ctx.decided:
        return False  # the first one: emit decides
    if ctx.decided[key] is None or rule.id in ctx.claimed:
        return True
    n = ctx.counts.get(rule.id, 0)
    if n < MAX_PER_RULE:
        return False
    ctx.counts[rule.id] = n + 1
    return True


class _SectionPass:
    """One SFrame section against the .eh_frame FDEs: each SFrame FDE is settled from its
    raw FRE tokens when possible (_Settle), else compared exactly (_check_fde). An FDE no
    .eh_frame FDE overlaps costs only its coverage finding (counted once past the cap).
    `fast` off takes the exact path for every FDE (the tests compare both)."""

    fast = True

    def __init__(self, ctx: SectionContext, facts: Facts, vma: int, ehs: list[EhFde],
                 eh_starts: list[int], covered: list[int], budget: _Budget) -> None:
        self.ctx, self.facts, self.vma, self.budget = ctx, facts, vma, budget
        self.ehs, self.eh_starts, self.covered = ehs, eh_starts, covered
        h = self.h = facts.header
        self.rel = h.pcrel or ctx.relocatable
        self.settle = _Settle(h, facts.abi)
        self.dec: Decoder | None = None

    def run(self, data: bytes) -> None:
        self.dec = Decoder(data)
        FreBlocks(self.dec).run(0, self.h.num_fdes, self.on_tokens, self.on_decoded)

    def overlapping(self, start: int, end: int) -> list[EhFde]:
        """The .eh_frame FDEs overlapping [start, end); counts the bytes they cover."""
        ehs, covered = self.ehs, self.covered
        k = max(bisect_right(self.eh_starts, start) - 1, 0)
        found = []
        while k < len(ehs) and ehs[k].start < end:
            e = ehs[k]
            if e.end > start:
                found.append(e)
                covered[k] += min(end, e.end) - max(start, e.start)
            k += 1
        return found

    def on_tokens(self, i: int, rec: tuple, info: int, info2: int, asz: int,
                  toks: Tokens) -> None:
        start = self.h.func_start(i, rec[0], self.vma, field_relative=self.rel)
        overlaps = self.overlapping(start, start + rec[1])
        if not overlaps and self.fast:
            self.uncovered(i, start, rec[1])
            return
        if len(overlaps) == 1 and self.settle.quiet(start, rec[1], info, info2, asz, toks,
                                                    overlaps[0]):
            return
        assert self.dec is not None
        self.exact(i, start, self.dec.fde(i), overlaps)

    def on_decoded(self, i: int, fde: FDE) -> None:
        start = self.h.func_start(i, fde.start, self.vma, field_relative=self.rel)
        overlaps = self.overlapping(start, start + fde.size)
        if not overlaps and self.fast:
            self.uncovered(i, start, fde.size)
            return
        self.exact(i, start, fde, overlaps)

    def uncovered(self, i: int, start: int, size: int) -> None:
        """What _check_fde reports for an FDE no .eh_frame FDE overlaps: nothing to compare."""
        if size and not _count_only(self.ctx, NO_EH_FDE):
            self.ctx.emit(NO_EH_FDE, f"[{start:#x}, {start + size:#x}) of this function is "
                          "covered by no .eh_frame FDE", fde=i, pc=start)

    def exact(self, i: int, start: int, fde: FDE, overlaps: list[EhFde]) -> None:
        _check_fde(self.ctx, self.facts, i, start, fde, overlaps, self.budget)
        if self.budget.exhausted:
            self.ctx.emit(TRUNCATED, f"cross-check stopped at FDE {i} (work bound reached)",
                          fde=i, pc=start)
            raise _Stop


def _check_fde(ctx: SectionContext, facts: Facts, i: int, start: int, fde: FDE,
               overlaps: list[EhFde], budget: _Budget) -> None:
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
    if gaps and fde.size and not _count_only(ctx, NO_EH_FDE):
        a, b = gaps[0]
        more = f" (and {len(gaps) - 1} more range(s))" if len(gaps) > 1 else ""
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
    _compare_fde(i, start, fde.size, fde, h, abi, overlaps, budget, mism, opaque)
    if opaque:
        ctx.emit(OPAQUE, f"{len(opaque)} PC range(s) not compared: {opaque[0]}", fde=i, pc=start)
    generic = {"CFA": CFA_MISMATCH, "RA": RA_MISMATCH, "FP": FP_MISMATCH}
    for kind in ("CFA", "RA", "FP"):
        m = mism.get(kind)
        if m is None:
            continue
        claimed = next((c for c in (f(m, facts) for f in CLASSIFIERS) if c), None)
        show = show_cfa if kind == "CFA" else show_slot
        a, b = m.first
        fre_pc = start + fde.fres[m.fre].start if m.fre is not None else None
        detail = (f"{kind} differs from .eh_frame at {m.ranges} PC range(s), {m.nbytes} "
                  f"byte(s); first [{a:#x}, {b:#x}): SFrame {show(abi, m.sframe)}, "
                  f".eh_frame {show(abi, m.eh)}")
        if claimed:
            r, note = claimed
            ctx.emit(r, f"{note}: {detail}", fde=i, pc=start, fre=m.fre, fre_pc=fre_pc)
        else:
            ctx.emit(generic[kind], detail, fde=i, pc=start, fre=m.fre, fre_pc=fre_pc)


