"""Exact values of sfcheck.dwarf.linear's evaluators, op by op: eval_linear at one PC and
eval_linear_each over a column of PCs must both give them (tests/test_xcheck_fast_expr.py
pins the two to each other; this pins both to the values, so a bug shared through the
operation's classification is seen too). Written against the mutants that survived the
dwarf group (issue 29); see tests/mutation_equivalent.txt for the ones that cannot change
behaviour."""

from __future__ import annotations

import copy
import pickle

import pytest

from sfcheck.dwarf import linear
from sfcheck.dwarf.expr import Op
from sfcheck.dwarf.linear import MAX_EXPR_OPS, Opaque, eval_linear, eval_linear_each
from sfcheck.format.fre_rules import RegRule

PCS = [0x1000, 0x2345]  # a column of two different PCs
PC_REG = 16  # x86-64's DWARF number of the return address / PC


def _forget() -> None:
    """Each operation's name classified afresh: the per-name cache (filled by whatever ran
    before) would otherwise answer for the classifier under test."""
    kinds = getattr(linear, "_KINDS", None)
    if isinstance(kinds, dict):
        kinds.clear()


@pytest.fixture(autouse=True)
def _cold_kinds() -> None:
    _forget()


def _op(name: str, *args: int) -> Op:
    return Op(name, list(args))


def _both(ops: tuple, pc_reg: int | None = PC_REG, initial: int | None = None,
          pcs: list[int] = PCS) -> list:
    """eval_linear PC by PC, checked equal to eval_linear_each's column (each on a cold
    cache, so both classify the names themselves)."""
    one = [eval_linear(ops, pc, pc_reg, initial) for pc in pcs]
    _forget()
    each = eval_linear_each(ops, pcs, pc_reg, initial)
    assert each == one
    return one


def _same(ops: tuple, want: RegRule | Opaque, **kw: int | None) -> None:
    """Both evaluators give `want` at every PC of the column."""
    assert _both(ops, **kw) == [want] * len(PCS)


def _raises(ops: tuple, exc: type[Exception]) -> None:
    """Both evaluators raise `exc` (a name that does not parse fails as int() does)."""
    with pytest.raises(exc):
        eval_linear(ops, PCS[0], PC_REG, None)
    _forget()
    with pytest.raises(exc):
        eval_linear_each(ops, PCS, PC_REG, None)


BREG7 = _op("DW_OP_breg7", 8)  # rsp + 8


# --- each operation's classification and value ---------------------------------------

@pytest.mark.parametrize("n", range(32))
def test_lit_pushes_its_number(n: int) -> None:
    _same((_op("DW_OP_breg7", 0), _op(f"DW_OP_lit{n}"), _op("DW_OP_plus")), RegRule(7, n, False))


@pytest.mark.parametrize("name", ["DW_OP_lit", "DW_OP_litx5", "DW_OP_breg", "DW_OP_bregy5"])
def test_unparsed_number_raises_value_error(name: str) -> None:
    _raises((BREG7, _op(name, 1)), ValueError)


@pytest.mark.parametrize("name", ["DW_OP_const1u", "DW_OP_const2s", "DW_OP_const8u",
                                  "DW_OP_constu", "DW_OP_consts"])
def test_const_pushes_its_operand(name: str) -> None:
    _same((BREG7, _op(name, 200), _op("DW_OP_plus")), RegRule(7, 208, False))


@pytest.mark.parametrize("reg", [0, 6, 7, 10, 12, 15, 17, 31])
def test_breg_reads_its_register_number(reg: int) -> None:
    _same((_op(f"DW_OP_breg{reg}", -24),), RegRule(reg, -24, False))


def test_bregx_reads_register_then_offset() -> None:
    _same((_op("DW_OP_bregx", 7, 40),), RegRule(7, 40, False))
    _same((_op("DW_OP_bregx", 33, -8),), RegRule(33, -8, False))


@pytest.mark.parametrize("breg", [_op("DW_OP_breg16", 5), _op("DW_OP_bregx", 16, 5)])
def test_pc_register_is_the_pc_plus_offset(breg: Op) -> None:
    """breg of the PC register is a constant: the PC plus the offset, at each PC."""
    ops = (breg, _op("DW_OP_breg7", 0), _op("DW_OP_plus"))
    assert _both(ops) == [RegRule(7, pc + 5, False) for pc in PCS]
    # another PC register: the same operation is a register value
    assert _both((breg,), pc_reg=6) == [RegRule(16, 5, False)] * len(PCS)


def test_plus_uconst_adds() -> None:
    _same((BREG7, _op("DW_OP_plus_uconst", 16)), RegRule(7, 24, False))


