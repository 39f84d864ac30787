"""The settle shortcut (rules/semantic/settle.py) on hand-built PCINC FDEs against one
.eh_frame FDE each, in the reference pass (every FDE through Settle.quiet): repeated
rules, an FRE at the FDE's end, unordered FREs, an .eh_frame FDE that starts earlier, and
the verdict memo across FDEs of one shape at sizes either side of its reach. Each case
asserts the findings a user sees (rule, FDE, PC, FRE, message) and which FDEs were left
to the exact comparison."""

from __future__ import annotations

from test_semantic_mutants_compare import S, one_fde
from test_semantic_mutants_walk import (
    ERROR,
    SF_VMA,
    WARNING,
    _known,
    counting,
    findings,
    section,
)
from test_semantic_units import cfa_rows, eh_frame

from sfcheck.format import constants as C
from sfcheck.format.encode import encode
from sfcheck.format.layout import build_section
from sfcheck.format.model import FDE, fde_info, make_fre
from sfcheck.wording import plural

CFA = "semantic-cfa-mismatch"


def _cfa(i: int, start: int, fre: int, fre_pc: int, lo: int, hi: int, s: int, e: int) -> tuple:
    return (CFA, ERROR, i, start, fre, fre_pc,
            f"CFA differs from .eh_frame at 1 PC range, {plural(hi - lo, 'byte')}; first "
            f"[{lo:#x}, {hi:#x}): SFrame rsp+{s}, .eh_frame rsp+{e}")


def _run(monkeypatch, fdes, ehs) -> tuple[list[tuple], list[int]]:
    exact = counting(monkeypatch, "exact")
    return findings(section(fdes), eh_frame(ehs), walked=False), exact


def test_repeated_rules_then_a_change(monkeypatch) -> None:
    """rsp+8 twice, then rsp+16 against .eh_frame's rsp+8 throughout: the repeated FRE is
    skipped, not the end of the FRE list, and the change is found."""
    got, exact = _run(monkeypatch, [(0x2000, 0x10, [(0, 8), (4, 8), (8, 16)])],
                      [(0x2000, 0x10, b"")])
    assert got == [_cfa(0, 0x2000, 2, 0x2008, 0x2008, 0x2010, 16, 8)]
    assert exact == [0]


def test_repeated_rules_are_settled(monkeypatch) -> None:
    """rsp+8 twice against rsp+8: one step each side, settled without the exact path."""
    got, exact = _run(monkeypatch, [(0x2000, 0x10, [(0, 8), (4, 8)])], [(0x2000, 0x10, b"")])
    assert (got, exact) == ([], [])


def test_fre_at_the_end_is_past_the_function(monkeypatch) -> None:
    """An FRE starting at the FDE's size covers none of it: settled; one byte earlier it
    is compared (and differs over that last byte)."""
    got, exact = _run(monkeypatch, [(0x2000, 0x10, [(0, 8), (0x10, 16)])],
                      [(0x2000, 0x10, b"")])
    assert (got, exact) == ([], [])
    got, exact = _run(monkeypatch, [(0x2000, 0x10, [(0, 8), (0xf, 16)])],
                      [(0x2000, 0x10, b"")])
    assert got == [_cfa(0, 0x2000, 1, 0x200f, 0x200f, 0x2010, 16, 8)]


def test_unordered_fres_are_settled_as_given_up(monkeypatch) -> None:
    """FRE starts 0, 8, 4: the exact path's row builder gives up on them (the structural
    rules report the order), so the shortcut settles them without it."""
    got, exact = _run(monkeypatch, [(0x2000, 0x10, [(0, 8), (8, 16), (4, 8)])],
                      [(0x2000, 0x10, b"")])
    assert (got, exact) == ([], [])


def test_eh_fde_starting_earlier_is_compared(monkeypatch) -> None:
    """The .eh_frame FDE starts 8 bytes before the FDE, with the same steps relative to
    its own start: shifted by 8, they differ over [0x2000, 0x2008)."""
    got, exact = _run(monkeypatch, [(0x2000, 0x10, [(0, 8), (8, 16)])],
                      [(0x1ff8, 0x18, cfa_rows([(8, 16)]))])
    assert got == [_cfa(0, 0x2000, 0, 0x2000, 0x2000, 0x2008, 8, 16),
                   ("semantic-no-sframe-fde", WARNING, None, None, None, None,
                    "code in .text [0x1ff8, 0x2010) (.eh_frame+0x18): only 16 of its 24 bytes "
                    "are covered by SFrame FDEs")]
    assert exact == [0]


