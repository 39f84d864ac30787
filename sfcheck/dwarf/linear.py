"""DWARF expressions evaluated as `reg + const` (then maybe loaded): the CFA and
register-rule expressions of `.eh_frame` (sfcheck.dwarf.cfi), at one PC or at many.

eval_linear is the reference. eval_linear_each is it at a column of PCs in one pass, for
the cross-check's periodic CFA expressions (the PLT's is read at each of its 16 PC phases
in every file): which branch eval_linear takes at an operation depends only on the
operation, the stack's depth and which stack values hold a register, never on a
constant's value; the PC only ever enters as a constant (``breg`` of the PC register),
and the constant operations (_BIN, plus, minus, plus_uconst) are total on integers. So
one pass serves every PC, with each constant a column of one value per PC
(tests/test_xcheck_fast_expr.py checks both against the if-chain eval_linear was).
"""

from __future__ import annotations

from collections.abc import Sequence
from operator import add, sub

from ..format.fre_rules import RegRule
from ..record import Record

MAX_EXPR_OPS = 64  # a CFA expression longer than this is not one gas or ld writes


class Opaque(Record, frozen=True):
    """A rule sfcheck cannot compare (an expression outside the linear subset)."""

    __slots__ = ("why",)

    def __init__(self, why: str) -> None:
        object.__setattr__(self, "why", why)

    def __setattr__(self, name: str, value: object) -> None:
        raise AttributeError(f"{type(self).__name__} is a value: its fields do not change")

    def __reduce__(self) -> tuple:  # pickle and copy rebuild it; slot state would setattr
        return (type(self), tuple(getattr(self, name) for name in self._fields))

    def __str__(self) -> str:
        return f"<{self.why}>"


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

# eval_linear's branches, by operation name: (kind, the lit's value or breg's register;
# None when the name does not parse: then the branch's own int() raises as it would).
_LIT, _CONST, _BREG, _BREGX, _UCONST, _PLUS, _MINUS, _BINOP = range(8)
_DUP, _DROP, _SWAP, _OVER, _DEREF, _OTHER = range(8, 14)
_BY_NAME = {"DW_OP_bregx": _BREGX, "DW_OP_plus_uconst": _UCONST, "DW_OP_plus": _PLUS,
            "DW_OP_minus": _MINUS, "DW_OP_dup": _DUP, "DW_OP_drop": _DROP,
            "DW_OP_swap": _SWAP, "DW_OP_over": _OVER, "DW_OP_deref": _DEREF}
_KINDS: dict[str, tuple[int, int | None]] = {}


def _kind(name: str) -> tuple[int, int | None]:
    """The branch of eval_linear's reference order (lit, const, breg, then by name) that
    takes an operation named `name`; kept for the next expression."""
    if name.startswith("DW_OP_lit"):
        kind, at = _LIT, 9
    elif name.startswith("DW_OP_const"):
        kind, at = _CONST, 0
    elif name.startswith("DW_OP_breg") and name != "DW_OP_bregx":
        kind, at = _BREG, 10
    else:
        kind, at = (_BINOP if name in _BIN else _BY_NAME.get(name, _OTHER)), 0
    value = None
    if at:
        try:
            value = int(name[at:])
        except ValueError:
            value = None
    got = _KINDS[name] = (kind, value)
    return got