def test_plus_of_register_and_constant_either_order() -> None:
    _same((BREG7, _op("DW_OP_lit3"), _op("DW_OP_plus")), RegRule(7, 11, False))
    _same((_op("DW_OP_lit3"), BREG7, _op("DW_OP_plus")), RegRule(7, 11, False))
    _same((BREG7, _op("DW_OP_breg6", 0), _op("DW_OP_plus")),
          Opaque("DW_OP_plus of two registers"))


def test_minus_subtracts_the_top_from_the_one_below() -> None:
    _same((BREG7, _op("DW_OP_lit3"), _op("DW_OP_minus")), RegRule(7, 5, False))
    _same((_op("DW_OP_lit3"), BREG7, _op("DW_OP_minus")),
          Opaque("DW_OP_minus of two registers"))


def test_binop_values_at_the_boundaries() -> None:
    """Constant operations on the column: 64-bit shift limits, signed vs unsigned shifts,
    comparisons' order (a op b with b the top)."""
    def value(*ops: Op) -> int:
        got = _both((_op("DW_OP_breg7", 0), *ops, _op("DW_OP_plus")))
        assert len({r.offset for r in got}) == 1
        return got[0].offset

    neg = (_op("DW_OP_lit0"), _op("DW_OP_lit8"), _op("DW_OP_minus"))  # -8
    assert value(_op("DW_OP_lit1"), _op("DW_OP_lit31"), _op("DW_OP_shl")) == 1 << 31
    assert value(_op("DW_OP_lit1"), _op("DW_OP_const1u", 64), _op("DW_OP_shl")) == 0
    assert value(*neg, _op("DW_OP_lit1"), _op("DW_OP_shr")) == ((1 << 64) - 8) >> 1
    assert value(*neg, _op("DW_OP_lit1"), _op("DW_OP_shra")) == -4
    assert value(*neg, _op("DW_OP_const1u", 64), _op("DW_OP_shra")) == -1
    assert value(_op("DW_OP_lit5"), _op("DW_OP_lit3"), _op("DW_OP_gt")) == 1
    assert value(_op("DW_OP_lit5"), _op("DW_OP_lit3"), _op("DW_OP_lt")) == 0
    assert value(_op("DW_OP_lit12"), _op("DW_OP_lit10"), _op("DW_OP_and")) == 8
    assert value(_op("DW_OP_lit12"), _op("DW_OP_lit10"), _op("DW_OP_xor")) == 6
    assert value(_op("DW_OP_lit12"), _op("DW_OP_lit10"), _op("DW_OP_mul")) == 120


@pytest.mark.parametrize("first", [True, False])
def test_binop_on_a_register_is_opaque(first: bool) -> None:
    pair = (BREG7, _op("DW_OP_lit1")) if first else (_op("DW_OP_lit1"), BREG7)
    _same((*pair, _op("DW_OP_and")), Opaque("DW_OP_and on a register value"))


def test_binop_on_the_pc_column_is_per_pc() -> None:
    """A PLT's CFA: rsp + 8 + ((pc & 15) >= 11) << 3, each PC its own value."""
    ops = (_op("DW_OP_breg7", 8), _op("DW_OP_breg16", 0), _op("DW_OP_lit15"),
           _op("DW_OP_and"), _op("DW_OP_lit11"), _op("DW_OP_ge"), _op("DW_OP_lit3"),
           _op("DW_OP_shl"), _op("DW_OP_plus"))
    assert _both(ops) == [RegRule(7, 8 + (((pc & 15) >= 11) << 3), False) for pc in PCS]
    phases = [0x1230 + k for k in range(16)]
    assert _both(ops, pcs=phases) == [RegRule(7, 16 if k >= 11 else 8, False)
                                      for k in range(16)]


# --- deref ----------------------------------------------------------------------------

def test_deref_of_a_register_value_loads() -> None:
    _same((BREG7, _op("DW_OP_deref")), RegRule(7, 8, True))
    _same((_op("DW_OP_lit0"), BREG7, _op("DW_OP_deref")), RegRule(7, 8, True))


def test_deref_of_a_constant_is_not_evaluated() -> None:
    _same((_op("DW_OP_lit5"), _op("DW_OP_deref")), Opaque("DW_OP_deref not evaluated"))
    _same((BREG7, _op("DW_OP_lit5"), _op("DW_OP_deref")), Opaque("DW_OP_deref not evaluated"))
    _same((_op("DW_OP_deref"),), Opaque("DW_OP_deref not evaluated"))


def test_operation_after_deref_is_opaque() -> None:
    _same((BREG7, _op("DW_OP_deref"), _op("DW_OP_lit0")),
          Opaque("operation after DW_OP_deref"))


