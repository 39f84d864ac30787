"""Run a reader model and sfcheck's reference table on the same PCs; report where they part.

The reference is sfcheck/unwind/table.py (SORTED never trusted, every read bounded, gaps
and FRE order checked). A `Disagreement` is one way the modelled reader's answer differs
from it at one PC: a wrong row (mis-unwind), an uninitialised read, a read outside the
section, a failed lookup, a division by zero, a row where there is no function, or a row
the reader's walker mishandles. Findings are computed, not restated: a section on which
the model and the reference agree everywhere gets none.
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from functools import partial
from itertools import compress, islice
from operator import add, itemgetter, lt
from typing import NamedTuple

from ..errors import DecodeError
from ..format import constants
from ..format.abi import ABIS
from ..format.fde_table import Columns
from ..format.fre_rules import RegRule, fre_rules
from ..unwind.table import Miss, Row, Rows, SFrameTable
from . import rfc2023, v3series
from .outcome import DIV0, EFAULT, EINVAL, PAST, REFUSED, ROW, UNINIT, Outcome

# Disagreement kinds (each is one consumer rule in sfcheck/rules/consumer.py).
REFUSE = "refused"
WRONG = "wrong-row"
UNINIT_READ = "uninit"
PAST_READ = "past"
FAILS = "lookup-fails"
FAILS_SPEC = "lookup-fails-spec"  # fails where the spec marks an outermost/signal frame
DIVZERO = "div0"
GAP = "gap-row"
WALK = "walker"
WALK_WARN = "walker-warn"  # the V3 walker hits WARN_ON_ONCE
WALK_STOPS = "walk-stops"  # an unwind guard ends the walk at this row

# The checker probes at most this many FDEs (evenly spread): a model lookup costs ~0.2-1 ms
# of Python, and a 100k-FDE table must still check in seconds.
MAX_PROBE_FDES = 1024
MAX_FRE_PROBES = 16
MASK64 = (1 << 64) - 1


@dataclass(frozen=True, slots=True)
class Disagreement:
    kind: str
    pc: int
    fde: int | None  # FDE record index (the reference's, else the model's)
    message: str
    cause: str = ""  # which known reader defect explains it (fuzz campaigns count these)


class Probe(NamedTuple):
    pc: int
    where: str  # why this PC: "start", "row", "last byte", "gap", "below"


_WEAK = (None, "gap", "below")  # a PC probed for one of these takes any later reason
# An FDE both readers read alike: (start, end, FRE starts, each FRE's row, FDE type).
Span = tuple[int, int, list[int], Sequence[v3series.FreRow], int]


def probe_pcs(table: SFrameTable, limit: int = MAX_PROBE_FDES,
              quiet: Callable[[int, Rows], bool] | None = None,
              held: Mapping[int, int] | None = None) -> list[Probe]:
    """Function starts, row starts (PCMASK: in the first two blocks), last bytes, the
    first byte after each function when no function holds it, and the byte below the
    lowest function; each PC once, in the order first probed, with the reason of its
    first probe that is not a gap (a PC that is both a gap of one FDE and a start of
    the next is a start).

    `quiet(i, table.rows(i))`, asked of each FDE that decodes, says the caller will report
    nothing at any PC that FDE `i` itself holds: its start, rows and last byte are then
    left out (the rest of the list is unchanged: in order, with the same reasons).

    `held` maps FDEs already known to decode and to be quiet to their size (a caller that
    asked `quiet` of them first): they are not decoded again, only their start, the lowest
    start and their gap are taken (what the loop does with a quiet FDE)."""
    h = table.header
    if h is None:
        return []
    n = h.num_fdes
    step = max(1, n // limit)
    where: dict[int, str] = {}
    get = where.get
    lowest: int | None = None
    v1 = h.version <= constants.VERSION_1
    base = table.vma + table.bias
    pcs = table.func_starts  # the index's column: what func_start gives per FDE
    for i in range(0, n, step):
        if held and i in held:
            s = pcs[i] & MASK64
            if lowest is None or s < lowest:
                lowest = s
            size = held[i]
            if size:
                pc = (s + size) & MASK64
                if pc not in where:
                    where[pc] = "gap"
            continue
        try:
            got = table.rows(i)
        except DecodeError:
            continue
        fde, fre_starts = got[0], got[1]
        s = (pcs[i] if pcs else h.func_start(i, fde.start, base)) & MASK64
        if lowest is None or s < lowest:
            lowest = s
        size = fde.size
        if quiet is None or not quiet(i, got):
            if get(s) in _WEAK:
                where[s] = "start"
            rep = 16 if v1 else fde.rep_size
            if rep and fde.pcmask:
                for fs in islice(fre_starts, MAX_FRE_PROBES):
                    for b in (0, rep):
                        if b + fs < size:
                            pc = (s + b + fs) & MASK64
                            if get(pc) in _WEAK:
                                where[pc] = "row"
            else:
                for fs in islice(fre_starts, MAX_FRE_PROBES):
                    if fs < size:
                        pc = (s + fs) & MASK64
                        if get(pc) in _WEAK:
                            where[pc] = "row"
            if size:
                pc = (s + size - 1) & MASK64
                if get(pc) in _WEAK:
                    where[pc] = "last byte"
        if size:
            pc = (s + size) & MASK64
            if pc not in where:  # a gap takes only a PC not yet probed ("below" comes last)
                where[pc] = "gap"
    if lowest is not None:
        pc = (lowest - 1) & MASK64
        if get(pc) in _WEAK:
            where[pc] = "below"
    # tuple.__new__ straight from C: Probe._make and Probe() each run a Python frame per PC
    return list(map(partial(tuple.__new__, Probe), where.items()))


def _reference_rules(table: SFrameTable, row: Row) -> tuple[RegRule, RegRule | None,
                                                             RegRule | None] | None:
    h = table.header
    assert h is not None
    if not row.fre.words:
        return None
    try:
        return fre_rules(h, row.fde.flex(h.version), row.fre, ABIS.get(h.abi,
                                                                       ABIS[constants.ABI_AMD64_LE]))
    except ValueError:
        return None


def _show(r: RegRule | None, abi: int) -> str:
    if r is None:
        return "-"
    a = ABIS.get(abi, ABIS[constants.ABI_AMD64_LE])
    base = {a.sp: "sp", a.fp: "fp"}.get(r.reg, f"r{r.reg}") if r.reg is not None else "cfa"
    s = f"{base}{r.offset:+d}"
    return f"[{s}]" if r.deref else s


def _rules_text(rules: Sequence[RegRule | None], abi: int) -> str:
    cfa, ra, fp = rules
    return f"CFA {_show(cfa, abi)}, RA {_show(ra, abi)}, FP {_show(fp, abi)}"


def _notes(out: Outcome) -> str:
    return ("; " + "; ".join(out.notes)) if out.notes else ""


# Per run: the rule triples (CFA, RA, FP) whose row _v3_walk passed. Its verdict reads only
# these and the ABI (which is fixed per section); the PC and row only shape its message.
WalkMemo = set[tuple[RegRule | None, RegRule | None, RegRule | None]]


def _classify(table: SFrameTable, probe: Probe, out: Outcome, reader: str,
              guards: bool, walked: WalkMemo | None = None) -> Disagreement | None:
    """One PC: the model's outcome against the reference's. With `walked`, a row whose
    rules _v3_walk already passed in this section is not walked again (same result)."""
    pc = probe.pc
    ref = table.lookup(pc)
    mine = (out.cfa, out.ra, out.fp)
    h = table.header
    assert h is not None
    ref_fde = ref.fde_index if isinstance(ref, Row) else (ref.fde_index if isinstance(
        ref, Miss) else None)
    if isinstance(ref, Miss) and ref.kind == "no-fde" and out.kind != EINVAL:
        # No function holds the PC: it matters only if code without an FDE runs there.
        what = (f" answers with FDE {out.fde} FRE {out.fre} ({_rules_text(mine, h.abi)}): "
                "a PC there is unwound with another function's row") if out.kind == ROW \
            else f": {out.detail}"
        return Disagreement(GAP, pc, out.fde, f"{pc:#x} ({probe.where}) is in no function, "
                            f"but {reader}{what}{_notes(out)}", out.cause or "no-size-check")
    if out.kind == DIV0:
        return Disagreement(DIVZERO, pc, out.fde, f"{reader}: {out.detail}", "rep-size-zero")
    if out.kind == PAST:
        return Disagreement(PAST_READ, pc, ref_fde, f"lookup of {pc:#x}: {out.detail}",
                            "no-bounds")
    if out.kind == UNINIT:
        return Disagreement(UNINIT_READ, pc, out.fde if out.fde is not None else ref_fde,
                            f"lookup of {pc:#x} ({probe.where}): {reader}: {out.detail}"
                            f"{_notes(out)}", out.cause)
    if out.kind in (EINVAL, EFAULT):
        if isinstance(ref, Row) and ref.fre.words and _reference_rules(table, ref) is None:
            return None  # the row's data words are malformed: sfcheck's own rules say so
        if isinstance(ref, Row):
            drop = " (-EFAULT: the section is removed from the process)" \
                if out.kind == EFAULT else " (-EINVAL: no row for this PC)"
            return Disagreement(FAILS, pc, ref.fde_index, f"lookup of {pc:#x}: {reader} "
                                f"fails where FDE {ref.fde_index} FRE {ref.fre_index} "
                                f"applies: {out.detail}{drop}", out.kind)
        if isinstance(ref, Miss) and ref.kind in ("outermost", "signal"):
            return Disagreement(FAILS_SPEC, pc, ref.fde_index, f"lookup of {pc:#x}: "
                                f"{reader} fails ({out.detail}) where the format marks "
                                f"{'an outermost' if ref.kind == 'outermost' else 'a signal'}"
                                " frame: the unwinder falls back to frame pointers")
        return None
    assert out.kind == ROW
    if isinstance(ref, Miss):
        if ref.kind == "malformed" and ref.fde_index is not None and _fres_unordered(
                table, ref.fde_index):
            # The reference refuses the FDE; the reader never checks FRE order and answers.
            return Disagreement(WRONG, pc, ref.fde_index, (
                f"lookup of {pc:#x} ({probe.where}): FDE {ref.fde_index}'s FREs are not in "
                f"increasing order; {reader} never checks and answers with FRE {out.fre} "
                f"({_rules_text(mine, h.abi)}), the scan stopping at the first later start"
                f"{_notes(out)}"), "fre-order")
        return None  # malformed or no row: sfcheck's own rules report the data
    if out.outermost:
        return None if not ref.fre.words else Disagreement(
            WRONG, pc, ref.fde_index, f"lookup of {pc:#x}: {reader} ends the walk here")
    if not guards:  # V3: the same row is the same answer (its rule encoding is the spec's)
        if (out.fde, out.fre) != (ref.fde_index, ref.fre_index):
            return Disagreement(WRONG, pc, ref.fde_index, (
                f"lookup of {pc:#x} ({probe.where}): {reader} uses FDE {out.fde} FRE "
                f"{out.fre}; the row is FDE {ref.fde_index} FRE {ref.fre_index}: a "
                "mis-unwind"), "v3-wrong-row")
        if walked is None:
            return _v3_walk(pc, ref.fde_index, ref.fre_index, mine, reader, h.abi)
        if mine in walked:
            return None
        d = _v3_walk(pc, ref.fde_index, ref.fre_index, mine, reader, h.abi)
        if d is None:
            walked.add(mine)
        return d
    truth = _reference_rules(table, ref)
    if out.cfa is not None and out.cfa.reg in (rfc2023.SP, rfc2023.FP):
        # The RFC reader never reads abi_arch: its SP/FP are the section's ABI's SP/FP.
        a = ABIS.get(h.abi, ABIS[constants.ABI_AMD64_LE])
        reg = a.sp if out.cfa.reg == rfc2023.SP else a.fp
        mine = (RegRule(reg, out.cfa.offset, False), out.ra, out.fp)
    if truth is not None and truth != mine:
        return Disagreement(WRONG, pc, ref.fde_index, (
            f"lookup of {pc:#x} ({probe.where}): {reader} answers "
            f"{_rules_text(mine, h.abi)} from FDE {out.fde} FRE {out.fre}; the row is FDE "
            f"{ref.fde_index} FRE {ref.fre_index}: {_rules_text(truth, h.abi)}: a "
            f"mis-unwind{_notes(out)}"), _wrong_cause(table, out, ref, truth))
    if guards and out.cfa is not None and out.cfa.reg == rfc2023.SP and out.cfa.offset <= 0 \
            and (truth is None or truth[0].offset <= 0):
        return Disagreement(WALK, pc, ref.fde_index, (
            f"lookup of {pc:#x}: CFA = sp{out.cfa.offset:+d} does not move up, and the walker "
            f"of {reader} has no CFA-direction check or frame cap: it repeats this frame "
            "until the caller's buffer is full"), "no-direction-check")
    return None


def _v3_walk(pc: int, fde: int, fre: int, rules: tuple[RegRule | None, RegRule | None,
                                                      RegRule | None],
             reader: str, abi_id: int) -> Disagreement | None:
    """What unwind_user_next_common (user.c@3231d5c5) does with the row (FRE `fre` of FDE
    `fde`, whose CFA, RA and FP `rules` the reader answered), beyond the lookup."""
    where = f"lookup of {pc:#x}: FDE {fde} FRE {fre}"
    cfa, ra, fp = rules
    for name, r in (("RA", ra), ("FP", fp)):
        if r is not None and r.reg is None and not r.deref:
            return Disagreement(WALK_WARN, pc, fde, (
                f"{where}: the {name} rule is 'CFA{r.offset:+d}' (flex control word without "
                f"reg_p or deref_p); the walker of {reader} has no case for it and hits "
                "WARN_ON_ONCE (a kernel warning from user data; a panic with panic_on_warn)"),
                "rule-cfa-offset-warn")
    a = ABIS.get(abi_id, ABIS[constants.ABI_AMD64_LE])
    if cfa is None:
        return None
    why = ""
    if cfa.reg not in (a.sp, a.fp):
        why = (f"the CFA is based on register {cfa.reg}, which the walker reads only in the "
               "topmost frame")
    elif abi_id != constants.ABI_S390X_BE and cfa.reg == a.sp and not cfa.deref and (
            cfa.offset <= 0 or cfa.offset % a.word_size):
        why = (f"CFA = SP{cfa.offset:+d} is not above the SP" if cfa.offset <= 0 else
               f"CFA = SP{cfa.offset:+d} is not word-aligned")
    if why:
        return Disagreement(WALK_STOPS, pc, fde, (
            f"{where}: {why}: {reader} ends the walk here unless it is the topmost frame "
            "(-EINVAL)"), "walk-guard")
    return None


def _fres_unordered(table: SFrameTable, index: int) -> bool:
    try:
        starts = [f.start for f in table.fde(index).fres]
    except DecodeError:
        return False
    return any(b <= a for a, b in zip(starts, starts[1:], strict=False))


def _wrong_cause(table: SFrameTable, out: Outcome, ref: Row,
                 truth: tuple[RegRule, RegRule | None, RegRule | None]) -> str:
    """Which of the RFC reader's defects gives this wrong row (for campaign reports)."""
    h = table.header
    assert h is not None
    if out.fde != ref.fde_index:
        if out.fde is not None and out.fde >= h.num_fdes:
            return "phantom-fde"
        return "unsorted-accepted" if not h.sorted else "wrong-fde"
    if ref.fde.pcmask:
        return "pcmask-last-fre"
    if out.fre == ref.fre_index and out.cfa is not None and out.cfa.offset != truth[0].offset:
        return "cfa-unsigned"
    starts = [f.start for f in ref.fde.fres]
    if any(s >= 1 << 31 for s in starts):
        return "fre-start-s32"
    if any(b <= a for a, b in zip(starts, starts[1:], strict=False)):
        return "fre-order"
    return "other"


