"""`.eh_frame` CFI as rows of (CFA, RA, FP) rules, for the SFrame cross-check.

pyelftools parses the CIEs and FDEs and runs the call-frame instructions; this
module maps each row onto the three things SFrame records, in the terms of
:class:`sfcheck.format.fre_rules.RegRule`, so both sides compare directly:

* CFA: ``reg + offset`` (DW_CFA_def_cfa*), or a DWARF expression.  Expressions
  are evaluated per PC over linear forms (``reg + const``, optionally loaded),
  which covers the PLT's ``rsp + 8 + ((rip & 15) >= 11) * 8`` and DRAP's
  ``*(rbp - 8)``; anything else is :class:`Opaque`.
* RA and FP: ``None`` when the register keeps its value (no rule, same value,
  and FP undefined), :data:`UNDEFINED` for an undefined RA (outermost frame),
  a RegRule for offset / val_offset / register / (val_)expression rules.

Input is untrusted: every pyelftools failure becomes a :class:`CfiError`.
"""

from __future__ import annotations

import io
from dataclasses import dataclass

from elftools.dwarf.callframe import FDE as _PyFDE
from elftools.dwarf.callframe import CallFrameInfo, RegisterRule
from elftools.dwarf.dwarf_expr import DWARFExprParser
from elftools.dwarf.structs import DWARFStructs

from .format.abi import Abi
from .format.fre_rules import RegRule

MAX_EXPR_OPS = 64  # a CFA expression longer than this is not one gas or ld writes


class CfiError(Exception):
    """`.eh_frame` could not be decoded."""


@dataclass(frozen=True, slots=True)
class Opaque:
    """A rule sfcheck cannot compare (an expression outside the linear subset)."""

    why: str

    def __str__(self) -> str:
        return f"<{self.why}>"


class _Undefined:
    def __repr__(self) -> str:
        return "UNDEFINED"

    __str__ = __repr__


UNDEFINED = _Undefined()  # an undefined RA: the outermost frame

Rule = RegRule | Opaque | _Undefined | None


@dataclass(frozen=True, slots=True)
class CfaExpr:
    """A CFA given by a DWARF expression; evaluated per PC (it may read the PC)."""

    ops: tuple  # pyelftools DWARFExprOp

    def at(self, pc: int, pc_reg: int | None) -> RegRule | Opaque:
        return eval_linear(self.ops, pc, pc_reg, initial=None)


@dataclass(frozen=True, slots=True)
class CfiRow:
    pc: int
    cfa: RegRule | CfaExpr | Opaque
    ra: Rule
    fp: Rule


@dataclass(frozen=True, slots=True)
class EhFde:
    start: int
    end: int  # exclusive
    rows: tuple[CfiRow, ...]  # sorted by pc, first at start (or none: no CFI at all)
    offset: int  # of the FDE in .eh_frame


# -- expressions ----------------------------------------------------------------------

_BIN = {
    "DW_OP_and": lambda a, b: a & b, "DW_OP_or": lambda a, b: a | b,
    "DW_OP_xor": lambda a, b: a ^ b, "DW_OP_mul": lambda a, b: a * b,
    "DW_OP_shl": lambda a, b: a << b if 0 <= b < 64 else 0,
    "DW_OP_shr": lambda a, b: (a % (1 << 64)) >> b if 0 <= b < 64 else 0,
    "DW_OP_shra": lambda a, b: a >> b if 0 <= b < 64 else (-1 if a < 0 else 0),
    "DW_OP_ge": lambda a, b: int(a >= b), "DW_OP_gt": lambda a, b: int(a > b),
    "DW_OP_le": lambda a, b: int(a <= b), "DW_OP_lt": lambda a, b: int(a < b),
    "DW_OP_eq": lambda a, b: int(a == b), "DW_OP_ne": lambda a, b: int(a != b),
}
_CFA = -1  # pseudo register: the CFA pushed before a register-rule expression


