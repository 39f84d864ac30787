"""sfcheck.dwarf.cfi: DWARF expressions evaluated to `reg + offset` rules, register rules
mapped onto SFrame's terms, and `.eh_frame` decoded to sorted FDEs with those rules.

The values are those of the DWARF 5 standard, section 2.5 (stack operations) and 6.4.2
(call frame instructions); the corpus tests compare the same code against pyelftools but
only reach the operations gas and ld write, so each operation is pinned here.
"""

from __future__ import annotations

import struct

import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from sfcheck.dwarf import callframe
from sfcheck.dwarf.cfi import (
    MAX_EXPR_OPS,
    UNDEFINED,
    CfaExpr,
    CfiError,
    Opaque,
    _Exprs,
    _reg_rule,
    decode_eh_frame,
    eval_linear,
)
from sfcheck.dwarf.expr import Op
from sfcheck.format import constants as C
from sfcheck.format.abi import ABIS
from sfcheck.format.fre_rules import RegRule

from helpers import sleb, uleb

PC = 16  # x86-64's DWARF number of RIP
AMD64 = ABIS[C.ABI_AMD64_LE]


def op(name: str, *args: int) -> Op:
    return Op(name, list(args))


def ev(*ops: Op, pc: int = 0x1000, initial: int | None = None) -> RegRule | Opaque:
    return eval_linear(tuple(ops), pc, PC, initial)


BREG7_100 = op("DW_OP_breg7", 100)  # rsp + 100: a register value to add constants to


# Each binary operation on two constants (a pushed first, b on top), added to rsp + 100:
# asymmetric operands so a swapped or wrong operation gives another offset.
@pytest.mark.parametrize(("name", "a", "b", "want"), [
    ("DW_OP_and", 12, 10, 8), ("DW_OP_or", 12, 10, 14), ("DW_OP_xor", 12, 10, 6),
    ("DW_OP_mul", 6, 7, 42), ("DW_OP_shl", 3, 4, 48), ("DW_OP_shl", 3, 64, 0),
    ("DW_OP_shl", 3, 63, 3 << 63), ("DW_OP_shr", 48, 4, 3), ("DW_OP_shr", 48, 64, 0),
    ("DW_OP_shr", 1 << 63, 63, 1), ("DW_OP_shra", 48, 4, 3), ("DW_OP_shra", 48, 64, 0),
    ("DW_OP_shra", 1 << 62, 62, 1),
    ("DW_OP_ge", 5, 5, 1), ("DW_OP_ge", 4, 5, 0), ("DW_OP_ge", 6, 5, 1),
    ("DW_OP_gt", 5, 5, 0), ("DW_OP_gt", 6, 5, 1), ("DW_OP_gt", 4, 5, 0),
    ("DW_OP_le", 5, 5, 1), ("DW_OP_le", 6, 5, 0), ("DW_OP_le", 4, 5, 1),
    ("DW_OP_lt", 5, 5, 0), ("DW_OP_lt", 4, 5, 1), ("DW_OP_lt", 6, 5, 0),
    ("DW_OP_eq", 5, 5, 1), ("DW_OP_eq", 4, 5, 0),
    ("DW_OP_ne", 5, 5, 0), ("DW_OP_ne", 4, 5, 1),
    ("DW_OP_plus", 12, 10, 22), ("DW_OP_minus", 12, 10, 2),
])
def test_binary_operations_on_constants(name: str, a: int, b: int, want: int) -> None:
    got = ev(BREG7_100, op("DW_OP_const8u", a), op("DW_OP_const8u", b), op(name),
             op("DW_OP_plus"))
    assert got == RegRule(7, 100 + want, False)


