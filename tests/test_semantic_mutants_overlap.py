"""The reference pass's overlap search (_SectionPass.overlapping, overlapped) at its edges,
and an .eh_frame FDE whose program a work bound stopped (_check_fde's "not compared"):
.eh_frame FDEs that end where the SFrame FDE starts or start where it ends touch it but
do not overlap (its coverage finding only, nothing compared); one .eh_frame FDE alone is
settled without the exact comparison, two are compared exactly. Each case asserts the
findings a user sees (rule, FDE, PC, FRE, message) and which FDEs were compared exactly."""

from __future__ import annotations

import pytest
from test_semantic_mutants_compare import S, one_fde
from test_semantic_mutants_walk import ERROR, INFO, WARNING, _uncovered, counting, findings, section
from test_semantic_units import cfa_rows, eh_frame

import sfcheck.rules.defect  # noqa: F401  (registers the known-defect classifiers)
from sfcheck.dwarf import callframe

NOT_COMPARED = "semantic-not-compared"


def _no_sframe(lo: int, hi: int, off: int) -> tuple:
    return ("semantic-no-sframe-fde", INFO, None, None, None, None,
            f"code in .text [{lo:#x}, {hi:#x}) (.eh_frame+{off:#x}) has no SFrame FDE")


@pytest.mark.parametrize(("eh_lo", "eh_hi"), [(0x1ff0, 0x2000), (0x2010, 0x2020)],
                         ids=["ends-at-start", "starts-at-end"])
def test_touching_eh_fde_is_no_overlap(monkeypatch, eh_lo: int, eh_hi: int) -> None:
    """The reference pass: an .eh_frame FDE touching the FDE's first or one-past-last byte
    covers none of it: the FDE is uncovered and not compared."""
    sf = section([(0x2000, 0x10, [(0, 8)])])
    eh = eh_frame([(eh_lo, eh_hi - eh_lo, b"")])
    exact = counting(monkeypatch, "exact")
    assert findings(sf, eh, walked=False) == [_uncovered(0, 0x2000, 0x10),
                                              _no_sframe(eh_lo, eh_hi, 0x18)]
    assert exact == []


@pytest.mark.parametrize(("eh_lo", "eh_hi"), [(0x1ff0, 0x2001), (0x200f, 0x2020)],
                         ids=["ends-one-in", "starts-one-before-end"])
def test_eh_fde_one_byte_in_overlaps(monkeypatch, eh_lo: int, eh_hi: int) -> None:
    """One byte past the touching case: the .eh_frame FDE covers one byte of the FDE, the
    rest is reported as a range no .eh_frame FDE covers, and the FDE is compared."""
    sf = section([(0x2000, 0x10, [(0, 8)])])
    eh = eh_frame([(eh_lo, eh_hi - eh_lo, b"")])
    exact = counting(monkeypatch, "exact")
    gap = (0x2001, 0x2010) if eh_lo < 0x2000 else (0x2000, 0x200f)
    got = findings(sf, eh, walked=False)
    assert got[0] == ("semantic-no-eh-frame-fde", WARNING, 0, 0x2000, None, None,
                      f"[{gap[0]:#x}, {gap[1]:#x}) of this function is covered by no "
                      ".eh_frame FDE")
    assert [f[0] for f in got[1:]] == ["semantic-no-sframe-fde"]
    assert exact == [0]


def test_one_eh_fde_alone_is_settled(monkeypatch) -> None:
    """The reference pass: one .eh_frame FDE with the FDE's rules over its whole range is
    settled from the FRE tokens, without the exact comparison."""
    sf = section([(0x2000, 0x10, [(0, 8)])])
    eh = eh_frame([(0x2000, 0x10, b"")])
    exact = counting(monkeypatch, "exact")
    assert findings(sf, eh, walked=False) == []
    assert exact == []