def run_rfc2023(data: bytes, vma: int = 0, text: tuple[int, int] | None = None,
                limit: int = MAX_PROBE_FDES) -> Iterator[Disagreement]:
    """The 2023 RFC reader against the reference; `text` is the registered text range
    (the file's executable mapping), PCs outside it are never looked up."""
    sec = rfc2023.register(data, vma)
    if isinstance(sec, Outcome):
        yield Disagreement(REFUSE if sec.kind == REFUSED else PAST_READ, vma, None,
                           sec.detail, sec.cause)
        return
    table = SFrameTable(data, vma=vma)
    memo = rfc2023.Memo(data)
    for probe in probe_pcs(table, limit):
        if text is not None and not text[0] <= probe.pc < text[1]:
            continue
        d = _classify(table, probe, rfc2023.lookup(data, sec, probe.pc, memo),
                      rfc2023.READER, guards=True)
        if d is not None:
            yield d


def run_v3(data: bytes, vma: int = 0, texts: Sequence[tuple[int, int]] = (),
           validate: bool = False, limit: int = MAX_PROBE_FDES,
           reference: bool = False) -> Iterator[Disagreement]:
    """The V3 series against the reference: one registration per text range (binfmt
    registers the section once per PF_X segment); without `texts`, one covering all.
    `reference` walks every row afresh (what the memoised walk verdicts are tested
    against)."""
    table = SFrameTable(data, vma=vma)
    probes: list[Probe] | None = None  # made for the first registration that needs them
    walked: WalkMemo | None = None if reference else set()
    spans = None if reference else _reference_spans(table, data)
    for text in texts or [(0, MASK64)]:
        sec = v3series.register(data, vma, text, validate)
        if isinstance(sec, Outcome):
            yield Disagreement(REFUSE, vma, sec.fde, sec.detail)
            continue
        memo = v3series.Memo(data, sec)
        if walked is not None and spans is not None and memo.addrs == spans[0]:
            yield from _v3_by_fde(table, text, memo, spans[1], walked, limit)
            continue
        if probes is None:
            probes = probe_pcs(table, limit)
        for probe in probes:
            if text[0] <= probe.pc < text[1]:
                d = _classify(table, probe, v3series.lookup(data, sec, probe.pc, memo),
                              v3series.READER, guards=False, walked=walked)
                if d is not None:
                    yield d


