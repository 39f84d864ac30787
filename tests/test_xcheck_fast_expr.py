"""sfcheck.dwarf.linear.eval_linear (its branch chosen by the operation's name once, _kind)
against the if-chain it was written as, kept here as the reference: the same value or
Opaque reason, or the same exception, on random operation sequences, names that parse
oddly and operands missing from the stack included."""

from __future__ import annotations

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from sfcheck.dwarf.expr import Op
from sfcheck.dwarf.linear import _BIN, _CFA, MAX_EXPR_OPS, Opaque, eval_linear, eval_linear_each
from sfcheck.format.fre_rules import RegRule


def reference(ops: tuple, pc: int, pc_reg: int | None,
              initial: int | None) -> RegRule | Opaque:
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
    if not stack or stack[-1][0] is None:
        return Opaque("expression is not register-relative")
    reg, off = stack[-1]
    return RegRule(None if reg == _CFA else reg, off, deref)


NAMES = [*(f"DW_OP_lit{n}" for n in (0, 3, 11, 15, 31)), "DW_OP_lit", "DW_OP_litx",
         "DW_OP_const1u", "DW_OP_consts", "DW_OP_const_type", "DW_OP_breg6", "DW_OP_breg7",
         "DW_OP_breg16", "DW_OP_breg", "DW_OP_bregx", "DW_OP_plus_uconst", "DW_OP_plus",
         "DW_OP_minus", *sorted(_BIN), "DW_OP_dup", "DW_OP_drop", "DW_OP_swap", "DW_OP_over",
         "DW_OP_deref", "DW_OP_call_frame_cfa", "DW_OP_skip", "DW_OP_reg7"]
OPS = st.builds(lambda name, args: Op(name, args), st.sampled_from(NAMES),
                st.lists(st.one_of(st.integers(-64, 64), st.sampled_from([16, 6, 7, 1 << 64])),
                         min_size=0, max_size=2))


def _outcome(f, ops: tuple, pc: int, pc_reg: int | None, initial: int | None) -> object:
    try:
        return f(ops, pc, pc_reg, initial)
    except Exception as exc:  # noqa: BLE001 — the same exception as the reference
        return type(exc)


@settings(max_examples=1000)
@given(st.lists(OPS, max_size=12).map(tuple), st.integers(0, 1 << 20),
       st.sampled_from([16, 6, None]), st.sampled_from([None, 0]))
@example((Op("DW_OP_breg7", [8]), Op("DW_OP_breg16", [0]), Op("DW_OP_lit15", []),
          Op("DW_OP_and", []), Op("DW_OP_lit11", []), Op("DW_OP_ge", []),
          Op("DW_OP_lit3", []), Op("DW_OP_shl", []), Op("DW_OP_plus", [])), 0x123B, 16, None)
@example((Op("DW_OP_breg7", [8]), Op("DW_OP_swap", [])), 0, 16, None)
@example((Op("DW_OP_lit1", []), Op("DW_OP_breg7", [8]), Op("DW_OP_minus", [])), 0, 16, None)
def test_same_as_reference(ops: tuple, pc: int, pc_reg: int | None,
                           initial: int | None) -> None:
    assert (_outcome(eval_linear, ops, pc, pc_reg, initial)
            == _outcome(reference, ops, pc, pc_reg, initial))


@pytest.mark.parametrize("deep", [MAX_EXPR_OPS - 1, MAX_EXPR_OPS])
def test_stack_bound_same_as_reference(deep: int) -> None:
    ops = (Op("DW_OP_breg7", [1]),) + (Op("DW_OP_dup", []),) * deep
    assert eval_linear(ops, 0, 16, None) == reference(ops, 0, 16, None)


@settings(max_examples=600)
@given(st.lists(OPS, max_size=12).map(tuple),
       st.lists(st.integers(0, 1 << 20), min_size=1, max_size=20),
       st.sampled_from([16, 6, None]), st.sampled_from([None, 0]))
@example((Op("DW_OP_breg7", [8]), Op("DW_OP_breg16", [0]), Op("DW_OP_lit15", []),
          Op("DW_OP_and", []), Op("DW_OP_lit11", []), Op("DW_OP_ge", []),
          Op("DW_OP_lit3", []), Op("DW_OP_shl", []), Op("DW_OP_plus", [])),
         list(range(0x1230, 0x1240)), 16, None)
@example((Op("DW_OP_breg7", [8]), Op("DW_OP_breg16", [0]), Op("DW_OP_minus", [])),
         [3, 4], 16, None)
@example((Op("DW_OP_breg7", [8]), Op("DW_OP_lit3", []), Op("DW_OP_minus", []),
          Op("DW_OP_plus_uconst", [5]), Op("DW_OP_dup", []), Op("DW_OP_swap", []),
          Op("DW_OP_lit0", []), Op("DW_OP_over", []), Op("DW_OP_drop", []),
          Op("DW_OP_plus", [])), [3, 4], 16, 0)
@example((Op("DW_OP_breg16", [0]), Op("DW_OP_lit31", []), Op("DW_OP_shl", []),
          Op("DW_OP_breg7", [0]), Op("DW_OP_plus", [])), [0, 1, 2, 1 << 20], 16, None)
def test_each_pc_at_once_same_as_one_by_one(ops: tuple, pcs: list[int], pc_reg: int | None,
                                            initial: int | None) -> None:
    """eval_linear_each: one pass over a column of PCs, as eval_linear PC by PC."""
    try:
        want: object = [eval_linear(ops, pc, pc_reg, initial) for pc in pcs]
    except Exception as exc:  # noqa: BLE001 — the same exception as the reference
        want = type(exc)
    assert _outcome(lambda o, _pc, r, i: eval_linear_each(o, pcs, r, i), ops, 0, pc_reg,
                    initial) == want


def test_each_pc_of_nothing() -> None:
    assert eval_linear_each((Op("DW_OP_breg7", [8]),), [], 16, None) == []
