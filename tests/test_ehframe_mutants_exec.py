"""sfcheck.dwarf.callframe in Python, instruction by instruction: each DW_CFA opcode's exact
effect on the row (DWARF 5, section 6.4.2), the work bounds at the limit and one past, and
the exact one-line errors with their section offsets.

These call callframe.run directly, so the Python reference runs whatever the C reader
(sfcheck/dwarf/_cfirun.c) would take.
"""

from __future__ import annotations

import pytest

from sfcheck.dwarf import callframe
from sfcheck.dwarf.callframe import (
    EXPRESSION,
    OFFSET,
    REGISTER,
    SAME_VALUE,
    UNDEFINED,
    VAL_EXPRESSION,
    VAL_OFFSET,
    Budget,
    Row,
    WorkBound,
)
from sfcheck.dwarf.cursor import EhFrameError
from sfcheck.dwarf.ehframe import Cie

from helpers import sleb, uleb

RA, FP = 16, 6  # x86-64's DWARF columns
AT = 0x40  # the program's section offset: errors are located from it
CIE_AT = 0x10


def cie(program: bytes = b"", caf: int = 1, daf: int = -8, enc: int = 0x1B) -> Cie:
    return Cie(caf, daf, enc, True, program, CIE_AT)


def run(program: bytes, c: Cie | None = None, *, start: int = 0x1000, vma: int = 0,
        big: bool = False, budget: Budget | None = None) -> tuple[tuple[Row, ...], bool]:
    return callframe.run(c or cie(), program, AT, start, vma, 8, big, RA, FP,
                         budget or Budget(None))


def rows(program: bytes, c: Cie | None = None, **kw: object) -> list[tuple]:
    return [tuple(r) for r in run(program, c, **kw)[0]]


# CIE: CFA = rsp(7) + 8, RA at CFA - 8 (the x86-64 psABI's CIE)
X86 = bytes([0x0C, 7, 8, 0x80 | RA, 1])
CFA0, RA0 = (7, 8), (OFFSET, -8)


def test_cie_initial_rules_are_the_first_row() -> None:
    assert rows(b"", cie(X86)) == [(0, CFA0, RA0, None)]


@pytest.mark.parametrize("caf", [1, 4])
def test_advance_loc_scales_by_the_code_alignment_factor(caf: int) -> None:
    prog = bytes([0x41, 0x0E, 16, 0x43, 0x0E, 24])
    assert rows(prog, cie(X86, caf=caf)) == [
        (0, CFA0, RA0, None), (caf, (7, 16), RA0, None), (4 * caf, (7, 24), RA0, None)]


def test_advance_loc_in_the_cie_makes_no_row() -> None:
    assert rows(b"", cie(X86 + b"\x44\x0e\x10")) == [(0, (7, 16), RA0, None)]


@pytest.mark.parametrize(("op", "operand", "delta"), [
    (0x02, b"\xc8", 200), (0x03, (0x1234).to_bytes(2, "little"), 0x1234),
    (0x04, (0x123456).to_bytes(4, "little"), 0x123456)])
@pytest.mark.parametrize("caf", [1, 2])
def test_advance_loc1_2_4(op: int, operand: bytes, delta: int, caf: int) -> None:
    prog = bytes([op]) + operand + b"\x0e\x10"
    assert rows(prog, cie(X86, caf=caf)) == [(0, CFA0, RA0, None),
                                             (delta * caf, (7, 16), RA0, None)]


def test_advance_loc2_4_big_endian() -> None:
    prog = b"\x03\x01\x02\x0e\x10\x04\x00\x01\x00\x00\x0e\x18"
    assert rows(prog, cie(X86), big=True) == [
        (0, CFA0, RA0, None), (0x102, (7, 16), RA0, None), (0x10102, (7, 24), RA0, None)]


def test_advance_by_zero_replaces_the_row() -> None:
    assert rows(b"\x40\x0e\x10\x41\x0e\x18\x40\x0e\x20", cie(X86)) == [
        (0, (7, 16), RA0, None), (1, (7, 32), RA0, None)]