def _reference_spans(table: SFrameTable, data: bytes) -> tuple[list[int], list[int]] | None:
    """Each FDE's function start and end as the reference's index holds them (SFrameTable
    reads the same columns with format/fde_table.Columns), when the starts strictly increase
    in table order: then the reference's lookup of a PC takes the FDE of the last start at
    or below it, a bisection of these starts. None otherwise."""
    h = table.header
    if table.error is not None or h is None or not h.num_fdes:
        return None
    cols = Columns(data, h, 0, h.num_fdes)
    pcs = cols.pcs(h, table.vma + table.bias)
    if not all(map(lt, pcs, islice(pcs, 1, None))):
        return None
    return pcs, list(map(add, pcs, cols.sizes))


def _v3_by_fde(table: SFrameTable, text: tuple[int, int], memo: v3series.Memo,
               ends: list[int], walked: WalkMemo, limit: int) -> Iterator[Disagreement]:
    """run_v3's comparison for one registration where the model's function starts
    (memo.addrs) are the reference's, strictly increasing, `ends` the reference's function
    ends: both then pick the same FDE for every PC, and the rows are chosen once per FDE
    instead of looked up per PC. Below every function both fail; in an FDE both read alike
    (_same_rows) both find no function past its end, no row before its first FRE start,
    and otherwise the same row, whose outcome is its rules' walk verdict (kept per row
    key, as _classify keeps it per rule triple). Every other PC takes the per-PC path:
    FDEs read differently (a fault in the model's record or FREs, PCMASK, signal, no
    FREs, other FRE starts or end), and rows without data words or whose words fault.

    An FDE both read alike whose every row passes the walk (a quiet FDE: _passes) has
    nothing to report at any PC it holds. When it also holds every PC it is probed at (it
    ends at or below the next start), probe_pcs leaves those out; a PC still listed that
    lands in a quiet FDE is skipped. Only the PCs of other FDEs are compared one by one."""
    h = table.header
    assert h is not None
    addrs = memo.addrs
    assert addrs is not None
    lo, hi = text
    same: dict[int, Span | None] = {}  # FDE -> its rows, when both read it alike
    # rows whose rules' walk passed, by FDE type (with the row, what the rules are read from)
    passed: dict[int, set[v3series.FreRow]] = {}
    quiet_of: dict[int, bool] = {}

    def quiet(i: int, got: Rows | None = None) -> bool:
        q = quiet_of.get(i)
        if q is None:
            span = same[i] = _same_rows(table, memo, i, ends[i], got)
            q = quiet_of[i] = span is not None and _passes(memo, i, span, passed, walked, h.abi)
        return q

    last = len(addrs) - 1

    def held_quiet(i: int, got: Rows) -> bool:  # FDE i holds all its own probes, and is quiet
        return ends[i] <= (addrs[i + 1] if i < last else MASK64 + 1) and quiet(i, got)

    held = _held_quiet(table, memo, ends, limit, same, quiet_of, passed, walked, quiet)
    inside = [p for p in probe_pcs(table, limit, held_quiet, held) if lo <= p.pc < hi]
    # Each PC's bisection point in the starts (FDE k - 1 holds it, if any): one C loop.
    ks = list(map(partial(bisect_right, addrs), map(itemgetter(0), inside)))
    # A PC below every function, or in a quiet FDE, has nothing to report whatever its
    # offset (the loop below would skip it): only the rest is compared.
    # (an FDE already found quiet, most of them, is looked up rather than asked again)
    known = quiet_of.get
    loud = {k for k in set(ks) if k and not known(k - 1) and not quiet(k - 1)}
    for probe, k in compress(zip(inside, ks, strict=True), map(loud.__contains__, ks)):
        pc = probe.pc
        i = k - 1
        span = same[i]
        if span is not None:
            start, end, starts, rows, fde_type = span
            if pc >= end:
                continue  # no-fde in the reference, a gap (-EINVAL) in the model
            j = bisect_right(starts, pc - start) - 1
            if j < 0:
                continue  # no-fre in the reference, -EINVAL in the model
            row = rows[j]
            ok = passed.setdefault(fde_type, set())
            if row in ok:
                continue
            rules = memo.row_rules(i, j)
            if rules is not None:
                if rules not in walked:
                    d = _v3_walk(pc, i, j, rules, v3series.READER, h.abi)
                    if d is not None:
                        yield d
                        continue
                    walked.add(rules)
                ok.add(row)
                continue
        d = _classify(table, probe, memo.lookup(pc), v3series.READER, guards=False,
                      walked=walked)
        if d is not None:
            yield d