def test_shifts_of_negative_values() -> None:
    """shr is logical (the value as 64 unsigned bits), shra arithmetic (DWARF 5, 2.5.1.4);
    a shift count of 64 or more gives 0, or -1 for shra of a negative value."""
    minus16 = op("DW_OP_consts", -16)
    assert ev(BREG7_100, minus16, op("DW_OP_lit2"), op("DW_OP_shra"), op("DW_OP_plus")) \
        == RegRule(7, 96, False)
    assert ev(BREG7_100, minus16, op("DW_OP_lit4"), op("DW_OP_shr"), op("DW_OP_plus")) \
        == RegRule(7, 100 + ((2**64 - 16) >> 4), False)
    assert ev(BREG7_100, minus16, op("DW_OP_const1u", 64), op("DW_OP_shra"),
              op("DW_OP_plus")) == RegRule(7, 99, False)
    assert ev(BREG7_100, minus16, op("DW_OP_consts", -1), op("DW_OP_shra"),
              op("DW_OP_plus")) == RegRule(7, 99, False)
    assert ev(BREG7_100, op("DW_OP_lit8"), op("DW_OP_consts", -1), op("DW_OP_shl"),
              op("DW_OP_plus")) == RegRule(7, 100, False)
    assert ev(BREG7_100, op("DW_OP_lit8"), op("DW_OP_consts", -1), op("DW_OP_shr"),
              op("DW_OP_plus")) == RegRule(7, 100, False)


def test_register_plus_and_minus_constant() -> None:
    """reg + c in either order; reg - c; c - reg and reg - reg are not linear."""
    assert ev(BREG7_100, op("DW_OP_lit3"), op("DW_OP_plus")) == RegRule(7, 103, False)
    assert ev(op("DW_OP_lit3"), BREG7_100, op("DW_OP_plus")) == RegRule(7, 103, False)
    assert ev(BREG7_100, op("DW_OP_lit3"), op("DW_OP_minus")) == RegRule(7, 97, False)
    assert ev(op("DW_OP_lit3"), BREG7_100, op("DW_OP_minus")) \
        == Opaque("DW_OP_minus of two registers")
    assert ev(BREG7_100, op("DW_OP_breg6", 0), op("DW_OP_plus")) \
        == Opaque("DW_OP_plus of two registers")
    assert ev(BREG7_100, op("DW_OP_plus_uconst", 28)) == RegRule(7, 128, False)


def test_register_operands_and_the_pc() -> None:
    """bregN and bregx push reg + offset; the PC register reads as the concrete pc."""
    assert ev(op("DW_OP_breg6", -8)) == RegRule(6, -8, False)
    assert ev(op("DW_OP_breg31", 4)) == RegRule(31, 4, False)
    assert ev(op("DW_OP_bregx", 40, -3)) == RegRule(40, -3, False)
    # ld's PLT expression: rsp + 8 + ((rip & 15) >= 11) * 8, at pc 0x100a and 0x100b
    plt = (op("DW_OP_breg7", 8), op("DW_OP_breg16", 0), op("DW_OP_lit15"), op("DW_OP_and"),
           op("DW_OP_lit11"), op("DW_OP_ge"), op("DW_OP_lit3"), op("DW_OP_shl"),
           op("DW_OP_plus"))
    assert ev(*plt, pc=0x100A) == RegRule(7, 8, False)
    assert ev(*plt, pc=0x100B) == RegRule(7, 16, False)
    # the same with bregx naming the PC, and an offset added to it
    assert ev(op("DW_OP_breg7", 0), op("DW_OP_bregx", PC, 3), op("DW_OP_lit15"),
              op("DW_OP_and"), op("DW_OP_plus"), pc=0x1001) == RegRule(7, 4, False)
    assert ev(op("DW_OP_breg7", 0), op("DW_OP_breg16", 3), op("DW_OP_lit15"),
              op("DW_OP_and"), op("DW_OP_plus"), pc=0x1001) == RegRule(7, 4, False)
    # with no PC register (AArch64), breg16 is an ordinary register
    assert eval_linear((op("DW_OP_breg16", 3),), 0x1000, None, None) == RegRule(16, 3, False)