def test_set_loc_moves_to_the_address_less_the_fde_start() -> None:
    # absptr, 8 bytes: rows at 0x1010 - 0x1000
    got, free = run(b"\x01" + (0x1010).to_bytes(8, "little") + b"\x0e\x10", cie(X86, enc=0))
    assert [tuple(r) for r in got] == [(0, CFA0, RA0, None), (0x10, (7, 16), RA0, None)]
    assert free is False
    assert run(b"\x41\x0e\x10", cie(X86))[1] is True


def test_set_loc_in_the_cie_is_read_but_moves_nothing() -> None:
    c = cie(X86 + b"\x01" + (0x1010).to_bytes(8, "little") + b"\x0e\x10", enc=0)
    got, free = run(b"", c)
    assert [tuple(r) for r in got] == [(0, (7, 16), RA0, None)] and free is True


@pytest.mark.parametrize(("prog", "ra"), [
    (b"\x05" + uleb(RA) + uleb(3), (OFFSET, -24)),
    (b"\x05" + uleb(RA) + uleb(200), (OFFSET, -1600)),  # a two-byte operand
    (b"\x05" + uleb(RA) + uleb(0x40), (OFFSET, -512)),  # unsigned: bit 6 is no sign
    (b"\x14" + uleb(RA) + uleb(0x40), (VAL_OFFSET, -512)),
    (b"\x2f" + uleb(RA) + uleb(0x40), (OFFSET, 512)),
    (b"\x11" + uleb(RA) + sleb(-2), (OFFSET, 16)),
    (b"\x11" + uleb(RA) + sleb(3), (OFFSET, -24)),
    (b"\x14" + uleb(RA) + uleb(3), (VAL_OFFSET, -24)),
    (b"\x15" + uleb(RA) + sleb(-2), (VAL_OFFSET, 16)),
    (b"\x2f" + uleb(RA) + uleb(3), (OFFSET, 24)),  # GNU_negative_offset_extended
    (bytes([0x80 | RA]) + uleb(3), (OFFSET, -24)),  # offset, one-byte operand
    (bytes([0x80 | RA]) + uleb(200), (OFFSET, -1600)),  # offset, two-byte operand
    (b"\x07" + uleb(RA), (UNDEFINED, None)),
    (b"\x08" + uleb(RA), (SAME_VALUE, None)),
    (b"\x09" + uleb(RA) + uleb(200), (REGISTER, 200)),
    (b"\x10" + uleb(RA) + b"\x02\x77\x08", (EXPRESSION, b"\x77\x08")),
    (b"\x16" + uleb(RA) + b"\x02\x77\x08", (VAL_EXPRESSION, b"\x77\x08")),
])
def test_register_rules_for_the_ra_column(prog: bytes, ra: tuple) -> None:
    assert rows(prog + b"\x41", cie(X86)) == [(0, CFA0, ra, None), (1, CFA0, ra, None)]


@pytest.mark.parametrize("prog", [
    b"\x05" + uleb(FP) + uleb(2), bytes([0x80 | FP, 2]), bytes([0x80 | FP]) + uleb(0x82),
    b"\x11" + uleb(FP) + sleb(2)])
def test_offset_forms_for_the_fp_column(prog: bytes) -> None:
    fp = (OFFSET, -8 * (0x82 if prog[1:] == uleb(0x82) else 2))
    assert rows(prog, cie(X86)) == [(0, CFA0, RA0, fp)]


@pytest.mark.parametrize("reg", [RA + 1, RA - 1, FP + 1, FP - 1, 0, 63])
@pytest.mark.parametrize("form", ["short", "short2", "ext", "undef", "register"])
def test_an_untracked_register_changes_no_rule(reg: int, form: str) -> None:
    prog = {"short": bytes([0x80 | reg, 3]), "short2": bytes([0x80 | reg]) + uleb(200),
            "ext": b"\x05" + uleb(reg) + uleb(3), "undef": b"\x07" + uleb(reg),
            "register": b"\x09" + uleb(reg) + uleb(1)}[form]
    assert rows(prog + b"\x0e\x10", cie(X86)) == [(0, (7, 16), RA0, None)]