def eval_linear(ops: tuple, pc: int, pc_reg: int | None,
                initial: int | None) -> RegRule | Opaque:
    """Evaluate a DWARF expression whose value is `reg + const` (then maybe loaded).

    Stack values are (reg or None, const).  `pc_reg` is the DWARF number of the
    PC (x86-64: 16), read as the concrete `pc`.  `initial` pushes the CFA first
    (register-rule expressions).
    """
    stack: list[tuple[int | None, int]] = [] if initial is None else [(_CFA, 0)]
    deref = False
    for op in ops:
        if deref:
            return Opaque("operation after DW_OP_deref")
        name, args = op.op_name, op.args
        if name.startswith("DW_OP_lit"):
            stack.append((None, int(name[9:])))
        elif name.startswith("DW_OP_const"):
            stack.append((None, int(args[0])))
        elif name.startswith("DW_OP_breg") and name != "DW_OP_bregx":
            reg = int(name[10:])
            stack.append((None, pc + args[0]) if reg == pc_reg else (reg, args[0]))
        elif name == "DW_OP_bregx":
            reg, off = args[0], args[1]
            stack.append((None, pc + off) if reg == pc_reg else (reg, off))
        elif name == "DW_OP_plus_uconst" and stack:
            reg, c = stack.pop()
            stack.append((reg, c + args[0]))
        elif name in ("DW_OP_plus", "DW_OP_minus") and len(stack) >= 2:
            (rb, b), (ra, a) = stack.pop(), stack.pop()
            if name == "DW_OP_plus" and (ra is None or rb is None):
                stack.append((ra if rb is None else rb, a + b))
            elif name == "DW_OP_minus" and rb is None:
                stack.append((ra, a - b))
            else:
                return Opaque(f"{name} of two registers")
        elif name in _BIN and len(stack) >= 2:
            (rb, b), (ra, a) = stack.pop(), stack.pop()
            if ra is not None or rb is not None:
                return Opaque(f"{name} on a register value")
            stack.append((None, _BIN[name](a, b)))
        elif name == "DW_OP_dup" and stack:
            stack.append(stack[-1])
        elif name == "DW_OP_drop" and stack:
            stack.pop()
        elif name == "DW_OP_swap" and len(stack) >= 2:
            stack[-1], stack[-2] = stack[-2], stack[-1]
        elif name == "DW_OP_over" and len(stack) >= 2:
            stack.append(stack[-2])
        elif name == "DW_OP_deref" and stack and stack[-1][0] is not None:
            deref = True
        else:
            return Opaque(f"{name} not evaluated")
        if len(stack) > MAX_EXPR_OPS:
            return Opaque("expression stack too deep")
    # The value is the top of the stack (a register-rule expression may leave the CFA below).
    if not stack or stack[-1][0] is None:
        return Opaque("expression is not register-relative")
    reg, off = stack[-1]
    return RegRule(None if reg == _CFA else reg, off, deref)


# -- rows ---------------------------------------------------------------------------

def _reg_rule(rule: RegisterRule | None, parser: DWARFExprParser, is_ra: bool,
              pc_reg: int | None) -> Rule:
    if rule is None or rule.type == RegisterRule.SAME_VALUE:
        return None
    t = rule.type
    if t == RegisterRule.UNDEFINED:
        return UNDEFINED if is_ra else None
    if t == RegisterRule.OFFSET:
        return RegRule(None, rule.arg, True)
    if t == RegisterRule.VAL_OFFSET:
        return RegRule(None, rule.arg, False)
    if t == RegisterRule.REGISTER:
        return RegRule(rule.arg, 0, False)
    if t in (RegisterRule.EXPRESSION, RegisterRule.VAL_EXPRESSION):
        ops = _parse(parser, rule.arg)
        if isinstance(ops, Opaque):
            return ops
        # The expression yields an address (EXPRESSION) or the value itself.
        value = eval_linear(ops, 0, pc_reg, initial=0)
        if isinstance(value, Opaque) or value.deref:
            return Opaque(f"{t} rule") if not isinstance(value, Opaque) else value
        return RegRule(value.reg, value.offset, t == RegisterRule.EXPRESSION)
    return Opaque(f"{t} rule")


def _parse(parser: DWARFExprParser, expr: list[int] | bytes) -> tuple | Opaque:
    if len(expr) > MAX_EXPR_OPS * 10:
        return Opaque("expression too long")
    return tuple(parser.parse_expr(list(expr)))


def decode_eh_frame(data: bytes, vma: int, little_endian: bool, address_size: int,
                    abi: Abi) -> list[EhFde]:
    """Every FDE of an `.eh_frame` section, with its rows; CfiError if undecodable."""
    structs = DWARFStructs(little_endian=little_endian, dwarf_format=32,
                           address_size=address_size)
    parser = DWARFExprParser(structs)
    pc_reg = 16 if abi.ra_column == 16 else None  # x86-64 numbers RIP as 16
    out: list[EhFde] = []
    try:
        cfi = CallFrameInfo(io.BytesIO(data), len(data), vma, structs, for_eh_frame=True)
        for entry in cfi.get_entries():
            if not isinstance(entry, _PyFDE):
                continue
            start = entry.header["initial_location"] & ((1 << (8 * address_size)) - 1)
            end = start + entry.header["address_range"]
            rows = []
            for row in entry.get_decoded().table:
                rule = row["cfa"]
                if rule.expr is not None:
                    ops = _parse(parser, rule.expr)
                    cfa = ops if isinstance(ops, Opaque) else CfaExpr(ops)
                elif rule.reg is None:
                    cfa = Opaque("no CFA rule")
                else:
                    cfa = RegRule(rule.reg, rule.offset or 0, False)
                rows.append(CfiRow(
                    row["pc"], cfa,
                    _reg_rule(row.get(abi.ra_column), parser, True, pc_reg),
                    _reg_rule(row.get(abi.fp), parser, False, pc_reg)))
            out.append(EhFde(start, end, tuple(rows), entry.offset))
    except CfiError:
        raise
    except Exception as exc:  # noqa: BLE001 — pyelftools raises anything on hostile bytes
        raise CfiError(f"{type(exc).__name__}: {exc}") from None
    out.sort(key=lambda f: (f.start, f.end))
    return out