def test_stack_operations() -> None:
    lit = op("DW_OP_lit1")
    # swap below a third value: [r7+100, 2, 1] - then minus gives 1, plus r7 + 101
    assert ev(BREG7_100, lit, op("DW_OP_lit2"), op("DW_OP_swap"), op("DW_OP_minus"),
              op("DW_OP_plus")) == RegRule(7, 101, False)
    assert ev(lit, BREG7_100, op("DW_OP_lit2"), op("DW_OP_swap")) == RegRule(7, 100, False)
    assert ev(BREG7_100, op("DW_OP_dup"), op("DW_OP_lit2"), op("DW_OP_plus")) \
        == RegRule(7, 102, False)
    assert ev(BREG7_100, op("DW_OP_dup"), op("DW_OP_plus")) \
        == Opaque("DW_OP_plus of two registers")
    assert ev(BREG7_100, lit, op("DW_OP_drop")) == RegRule(7, 100, False)
    assert ev(BREG7_100, lit, op("DW_OP_swap")) == RegRule(7, 100, False)
    assert ev(lit, BREG7_100, op("DW_OP_swap")) == Opaque("expression is not register-relative")
    assert ev(lit, BREG7_100, op("DW_OP_swap"), op("DW_OP_drop")) == RegRule(7, 100, False)
    assert ev(BREG7_100, lit, op("DW_OP_over")) == RegRule(7, 100, False)
    assert ev(BREG7_100, lit, op("DW_OP_over"), op("DW_OP_drop")) \
        == Opaque("expression is not register-relative")
    # too few operands: not evaluated, never an IndexError
    for name in ("DW_OP_dup", "DW_OP_drop", "DW_OP_plus_uconst", "DW_OP_deref"):
        assert ev(op(name, 1)) == Opaque(f"{name} not evaluated")
    for name in ("DW_OP_swap", "DW_OP_over", "DW_OP_plus", "DW_OP_minus", "DW_OP_and"):
        assert ev(BREG7_100, op(name)) == Opaque(f"{name} not evaluated")
    assert ev(BREG7_100, op("DW_OP_nop")) == Opaque("DW_OP_nop not evaluated")


def test_deref_loads_a_register_value_only() -> None:
    assert ev(op("DW_OP_breg6", -8), op("DW_OP_deref")) == RegRule(6, -8, True)
    assert ev(op("DW_OP_lit8"), op("DW_OP_deref")) == Opaque("DW_OP_deref not evaluated")
    assert ev(op("DW_OP_breg6", -8), op("DW_OP_deref"), op("DW_OP_lit1")) \
        == Opaque("operation after DW_OP_deref")
    assert ev(BREG7_100, op("DW_OP_lit1"), op("DW_OP_and")) \
        == Opaque("DW_OP_and on a register value")
    assert ev(op("DW_OP_lit1"), BREG7_100, op("DW_OP_and")) \
        == Opaque("DW_OP_and on a register value")


def test_result_must_be_register_relative() -> None:
    assert ev() == Opaque("expression is not register-relative")
    assert ev(op("DW_OP_lit4")) == Opaque("expression is not register-relative")
    assert ev(op("DW_OP_breg16", 4)) == Opaque("expression is not register-relative")
    # the value is the top of the stack, whatever lies below it
    assert ev(op("DW_OP_lit4"), BREG7_100) == RegRule(7, 100, False)


def test_stack_depth_bound() -> None:
    """MAX_EXPR_OPS values on the stack are evaluated; one more is too deep."""
    at_bound = (BREG7_100,) + (op("DW_OP_lit0"),) * (MAX_EXPR_OPS - 1) \
        + (op("DW_OP_drop"),) * (MAX_EXPR_OPS - 1)
    assert ev(*at_bound) == RegRule(7, 100, False)
    past = (BREG7_100,) + (op("DW_OP_lit0"),) * MAX_EXPR_OPS
    assert ev(*past) == Opaque("expression stack too deep")


def test_initial_pushes_the_cfa() -> None:
    """A register-rule expression starts with the CFA on the stack (DWARF 5, 6.4.2.3):
    the result names the CFA as reg None."""
    assert ev(op("DW_OP_lit8"), op("DW_OP_minus"), initial=0) == RegRule(None, -8, False)
    assert ev(op("DW_OP_plus_uconst", 16), initial=0) == RegRule(None, 16, False)
    assert ev(initial=0) == RegRule(None, 0, False)
    assert ev(op("DW_OP_lit8"), op("DW_OP_minus")) == Opaque("DW_OP_minus not evaluated")


