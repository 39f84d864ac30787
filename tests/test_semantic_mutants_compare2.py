"""The exact comparison (rules/semantic/compare.py), more of what a user sees: the RA an
amd64 FRE states for itself (v3 FLEX) or leaves unsaved (a header without a fixed RA
offset), the not-compared count over PCMASK blocks, periodic CFA expressions across a
PCMASK block size they do not divide and their expression-PC cost, FRE starts at a row's
end, PCMASK windows from an .eh_frame FDE that starts earlier, a function at address 0
under the PLT expression, and what the shortcuts (equal rows, the steps' memo) cost the
work bound: nothing. Each finding's rule, FDE, PC, FRE and message are asserted."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from test_semantic_mutants_compare import CFA, PC_FREE, PLT, READS_PC, S, _expr_fde, one_fde
from test_semantic_mutants_walk import ERROR, SF_VMA, WARNING, findings
from test_semantic_units import cfa_rows, eh_frame, uleb

from sfcheck.format import constants as C
from sfcheck.format.encode import encode
from sfcheck.format.layout import build_section
from sfcheck.format.model import FDE, fde_info, make_fre

RA = "semantic-ra-mismatch"
NOT_COMPARED = "semantic-not-compared"
RA_EXPR = b"\x10\x10\x01\x38"  # DW_CFA_expression r16: DW_OP_lit8 (the RA not compared)


def _section(version: int, fdes: list[FDE], **kw) -> bytes:
    return encode(build_section(version, C.ABI_AMD64_LE, fdes, flags=C.F_FDE_SORTED, **kw))


def _fde(start: int, size: int, fres: list, *, info2: int = 0) -> FDE:
    return FDE(start=start - SF_VMA, size=size, info=fde_info(C.FRE_TYPE_ADDR1), info2=info2,
               fres=tuple(make_fre(pc, words) for pc, words in fres))


# -- the RA rule of an amd64 FRE (rules_of) -------------------------------------------------

# v3 FLEX words: CFA rsp+8 (control: register 7, reg_p), then the RA at CFA-24 (control 2:
# no register, dereferenced): the FRE's own RA, not the header's fixed -8
FLEX_RA_C24 = [(7 << 3) | 1, 8, 2, -24]


@pytest.mark.parametrize(("eh_ra", "want"), [
    (b"\x90\x03", []),  # DW_CFA_offset r16, 3: c-24, as the FRE says
    (b"\x90\x02", [(RA, ERROR, 0, S, 0, S, "RA differs from .eh_frame at 1 PC range, 16 bytes; "
                    f"first [{S:#x}, {S + 0x10:#x}): SFrame c-24, .eh_frame c-16")]),
], ids=["same", "differs"])
def test_flex_fre_ra_overrides_the_fixed_offset(eh_ra: bytes, want: list) -> None:
    sf = _section(3, [_fde(S, 0x10, [(0, FLEX_RA_C24)], info2=C.FDE_TYPE_FLEX)])
    assert findings(sf, eh_frame([(S, 0x10, eh_ra)]), walked=True) == want


def test_ra_not_saved_without_a_fixed_offset() -> None:
    """An amd64 header whose fixed RA offset is 0 and an FRE with no RA word: SFrame says
    the RA is not saved (not "at CFA+0")."""
    sf = _section(2, [_fde(S, 0x10, [(0, [8])])], fixed_ra=0)
    assert findings(sf, eh_frame([(S, 0x10, b"")]), walked=True) == [
        (RA, ERROR, 0, S, 0, S, "RA differs from .eh_frame at 1 PC range, 16 bytes; "
         f"first [{S:#x}, {S + 0x10:#x}): SFrame u (not saved), .eh_frame c-8")]


# -- PCMASK block points (_block_points) -----------------------------------------------------

@pytest.mark.parametrize(("fres", "count"), [([0], 3), ([0, 8], 6)])
def test_pcmask_not_compared_count_is_one_per_fre(fres: list[int], count: int) -> None:
    """An RA .eh_frame gives by an expression over a PCMASK FDE (three 16-byte blocks): one
    note per FRE of each block (a point per FRE start, not per byte)."""
    sf = one_fde(2, [(f, [8]) for f in fres], 0x30, rep=16)
    assert findings(sf, eh_frame([(S, 0x30, RA_EXPR)]), walked=True) == [
        (NOT_COMPARED, 0, 0, S, None, None,
         f"{count} PC range{'s' if count > 1 else ''} not compared: RA expression is not "
         f"register-relative at {S:#x}")]


# -- windows (_windows) ------------------------------------------------------------------------

PLT_CFA = b"\x0f" + uleb(len(PLT)) + PLT  # DW_CFA_def_cfa_expression: ld's .plt CFA


def test_pcmask_blocks_shorter_than_the_expression_period() -> None:
    """8-byte PCMASK blocks (CFA rsp+8 throughout) under the PLT expression, periodic in
    16 bytes: the window spans both periods' common multiple, so bytes 11-15 of the entry
    (rsp+16), past the first block, are compared, and counted in both entries."""
    sf = one_fde(2, [(0, [8])], 0x20, rep=8)
    assert findings(sf, eh_frame([(S, 0x20, PLT_CFA)]), walked=True) == [
        (CFA, ERROR, 0, S, 0, S, "CFA differs from .eh_frame at 2 PC ranges, 10 bytes; "
         f"first [{S + 11:#x}, {S + 16:#x}): SFrame rsp+8, .eh_frame rsp+16")]


def test_fre_at_a_rows_end_starts_no_interval_in_that_row() -> None:
    """FRE 1 starts where .eh_frame's row 1 starts (DW_CFA_advance_loc 8): it is a point
    of row 1's window only; the not-compared RA counts one interval per row."""
    sf = one_fde(2, [(0, [8]), (8, [16])], 0x10)
    eh = eh_frame([(S, 0x10, RA_EXPR + b"\x48\x0e\x10")])  # advance 8; def_cfa_offset 16
    assert findings(sf, eh, walked=True) == [
        (NOT_COMPARED, 0, 0, S, None, None, "2 PC ranges not compared: RA expression is not "
         f"register-relative at {S:#x}")]


