"""cfi.eval_linear at many PCs in one pass, for the cross-check's periodic CFA expressions
(the PLT's is read at each of its 16 PC phases in every file).

Which branch eval_linear takes at an operation depends only on the operation, the stack's
depth and which stack values hold a register, never on a constant's value; the PC only
ever enters as a constant (``breg`` of the PC register), and the constant operations
(cfi._BIN, plus, minus, plus_uconst) are total on integers. So one pass serves every PC,
with each constant a column of one value per PC; tests/test_xcheck_fast_expr.py checks it
against eval_linear PC by PC.
"""

from __future__ import annotations

from collections.abc import Sequence
from operator import add, sub

from ..format.fre_rules import RegRule
from .cfi import (
    _BIN,
    _BINOP,
    _BREG,
    _BREGX,
    _CFA,
    _CONST,
    _DEREF,
    _DROP,
    _DUP,
    _KINDS,
    _LIT,
    _MINUS,
    _OVER,
    _PLUS,
    _SWAP,
    _UCONST,
    MAX_EXPR_OPS,
    Opaque,
    _kind,
)

Column = list[int]


def eval_linear_each(ops: tuple, pcs: Sequence[int], pc_reg: int | None,
                     initial: int | None) -> list[RegRule | Opaque]:
    """[eval_linear(ops, pc, pc_reg, initial) for pc in pcs] (the same exceptions too)."""
    n = len(pcs)
    if not n:
        return []
    stack: list[tuple[int | None, Column]] = [] if initial is None else [(_CFA, [0] * n)]
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