def test_cfa_expression_at_and_period() -> None:
    plt = CfaExpr((op("DW_OP_breg7", 8), op("DW_OP_breg16", 0), op("DW_OP_lit15"),
                   op("DW_OP_and"), op("DW_OP_lit11"), op("DW_OP_ge"), op("DW_OP_lit3"),
                   op("DW_OP_shl"), op("DW_OP_plus")))
    assert plt.at(0x20, PC) == RegRule(7, 8, False)
    assert plt.at(0x2B, PC) == RegRule(7, 16, False)
    assert plt.period(PC) == 16
    assert plt.period(None) is None
    const = CfaExpr((op("DW_OP_breg7", 0), op("DW_OP_bregx", PC, 0),
                     op("DW_OP_const2u", 31), op("DW_OP_and"), op("DW_OP_plus")))
    assert const.period(PC) == 32
    # not a power of two, past 2**16, not an `and`, not a constant, at the end, used twice
    for tail in ((op("DW_OP_lit14"), op("DW_OP_and")),
                 (op("DW_OP_const4u", (1 << 17) - 1), op("DW_OP_and")),
                 (op("DW_OP_lit15"), op("DW_OP_or")),
                 (op("DW_OP_breg6", 0), op("DW_OP_and")),
                 (op("DW_OP_consts", 15), op("DW_OP_and")),
                 (op("DW_OP_lit15"),)):
        assert CfaExpr((op("DW_OP_breg16", 0),) + tail).period(PC) is None
    assert CfaExpr((op("DW_OP_const2u", 0xFFFF), op("DW_OP_breg16", 0),
                    op("DW_OP_const4u", 0xFFFF), op("DW_OP_and"))).period(PC) == 1 << 16
    assert CfaExpr((op("DW_OP_breg16", 0), op("DW_OP_lit15"), op("DW_OP_and"),
                    op("DW_OP_breg16", 0))).period(PC) is None
    assert CfaExpr((op("DW_OP_breg16", 0), op("DW_OP_lit0"), op("DW_OP_and"))).period(PC) \
        == 1
    assert plt == CfaExpr(plt.ops)  # by content (Op args are lists: no hash)
    assert hash(CfaExpr((Op("DW_OP_lit1", ()),))) == hash(CfaExpr((Op("DW_OP_lit1", ()),)))
    assert plt != const and Opaque("x") != CfaExpr(())
    with pytest.raises(AttributeError):
        plt.ops = ()


def test_opaque_is_a_value() -> None:
    assert Opaque("a") == Opaque("a") and hash(Opaque("a")) == hash(Opaque("a"))
    assert Opaque("a") != Opaque("b") and Opaque("a") != "a"
    assert str(Opaque("why")) == "<why>" and repr(Opaque("w")) == "Opaque(why='w')"
    with pytest.raises(AttributeError):
        Opaque("a").why = "b"
    assert repr(UNDEFINED) == str(UNDEFINED) == "UNDEFINED"


EXPRS = _Exprs(True, 8)


@pytest.mark.parametrize(("rule", "is_ra", "want"), [
    (None, True, None), (None, False, None),
    ((callframe.SAME_VALUE, None), True, None),
    ((callframe.UNDEFINED, None), True, UNDEFINED), ((callframe.UNDEFINED, None), False, None),
    ((callframe.OFFSET, -16), False, RegRule(None, -16, True)),
    ((callframe.VAL_OFFSET, 24), True, RegRule(None, 24, False)),
    ((callframe.REGISTER, 3), False, RegRule(3, 0, False)),
    ((callframe.EXPRESSION, b"\x76\x08"), True, RegRule(6, 8, True)),  # breg6 8
    ((callframe.VAL_EXPRESSION, b"\x76\x08"), True, RegRule(6, 8, False)),
    ((callframe.EXPRESSION, b"\x38\x1c"), False, RegRule(None, -8, True)),  # CFA - 8
    ((callframe.EXPRESSION, b"\x76\x08\x06"), True, Opaque("EXPRESSION rule that loads")),
    ((callframe.VAL_EXPRESSION, b"\x76\x08\x06"), True, Opaque("VAL_EXPRESSION rule that loads")),
    ((callframe.EXPRESSION, b"\x80\x04"), True, Opaque("expression is not register-relative")),
    ((callframe.EXPRESSION, b"\x96"), True, Opaque("DW_OP_nop not evaluated")),
    ((callframe.EXPRESSION, b"\xff"), True, Opaque("undecodable expression")),
    (("ARCHITECTURAL", None), True, Opaque("ARCHITECTURAL rule")),
])
def test_register_rules(rule, is_ra: bool, want) -> None:
    """Register rules as SFrame terms: an offset rule loads from CFA + offset, val_offset
    is the address itself, an expression yields an address (loaded) or the value; the
    PC register (16) reads as 0 in a register-rule expression, so breg16 is no register."""
    assert _reg_rule(rule, EXPRS, is_ra, PC) == want