def test_restore_returns_to_the_cie_rule() -> None:
    fp_rule = bytes([0x80 | FP, 2])
    c = cie(X86 + fp_rule)
    prog = (b"\x07" + uleb(RA) + b"\x07" + uleb(FP) + b"\x41"
            + bytes([0xC0 | RA]) + b"\x41" + bytes([0xC0 | FP]) + b"\x41"
            + b"\x07" + uleb(RA) + b"\x06" + uleb(RA) + b"\x41"
            + b"\x07" + uleb(FP) + b"\x41" + b"\x06" + uleb(FP))
    u = (UNDEFINED, None)
    fp0 = (OFFSET, -16)
    assert rows(prog, c) == [(0, CFA0, u, u), (1, CFA0, RA0, u), (2, CFA0, RA0, fp0),
                             (3, CFA0, RA0, fp0), (4, CFA0, RA0, u),
                             (5, CFA0, RA0, fp0)]


def test_restore_of_an_untracked_register_changes_nothing() -> None:
    prog = b"\x07" + uleb(RA) + bytes([0xC0 | (RA + 1)]) + b"\x06" + uleb(RA - 1)
    assert rows(prog, cie(X86)) == [(0, CFA0, (UNDEFINED, None), None)]


def test_restore_to_no_rule_when_the_cie_set_none() -> None:
    prog = b"\x07" + uleb(FP) + bytes([0xC0 | FP])
    assert rows(prog, cie(X86)) == [(0, CFA0, RA0, None)]


def test_remember_and_restore_state() -> None:
    prog = (b"\x0a\x0e\x20" + bytes([0x80 | FP, 2]) + b"\x07" + uleb(RA) + b"\x41"
            + b"\x0b\x41")
    assert rows(prog, cie(X86)) == [(0, (7, 32), (UNDEFINED, None), (OFFSET, -16)),
                                    (1, CFA0, RA0, None), (2, CFA0, RA0, None)]


def test_remember_state_in_the_cie_is_kept_for_the_fde() -> None:
    c = cie(X86 + b"\x0a\x0e\x20")
    assert rows(b"\x0b", c) == [(0, CFA0, RA0, None)]
    assert rows(b"\x0b", c) == [(0, CFA0, RA0, None)]  # a second FDE: the stack is copied


def test_restore_state_without_remember_state() -> None:
    with pytest.raises(EhFrameError) as e:
        run(b"\x41\x0b", cie(X86))
    assert "restore_state without remember_state" in str(e.value)
    assert e.value.offset == AT + 1


def test_remember_state_nesting_at_the_limit_and_one_past() -> None:
    assert rows(b"\x0a" * 4097 + b"\x0b" * 4097, cie(X86)) == [(0, CFA0, RA0, None)]
    with pytest.raises(EhFrameError, match="remember_state nested too deep") as e:
        run(b"\x41" + b"\x0a" * 4098)
    assert e.value.offset == AT + 1 + 4097


@pytest.mark.parametrize(("prog", "cfa"), [
    (b"\x0c" + uleb(6) + uleb(200), (6, 200)),
    (b"\x12" + uleb(6) + sleb(-3), (6, 24)),
    (b"\x12" + uleb(6) + sleb(3), (6, -24)),
    (b"\x0d" + uleb(6), (6, 8)),
    (b"\x0d" + uleb(200), (200, 8)),
    (b"\x0e" + uleb(16), (7, 16)),
    (b"\x0e" + uleb(200), (7, 200)),
    (b"\x13" + sleb(-3), (7, 24)),
    (b"\x0f\x02\x77\x08", b"\x77\x08"),
    (b"\x0f\x02\x77\x08\x0d" + uleb(6), (6, 0)),  # from an expression: offset 0
    (b"\x0f\x02\x77\x08\x0e" + uleb(16), (-1, 16)),  # from an expression: no register
    (b"\x0f\x02\x77\x08\x0e" + uleb(200), (-1, 200)),
    (b"\x0f\x02\x77\x08\x13" + sleb(-3), (-1, 24)),
])
def test_cfa_rules(prog: bytes, cfa: object) -> None:
    assert rows(prog + b"\x41", cie(X86)) == [(0, cfa, RA0, None), (1, cfa, RA0, None)]


