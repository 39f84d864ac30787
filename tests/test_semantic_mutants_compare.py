"""The exact comparison (rules/semantic/compare.py) on hand-built sections: PCMASK FDEs
against a PC-by-PC reference in v1 (16-byte blocks, no rep_size field), v2 and v3 (rep_size
8, 16, 32), with .eh_frame rows that start windows inside a block and an .eh_frame FDE that
starts before the SFrame FDE; rows that only the SFrame side changes, an FDE whose first FRE
starts late, the outermost marker, and the "not compared" note's evidence. Each finding's
FDE, PC, FRE, first range and counts are asserted (what a user sees)."""

from __future__ import annotations

import pytest
from test_semantic_mutants_walk import ERROR, SF_VMA, WARNING, findings
from test_semantic_units import cfa_rows, eh_frame, uleb

from sfcheck.format import constants as C
from sfcheck.format.encode import encode
from sfcheck.format.layout import build_section
from sfcheck.format.model import FDE, fde_info, make_fre
from sfcheck.rules.semantic.check import _single_overlaps
from sfcheck.wording import plural

S = 0x3000  # the function's start
CFA = "semantic-cfa-mismatch"


def one_fde(version: int, rows: list[tuple[int, list[int]]], size: int, *, rep: int = 0,
            start: int = S, pcmask: bool | None = None) -> bytes:
    """One amd64 FDE of ADDR1 FREs (start, data words); PCMASK with `rep`-byte blocks when
    `rep` is given (v1 has no rep_size field: its blocks are 16 bytes)."""
    fde = FDE(start=start - SF_VMA, size=size,
              info=fde_info(C.FRE_TYPE_ADDR1, pcmask=bool(rep) if pcmask is None else pcmask),
              rep_size=rep,
              fres=tuple(make_fre(pc, words) for pc, words in rows))
    return encode(build_section(version, C.ABI_AMD64_LE, [fde], flags=C.F_FDE_SORTED))


def expected_cfa(sframe_at, eh_at, pcs, fre_at) -> list[tuple]:
    """The CFA finding the PC-by-PC reference gives over `pcs` (increasing): a range is a
    run of adjacent PCs with the same two differing rules; the first one is shown."""
    runs: list[list] = []
    nbytes = 0
    for pc in pcs:
        s, e = sframe_at(pc), eh_at(pc)
        if s == e:
            continue
        nbytes += 1
        if runs and runs[-1][1] == pc and runs[-1][2:] == [s, e]:
            runs[-1][1] = pc + 1
        else:
            runs.append([pc, pc + 1, s, e])
    if not runs:
        return []
    a, b, s, e = runs[0]
    fre, fre_pc = fre_at(a)
    return [(CFA, ERROR, 0, S, fre, fre_pc,
             f"CFA differs from .eh_frame at {plural(len(runs), 'PC range')}, "
             f"{plural(nbytes, 'byte')}; first [{a:#x}, {b:#x}): SFrame rsp+{s}, "
             f".eh_frame rsp+{e}")]


def _pcmask_cases() -> list[tuple]:
    out = []
    for version, reps in ((1, (16,)), (2, (8, 15, 16, 32)), (3, (8, 15, 16, 32))):
        for rep in reps:
            second = rep // 2 + 1
            for name, eh_rows in (("first-block-only", [(0, 8), (second, 16)]),
                                  ("windows-inside-blocks", [(0, 8), (3, 16), (rep + 5, 8)])):
                for lead in (0, 4):
                    out.append(pytest.param(version, rep, second, eh_rows, lead,
                                            id=f"v{version}-rep{rep}-{name}-lead{lead}"))
    return out