def test_two_eh_fdes_are_compared_exactly(monkeypatch) -> None:
    """Two .eh_frame FDEs over the FDE: compared exactly, the second's rows differ."""
    sf = section([(0x2000, 0x20, [(0, 8)])])
    eh = eh_frame([(0x2000, 0x10, b""), (0x2010, 0x10, cfa_rows([(0, 16)]))])
    exact = counting(monkeypatch, "exact")
    assert findings(sf, eh, walked=False) == [
        ("semantic-cfa-mismatch", ERROR, 0, 0x2000, 0, 0x2000,
         "CFA differs from .eh_frame at 1 PC range, 16 bytes; first [0x2010, 0x2020): "
         "SFrame rsp+8, .eh_frame rsp+16")]
    assert exact == [0]


@pytest.mark.parametrize("walked", [False, True])
def test_bounded_eh_fde_is_not_compared(monkeypatch, walked: bool) -> None:
    """The first of two .eh_frame FDEs over the FDE has more rows than the per-FDE bound:
    said not compared (at the FDE's start), and the FDE is still compared with the
    second, whose CFA differs."""
    monkeypatch.setattr(callframe, "MAX_FDE_ROWS", 8)
    sf = section([(0x2000, 0x40, [(0, 8)])])
    eh = eh_frame([(0x2000, 0x20, b"\x41" * 9), (0x2020, 0x20, cfa_rows([(0, 16)]))])
    limit = "more than 8 CFI rows in one FDE"
    assert findings(sf, eh, walked=walked) == [
        (NOT_COMPARED, INFO, None, None, None, None,
         f"1 .eh_frame FDE not interpreted, first at .eh_frame+0x18: {limit}"),
        (NOT_COMPARED, INFO, 0, 0x2000, None, None,
         f"not compared with the .eh_frame FDE at .eh_frame+0x18: {limit}"),
        ("semantic-cfa-mismatch", ERROR, 0, 0x2000, 0, 0x2000,
         "CFA differs from .eh_frame at 1 PC range, 32 bytes; first [0x2020, 0x2040): "
         "SFrame rsp+8, .eh_frame rsp+16")]


@pytest.mark.parametrize("walked", [False, True])
def test_empty_eh_fde_inside_is_skipped_not_the_end(walked: bool) -> None:
    """An empty .eh_frame FDE inside the FDE (met as a point) has nothing to compare: the
    next .eh_frame FDE is still compared, and its CFA differs."""
    sf = section([(0x2000, 0x20, [(0, 8)])])
    eh = eh_frame([(0x2008, 0, b""), (0x2010, 0x10, cfa_rows([(0, 16)]))])
    assert findings(sf, eh, walked=walked) == [
        ("semantic-no-eh-frame-fde", WARNING, 0, 0x2000, None, None,
         "[0x2000, 0x2008) of this function is covered by no .eh_frame FDE (and 1 more "
         "range)"),
        ("semantic-cfa-mismatch", ERROR, 0, 0x2000, 0, 0x2000,
         "CFA differs from .eh_frame at 1 PC range, 16 bytes; first [0x2010, 0x2020): "
         "SFrame rsp+8, .eh_frame rsp+16")]


@pytest.mark.parametrize("walked", [False, True])
def test_claimed_mismatch_keeps_its_location(walked: bool) -> None:
    """A mismatch a known-defect classifier claims (rules/defect.py: .eh_frame marks the
    outermost frame from 8, v2 SFrame does not) is reported under that rule with the
    generic one's location: the FDE, its start, the FRE in force (1, from 4) and its PC."""
    sf = one_fde(2, [(0, [8]), (4, [16])], 0x10)
    # advance 4, CFA rsp+16; advance 4, DW_CFA_undefined rip
    eh = eh_frame([(S, 0x10, b"\x02\x04\x0e\x10\x02\x04\x07\x10")])
    assert findings(sf, eh, walked=walked) == [
        ("defect-outermost-not-marked", WARNING, 0, S, 1, S + 4,
         "the outermost frame is not marked in SFrame: RA differs from .eh_frame at 1 PC "
         f"range, 8 bytes; first [{S + 8:#x}, {S + 0x10:#x}): SFrame c-8, .eh_frame "
         "undefined (outermost frame)")]