def test_expression_decoding() -> None:
    """The table's operations without pyelftools, anything else by it; byte order and
    address size as given; a length bound first."""
    assert EXPRS.parse(b"\x0a\x01\x02") == (Op("DW_OP_const2u", [0x0201]),)
    assert _Exprs(False, 8).parse(b"\x0a\x01\x02") == (Op("DW_OP_const2u", [0x0102]),)
    # fresh parsers: each makes its pyelftools parser on first use
    addr = _Exprs(True, 8).parse(b"\x03" + bytes(range(1, 9)))
    assert [(o.op_name, o.args) for o in addr] == [("DW_OP_addr", [0x0807060504030201])]
    addr4 = _Exprs(False, 4).parse(b"\x03\x01\x02\x03\x04")
    assert [(o.op_name, o.args) for o in addr4] == [("DW_OP_addr", [0x01020304])]
    assert EXPRS.parse(b"\x30" * (MAX_EXPR_OPS * 10)) == (Op("DW_OP_lit0", []),) * 640
    assert EXPRS.parse(b"\x30" * (MAX_EXPR_OPS * 10 + 1)) == Opaque("expression too long")
    assert EXPRS.parse(b"\xff") == Opaque("undecodable expression")


# -- decode_eh_frame over a hand-made section ---------------------------------------

VMA = 0x2000
TEXT = 0x10000


def _cie(program: bytes, aug: bytes = b"zR", aug_data: bytes = b"\x1b") -> bytes:
    # version 1, code align 1, data align -8, RA column 16
    body = struct.pack("<I", 0) + b"\x01" + aug + b"\0" + uleb(1) + sleb(-8) + b"\x10"
    if aug.startswith(b"z"):
        body += uleb(len(aug_data)) + aug_data
    body += program
    body += b"\0" * (-(len(body) + 4) % 4)
    return struct.pack("<I", len(body)) + body


def _fde(at: int, start: int, size: int, program: bytes) -> bytes:
    body = struct.pack("<I", at + 4)  # the CIE is at offset 0
    body += struct.pack("<i", start - (VMA + at + 8)) + struct.pack("<i", size) + uleb(0)
    body += program
    body += b"\0" * (-(len(body) + 4) % 4)
    return struct.pack("<I", len(body)) + body


def section(fdes: list[tuple[int, int, bytes]], cie_program: bytes = b"\x0c\x07\x08\x90\x01",
            ) -> bytes:
    out = bytearray(_cie(cie_program))
    for start, size, program in fdes:
        out += _fde(len(out), start, size, program)
    return bytes(out + bytes(4))