@pytest.mark.parametrize(("version", "rep", "second", "eh_rows", "lead"), _pcmask_cases())
def test_pcmask_fde_as_pc_by_pc(version: int, rep: int, second: int,
                                eh_rows: list[tuple[int, int]], lead: int) -> None:
    """A PCMASK FDE (CFA rsp+8, from `second` in each block rsp+16) over three blocks
    against .eh_frame rows (offsets from its own start, `lead` bytes before the FDE)."""
    size = 3 * rep
    sf = one_fde(version, [(0, [8]), (second, [16])], size, rep=rep)  # v1: no rep_size field
    eh_start = S - lead
    eh = eh_frame([(eh_start, size + lead, cfa_rows(eh_rows[1:]))])

    def sframe_at(pc: int) -> int:
        return 16 if (pc - S) % rep >= second else 8

    def eh_at(pc: int) -> int:
        return [off for at, off in eh_rows if eh_start + at <= pc][-1]

    def fre_at(pc: int) -> tuple[int, int]:
        return (1, S + second) if (pc - S) % rep >= second else (0, S)

    # Every PC of the FDE (the .eh_frame FDE covers it all): one block of each row shows the
    # pairs of rules, and the counts are of the whole row (compare._windows, compare_fde).
    pcs = list(range(S, S + size))
    want = expected_cfa(sframe_at, eh_at, pcs, fre_at)
    assert want  # every case differs somewhere
    got = findings(sf, eh, walked=True)
    assert [f for f in got if f[0] == CFA] == want
    assert got == findings(sf, eh, walked=False)


def test_eh_fde_before_the_function_with_the_same_relative_rows() -> None:
    """The .eh_frame FDE starts 4 bytes earlier with rows at the same offsets from its own
    start: at the function's first bytes its CFA is already rsp+16."""
    rows = [(0, [8]), (4, [16])]
    sf = one_fde(2, rows, 0x10)
    eh = eh_frame([(S - 4, 0x14, cfa_rows([(4, 16)]))])
    assert findings(sf, eh, walked=True) == [
        (CFA, ERROR, 0, S, 0, S, "CFA differs from .eh_frame at 1 PC range, 4 bytes; "
         f"first [{S:#x}, {S + 4:#x}): SFrame rsp+8, .eh_frame rsp+16"),
        ("semantic-no-sframe-fde", WARNING, None, None, None, None,
         f"code in .text [{S - 4:#x}, {S + 0x10:#x}) (.eh_frame+0x18): only 16 of its 20 "
         "bytes are covered by SFrame FDEs")]


def test_sframe_row_change_eh_frame_does_not_have() -> None:
    sf = one_fde(2, [(0, [8]), (4, [16])], 0x10)
    eh = eh_frame([(S, 0x10, b"")])
    assert findings(sf, eh, walked=True) == [
        (CFA, ERROR, 0, S, 1, S + 4, "CFA differs from .eh_frame at 1 PC range, 12 bytes; "
         f"first [{S + 4:#x}, {S + 0x10:#x}): SFrame rsp+16, .eh_frame rsp+8")]


def test_pcs_before_the_first_fre_are_not_compared() -> None:
    """No FRE at offset 0: SFrame says nothing about the first 4 bytes (not "the last
    row"); from 4 on both sides agree."""
    sf = one_fde(2, [(4, [16])], 0x10)
    eh = eh_frame([(S, 0x10, cfa_rows([(4, 16)]))])
    assert findings(sf, eh, walked=True) == []


def test_outermost_fre_against_a_saved_ra() -> None:
    """v3's outermost marker (an FRE without data words) where .eh_frame has the RA at
    CFA-8."""
    sf = one_fde(3, [(0, [8]), (4, [])], 0x10)
    eh = eh_frame([(S, 0x10, b"")])
    assert findings(sf, eh, walked=True) == [
        ("semantic-ra-mismatch", ERROR, 0, S, 1, S + 4,
         "RA differs from .eh_frame at 1 PC range, 12 bytes; "
         f"first [{S + 4:#x}, {S + 0x10:#x}): SFrame undefined (outermost frame), "
         ".eh_frame c-8")]


def test_not_compared_note_and_the_rules_after_it() -> None:
    """A CFA .eh_frame gives as an expression sfcheck does not evaluate: the note shows
    its first PC range; the RA (undefined there, saved in SFrame) is still compared."""
    expr = b"\x38"  # DW_OP_lit8
    sf = one_fde(3, [(0, [8])], 0x10)
    eh = eh_frame([(S, 0x10, b"\x0f" + uleb(len(expr)) + expr + b"\x07\x10")])
    assert findings(sf, eh, walked=True) == [
        ("semantic-not-compared", 0, 0, S, None, None,
         f"16 PC ranges not compared: CFA expression is not register-relative at {S:#x}"),
        ("semantic-ra-mismatch", ERROR, 0, S, 0, S,
         f"RA differs from .eh_frame at 1 PC range, 16 bytes; first [{S:#x}, {S + 0x10:#x}): "
         "SFrame c-8, .eh_frame undefined (outermost frame)")]