# --- stack operations: [A, B, C] = [rbp + 1, rsp + 8, 3] -------------------------------

ABC = (_op("DW_OP_breg6", 1), BREG7, _op("DW_OP_lit3"))
NOT_REG = Opaque("expression is not register-relative")


@pytest.mark.parametrize(("tail", "want"), [
    ((_op("DW_OP_swap"),), RegRule(7, 8, False)),  # [A, C, B]
    ((_op("DW_OP_swap"), _op("DW_OP_drop")), NOT_REG),  # [A, C]
    ((_op("DW_OP_swap"), _op("DW_OP_drop"), _op("DW_OP_drop")), RegRule(6, 1, False)),
    ((_op("DW_OP_over"),), RegRule(7, 8, False)),  # [A, B, C, B]
    ((_op("DW_OP_over"), _op("DW_OP_drop")), NOT_REG),
    ((_op("DW_OP_over"), _op("DW_OP_drop"), _op("DW_OP_drop")), RegRule(7, 8, False)),
    ((_op("DW_OP_over"), _op("DW_OP_drop"), _op("DW_OP_drop"), _op("DW_OP_drop")),
     RegRule(6, 1, False)),
    ((_op("DW_OP_dup"),), NOT_REG),  # [A, B, C, C]
    ((_op("DW_OP_dup"), _op("DW_OP_drop")), NOT_REG),
    ((_op("DW_OP_dup"), _op("DW_OP_drop"), _op("DW_OP_drop")), RegRule(7, 8, False)),
    ((_op("DW_OP_drop"),), RegRule(7, 8, False)),
])
def test_stack_operations_on_three(tail: tuple, want: RegRule | Opaque) -> None:
    _same(ABC + tail, want)


def test_dup_and_over_copy_a_register_value() -> None:
    _same((_op("DW_OP_breg6", 1), _op("DW_OP_lit3"), BREG7, _op("DW_OP_dup")),
          RegRule(7, 8, False))
    _same((BREG7, _op("DW_OP_lit3"), _op("DW_OP_over")), RegRule(7, 8, False))
    _same((BREG7, _op("DW_OP_lit3"), _op("DW_OP_swap")), RegRule(7, 8, False))


@pytest.mark.parametrize("name", ["DW_OP_swap", "DW_OP_over", "DW_OP_plus", "DW_OP_minus",
                                  "DW_OP_and"])
def test_two_operand_op_on_one_value_underflows(name: str) -> None:
    _same((BREG7, _op(name)), Opaque(f"{name} not evaluated"))


@pytest.mark.parametrize("name", ["DW_OP_dup", "DW_OP_drop", "DW_OP_plus_uconst"])
def test_one_operand_op_on_nothing_underflows(name: str) -> None:
    _same((_op(name, 1),), Opaque(f"{name} not evaluated"))


@pytest.mark.parametrize("name", ["DW_OP_skip", "DW_OP_call_frame_cfa", "DW_OP_reg7",
                                  "DW_OP_bra"])
def test_other_operations_are_not_evaluated_whatever_the_stack(name: str) -> None:
    _same((BREG7, _op("DW_OP_lit3"), _op(name, 0)), Opaque(f"{name} not evaluated"))
    _same((_op(name, 0),), Opaque(f"{name} not evaluated"))


def test_initial_cfa_is_the_cfa() -> None:
    _same((_op("DW_OP_lit8"), _op("DW_OP_plus")), RegRule(None, 8, False), initial=0)
    _same((_op("DW_OP_lit8"), _op("DW_OP_minus"), _op("DW_OP_deref")),
          RegRule(None, -8, True), initial=0)
    _same((), NOT_REG)


def test_stack_depth_bound_is_exact() -> None:
    one = (_op("DW_OP_breg7", 1),)
    _same(one + (_op("DW_OP_dup"),) * (MAX_EXPR_OPS - 1), RegRule(7, 1, False))
    _same(one + (_op("DW_OP_dup"),) * MAX_EXPR_OPS, Opaque("expression stack too deep"))


# --- Opaque as a value --------------------------------------------------------------

def test_opaque_survives_pickle_and_copy() -> None:
    """The survey's process pool pickles results: an Opaque comes back equal, with its
    reason, and still a value."""
    why = Opaque("DW_OP_skip not evaluated")
    for back in (pickle.loads(pickle.dumps(why)), copy.copy(why), copy.deepcopy(why)):
        assert type(back) is Opaque
        assert back == why
        assert back.why == "DW_OP_skip not evaluated"
        assert str(back) == "<DW_OP_skip not evaluated>"
        with pytest.raises(AttributeError):
            back.why = "x"  # type: ignore[misc]