def test_decoded_rows() -> None:
    """CFA rsp+8, RA at CFA-8 from the CIE; after one byte CFA rsp+16 and rbp at CFA-16;
    after three more a CFA expression."""
    prog = (b"\x41\x0e\x10\x86\x02"  # advance 1; def_cfa_offset 16; offset r6, 2*-8
            + b"\x43\x0f\x03\x77\x08\x06")  # advance 3; def_cfa_expression breg7 8 deref
    data = section([(TEXT, 0x20, prog)])
    fdes = decode_eh_frame(data, VMA, True, 8, AMD64)
    assert len(fdes) == 1
    f = fdes[0]
    assert (f.start, f.end, f.offset, f.limit) == (TEXT, TEXT + 0x20, 0x18, None)
    ra = RegRule(None, -8, True)
    rows = [(r.pc, r.cfa, r.ra, r.fp) for r in f.rows]
    assert rows == [(TEXT, RegRule(7, 8, False), ra, None),
                    (TEXT + 1, RegRule(7, 16, False), ra, RegRule(None, -16, True)),
                    (TEXT + 4, CfaExpr((Op("DW_OP_breg7", [8]), Op("DW_OP_deref", []))), ra,
                     RegRule(None, -16, True))]
    assert [r.pc for r in f.rel] == [0, 1, 4]
    # one object per rule value across rows (CfaExpr aside)
    assert f.rows[0].ra is f.rows[2].ra and f.rows[1].fp is f.rows[2].fp


def test_no_cfa_rule_and_undecodable_cfa_expression() -> None:
    data = section([(TEXT, 8, b""), (TEXT + 8, 8, b"\x0f\x01\xff")], cie_program=b"")
    fdes = decode_eh_frame(data, VMA, True, 8, AMD64)
    assert [(r.cfa, r.ra, r.fp) for r in fdes[0].rows] == [(Opaque("no CFA rule"), None, None)]
    assert fdes[1].rows[0].cfa == Opaque("undecodable expression")
    assert fdes[0].rows[0].cfa is not fdes[1].rows[0].cfa


def test_fdes_sorted_by_start_then_end() -> None:
    data = section([(TEXT + 0x40, 8, b""), (TEXT, 0x10, b""), (TEXT, 8, b""),
                    (TEXT + 0x20, 8, b"")])
    fdes = decode_eh_frame(data, VMA, True, 8, AMD64)
    assert [(f.start, f.end) for f in fdes] == [(TEXT, TEXT + 8), (TEXT, TEXT + 0x10),
                                                (TEXT + 0x20, TEXT + 0x28),
                                                (TEXT + 0x40, TEXT + 0x48)]
    assert [f.offset for f in fdes] == [64, 44, 84, 24]
    assert list(fdes.starts) == [f.start for f in fdes]
    assert list(fdes.ends) == [f.end for f in fdes]


def test_damaged_section_is_a_cfi_error_with_its_offset() -> None:
    data = bytearray(section([(TEXT, 8, b"")]))
    data[0x18:0x1C] = struct.pack("<I", 0x1000)  # the FDE claims more than the section
    with pytest.raises(CfiError, match=r"runs past the section \(at .eh_frame\+0x18\)"):
        decode_eh_frame(bytes(data), VMA, True, 8, AMD64)


@given(st.lists(st.tuples(st.integers(0, 0x100), st.integers(0, 0x40)), max_size=12))
def test_any_order_sorts_stably(funcs: list[tuple[int, int]]) -> None:
    """(start, end) ascending, ties in section order, whatever order the section has."""
    data = section([(TEXT + s, n, b"") for s, n in funcs])
    fdes = decode_eh_frame(data, VMA, True, 8, AMD64)
    offsets = []
    at = len(_cie(b"\x0c\x07\x08\x90\x01"))
    for _ in funcs:
        offsets.append(at)
        at += len(_fde(0, 0, 0, b""))
    want = sorted(zip(funcs, offsets, strict=True), key=lambda x: (x[0][0], x[0][0] + x[0][1]))
    assert [(f.start, f.end, f.offset) for f in fdes] == [
        (TEXT + s, TEXT + s + n, off) for (s, n), off in want]


def test_leb128_errors_say_which() -> None:
    from sfcheck.dwarf.leb128 import LebError, leb128

    with pytest.raises(LebError, match="^LEB128 number cut short$"):
        leb128(b"\x80", 0, 1, False)
    with pytest.raises(LebError, match="^LEB128 number too long$"):
        leb128(b"\x80" * 12, 0, 12, True)


