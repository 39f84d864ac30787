"""`.eh_frame` CFI as rows of (CFA, RA, FP) rules, for the SFrame cross-check.

:mod:`sfcheck.dwarf.ehframe` parses the CIEs and FDEs and :mod:`sfcheck.dwarf.callframe`
runs the call-frame instructions (:mod:`sfcheck.dwarf.expr` decodes the DWARF expressions
gas and ld write, pyelftools any other); this module maps each row onto the three things
SFrame records, in the terms of :class:`sfcheck.format.fre_rules.RegRule`, so both sides
compare directly:

* CFA: ``reg + offset`` (DW_CFA_def_cfa*), or a DWARF expression.  Expressions
  are evaluated per PC over linear forms (``reg + const``, optionally loaded;
  :mod:`sfcheck.dwarf.linear`), which covers the PLT's ``rsp + 8 + ((rip & 15) >= 11)
  * 8`` and DRAP's ``*(rbp - 8)``; anything else is :class:`Opaque`.
* RA and FP: ``None`` when the register keeps its value (no rule, same value,
  and FP undefined), :data:`UNDEFINED` for an undefined RA (outermost frame),
  a RegRule for offset / val_offset / register / (val_)expression rules.

Input is untrusted: every decoding failure becomes a :class:`CfiError`.
"""

from __future__ import annotations

from array import array
from collections.abc import Iterator, Sequence
from itertools import repeat, tee
from operator import add, and_, lshift, lt, sub

from ..errors import SfcheckError
from ..format.abi import Abi
from ..format.fre_rules import RegRule, intern
from ..record import Record
from . import callframe, ehframe
from .callframe import RawCfa, RawRule, Row
from .ehframe import EhFrameError
from .expr import parse_expr
from .linear import MAX_EXPR_OPS, Opaque, eval_linear


class CfiError(SfcheckError):
    """`.eh_frame` could not be decoded."""


class _Undefined:
    def __repr__(self) -> str:
        return "UNDEFINED"

    __str__ = __repr__


UNDEFINED = _Undefined()  # an undefined RA: the outermost frame

Rule = RegRule | Opaque | _Undefined | None


class CfaExpr(Record, frozen=True):
    """A CFA given by a DWARF expression; evaluated per PC (it may read the PC)."""

    __slots__ = ("ops",)

    def __init__(self, ops: tuple) -> None:
        object.__setattr__(self, "ops", ops)  # expr.Op or pyelftools' DWARFExprOp

    # hashed into the settle cache's keys: a changed field would lose its entry
    __setattr__ = Opaque.__setattr__
    __reduce__ = Opaque.__reduce__

    def at(self, pc: int, pc_reg: int | None) -> RegRule | Opaque:
        return eval_linear(self.ops, pc, pc_reg, initial=None)

    def reads_pc(self, pc_reg: int | None) -> bool:
        """Whether an operation reads the PC (eval_linear's only use of `pc`): if none does,
        the value is the same at every PC (DRAP's ``breg6 -8; deref``)."""
        return any(op.op_name == f"DW_OP_breg{pc_reg}"
                   or (op.op_name == "DW_OP_bregx" and op.args[0] == pc_reg) for op in self.ops)

    def period(self, pc_reg: int | None) -> int | None:
        """P when the value depends on the PC only through (PC + c) & (P - 1), as in ld's PLT
        expression (`rip & 15`): then P consecutive PCs show every value it takes."""
        uses = [i for i, op in enumerate(self.ops)
                if op.op_name == f"DW_OP_breg{pc_reg}"
                or (op.op_name == "DW_OP_bregx" and op.args[0] == pc_reg)]
        if len(uses) != 1 or uses[0] + 2 >= len(self.ops):
            return None
        mask_op, and_op = self.ops[uses[0] + 1], self.ops[uses[0] + 2]
        if and_op.op_name != "DW_OP_and":
            return None
        if mask_op.op_name.startswith("DW_OP_lit"):
            mask = int(mask_op.op_name[9:])
        elif mask_op.op_name.startswith("DW_OP_const") and mask_op.op_name.endswith("u"):
            mask = int(mask_op.args[0])
        else:
            return None
        period = mask + 1
        return period if period & mask == 0 and 0 < period <= 1 << 16 else None


# The interpreter's rows, carrying (RegRule | CfaExpr | Opaque, Rule, Rule) here.
CfiRow = Row