def test_pcmask_counts_cover_the_whole_row() -> None:
    sf = one_fde(2, [(0, [8]), (5, [16])], 24, rep=8)
    eh = eh_frame([(S, 24, cfa_rows([(5, 16)]))])
    assert findings(sf, eh, walked=True) == [
        (CFA, ERROR, 0, S, 0, S, "CFA differs from .eh_frame at 2 PC ranges, 10 bytes; "
         f"first [{S + 8:#x}, {S + 13:#x}): SFrame rsp+8, .eh_frame rsp+16")]


def test_single_overlaps_past_int64() -> None:
    """Ends past 2**63 (kernel addresses) do not fit array('q'): kept as a list, the one
    .eh_frame FDE overlapping each FDE is still found."""
    top = 1 << 63
    eh_starts, eh_ends = [top - 0x20, top + 0x10], [top + 0x10, top + 0x40]
    got = _single_overlaps(eh_starts, eh_ends, [top - 0x18, top + 0x10, top - 0x30],
                           [0x10, 0x20, 0x8])
    assert list(got) == [0, 1, -1]


# CFA = rsp+8, plus 8 from S+8 on: DW_OP_breg16 0 (the PC); const4u S+8; ge; lit3; shl;
# breg7 8; plus. It reads the PC and has no period: evaluated PC by PC.
READS_PC = (b"\x80\x00\x0c" + (S + 8).to_bytes(4, "little") + b"\x2a\x33\x24\x77\x08\x22")
PC_FREE = b"\x77\x08"  # DW_OP_breg7 8: rsp+8 as an expression, the same at every PC


def _expr_fde(expr: bytes, size: int) -> bytes:
    return eh_frame([(S, size, b"\x0f" + uleb(len(expr)) + expr)])


def test_cfa_expression_reading_the_pc() -> None:
    """Evaluated at each PC with the PC's value: rsp+8, then rsp+16 from S+8."""
    eh = _expr_fde(READS_PC, 0x10)
    assert findings(one_fde(2, [(0, [8]), (8, [16])], 0x10), eh, walked=True) == []
    assert findings(one_fde(2, [(0, [8])], 0x10), eh, walked=True) == [
        (CFA, ERROR, 0, S, 0, S, "CFA differs from .eh_frame at 1 PC range, 8 bytes; "
         f"first [{S + 8:#x}, {S + 0x10:#x}): SFrame rsp+8, .eh_frame rsp+16")]


TRUNCATED = ("semantic-truncated", 0, 0, S, None, None,
             "cross-check stopped at FDE 0 (work bound reached)")


@pytest.mark.parametrize("expr", [PC_FREE, READS_PC], ids=["pc-free", "reads-pc"])
@pytest.mark.parametrize(("size", "cut"), [(16, False), (17, True)])
def test_expression_pc_bound_at_the_boundary(monkeypatch, expr: bytes, size: int,
                                             cut: bool) -> None:
    """At most MAX_EXPR_PCS PCs under CFA expressions per section: exactly that many are
    compared, one more stops the cross-check."""
    from sfcheck.rules.semantic import compare

    monkeypatch.setattr(compare, "MAX_EXPR_PCS", 16)
    sf = one_fde(2, [(0, [8]), (8, [16])] if expr == READS_PC else [(0, [8])], size)
    assert findings(sf, _expr_fde(expr, size), walked=True) == ([TRUNCATED] if cut else [])


@pytest.mark.parametrize("expr", [PC_FREE, READS_PC], ids=["pc-free", "reads-pc"])
@pytest.mark.parametrize(("intervals", "cut"), [(16, False), (15, True)])
def test_interval_bound_at_the_boundary(monkeypatch, expr: bytes, intervals: int,
                                        cut: bool) -> None:
    """The section's interval budget: 16 PCs under an expression cost 16 intervals (one
    per PC, or their one span standing for them): a budget of 16 compares them all, 15
    stops."""
    from sfcheck.rules.semantic import check, compare

    monkeypatch.setattr(check, "Budget", lambda **_: compare.Budget(intervals))
    sf = one_fde(2, [(0, [8]), (8, [16])] if expr == READS_PC else [(0, [8])], 16)
    assert findings(sf, _expr_fde(expr, 16), walked=True) == ([TRUNCATED] if cut else [])