def test_no_cfa_rule_before_any_def_cfa() -> None:
    assert rows(b"\x0e\x10") == [(0, (-1, 16), None, None)]
    assert rows(b"") == [(0, (-1, 0), None, None)]


@pytest.mark.parametrize("prog", [b"\x2e" + uleb(0x1234), b"\x2d", b"\x00"])
def test_gnu_args_size_window_save_and_nop_change_nothing(prog: bytes) -> None:
    assert rows(prog + b"\x0e\x10", cie(X86)) == [(0, (7, 16), RA0, None)]


@pytest.mark.parametrize("op", [0x17, 0x2C, 0x30, 0x3F])
def test_an_unknown_instruction_is_a_located_error(op: int) -> None:
    with pytest.raises(EhFrameError) as e:
        run(b"\x41\x00" + bytes([op]))
    assert e.value.offset == AT + 2
    assert f"unknown call-frame instruction {op:#x}" in str(e.value)


def test_an_unknown_instruction_in_the_cie_is_located_in_the_cie() -> None:
    with pytest.raises(EhFrameError) as e:
        run(b"", cie(X86 + b"\x17"))
    assert e.value.offset == CIE_AT + len(X86)


@pytest.mark.parametrize(("prog", "at"), [
    (b"\x0e", 1), (bytes([0x80 | RA]), 1), (b"\x0e\x80", 2), (bytes([0x80 | RA, 0x80]), 2),
    (b"\x02", 1), (b"\x03\x01", 1), (b"\x04\x01\x02\x03", 1), (b"\x0c\x07", 2)])
def test_an_operand_cut_short_is_a_located_error(prog: bytes, at: int) -> None:
    # LEB128 operands are located where the bytes ran out, fixed ones where they start
    with pytest.raises(EhFrameError, match="entry ends inside a field") as e:
        run(b"\x41" + prog, cie(X86))
    assert e.value.offset == AT + 1 + at


# Work bounds, made small: the interpreter reads them at run time.