def test_decoded_register_rules_and_byte_order() -> None:
    """Through decode_eh_frame: CFA on register 0, an undefined RA (outermost frame), an RA
    value expression reading the PC register (not a register value), FP by an expression
    with a 2-byte constant in the section's byte order."""
    prog = (b"\x0c\x00\x10"  # def_cfa r0 16
            + b"\x07\x10"  # undefined r16 (the RA column)
            + b"\x41" + b"\x16\x10\x02\x80\x08"  # advance 1; val_expression r16: breg16 8
            + b"\x41" + b"\x10\x06\x06\x76\x00\x0a\x01\x02\x22"  # r6: breg6; const2u; plus
            + b"\x41" + b"\x16\x10\x05\x77\x00\x80\x00\x22")  # RA: breg7 0; breg16 0; plus
    fdes = decode_eh_frame(section([(TEXT, 8, prog)]), VMA, True, 8, AMD64)
    rows = [(r.pc - TEXT, r.cfa, r.ra, r.fp) for r in fdes[0].rows]
    assert rows[0] == (0, RegRule(0, 16, False), UNDEFINED, None)
    assert rows[1][2] == Opaque("expression is not register-relative")
    # FP saved at r6 + 0x0201 (the operand little-endian, as the section is)
    assert rows[2][3] == RegRule(6, 0x201, True)
    # PC-relative register-rule expressions are evaluated at pc 0 (the rule, not a value)
    assert rows[3][2] == RegRule(7, 0, False)


def test_big_endian_section() -> None:
    """A big-endian `.eh_frame` (s390x): entries and expression operands in that order."""
    def be(entry: bytes) -> bytes:  # the length word and the CIE id/pointer, swapped
        return entry[:4][::-1] + entry[4:8][::-1] + entry[8:]

    cie = _cie(b"\x0c\x0f\xa0\x01", aug=b"z", aug_data=b"")  # def_cfa r15 160; absptr
    cie = be(cie)
    at = len(cie)
    body = struct.pack(">I", at + 4) + struct.pack(">Q", 0x1000) + struct.pack(">Q", 0x40)
    # aug len 0; def_cfa_expression breg15 0; const2u 0x0102; plus
    body += b"\x00" + b"\x0f\x06\x7f\x00\x0a\x01\x02\x22"
    body += b"\0" * (-(len(body) + 4) % 4)
    data = cie + struct.pack(">I", len(body)) + body + bytes(4)
    fdes = decode_eh_frame(data, VMA, False, 8, ABIS[C.ABI_S390X_BE])
    assert [(f.start, f.end) for f in fdes] == [(0x1000, 0x1040)]
    assert fdes[0].rows[0].cfa == CfaExpr((Op("DW_OP_breg15", [0]), Op("DW_OP_const2u", [0x102]),
                                           Op("DW_OP_plus", [])))


@pytest.mark.parametrize(("expr", "want"), [
    (b"\x4f", (Op("DW_OP_lit31", []),)),
    (b"\x30", (Op("DW_OP_lit0", []),)),
    (b"\x70\x08", (Op("DW_OP_breg0", [8]),)),
    (b"\x8f\x78", (Op("DW_OP_breg31", [-8]),)),
    (b"\x92\x81\x01\x78", (Op("DW_OP_bregx", [129, -8]),)),
    (b"\x50", None), (b"\x6f", None), (b"\x90\x01", None),  # reg0, lit... regx: not table
])
def test_expression_table_edges(expr: bytes, want) -> None:
    from sfcheck.dwarf.expr import parse_expr

    assert parse_expr(expr, True) == want


def test_decoded_fp_rules_undefined_and_pc_relative() -> None:
    """An undefined FP is "no rule" (None), not the outermost-frame marker the RA gets; an FP
    expression reading the PC register is no register-relative address."""
    prog = (b"\x07\x06"  # undefined r6
            + b"\x41" + b"\x10\x06\x02\x80\x08")  # advance 1; expression r6: breg16 8
    fdes = decode_eh_frame(section([(TEXT, 8, prog)]), VMA, True, 8, AMD64)
    assert [r.fp for r in fdes[0].rows] == [None, Opaque("expression is not register-relative")]


