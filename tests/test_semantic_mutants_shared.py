"""The shared walk's driver (_SectionPass.shared): which FDEs it walks and through which
callback, on hand-built sections mixing FDEs one .eh_frame FDE alone overlaps, FDEs no
.eh_frame FDE overlaps and FDEs two overlap; and a field-relative section whose FDE table
starts past the header (fdeoff). Each case asserts the findings a user sees (rule, FDE,
PC, message) and that the FDEs nothing overlaps are not walked."""

from __future__ import annotations

from test_semantic_mutants_walk import (
    ERROR,
    INFO,
    SF_VMA,
    _uncovered,
    both,
    counting,
    findings,
    section,
)
from test_semantic_units import cfa_rows, eh_frame

from sfcheck.format import constants as C
from sfcheck.format.encode import encode
from sfcheck.format.layout import build_section
from sfcheck.format.model import FDE, fde_info, make_fre

CFA = "semantic-cfa-mismatch"

# FDE 0: one .eh_frame FDE alone (settled); 1, 2: none; 3: two (general search, a
# mismatch where the second begins); 4: none; 5: one alone, its block decoded (a gap).
FDES = [(0x1000, 0x10, [(0, 8)]), (0x1100, 0x10, [(0, 8)]), (0x1200, 0x10, [(0, 8)]),
        (0x3000, 0x20, [(0, 8)]), (0x4000, 0x10, [(0, 8)]), (0x5000, 0x10, [(0, 8)])]
EHS = [(0x1000, 0x10, b""), (0x3000, 0x10, b""), (0x3010, 0x10, cfa_rows([(0, 16)])),
       (0x5000, 0x10, b"")]
WANT = [_uncovered(1, 0x1100, 0x10), _uncovered(2, 0x1200, 0x10),
        (CFA, ERROR, 3, 0x3000, 0, 0x3000,
         "CFA differs from .eh_frame at 1 PC range, 16 bytes; first [0x3010, 0x3020): "
         "SFrame rsp+8, .eh_frame rsp+16"),
        _uncovered(4, 0x4000, 0x10)]


def _spies(monkeypatch) -> dict[str, list[int]]:
    return {name: counting(monkeypatch, name)
            for name in ("on_tokens", "on_tokens_single", "on_decoded", "on_decoded_single",
                         "known_single")}


def test_runs_nothing_overlaps_are_not_walked(monkeypatch) -> None:
    """Only FDEs 0, 3 and 5 are walked (each block asked about first): 0 from its tokens,
    3 by the general search (no single .eh_frame FDE: the bulk pre-filter is computed), 5
    decoded; 1, 2 and 4 cost their coverage finding only."""
    sf = section(FDES, gaps={5: 1})
    eh = eh_frame(EHS)
    seen = _spies(monkeypatch)
    assert findings(sf, eh, walked=True) == WANT
    assert seen == {"on_tokens": [3], "on_tokens_single": [0, 3], "on_decoded": [],
                    "on_decoded_single": [5], "known_single": [0, 3, 5]}
    assert findings(sf, eh, walked=False) == WANT


def test_alternating_runs(monkeypatch) -> None:
    """Overlapped, nothing, overlapped (two), nothing, nothing: each run of FDEs nothing
    overlaps ends where the next overlapped one begins, not at the last such FDE."""
    sf = section(FDES[:5])
    eh = eh_frame(EHS[:3])
    seen = _spies(monkeypatch)
    assert findings(sf, eh, walked=True) == WANT
    assert seen["on_tokens"] == [3]
    assert seen["known_single"] == [0, 3]


def test_every_fde_overlaps_one_alone(monkeypatch) -> None:
    """No FDE without a single .eh_frame FDE: every block walked, none by the general
    search, the last one up to the section's end."""
    sf = section([FDES[0], FDES[5]])
    eh = eh_frame([EHS[0], EHS[3]])
    seen = _spies(monkeypatch)
    assert findings(sf, eh, walked=True) == []
    assert (seen["on_tokens"], seen["known_single"]) == ([], [0, 1])


def _fdeoff_section(starts: list[int], fdeoff: int) -> bytes:
    """A v2 amd64 section without the PCREL flag, its FDE table `fdeoff` bytes past the
    header, with start fields a relocatable object's field-relative reading (counting
    from the table's real place) puts at `starts`."""
    table = C.HEADER_SIZE + fdeoff
    fdes = [FDE(start=s - SF_VMA - table - i * C.FDE_SIZE[2], size=0x10,
                info=fde_info(C.FRE_TYPE_ADDR1), fres=(make_fre(0, [8]),))
            for i, s in enumerate(starts)]
    return encode(build_section(2, C.ABI_AMD64_LE, fdes, flags=C.F_FDE_SORTED, fdeoff=fdeoff))


def test_field_relative_starts_count_from_fdeoff(monkeypatch) -> None:
    """A relocatable object with fdeoff 8: the shared walk's starts count from the FDE
    table, not from the header's end (which would put each 8 bytes early); FDE 1 lies
    in no .eh_frame FDE."""
    sf = _fdeoff_section([0x2000, 0x2100], 8)
    eh = eh_frame([(0x2000, 0x10, b"")])
    seen = counting(monkeypatch, "known_single")
    assert both(sf, eh, relocatable=True) == [_uncovered(1, 0x2100, 0x10)]
    assert seen == [0]


def test_field_relative_starts_without_fdeoff(monkeypatch) -> None:
    """fdeoff 0 (the table right after the header) against an .eh_frame FDE 8 bytes
    before the FDE: only that FDE's tail would meet it if the starts were 8 bytes off."""
    sf = _fdeoff_section([0x2008], 0)
    eh = eh_frame([(0x2000, 0x8, b"")])
    assert both(sf, eh, relocatable=True) == [
        _uncovered(0, 0x2008, 0x10),
        ("semantic-no-sframe-fde", INFO, None, None, None, None,
         "code in .text [0x2000, 0x2008) (.eh_frame+0x18) has no SFrame FDE")]