@pytest.fixture
def small(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(callframe, "MAX_FDE_OPS", 8)
    monkeypatch.setattr(callframe, "MAX_FDE_ROWS", 4)
    monkeypatch.setattr(callframe, "MAX_FILE_OPS", 40)
    monkeypatch.setattr(callframe, "MAX_FILE_ROWS", 10)


@pytest.mark.usefixtures("small")
@pytest.mark.parametrize("ins", [b"\x00", b"\x2d", b"\x0e\x10", bytes([0x80 | RA, 1])])
def test_instruction_bound_at_the_limit_and_one_past(ins: bytes) -> None:
    # Past MAX_FDE_OPS bytes the instructions are counted: 8 run, the 9th is one too many.
    run(ins * (8 // len(ins)))  # 8 bytes at most: not counted
    if len(ins) == 2:
        run(ins * 5)  # 10 bytes, 5 instructions: counted, under the bound
    run(ins * 8)
    with pytest.raises(WorkBound, match="more than 8 CFI instructions in one FDE"):
        run(ins * 9)


@pytest.mark.usefixtures("small")
def test_counted_instructions_are_what_the_budget_is_charged() -> None:
    b = Budget(None)
    run(b"\x0e\x10" * 5, budget=b)  # 10 bytes > 8: five instructions counted
    assert (b.ops, b.rows) == (40 - 5, 10)  # (the last row, emitted after, is free)
    b = Budget(None)
    run(b"\x0e\x10" * 4, budget=b)  # 8 bytes: charged by length
    assert (b.ops, b.rows) == (40 - 8, 10)
    b = Budget(None)
    run(b"\x41\x0e\x10\x41", budget=b)
    assert (b.ops, b.rows) == (40 - 4, 10 - 2)


@pytest.mark.usefixtures("small")
def test_cie_program_is_charged_once() -> None:
    b = Budget(None)
    c = cie(b"\x0e\x10\x00")
    run(b"\x00", c, budget=b)
    assert (b.ops, b.rows) == (40 - 3 - 1, 10)
    run(b"\x41\x00", c, budget=b)
    assert (b.ops, b.rows) == (40 - 3 - 1 - 2, 9)


@pytest.mark.usefixtures("small")
def test_row_bound_at_the_limit_and_one_past() -> None:
    assert [r.pc for r in run(b"\x41" * 4)[0]] == [0, 1, 2, 3, 4]
    with pytest.raises(WorkBound, match="more than 4 CFI rows in one FDE"):
        run(b"\x41" * 5)


@pytest.mark.usefixtures("small")
def test_a_bound_charges_the_whole_fde_budget() -> None:
    b = Budget(None)
    with pytest.raises(WorkBound):
        run(b"\x00" * 9, budget=b)
    assert (b.ops, b.rows) == (40 - 8, 10)  # max(ops, MAX_FDE_OPS): ops is set at the end
    b = Budget(None)
    with pytest.raises(WorkBound):
        run(b"\x41" * 5, budget=b)
    assert (b.ops, b.rows) == (40 - 8, 10 - 5)


@pytest.mark.usefixtures("small")
def test_file_budget_at_the_limit_and_one_past() -> None:
    b = Budget(None)
    b.charge(40, 10)
    assert (b.ops, b.rows) == (0, 0)
    with pytest.raises(WorkBound) as e:
        b.charge(0, 1)
    assert str(e.value) == "per-file CFI work bound reached (40 instructions, 10 rows)"
    assert (b.ops, b.rows) == (-1, -1)
    with pytest.raises(WorkBound):  # spent stays spent
        b.charge(0, 0)
    b = Budget(None)
    b.charge(39, 9)
    assert (b.ops, b.rows) == (1, 1)
    with pytest.raises(WorkBound):
        b.charge(2, 0)
    assert (b.ops, b.rows) == (-1, -1)


@pytest.mark.usefixtures("small")
def test_a_spent_budget_stops_the_next_run() -> None:
    b = Budget(None)
    with pytest.raises(WorkBound):
        b.charge(41, 0)
    with pytest.raises(WorkBound, match="per-file"):
        run(b"", budget=b)


def test_converted_rows_are_interned() -> None:
    seen: list[tuple] = []

    def convert(cfa: object, ra: object, fp: object) -> tuple:
        seen.append((cfa, ra, fp))
        return ("C", cfa), ("R", ra), ("F", fp)

    b = Budget(convert)
    got = run(b"\x41\x0e\x10\x41\x0e\x08", cie(X86), budget=b)[0]
    assert [tuple(r) for r in got] == [
        (0, ("C", CFA0), ("R", RA0), ("F", None)), (1, ("C", (7, 16)), ("R", RA0), ("F", None)),
        (2, ("C", CFA0), ("R", RA0), ("F", None))]
    assert seen == [(CFA0, RA0, None), ((7, 16), RA0, None)]
    again = run(b"\x41\x0e\x10\x41\x0e\x08", cie(X86), budget=b)[0]
    assert all(x is y for x, y in zip(got, again, strict=True))


def test_restore_in_the_cie_program_leaves_no_rule() -> None:
    # In the CIE there is no initial rule yet to restore to: none
    assert rows(b"", cie(X86 + bytes([0xC0 | RA]) + b"\x06" + uleb(FP))) == [
        (0, CFA0, None, None)]