class EhFde:
    """One `.eh_frame` FDE: [start, end) and its rows.

    `rel` holds the rows with pc relative to `start`, shared by every FDE whose CIE and
    instructions are the same; `rows` (absolute pcs) is built on first use, which the
    cross-check needs only for the functions it cannot settle from `rel`.
    """

    __slots__ = ("start", "end", "rel", "offset", "limit", "_rows")

    def __init__(self, start: int, end: int, rel: tuple[CfiRow, ...], offset: int,
                 limit: str | None = None) -> None:
        self.start, self.end, self.rel, self.offset = start, end, rel, offset
        self.limit = limit  # why its program was not run (a work bound): no rows then
        self._rows: tuple[CfiRow, ...] | None = None

    @property
    def rows(self) -> tuple[CfiRow, ...]:
        """Sorted by pc, first at start (or none: no CFI at all)."""
        if self._rows is None:
            start = self.start
            self._rows = tuple([CfiRow(start + r.pc, r.cfa, r.ra, r.fp) for r in self.rel])
        return self._rows

    def __repr__(self) -> str:
        return (f"EhFde({self.start:#x}, {self.end:#x}, {len(self.rel)} rows, "
                f".eh_frame+{self.offset:#x})")


class EhFdes:
    """The `.eh_frame` FDEs sorted by (start, end), as columns: `starts`, `ends` and
    `offsets` a machine word each, `rels` the shared relative rows, `limits` why each FDE
    a work bound stopped has no rows (by index; only those have none). An EhFde is made
    on demand (`fdes[k]`) for what the exact comparison and the coverage findings read:
    the settled FDEs, nearly all of a large binary, never get one."""

    __slots__ = ("starts", "ends", "offsets", "rels", "limits")

    def __init__(self, starts: Sequence[int], ends: Sequence[int], offsets: Sequence[int],
                 rels: list[tuple[CfiRow, ...]], limits: dict[int, str]) -> None:
        self.starts, self.ends, self.offsets = starts, ends, offsets
        self.rels, self.limits = rels, limits

    def __len__(self) -> int:
        return len(self.rels)

    def __getitem__(self, k: int) -> EhFde:
        return EhFde(self.starts[k], self.ends[k], self.rels[k], self.offsets[k],
                     self.limits.get(k))

    def __iter__(self) -> Iterator[EhFde]:
        return map(self.__getitem__, range(len(self.rels)))


# -- rows ---------------------------------------------------------------------------

def _reg_rule(rule: RawRule, parser: _Exprs, is_ra: bool,
              pc_reg: int | None) -> Rule:
    if rule is None or rule[0] == callframe.SAME_VALUE:
        return None
    t, arg = rule
    if t == callframe.UNDEFINED:
        return UNDEFINED if is_ra else None
    if t == callframe.OFFSET:
        return RegRule(None, arg, True)
    if t == callframe.VAL_OFFSET:
        return RegRule(None, arg, False)
    if t == callframe.REGISTER:
        return RegRule(arg, 0, False)
    if t in (callframe.EXPRESSION, callframe.VAL_EXPRESSION):
        ops = parser.parse(arg)
        if isinstance(ops, Opaque):
            return ops
        # The expression yields an address (EXPRESSION) or the value itself.
        value = eval_linear(ops, 0, pc_reg, initial=0)
        if isinstance(value, Opaque):
            return value
        if value.deref:
            return Opaque(f"{t} rule that loads")
        return RegRule(value.reg, value.offset, t == callframe.EXPRESSION)
    return Opaque(f"{t} rule")


class _Exprs:
    """DWARF expression decoding: the operations gas and ld write by hand, anything else
    by pyelftools (imported the first time such an expression turns up)."""

    def __init__(self, little_endian: bool, address_size: int) -> None:
        self.little, self.address_size = little_endian, address_size
        self._pyelftools = None

    def parse(self, expr: bytes) -> tuple | Opaque:
        if len(expr) > MAX_EXPR_OPS * 10:
            return Opaque("expression too long")
        ops = parse_expr(expr, self.little)
        if ops is not None:
            return ops
        if self._pyelftools is None:
            from elftools.dwarf.dwarf_expr import DWARFExprParser
            from elftools.dwarf.structs import DWARFStructs
            self._pyelftools = DWARFExprParser(DWARFStructs(
                little_endian=self.little, dwarf_format=32, address_size=self.address_size))
        try:
            return tuple(self._pyelftools.parse_expr(list(expr)))
        except Exception:  # noqa: BLE001 — pyelftools' expression parser on hostile bytes
            return Opaque("undecodable expression")