SHAPE = [(0, 8), (8, 16)]  # every FDE below: the same FRE bytes
ROWS = cfa_rows([(8, 24)])  # one program: the .eh_frame FDEs share their rows


def test_memo_verdict_false_is_kept(monkeypatch) -> None:
    """A verdict "differs" from a 16-byte FDE (reach 8) holds for a 32-byte one: it is
    compared too and the difference reported for both."""
    got, exact = _run(monkeypatch, [(0x2000, 0x10, SHAPE), (0x3000, 0x20, SHAPE)],
                      [(0x2000, 0x10, ROWS), (0x3000, 0x20, ROWS)])
    assert got == [_cfa(0, 0x2000, 1, 0x2008, 0x2008, 0x2010, 16, 24),
                   _cfa(1, 0x3000, 1, 0x3008, 0x3008, 0x3020, 16, 24)]
    assert exact == [0, 1]


def test_memo_not_kept_at_the_reach(monkeypatch) -> None:
    """An 8-byte FDE (size = reach: the FRE and the row at 8 are cut) is settled; a
    16-byte FDE of the same shape after it is not, its difference at 8 is reported."""
    got, exact = _run(monkeypatch, [(0x2000, 0x8, SHAPE), (0x3000, 0x10, SHAPE)],
                      [(0x2000, 0x8, ROWS), (0x3000, 0x10, ROWS)])
    assert got == [_cfa(1, 0x3000, 1, 0x3008, 0x3008, 0x3010, 16, 24)]
    assert exact == [1]


def test_memo_not_used_at_the_reach(monkeypatch) -> None:
    """A 16-byte FDE that differs (reach 8), then an 8-byte one of the same shape: at
    size 8 the verdict is made again (nothing differs below 8) and it is settled."""
    got, exact = _run(monkeypatch, [(0x2000, 0x10, SHAPE), (0x3000, 0x8, SHAPE)],
                      [(0x2000, 0x10, ROWS), (0x3000, 0x8, ROWS)])
    assert got == [_cfa(0, 0x2000, 1, 0x2008, 0x2008, 0x2010, 16, 24)]
    assert exact == [0]


def test_outermost_fre_is_compared(monkeypatch) -> None:
    """An FRE without data words (the outermost frame, v2 and v3) inside the function is
    left to the exact comparison, which reports its RA against .eh_frame's c-8."""
    exact = counting(monkeypatch, "exact")
    sf = one_fde(2, [(0, [8]), (8, [])], 0x10)
    got = findings(sf, eh_frame([(S, 0x10, b"")]), walked=False)
    assert got == [("semantic-ra-mismatch", ERROR, 0, S, 1, S + 8,
                    "RA differs from .eh_frame at 1 PC range, 8 bytes; first "
                    f"[{S + 8:#x}, {S + 0x10:#x}): SFrame undefined (outermost frame), "
                    ".eh_frame c-8")]
    assert exact == [0]


def test_addr2_block_known_from_an_earlier_fde(monkeypatch) -> None:
    """Two ADDR2 FDEs (2-byte FRE starts) of one shape against one .eh_frame program: the
    second is known quiet from the first's verdict, its block looked up with the FRE
    start size of its type."""
    rows = ((0, 8), (0x84, 16))
    fdes = [FDE(start=s - SF_VMA, size=0x200, info=fde_info(C.FRE_TYPE_ADDR2),
                fres=tuple(make_fre(pc, [off]) for pc, off in rows)) for s in (0x2000, 0x3000)]
    sf = encode(build_section(2, C.ABI_AMD64_LE, fdes, flags=C.F_FDE_SORTED))
    program = cfa_rows([(0x84, 16)])
    eh = eh_frame([(0x2000, 0x200, program), (0x3000, 0x200, program)])
    known = _known(monkeypatch)
    assert findings(sf, eh, walked=True) == []
    assert known == [(0, False), (1, True)]