def _held_quiet(table: SFrameTable, memo: v3series.Memo, ends: list[int], limit: int,
                same: dict[int, Span | None], quiet_of: dict[int, bool],
                passed: dict[int, set[v3series.FreRow]], walked: WalkMemo,
                quiet: Callable[[int, Rows], bool]) -> dict[int, int]:
    """Of the FDEs probe_pcs visits, those that hold all their own probes (end at or below
    the next start) and are quiet, each with its size: _v3_by_fde's held_quiet asked of
    them in one loop, before the probe list is made. The common case (an FDE that decodes
    with FREs, neither PCMASK nor signal, whose start lies in the registered text, whose
    FRE starts strictly increase up to at most its size, and which the model has not read
    yet) is _same_rows through Memo.clean_from's taking of the reference's decode, written
    out here; every other FDE is asked of `quiet` itself."""
    h = table.header
    assert h is not None
    addrs = memo.addrs
    assert addrs is not None
    n = h.num_fdes
    last = len(addrs) - 1
    text_lo, text_hi = memo.sec.text
    rows_of, fres, fdes = table.rows, memo.fres, memo.fdes
    abi = h.abi
    odd = 0x90 if h.version >= constants.VERSION_3 else 0x10  # PCMASK; v3: signal too
    held: dict[int, int] = {}
    for i in range(0, n, max(1, n // limit)):
        addr, end = addrs[i], ends[i]
        if end > (addrs[i + 1] if i < last else MASK64 + 1):
            continue
        q = quiet_of.get(i)
        if q is None:
            try:
                got = rows_of(i)
            except DecodeError:
                continue
            ref, starts, rows = got
            info = ref.info
            if (starts and not info & odd and i not in fres and text_lo <= addr < text_hi
                    and starts[-1] <= ref.size and all(map(lt, starts, islice(starts, 1, None)))
                    and addr + ref.size == end):
                fdes[i] = (addr, ref.size, ref.fre_off + v3series.ATTR_SIZE, ref.num_fres, info,
                           ref.info2, ref.rep_size)
                fres[i] = (starts, rows, None)
                span = same[i] = (addr, end, starts, rows, ref.info2 & 0x1F)
                ok = passed.get(span[4])
                q = quiet_of[i] = (ok is not None and ok.issuperset(rows)) or _passes(
                    memo, i, span, passed, walked, abi)
            else:
                q = quiet(i, got)
        if q:
            held[i] = end - addr
    return held


def _passes(memo: v3series.Memo, i: int, span: Span, passed: dict[int, set[v3series.FreRow]],
            walked: WalkMemo, abi: int) -> bool:
    """Whether every row of FDE `i` (read alike by both: `span`) has rules that pass the
    walk, so that no PC in the FDE has anything to report; each such row joins `passed`
    and its rules `walked`, as a PC landing on it would add them."""
    rows, fde_type = span[3], span[4]
    ok = passed.setdefault(fde_type, set())
    if ok.issuperset(rows):
        return True
    for j, row in enumerate(rows):
        if row in ok:
            continue
        rules = memo.row_rules(i, j)
        if rules is None:
            return False
        if rules not in walked:
            if _v3_walk(0, i, j, rules, v3series.READER, abi) is not None:
                return False
            walked.add(rules)
        ok.add(row)
    return True


def _same_rows(table: SFrameTable, memo: v3series.Memo, i: int, end: int,
               got: Rows | None = None) -> Span | None:
    """(start, end, FRE starts, each FRE's row, FDE type) of FDE `i` when the model and
    the reference's lookups read it alike: the reference decoding it (`got`, when given,
    is table.rows(i)), with at least one FRE, neither PCMASK nor signal, and the model
    reading it cleanly (Memo.clean: not PCMASK, FREs in strictly increasing order; here
    Memo.clean_from, from the reference's decode) to the reference's end with the same
    FRE starts."""
    try:
        ref, starts, rows = got if got is not None else table.rows(i)
    except DecodeError:
        return None
    h = table.header
    assert h is not None
    if not starts or ref.pcmask or (h.version >= constants.VERSION_3 and ref.signal):
        return None
    mine = memo.clean_from(i, ref, starts, rows)
    if mine is None:
        return None
    fde, fre_starts, fre_rows = mine
    if fde[0] + fde[1] != end or fre_starts != starts:
        return None
    return fde[0], end, starts, fre_rows, fde[5] & 0x1F