def test_pc_free_expressions_keep_their_own_values() -> None:
    """Two .eh_frame FDEs whose CFA expressions read no PC (rsp+8, rsp+16): each is
    evaluated once, for itself."""
    sf = encode(build_section(2, C.ABI_AMD64_LE, [
        FDE(start=S - SF_VMA, size=0x10, info=fde_info(C.FRE_TYPE_ADDR1),
            fres=(make_fre(0, [8]),)),
        FDE(start=S + 0x10 - SF_VMA, size=0x10, info=fde_info(C.FRE_TYPE_ADDR1),
            fres=(make_fre(0, [16]),))], flags=C.F_FDE_SORTED))
    eh = eh_frame([(S, 0x10, b"\x0f\x02\x77\x08"), (S + 0x10, 0x10, b"\x0f\x02\x77\x10")])
    assert findings(sf, eh, walked=True) == []


# ld's .plt CFA, periodic in the PC: rsp+8, plus 8 from byte 11 of each 16-byte entry
PLT = bytes([0x77, 8, 0x80, 0, 0x3F, 0x1A, 0x3B, 0x2A, 0x33, 0x24, 0x22])


def test_periodic_expression_from_inside_an_entry() -> None:
    """An FDE starting 5 bytes into a PLT entry: the expression's phases are those of the
    PCs, not of the FDE's offsets (rsp+16 at offsets 6-10, then rsp+8 again)."""
    sf = one_fde(2, [(0, [8]), (6, [16]), (11, [8])], 0x10, start=S + 5)
    eh = eh_frame([(S, 0x40, b"\x0f" + uleb(len(PLT)) + PLT)])
    assert [f for f in findings(sf, eh, walked=True) if f[0] == CFA] == []


# The same shape with 128-byte entries (mask 127, from byte 100): a period past
# PHASES_AT_ONCE, evaluated PC by PC.
PLT128 = bytes([0x77, 8, 0x80, 0, 0x08, 127, 0x1A, 0x08, 100, 0x2A, 0x33, 0x24, 0x22])


def test_long_periodic_expression() -> None:
    sf = one_fde(2, [(0, [8]), (100, [16])], 0x100, rep=128)
    eh = eh_frame([(S, 0x100, b"\x0f" + uleb(len(PLT128)) + PLT128)])
    assert findings(sf, eh, walked=True) == []
    sf = one_fde(2, [(0, [8]), (101, [16])], 0x100, rep=128)
    assert findings(sf, eh, walked=True) == [
        (CFA, ERROR, 0, S, 0, S, "CFA differs from .eh_frame at 2 PC ranges, 2 bytes; "
         f"first [{S + 100:#x}, {S + 101:#x}): SFrame rsp+8, .eh_frame rsp+16")]


def test_plain_rules_cost_no_expression_pcs(monkeypatch) -> None:
    """Rows without expressions are not charged to the expression-PC bound."""
    from sfcheck.rules.semantic import compare

    monkeypatch.setattr(compare, "MAX_EXPR_PCS", 16)
    assert findings(one_fde(2, [(0, [8])], 0x40), eh_frame([(S, 0x40, b"")]),
                    walked=True) == []


def test_expression_pcs_at_their_bound_still_cost_intervals(monkeypatch) -> None:
    """16 PCs under an expression with the PC bound at 16 (exactly spent) still cost 16
    intervals: a budget of 15 stops."""
    from sfcheck.rules.semantic import check, compare

    monkeypatch.setattr(compare, "MAX_EXPR_PCS", 16)
    monkeypatch.setattr(check, "Budget", lambda **_: compare.Budget(15))
    assert findings(one_fde(2, [(0, [8])], 16), _expr_fde(PC_FREE, 16),
                    walked=True) == [TRUNCATED]


def test_eh_row_at_the_function_end_is_not_compared() -> None:
    """The .eh_frame FDE goes on past the function, with a row where the function ends:
    nothing of that row is the function's (the one differing range is before it)."""
    sf = one_fde(2, [(0, [8]), (4, [24])], 8)
    eh = eh_frame([(S, 0x10, cfa_rows([(4, 16), (8, 32)]))])
    assert [f for f in findings(sf, eh, walked=True) if f[0] == CFA] == [
        (CFA, ERROR, 0, S, 1, S + 4, "CFA differs from .eh_frame at 1 PC range, 4 bytes; "
         f"first [{S + 4:#x}, {S + 8:#x}): SFrame rsp+24, .eh_frame rsp+16")]