def test_pcmask_pc_free_expression_from_an_earlier_eh_fde() -> None:
    """The .eh_frame FDE starts a block before the PCMASK FDE, its CFA a PC-free
    expression: only the function's 32 bytes are compared, none before its start."""
    sf = one_fde(2, [(0, [16])], 0x20, rep=16)
    eh = eh_frame([(S - 16, 0x30, b"\x0f\x02" + PC_FREE)])
    assert findings(sf, eh, walked=True) == [
        (CFA, ERROR, 0, S, 0, S, "CFA differs from .eh_frame at 1 PC range, 32 bytes; "
         f"first [{S:#x}, {S + 0x20:#x}): SFrame rsp+16, .eh_frame rsp+8"),
        ("semantic-no-sframe-fde", WARNING, None, None, None, None,
         f"code in .text [{S - 16:#x}, {S + 0x20:#x}) (.eh_frame+0x18): only 32 of its 48 "
         "bytes are covered by SFrame FDEs")]


TRUNCATED = ("semantic-truncated", 0, 0, S, None, None,
             "cross-check stopped at FDE 0 (work bound reached)")


@pytest.mark.parametrize(("bound", "cut"), [(20, False), (19, True)])
def test_periodic_expression_costs_a_period_per_boundary(monkeypatch, bound: int,
                                                         cut: bool) -> None:
    """The PLT expression over a 64-byte PCINC row with FREs at 0 and 4: evaluated PC by
    PC from each FRE start for one period or up to the next FRE, 4 + 16 = 20 expression
    PCs (not the row's 64): a bound of 20 compares them, 19 stops. The counts are of the
    row's four entries."""
    from sfcheck.rules.semantic import compare

    monkeypatch.setattr(compare, "MAX_EXPR_PCS", bound)
    sf = one_fde(2, [(0, [8]), (4, [8])], 0x40)
    assert findings(sf, eh_frame([(S, 0x40, PLT_CFA)]), walked=True) == ([TRUNCATED] if cut else [
        (CFA, ERROR, 0, S, 1, S + 4, "CFA differs from .eh_frame at 4 PC ranges, 20 bytes; "
         f"first [{S + 11:#x}, {S + 16:#x}): SFrame rsp+8, .eh_frame rsp+16")])