def eval_linear(ops: tuple, pc: int, pc_reg: int | None,
                initial: int | None) -> RegRule | Opaque:
    """Evaluate a DWARF expression whose value is `reg + const` (then maybe loaded).

    Stack values are (reg or None, const).  `pc_reg` is the DWARF number of the
    PC (x86-64: 16), read as the concrete `pc`.  `initial` pushes the CFA first
    (register-rule expressions). An operation whose operands are not on the stack is
    not evaluated (Opaque). One branch per kind of operation, chosen by its name once
    (_kind): a PLT's expression is evaluated at each of its 16 PC phases per file.
    """
    stack: list[tuple[int | None, int]] = [] if initial is None else [(_CFA, 0)]
    kinds = _KINDS
    deref = False
    for op in ops:
        if deref:
            return Opaque("operation after DW_OP_deref")
        name = op.op_name
        kind, value = kinds.get(name) or _kind(name)
        if kind == _BREG:
            reg = int(name[10:]) if value is None else value
            off = op.args[0]
            stack.append((None, pc + off) if reg == pc_reg else (reg, off))
        elif kind == _LIT:
            stack.append((None, int(name[9:]) if value is None else value))
        elif kind == _CONST:
            stack.append((None, int(op.args[0])))
        elif kind == _BINOP and len(stack) >= 2:
            (rb, b), (ra, a) = stack.pop(), stack.pop()
            if ra is not None or rb is not None:
                return Opaque(f"{name} on a register value")
            stack.append((None, _BIN[name](a, b)))
        elif kind == _PLUS and len(stack) >= 2:
            (rb, b), (ra, a) = stack.pop(), stack.pop()
            if ra is not None and rb is not None:
                return Opaque(f"{name} of two registers")
            stack.append((ra if rb is None else rb, a + b))
        elif kind == _MINUS and len(stack) >= 2:
            (rb, b), (ra, a) = stack.pop(), stack.pop()
            if rb is not None:
                return Opaque(f"{name} of two registers")
            stack.append((ra, a - b))
        elif kind == _BREGX:
            reg, off = op.args[0], op.args[1]
            stack.append((None, pc + off) if reg == pc_reg else (reg, off))
        elif kind == _UCONST and stack:
            reg, c = stack.pop()
            stack.append((reg, c + op.args[0]))
        elif kind == _DEREF and stack and stack[-1][0] is not None:
            deref = True
        elif kind == _DUP and stack:
            stack.append(stack[-1])
        elif kind == _DROP and stack:
            stack.pop()
        elif kind == _SWAP and len(stack) >= 2:
            stack[-1], stack[-2] = stack[-2], stack[-1]
        elif kind == _OVER and len(stack) >= 2:
            stack.append(stack[-2])
        else:
            return Opaque(f"{name} not evaluated")
        if len(stack) > MAX_EXPR_OPS:
            return Opaque("expression stack too deep")
    # The value is the top of the stack (a register-rule expression may leave the CFA below).
    if not stack or stack[-1][0] is None:
        return Opaque("expression is not register-relative")
    reg, off = stack[-1]
    return RegRule(None if reg == _CFA else reg, off, deref)


def eval_linear_each(ops: tuple, pcs: Sequence[int], pc_reg: int | None,
                     initial: int | None) -> list[RegRule | Opaque]:
    """[eval_linear(ops, pc, pc_reg, initial) for pc in pcs] (the same exceptions too)."""
    n = len(pcs)
    if not n:
        return []
    stack: list[tuple[int | None, list[int]]] = [] if initial is None else [(_CFA, [0] * n)]
    deref = False

    def opaque(why: str) -> list[RegRule | Opaque]:
        return [Opaque(why)] * n

    for op in ops:
        if deref:
            return opaque("operation after DW_OP_deref")
        name = op.op_name
        kind, value = _KINDS.get(name) or _kind(name)
        if kind in (_BREG, _BREGX):
            if kind == _BREG:
                reg = int(name[10:]) if value is None else value
                off = op.args[0]
            else:
                reg, off = op.args[0], op.args[1]
            stack.append((None, [pc + off for pc in pcs]) if reg == pc_reg
                         else (reg, [off] * n))
        elif kind == _LIT:
            stack.append((None, [int(name[9:]) if value is None else value] * n))
        elif kind == _CONST:
            stack.append((None, [int(op.args[0])] * n))
        elif kind == _BINOP and len(stack) >= 2:
            (rb, b), (ra, a) = stack.pop(), stack.pop()
            if ra is not None or rb is not None:
                return opaque(f"{name} on a register value")
            stack.append((None, list(map(_BIN[name], a, b))))
        elif kind == _PLUS and len(stack) >= 2:
            (rb, b), (ra, a) = stack.pop(), stack.pop()
            if ra is not None and rb is not None:
                return opaque(f"{name} of two registers")
            stack.append((ra if rb is None else rb, list(map(add, a, b))))
        elif kind == _MINUS and len(stack) >= 2:
            (rb, b), (ra, a) = stack.pop(), stack.pop()
            if rb is not None:
                return opaque(f"{name} of two registers")
            stack.append((ra, list(map(sub, a, b))))
        elif kind == _UCONST and stack:
            reg, c = stack.pop()
            u = op.args[0]
            stack.append((reg, [x + u for x in c]))
        elif kind == _DEREF and stack and stack[-1][0] is not None:
            deref = True
        elif kind == _DUP and stack:
            stack.append(stack[-1])
        elif kind == _DROP and stack:
            stack.pop()
        elif kind == _SWAP and len(stack) >= 2:
            stack[-1], stack[-2] = stack[-2], stack[-1]
        elif kind == _OVER and len(stack) >= 2:
            stack.append(stack[-2])
        else:
            return opaque(f"{name} not evaluated")
        if len(stack) > MAX_EXPR_OPS:
            return opaque("expression stack too deep")
    if not stack or stack[-1][0] is None:
        return opaque("expression is not register-relative")
    reg, offs = stack[-1]
    reg = None if reg == _CFA else reg
    return [RegRule(reg, off, deref) for off in offs]
