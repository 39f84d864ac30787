"""The exact comparison's shortcuts (rules/semantic/compare.py) against the reference
they are derived from: an .eh_frame row whose CFA expression reads no PC is compared
at the constant rule's points instead of PC by PC (compare.PC_BY_PC off). Same
mismatches (ranges, bytes, first range, FRE), same opaque notes (count and first),
same work-bound spending, on generated FDE / CFI pairs and on the corpus."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sfcheck.checker import check_elf
from sfcheck.dwarf.cfi import UNDEFINED, CfaExpr, CfiRow, EhFde, Opaque
from sfcheck.dwarf.expr import parse_expr
from sfcheck.format import constants as C
from sfcheck.format.abi import ABIS
from sfcheck.format.decode import decode
from sfcheck.format.encode import encode
from sfcheck.format.fre_rules import RegRule
from sfcheck.format.layout import build_section
from sfcheck.format.model import FDE, fde_info, make_fre
from sfcheck.rules.semantic import compare
from sfcheck.rules.semantic.compare import Budget, compare_fde

from helpers import CORPUS

ABI = ABIS[C.ABI_AMD64_LE]
HEADER = decode(encode(build_section(2, C.ABI_AMD64_LE, [
    FDE(start=0, size=16, info=fde_info(C.FRE_TYPE_ADDR1), fres=(make_fre(0, (8,)),))]))).header


def _expr(code: bytes) -> CfaExpr:
    ops = parse_expr(code, True)
    assert ops is not None
    return CfaExpr(ops)


# DRAP's *(rbp - 8) and rsp + 8 read no PC (one of them loads); two registers added is
# opaque at every PC; the PLT's is periodic; rip + 8 reads the PC and is not periodic.
EXPRS = [_expr(bytes([0x76, 0x78, 0x06])), _expr(bytes([0x77, 0x08])),
         _expr(bytes([0x76, 0x00, 0x77, 0x00, 0x22])),
         _expr(bytes([0x77, 8, 0x80, 0, 0x3F, 0x1A, 0x3B, 0x2A, 0x33, 0x24, 0x22])),
         _expr(bytes([0x80, 0x08]))]
CFAS = [RegRule(7, 8, False), RegRule(7, 16, False), RegRule(6, 16, False), *EXPRS]
RAS = [RegRule(None, -8, True), UNDEFINED, Opaque("a test's"), None]
FPS = [None, RegRule(None, -16, True), Opaque("a test's")]


@st.composite
def pairs(draw: st.DrawFn) -> tuple[FDE, EhFde, int]:
    size = draw(st.integers(1, 96))
    pcmask = draw(st.booleans())
    fre_starts = sorted(set(draw(st.lists(st.integers(0, 40), min_size=1, max_size=6))))
    fres = tuple(make_fre(s, draw(st.sampled_from([(8,), (16,), (16, -16), (24, -16)])),
                          base_sp=draw(st.booleans()))
                 for s in fre_starts)
    fde = FDE(start=0, size=size, info=fde_info(C.FRE_TYPE_ADDR1, pcmask), fres=fres,
              rep_size=draw(st.sampled_from([16, 8, 5])))
    start = 0x1000
    eh_start = start - draw(st.integers(0, 8))
    pcs = draw(st.lists(st.integers(1, 120), max_size=5))
    if draw(st.booleans()):  # else as DW_CFA_set_loc may leave them: unsorted, repeated
        pcs = sorted(set(pcs))
    rel = tuple(CfiRow(pc, draw(st.sampled_from(CFAS)), draw(st.sampled_from(RAS)),
                       draw(st.sampled_from(FPS))) for pc in [0, *pcs])
    eh = EhFde(eh_start, eh_start + draw(st.integers(1, 140)), rel, 0)
    return fde, eh, start


def _compare(fde: FDE, ehs: list[EhFde], start: int, by_pc: bool, intervals: int,
             monkeypatch: pytest.MonkeyPatch) -> tuple:
    budget = Budget(intervals)
    mism: dict = {}
    opaque: list[str] = []
    with monkeypatch.context() as m:
        m.setattr(compare, "PC_BY_PC", by_pc)
        compare_fde(0, start, fde.size, fde, HEADER, ABI, ehs, budget, mism, opaque)
    shown = {k: (v.first, v.fre, v.sframe, v.eh, v.ranges, v.nbytes) for k, v in mism.items()}
    return (shown, len(opaque), opaque[:1], budget.exhausted,
            budget.intervals if not budget.exhausted else None, budget.expr_pcs)


@settings(max_examples=400, deadline=None)
@given(pair=pairs(), intervals=st.sampled_from([1 << 20, 40, 8]))
def test_pc_free_expressions_same_as_pc_by_pc(pair: tuple[FDE, EhFde, int],
                                              intervals: int) -> None:
    fde, eh, start = pair
    mp = pytest.MonkeyPatch()
    assert (_compare(fde, [eh], start, False, intervals, mp)
            == _compare(fde, [eh], start, True, intervals, mp))


def test_generated_pairs_take_the_shortcut() -> None:
    """A DRAP row over a 64-byte PCINC function: 2 points instead of 64, same answer."""
    fde = FDE(start=0, size=64, info=fde_info(C.FRE_TYPE_ADDR1),
              fres=(make_fre(0, (8,)), make_fre(4, (16,), base_sp=False)))
    eh = EhFde(0x1000, 0x1040, (CfiRow(0, EXPRS[0], RAS[0], None),), 0)
    mp = pytest.MonkeyPatch()
    fast = _compare(fde, [eh], 0x1000, False, 1 << 20, mp)
    assert fast == _compare(fde, [eh], 0x1000, True, 1 << 20, mp)
    assert fast[0]["CFA"][4:] == (2, 64)  # a range per FRE, 64 bytes
    with mp.context() as m:
        m.setattr(compare, "PC_BY_PC", False)
        windows = compare._windows(0x1000, fde, HEADER, eh, 0x1000, 0x1040, 16, Budget(999))
    assert windows == [(0x1000, 0x1040, [0x1000, 0x1004], True, 0x1040)]


def _elf_files() -> list[Path]:
    return sorted(p for p in CORPUS.rglob("*")
                  if p.is_file() and "src" not in p.parts and p.read_bytes()[:4] == b"\x7fELF")


@pytest.mark.parametrize("path", _elf_files(), ids=lambda p: str(p.relative_to(CORPUS)))
def test_corpus_same_findings(path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    got = [f.text() for f in check_elf(path).findings]
    monkeypatch.setattr(compare, "PC_BY_PC", True)
    assert got == [f.text() for f in check_elf(path).findings]


def test_unsorted_rows_compared_pc_by_pc() -> None:
    """Rows out of PC order (DW_CFA_set_loc back): _eh_at's bisection finds another row for
    part of a window, so the window is not one rule: the shortcut must not take it."""
    fde = FDE(start=0, size=96, info=fde_info(C.FRE_TYPE_ADDR1), fres=(make_fre(0, (8,)),))
    rows = (CfiRow(0, CFAS[0], RAS[0], None), CfiRow(50, CFAS[1], RAS[0], None),
            CfiRow(20, EXPRS[0], RAS[0], None))
    eh = EhFde(0x1000, 0x1060, rows, 0)
    mp = pytest.MonkeyPatch()
    fast = _compare(fde, [eh], 0x1000, False, 1 << 20, mp)
    assert fast == _compare(fde, [eh], 0x1000, True, 1 << 20, mp)
    assert fast[0]["CFA"][0] == (0x1032, 0x1060)