def test_pcmask_against_a_pc_free_expression() -> None:
    """A PC-free CFA expression (rsp+8) over a whole PCMASK row, compared as one span: in
    each 16-byte block the PCs before the first FRE are not compared, [4, 10) agree and
    [10, 16) differ."""
    sf = one_fde(2, [(4, [8]), (10, [16])], 0x30, rep=16)
    assert findings(sf, _expr_fde(PC_FREE, 0x30), walked=True) == [
        (CFA, ERROR, 0, S, 1, S + 10, "CFA differs from .eh_frame at 3 PC ranges, 18 bytes; "
         f"first [{S + 10:#x}, {S + 16:#x}): SFrame rsp+16, .eh_frame rsp+8")]


@pytest.mark.parametrize(("rep", "want"), [
    (0, []),  # no block size: not compared (the structural rules report it)
    # one-byte blocks: a tile of one byte per .eh_frame row, replayed over the row
    (1, [(CFA, ERROR, 0, S, 0, S, "CFA differs from .eh_frame at 1 PC range, 12 bytes; "
          f"first [{S + 4:#x}, {S + 0x10:#x}): SFrame rsp+8, .eh_frame rsp+16")]),
])
def test_pcmask_smallest_block_sizes(rep: int, want: list) -> None:
    sf = one_fde(2, [(0, [8])], 0x10, rep=rep, pcmask=True)
    eh = eh_frame([(S, 0x10, cfa_rows([(4, 16)]))])
    assert findings(sf, eh, walked=True) == want


def test_not_compared_ra_counts_its_intervals() -> None:
    """An RA .eh_frame gives by an expression (DW_CFA_expression r16): one note per
    compared interval, here the function's one."""
    sf = one_fde(2, [(0, [8])], 0x10)
    eh = eh_frame([(S, 0x10, b"\x10\x10\x01\x38")])  # DW_CFA_expression r16: DW_OP_lit8
    got = [f for f in findings(sf, eh, walked=True) if f[0] == "semantic-not-compared"]
    assert [f[-1].split(":")[0] for f in got] == ["1 PC range not compared"]


@pytest.mark.parametrize(("eh", "more"), [
    ([(S + 0x8, 0x8)], " (and 1 more range)"),
    ([(S + 0x8, 0x8), (S + 0x18, 0x8)], " (and 2 more ranges)"),
    ([(S, 0x8)], ""),
])
def test_uncovered_parts_are_counted(eh: list[tuple[int, int]], more: str) -> None:
    """The parts of a function no .eh_frame FDE covers: the first shown, the rest counted."""
    sf = one_fde(2, [(0, [8])], 0x30)
    got = findings(sf, eh_frame([(s, n, b"") for s, n in eh]), walked=True)
    first = S if eh[0][0] > S else S + 8
    end = S + 8 if eh[0][0] > S else S + 0x30
    assert got[0] == ("semantic-no-eh-frame-fde", WARNING, 0, S, None, None,
                      f"[{first:#x}, {end:#x}) of this function is covered by no .eh_frame "
                      f"FDE{more}")


@pytest.mark.parametrize(("instr", "kind", "eh_rule"), [
    (b"\x90\x02", "RA", "c-16"),   # DW_CFA_offset r16, 2: the RA alone moves
    (b"\x86\x02", "FP", "c-16"),   # DW_CFA_offset r6, 2: the FP alone is saved
])
def test_one_rule_changing_alone(instr: bytes, kind: str, eh_rule: str) -> None:
    """An .eh_frame row where only the RA, or only the FP, changes is a step of its own."""
    sf = one_fde(2, [(0, [8])], 0x10)
    eh = eh_frame([(S, 0x10, b"\x44" + instr)])  # DW_CFA_advance_loc 4
    shown = "c-8" if kind == "RA" else "u (not saved)"
    assert findings(sf, eh, walked=True) == [
        (f"semantic-{kind.lower()}-mismatch", ERROR, 0, S, 0, S,
         f"{kind} differs from .eh_frame at 1 PC range, 12 bytes; "
         f"first [{S + 4:#x}, {S + 0x10:#x}): SFrame {shown}, .eh_frame {eh_rule}")]