_EXPR_OPS = st.one_of(
    st.sampled_from([op("DW_OP_breg16", 0), op("DW_OP_breg16", 3), op("DW_OP_bregx", PC, 1),
                     op("DW_OP_breg7", 8), op("DW_OP_breg6", -8), op("DW_OP_bregx", 6, 0),
                     op("DW_OP_and"), op("DW_OP_ge"), op("DW_OP_shl"), op("DW_OP_plus"),
                     op("DW_OP_minus"), op("DW_OP_deref"), op("DW_OP_dup"), op("DW_OP_swap")]),
    st.builds(lambda n: op(f"DW_OP_lit{n}"), st.integers(0, 31)),
    st.builds(lambda n: op("DW_OP_const2u", n), st.integers(0, 0xFFFF)))


# reg + f(PC), as the PLT's and variants of it: a value that moves with the PC, with or
# without a period (a mask and `and`), then random operations
_PC_EXPRS = st.builds(
    lambda reg, pc_op, mask, cmp, tail: (reg, pc_op, *mask, *cmp, op("DW_OP_plus"), *tail),
    st.sampled_from([op("DW_OP_breg7", 8), op("DW_OP_bregx", 6, -16)]),
    st.sampled_from([op("DW_OP_breg16", 0), op("DW_OP_bregx", PC, 5)]),
    st.sampled_from([(), (op("DW_OP_lit15"), op("DW_OP_and")),
                     (op("DW_OP_const2u", 255), op("DW_OP_and"))]),
    st.sampled_from([(), (op("DW_OP_lit11"), op("DW_OP_ge"), op("DW_OP_lit3"),
                          op("DW_OP_shl"))]),
    st.lists(_EXPR_OPS, max_size=2))


@given(st.one_of(st.lists(_EXPR_OPS, max_size=10), _PC_EXPRS),
       st.lists(st.integers(0, 1 << 20), min_size=1, max_size=40), st.sampled_from([PC, None]))
@example([op("DW_OP_breg7", 8), op("DW_OP_breg16", 0), op("DW_OP_plus")], [5, 9], PC)
@example([op("DW_OP_breg7", 8), op("DW_OP_breg16", 0), op("DW_OP_lit15"), op("DW_OP_and"),
          op("DW_OP_lit11"), op("DW_OP_ge"), op("DW_OP_lit3"), op("DW_OP_shl"),
          op("DW_OP_plus")], [0x20, 0x2B, 0x13, 0x3C], PC)
@example([op("DW_OP_breg6", -40), op("DW_OP_deref")], [1, 2, 0x1000], PC)
def test_cross_check_expression_memo_equals_evaluation(ops, pcs, pc_reg) -> None:
    """The cross-check's per-section memo of CFA expression values (compare._eh_at: by
    pc & (period - 1), or one value when no operation reads the PC) gives what evaluating
    at each PC gives, in any PC order; reads_pc is eval_linear's use of `pc`."""
    from sfcheck.dwarf.cfi import EhFde
    from sfcheck.rules.semantic.compare import _eh_at

    cfa = CfaExpr(tuple(ops))
    eh = EhFde(0, 1 << 21, (callframe.Row(0, cfa, None, None),), 0)
    memo: dict = {}
    for pc in pcs:
        got = _eh_at(eh, [0], pc, pc_reg, memo)
        assert got is not None and got[0] == cfa.at(pc, pc_reg)
    if not cfa.reads_pc(pc_reg):
        assert len({cfa.at(pc, pc_reg) for pc in pcs + [pcs[0] + 1, 7]}) == 1


def test_reads_pc() -> None:
    assert CfaExpr((op("DW_OP_breg7", 8), op("DW_OP_breg16", 0), op("DW_OP_plus"))).reads_pc(PC)
    assert CfaExpr((op("DW_OP_bregx", PC, 0),)).reads_pc(PC)
    drap = CfaExpr((op("DW_OP_breg6", -40), op("DW_OP_deref")))
    assert not drap.reads_pc(PC) and not drap.reads_pc(None)
    assert not CfaExpr((op("DW_OP_breg16", 0),)).reads_pc(None)
    assert not CfaExpr((op("DW_OP_bregx", 6, 0),)).reads_pc(PC)