def test_pc_reading_expression_in_the_pc_by_pc_reference(monkeypatch) -> None:
    """The reference mode the shortcuts are pinned against (PC_BY_PC): an expression that
    reads the PC is still evaluated at each PC (rsp+8, rsp+16 from S+8)."""
    from sfcheck.rules.semantic import compare

    monkeypatch.setattr(compare, "PC_BY_PC", True)
    eh = _expr_fde(READS_PC, 0x10)
    assert findings(one_fde(2, [(0, [8]), (8, [16])], 0x10), eh, walked=True) == []
    assert findings(one_fde(2, [(0, [8])], 0x10), eh, walked=True) == [
        (CFA, ERROR, 0, S, 0, S, "CFA differs from .eh_frame at 1 PC range, 8 bytes; "
         f"first [{S + 8:#x}, {S + 0x10:#x}): SFrame rsp+8, .eh_frame rsp+16")]


def test_periodic_expression_at_address_zero() -> None:
    """A function at address 0 (a relocatable object's first) under the PLT expression:
    the phases of its first period are those of PCs 0-15 themselves."""
    from sfcheck.dwarf.cfi import CfaExpr, CfiRow, EhFde
    from sfcheck.dwarf.expr import parse_expr
    from sfcheck.format.abi import ABIS
    from sfcheck.format.decode import decode
    from sfcheck.format.fre_rules import RegRule
    from sfcheck.rules.semantic.compare import Budget, compare_fde

    fde = FDE(start=0, size=0x10, info=fde_info(C.FRE_TYPE_ADDR1), fres=(make_fre(0, (8,)),))
    header = decode(_section(2, [fde])).header
    ops = parse_expr(PLT, True)
    assert ops is not None
    eh = EhFde(0, 0x10, (CfiRow(0, CfaExpr(ops), RegRule(None, -8, True), None),), 0)
    out: dict = {}
    opaque: list[str] = []
    compare_fde(0, 0, 0x10, fde, header, ABIS[C.ABI_AMD64_LE], [eh], Budget(1 << 20), out,
                opaque)
    m = out.pop("CFA")
    assert (out, opaque, m.first, m.ranges, m.nbytes) == ({}, [], (11, 16), 1, 5)


# -- the shortcuts cost no work (compare_fde, eh_steps) ------------------------------------------

def _budget(monkeypatch, intervals: int) -> None:
    from sfcheck.rules.semantic import check, compare

    monkeypatch.setattr(check, "Budget", lambda **_: compare.Budget(intervals))


@pytest.mark.parametrize("walked", [True, False])
def test_equal_rows_cost_no_intervals(monkeypatch, walked: bool) -> None:
    """A v3 FLEX FDE (never settled from its tokens) whose rows are .eh_frame's one FDE's:
    decided equal without walking intervals, so a work budget of 0 still finds nothing,
    and one differing row then stops the cross-check."""
    _budget(monkeypatch, 0)
    sf = _section(3, [_fde(S, 0x10, [(0, [57, 8]), (4, [57, 16])], info2=C.FDE_TYPE_FLEX)])
    eh = eh_frame([(S, 0x10, cfa_rows([(4, 16)]))])
    assert findings(sf, eh, walked=walked) == []
    assert findings(sf, eh_frame([(S, 0x10, cfa_rows([(4, 24)]))]), walked=walked) == [TRUNCATED]