def decode_eh_frame(data: bytes, vma: int, little_endian: bool, address_size: int,
                    abi: Abi) -> EhFdes:
    """Every FDE of an `.eh_frame` section, with its rows; CfiError if undecodable."""
    parser = _Exprs(little_endian, address_size)
    pc_reg = abi.pc
    # Rules repeat a lot: each distinct one is converted once (the reader converts each
    # distinct triple once, and FDEs with the same program share their rows).
    cfas: dict[object, RegRule | CfaExpr | Opaque] = {}
    ras: dict[RawRule, Rule] = {}
    fps: dict[RawRule, Rule] = {}
    # One object per value among the rules the rows carry (CfaExpr aside: its operations
    # need not hash): equal is identical, which eh_steps' merge relies on.
    canon: dict[object, object] = {}

    def convert(rc: RawCfa, ra: RawRule, fp: RawRule) -> tuple:
        cfa = cfas.get(rc)
        if cfa is None:
            if isinstance(rc, bytes):
                cfa = _cfa_expr(parser, rc)
                if not isinstance(cfa, CfaExpr):
                    cfa = canon.setdefault(cfa, cfa)
            else:
                cfa = (Opaque("no CFA rule") if rc[0] < 0
                       else intern(RegRule(rc[0], rc[1], False)))
                cfa = canon.setdefault(cfa, cfa)
            cfas[rc] = cfa
        if ra not in ras:
            r = intern(_reg_rule(ra, parser, True, pc_reg))
            ras[ra] = canon.setdefault(r, r)
        if fp not in fps:
            r = intern(_reg_rule(fp, parser, False, pc_reg))
            fps[fp] = canon.setdefault(r, r)
        return cfa, ras[ra], fps[fp]

    try:
        raw = ehframe.read_columns(data, vma, not little_endian, address_size, abi.ra_column,
                                     abi.fp, convert)
    except EhFrameError as exc:
        raise CfiError(str(exc)) from None
    starts, sizes = raw.starts, raw.sizes
    ends: Sequence[int]
    try:
        ends = array("Q", map(add, starts, sizes))
    except OverflowError:  # an end past 2**64 (a hostile size): as a list
        ends = list(map(add, starts, sizes))
    raw.sizes = array("Q")  # not needed past here
    del sizes
    out = EhFdes(starts, ends, raw.offsets, raw.rels, raw.limits)
    # Sorted by (start, end), stably: no sort at all when the section is in order already
    # (tested lazily: no list of keys). Else (gcc's .cold parts, for one) one integer per
    # FDE, (start, end, index) packed above the lowest start: unique, so a plain sort is
    # stable, and as few digits as the span needs (a million of them are alive at once).
    lazy, following = tee(map(add, map(lshift, starts, repeat(66)), ends))
    next(following, None)
    if all(map(lt, lazy, following)):
        return out
    n, lo = len(starts), min(starts)
    end_bits, index_bits = (max(ends) - lo).bit_length(), n.bit_length()
    keys = list(map(add, map(lshift, map(add, map(lshift, map(sub, starts, repeat(lo, n)),
                                                          repeat(end_bits, n)),
                                                  map(sub, ends, repeat(lo, n))),
                             repeat(index_bits, n)), range(n)))
    keys.sort()
    order = array("q", map(and_, keys, repeat((1 << index_bits) - 1, n)))
    del keys
    out.starts = array("Q", map(starts.__getitem__, order))
    out.ends = (array("Q", map(ends.__getitem__, order)) if isinstance(ends, array)
                else list(map(ends.__getitem__, order)))
    out.offsets = array("q", map(raw.offsets.__getitem__, order))
    out.rels = list(map(raw.rels.__getitem__, order))
    if raw.limits:
        out.limits = {k: raw.limits[old] for k, old in enumerate(order) if old in raw.limits}
    return out


def _cfa_expr(parser: _Exprs, expr: bytes) -> CfaExpr | Opaque:
    ops = parser.parse(expr)
    return ops if isinstance(ops, Opaque) else CfaExpr(ops)