@pytest.mark.parametrize("walked", [True, False])
def test_shared_rows_cut_at_each_size(monkeypatch, walked: bool) -> None:
    """Two .eh_frame FDEs with one program (their rows shared) and two v3 FLEX FDEs (never
    settled from their tokens): the first function ends at the second row (its steps are
    cut there), the second has both rows. Each is decided equal without walking intervals
    (a work budget of 0): the memo of the whole program's steps is not taken for the cut
    one, nor the cut steps for the whole."""
    _budget(monkeypatch, 0)
    flex = C.FDE_TYPE_FLEX
    sf = _section(3, [_fde(S, 8, [(0, [57, 8])], info2=flex),
                      _fde(S + 0x10, 0x10, [(0, [57, 8]), (8, [57, 16])], info2=flex)])
    eh = eh_frame([(S, 0x10, cfa_rows([(8, 16)])), (S + 0x10, 0x10, cfa_rows([(8, 16)]))])
    assert findings(sf, eh, walked=walked) == [
        ("semantic-no-sframe-fde", WARNING, None, None, None, None,
         f"code in .text [{S:#x}, {S + 0x10:#x}) (.eh_frame+0x18): only 8 of its 16 bytes "
         "are covered by SFrame FDEs")]


# -- found by the mutation work, fixed: block starts, counts of the whole row -----------------

@pytest.mark.parametrize("fres", [[4], [4, 16]], ids=["late-first-fre", "and-one-at-rep"])
def test_pcmask_window_into_a_block_without_an_fre_at_its_start(fres: list[int]) -> None:
    """FREs from offset 4 of each 16-byte block (an FRE at 16, never selected under
    PCMASK, changes nothing); .eh_frame's CFA is rsp+16 from S+8."""
    sf = one_fde(2, [(f, [8]) for f in fres], 0x20, rep=16)
    got = findings(sf, eh_frame([(S, 0x20, cfa_rows([(8, 16)]))]), walked=True)
    assert [f[:6] for f in got] == [(CFA, ERROR, 0, S, 0, S + 4)]
    assert got[0][6].startswith("CFA differs from .eh_frame at 2 PC ranges, ")
    assert got[0][6].endswith(f"; first [{S + 8:#x}, {S + 0x10:#x}): SFrame rsp+8, "
                              ".eh_frame rsp+16")


def test_periodic_expression_counts_cover_the_whole_row() -> None:
    """The PLT expression over four 16-byte entries, SFrame rsp+8 throughout: bytes 11-15
    of each entry differ."""
    sf = one_fde(2, [(0, [8])], 0x40)
    assert findings(sf, eh_frame([(S, 0x40, PLT_CFA)]), walked=True) == [
        (CFA, ERROR, 0, S, 0, S, "CFA differs from .eh_frame at 4 PC ranges, 20 bytes; "
         f"first [{S + 11:#x}, {S + 16:#x}): SFrame rsp+8, .eh_frame rsp+16")]


# -- the claim behind rules_of's equivalent mutants (tests/mutation_equivalent.txt) -----------

@settings(max_examples=200, deadline=None)
@given(version=st.sampled_from([2, 3]), fixed_ra=st.sampled_from([0, -8, -16]),
       flex=st.booleans(), words=st.lists(st.integers(-64, 64), min_size=1, max_size=4))
def test_rules_of_ra_is_the_fre_rules_one(version: int, fixed_ra: int, flex: bool,
                                          words: list[int]) -> None:
    """On amd64 (no RA register) fre_rules gives RA None only under a fixed RA offset of
    0, so rules_of's RA is fre_rules' own: an FRE's stated RA is kept, an unstated one
    stays "not saved"."""
    from sfcheck.format.abi import ABIS
    from sfcheck.format.fre_rules import fre_rules, intern
    from sfcheck.rules.semantic.compare import rules_of

    flex = flex and version == 3
    if flex:
        words = [(7 << 3) | 1, *words]  # a register-based CFA control word first
    h = build_section(version, C.ABI_AMD64_LE, [], fixed_ra=fixed_ra).header
    fre, abi = make_fre(0, words), ABIS[C.ABI_AMD64_LE]
    try:
        _cfa, ra, _fp = fre_rules(h, flex, fre, abi)
    except ValueError:
        assert rules_of(h, flex, fre, abi) is None
        return
    assert ra is not None or fixed_ra == 0
    assert rules_of(h, flex, fre, abi)[1] is intern(ra)
