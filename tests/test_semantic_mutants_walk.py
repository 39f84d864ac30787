"""The cross-check's walk over an SFrame section (rules/semantic/check.py), path by path, on
hand-built sections: FRE blocks that are not exactly their FREs (a gap after them: the
decoder's path), runs of FDEs no .eh_frame FDE overlaps (zero sizes and the per-rule cap
among them), no .eh_frame FDE at all, relocatable objects' field-relative starts. Each case
runs the shared walk (the structure check walked every block: SectionContext.fres_walked)
and the reference pass, and asserts the findings a user sees: rule, FDE index, PC, FRE and
message (the first differing range, the rules, the bytes covered, the count past the cap)."""

from __future__ import annotations

import pytest
from test_semantic_units import EH_VMA, cfa_rows, eh_frame

from sfcheck.elf.model import CfiView, ElfSFrameInfo, TextRange
from sfcheck.format import constants as C
from sfcheck.format.decode import decode_header
from sfcheck.format.encode import encode
from sfcheck.format.layout import build_section
from sfcheck.format.model import FDE, fde_info, make_fre
from sfcheck.record import replace
from sfcheck.rules.semantic.check import _SectionPass
from sfcheck.walk import context
from sfcheck.walk.context import SectionContext

Rows = list[tuple[int, int]]  # (FRE start, CFA offset from rsp)


SF_VMA = 0x800  # the .sframe section's address: starts count from it


def section(fdes: list[tuple[int, int, Rows]], *, version: int = 2,
            gaps: dict[int, int] | None = None, fields: list[int] | None = None,
            pcmask: set[int] = frozenset(), flex: set[int] = frozenset(),
            words: list[int] | None = None) -> bytes:
    """An amd64 section of ADDR1 FDEs (start, size, rows), FDEs in `pcmask` PCMASK with
    16-byte blocks; `gaps`: FDE index -> bytes left unused after its FRE block (so the
    block is not exactly its FREs); `fields`: the start fields as stored (else each start
    less the section's address: no PCREL flag); FDEs in `flex` of v3's FLEX type; `words`:
    every FRE's data words after the CFA offset (default: none)."""
    built = [FDE(start=s - SF_VMA if fields is None else fields[i], size=n,
                 info=fde_info(C.FRE_TYPE_ADDR1, pcmask=i in pcmask), rep_size=16,
                 info2=C.FDE_TYPE_FLEX if i in flex else 0,
                 fres=tuple(make_fre(pc, [off, *(words or ())]) for pc, off in rows))
             for i, (s, n, rows) in enumerate(fdes)]
    sec = build_section(version, C.ABI_AMD64_LE, built, flags=C.F_FDE_SORTED)
    shift, placed = 0, []
    for i, fde in enumerate(sec.fdes):
        placed.append(replace(fde, fre_off=fde.fre_off + shift))
        shift += (gaps or {}).get(i, 0)
    return encode(replace(sec, header=replace(sec.header, fre_len=sec.header.fre_len + shift),
                          fdes=tuple(placed)))


def findings(sf: bytes, eh: bytes, *, walked: bool, relocatable: bool = False) -> list[tuple]:
    view = CfiView(eh, EH_VMA, ((SF_VMA, sf),), (), (TextRange(".text", 0x1000, 0x100000),))
    info = ElfSFrameInfo("t", "ET_REL" if relocatable else "ET_DYN", "EM_X86_64", 62, True, 64,
                         (), (), (), view.text_ranges, view)
    ctx = SectionContext("t", ".sframe", SF_VMA, sf, relocatable=relocatable, fres_walked=walked)
    from sfcheck.rules.semantic import cross_check

    cross_check([ctx], [decode_header(sf)], info)
    ctx.finish()
    return [(f.rule, f.severity.value, f.location.fde, f.location.pc, f.location.fre,
             f.location.fre_pc, f.message) for f in ctx.findings]


def both(sf: bytes, eh: bytes, relocatable: bool = False) -> list[tuple]:
    """The shared walk's findings, which must be the reference pass's."""
    shared = findings(sf, eh, walked=True, relocatable=relocatable)
    assert shared == findings(sf, eh, walked=False, relocatable=relocatable)
    return shared


def fields_for(starts: list[int], version: int = 2) -> list[int]:
    """Start fields that a relocatable object's field-relative reading puts at `starts`."""
    return [s - SF_VMA - C.HEADER_SIZE - i * C.FDE_SIZE[version] for i, s in enumerate(starts)]


def counting(monkeypatch, name: str) -> list[int]:
    """The FDE indexes _SectionPass.`name` is called with."""
    seen: list[int] = []
    real = getattr(_SectionPass, name)

    def spy(self, i, *args):  # type: ignore[no-untyped-def]
        seen.append(i)
        return real(self, i, *args)

    monkeypatch.setattr(_SectionPass, name, spy)
    return seen


ERROR, WARNING, INFO = 2, 1, 0
NO_EH = "semantic-no-eh-frame-fde"


def _uncovered(i: int, start: int, size: int) -> tuple:
    return (NO_EH, WARNING, i, start, None, None,
            f"[{start:#x}, {start + size:#x}) of this function is covered by no .eh_frame FDE")


@pytest.mark.parametrize("relocatable", [False, True])
def test_decoded_block_against_one_eh_fde(monkeypatch, relocatable: bool) -> None:
    """FDE 1's block has a byte after its FREs: the decoder reads it, and it is compared
    with the one .eh_frame FDE around it, which it covers only in part; FDE 2 (also
    decoded) overlaps none."""
    starts = [0x1000, 0x2008, 0x5000]
    sf = section([(0x1000, 0x10, [(0, 8)]), (0x2008, 0x10, [(0, 16), (4, 24)]),
                  (0x5000, 0x10, [(0, 8)])], gaps={1: 1, 2: 2},
                 fields=fields_for(starts) if relocatable else None)
    eh = eh_frame([(0x1000, 0x10, b""), (0x2000, 0x20, cfa_rows([(8, 16), (0x10, 24)]))])
    single = counting(monkeypatch, "on_decoded_single")
    decoded = counting(monkeypatch, "on_decoded")
    assert findings(sf, eh, walked=True, relocatable=relocatable) == [
        ("semantic-cfa-mismatch", ERROR, 1, 0x2008, 1, 0x200c,
         "CFA differs from .eh_frame at 1 PC range, 4 bytes; first [0x200c, 0x2010): "
         "SFrame rsp+24, .eh_frame rsp+16"),
        _uncovered(2, 0x5000, 0x10),
        ("semantic-no-sframe-fde", WARNING, None, None, None, None,
         "code in .text [0x2000, 0x2020) (.eh_frame+0x38): only 16 of its 32 bytes are "
         "covered by SFrame FDEs")]
    assert (single, decoded) == ([1], [])  # FDE 2: in a run nothing overlaps
    shared = findings(sf, eh, walked=True, relocatable=relocatable)
    assert findings(sf, eh, walked=False, relocatable=relocatable) == shared
    assert decoded == [1, 2]


@pytest.mark.parametrize("relocatable", [False, True])
def test_decoded_block_against_two_eh_fdes(monkeypatch, relocatable: bool) -> None:
    """A decoded FDE two .eh_frame FDEs cover (no single one: the general overlap search),
    its second FRE late: the CFA differs where the second .eh_frame FDE begins."""
    starts = [0x1000, 0x3000]
    sf = section([(0x1000, 0x10, [(0, 8)]), (0x3000, 0x20, [(0, 8), (0x14, 16)])],
                 gaps={1: 3}, fields=fields_for(starts) if relocatable else None)
    eh = eh_frame([(0x1000, 0x10, b""), (0x3000, 0x10, b""),
                   (0x3010, 0x10, cfa_rows([(0, 16)]))])
    single = counting(monkeypatch, "on_decoded_single")
    decoded = counting(monkeypatch, "on_decoded")
    want = [("semantic-cfa-mismatch", ERROR, 1, 0x3000, 0, 0x3000,
             "CFA differs from .eh_frame at 1 PC range, 4 bytes; first [0x3010, 0x3014): "
             "SFrame rsp+8, .eh_frame rsp+16")]
    assert findings(sf, eh, walked=True, relocatable=relocatable) == want
    assert (single, decoded) == ([1], [1])
    assert findings(sf, eh, walked=False, relocatable=relocatable) == want


def test_decoded_block_partly_outside_its_eh_fde(monkeypatch) -> None:
    """A decoded FDE starting before the one .eh_frame FDE it meets: the part before is
    reported, and only the bytes inside count as covered."""
    sf = section([(0x1000, 0x10, [(0, 8)]), (0x1ff8, 0x10, [(0, 8)])], gaps={1: 1})
    eh = eh_frame([(0x1000, 0x10, b""), (0x2000, 0x20, b"")])
    single = counting(monkeypatch, "on_decoded_single")
    assert both(sf, eh) == [
        (NO_EH, WARNING, 1, 0x1ff8, None, None,
         "[0x1ff8, 0x2000) of this function is covered by no .eh_frame FDE"),
        ("semantic-no-sframe-fde", WARNING, None, None, None, None,
         "code in .text [0x2000, 0x2020) (.eh_frame+0x38): only 8 of its 32 bytes are "
         "covered by SFrame FDEs")]
    assert single == [1]


@pytest.mark.parametrize("version", [2, 3])
def test_token_block_found_by_the_overlap_search(monkeypatch, version: int) -> None:
    """The .eh_frame FDE starting last at or before the FDE ends before it, and the next
    one starts inside it: not decided in bulk, the overlap search finds that one alone,
    and the FDE's raw FRE tokens go to the settle shortcut (which leaves it to the exact
    comparison: the first bytes are not covered)."""
    sf = section([(0x1009, 0x17, [(0, 8)])], version=version)
    eh = eh_frame([(0x1000, 0x8, b""), (0x1010, 0x10, b"")])
    tokens = counting(monkeypatch, "on_tokens")
    assert both(sf, eh) == [
        (NO_EH, WARNING, 0, 0x1009, None, None,
         "[0x1009, 0x1010) of this function is covered by no .eh_frame FDE"),
        ("semantic-no-sframe-fde", INFO, None, None, None, None,
         "code in .text [0x1000, 0x1008) (.eh_frame+0x18) has no SFrame FDE")]
    assert tokens == [0, 0]  # the shared walk's, then the reference's


SIZES = [0x10, 0x10, 0, 0x10, 0, 0x10, 0x10, 0, 0x10]


def test_uncovered_run_counts_past_the_cap(monkeypatch) -> None:
    """Nine FDEs no .eh_frame FDE overlaps, three of them empty (no finding), the cap at
    two: two shown, and the four others with code counted, whichever FDE reaches the cap
    and wherever the empty ones lie."""
    monkeypatch.setattr(context, "MAX_PER_RULE", 2)
    fdes = [(0x1000 + 0x100 * i, n, [(0, 8)]) for i, n in enumerate(SIZES)]
    sf = section(fdes)
    eh = eh_frame([(0x9000, 0x10, b"")])
    assert both(sf, eh) == [
        _uncovered(0, 0x1000, 0x10), _uncovered(1, 0x1100, 0x10),
        ("semantic-no-sframe-fde", INFO, None, None, None, None,
         "code in .text [0x9000, 0x9010) (.eh_frame+0x18) has no SFrame FDE"),
        (NO_EH, WARNING, None, None, None, None, "4 more findings of this rule not shown")]


def test_uncovered_run_skips_empty_fdes(monkeypatch) -> None:
    """An empty FDE inside a run nothing overlaps is skipped, not the end of the run."""
    sf = section([(0x1000, 0, [(0, 8)]), (0x1000, 0x10, [(0, 8)]), (0x1100, 0x10, [(0, 8)]),
                  (0x2000, 0x10, [(0, 8)])])
    eh = eh_frame([(0x2000, 0x10, b"")])
    assert both(sf, eh) == [_uncovered(1, 0x1000, 0x10), _uncovered(2, 0x1100, 0x10)]


@pytest.mark.parametrize("relocatable", [False, True])
def test_no_eh_frame_fde_at_all(monkeypatch, relocatable: bool) -> None:
    """.eh_frame holds a CIE only: every FDE with code is uncovered, an empty first one is
    skipped, and a relocatable object's starts are read field-relative."""
    starts = [0x1000, 0x1000, 0x1100]
    sf = section([(0x1000, 0, [(0, 8)]), (0x1000, 0x10, [(0, 8)]), (0x1100, 0x20, [(0, 8)])],
                 fields=fields_for(starts) if relocatable else None)
    eh = eh_frame([])
    assert both(sf, eh, relocatable) == [_uncovered(1, 0x1000, 0x10),
                                         _uncovered(2, 0x1100, 0x20)]


def test_decoded_block_adds_to_the_coverage_before_it(monkeypatch) -> None:
    """Two FDEs cover one .eh_frame FDE between them, the second decoded: its bytes add to
    the first's (the .eh_frame FDE's last 16 bytes stay uncovered)."""
    sf = section([(0x2000, 0x10, [(0, 8)]), (0x2010, 0x10, [(0, 8)])], gaps={1: 1})
    eh = eh_frame([(0x2000, 0x30, b"")])
    single = counting(monkeypatch, "on_decoded_single")
    assert both(sf, eh) == [
        ("semantic-no-sframe-fde", WARNING, None, None, None, None,
         "code in .text [0x2000, 0x2030) (.eh_frame+0x18): only 32 of its 48 bytes are "
         "covered by SFrame FDEs")]
    assert single == [1]


ROWS = [(0, 8), (4, 16)]
PROGRAM = cfa_rows(ROWS[1:])  # the same instructions: one shared row list


def _known(monkeypatch) -> list[tuple[int, bool]]:
    seen: list[tuple[int, bool]] = []
    real = _SectionPass.known_single

    def spy(self, i, *args):  # type: ignore[no-untyped-def]
        got = real(self, i, *args)
        seen.append((i, got))
        return got

    monkeypatch.setattr(_SectionPass, "known_single", spy)
    return seen


def test_block_known_from_an_earlier_fde(monkeypatch) -> None:
    """FDE 2's FRE bytes and .eh_frame program are FDE 0's, which settled quiet: known
    without splitting it, its bytes still count as covered, after FDE 1's (32 of 64)."""
    sf = section([(0x1000, 0x10, ROWS), (0x2020, 0x10, [(0, 16)]), (0x2000, 0x10, ROWS)])
    eh = eh_frame([(0x1000, 0x10, PROGRAM), (0x2000, 0x40, PROGRAM)])
    known = _known(monkeypatch)
    assert both(sf, eh) == [
        ("semantic-no-sframe-fde", WARNING, None, None, None, None,
         "code in .text [0x2000, 0x2040) (.eh_frame+0x38): only 32 of its 64 bytes are "
         "covered by SFrame FDEs")]
    assert (2, True) in known


def test_pcmask_block_like_a_settled_pcinc_one_is_compared(monkeypatch) -> None:
    """A PCMASK FDE with a quiet PCINC FDE's FRE bytes, against the same .eh_frame program:
    its rows repeat every 16 bytes, so from the second block on they differ; the bytes
    alone must not settle it."""
    sf = section([(0x1000, 0x10, ROWS), (0x3000, 0x20, ROWS)], pcmask={1})
    eh = eh_frame([(0x1000, 0x10, PROGRAM), (0x3000, 0x20, PROGRAM)])
    known = _known(monkeypatch)
    assert both(sf, eh) == [
        ("semantic-cfa-mismatch", ERROR, 1, 0x3000, 0, 0x3000,
         "CFA differs from .eh_frame at 1 PC range, 4 bytes; first [0x3010, 0x3014): "
         "SFrame rsp+8, .eh_frame rsp+16")]
    assert (1, False) in known


def test_block_like_a_mismatched_one_is_compared(monkeypatch) -> None:
    """The same FRE bytes and .eh_frame program as FDE 0, which differed: FDE 1 differs
    too, and is reported (a cached verdict of "not quiet" settles nothing)."""
    bad = [(0, 8), (4, 24)]
    sf = section([(0x1000, 0x10, bad), (0x2000, 0x10, bad)])
    eh = eh_frame([(0x1000, 0x10, PROGRAM), (0x2000, 0x10, PROGRAM)])
    message = ("CFA differs from .eh_frame at 1 PC range, 12 bytes; first [{:#x}, {:#x}): "
               "SFrame rsp+24, .eh_frame rsp+16")
    assert both(sf, eh) == [
        ("semantic-cfa-mismatch", ERROR, 0, 0x1000, 1, 0x1004, message.format(0x1004, 0x1010)),
        ("semantic-cfa-mismatch", ERROR, 1, 0x2000, 1, 0x2004, message.format(0x2004, 0x2010))]


def test_block_like_a_settled_one_past_its_eh_fde(monkeypatch) -> None:
    """FDE 1 has FDE 0's FRE bytes and program but runs 8 bytes past its .eh_frame FDE:
    not settled by FDE 0's verdict, its uncovered tail is reported."""
    sf = section([(0x1000, 0x10, ROWS), (0x2000, 0x10, ROWS)])
    eh = eh_frame([(0x1000, 0x10, PROGRAM), (0x2000, 0x8, PROGRAM)])
    assert both(sf, eh) == [
        (NO_EH, WARNING, 1, 0x2000, None, None,
         "[0x2008, 0x2010) of this function is covered by no .eh_frame FDE")]


# A DEFAULT FRE (CFA = rsp+57, FP saved at CFA+8) whose two words read as FLEX say
# CFA = rsp+8 (control word 57: register 7, reg_p set) and no FP rule.
FP_AT_CFA_PLUS_8 = b"\x0e\x39" + b"\x11\x06\x7f"  # def_cfa_offset 57; offset_extended_sf r6, -1


def test_flex_block_like_a_settled_default_one_is_compared(monkeypatch) -> None:
    """v3: a FLEX FDE with a quiet DEFAULT FDE's FRE bytes and .eh_frame program reads
    them otherwise; the bytes alone must not settle it."""
    sf = section([(0x1000, 0x10, [(0, 57)]), (0x2000, 0x10, [(0, 57)])], version=3,
                 flex={1}, words=[8])
    eh = eh_frame([(0x1000, 0x10, FP_AT_CFA_PLUS_8), (0x2000, 0x10, FP_AT_CFA_PLUS_8)])
    known = _known(monkeypatch)
    first = "at 1 PC range, 16 bytes; first [0x2000, 0x2010): SFrame"
    assert both(sf, eh) == [
        ("semantic-cfa-mismatch", ERROR, 1, 0x2000, 0, 0x2000,
         f"CFA differs from .eh_frame {first} rsp+8, .eh_frame rsp+57"),
        ("semantic-fp-mismatch", ERROR, 1, 0x2000, 0, 0x2000,
         f"FP differs from .eh_frame {first} u (not saved), .eh_frame c+8")]
    assert (1, False) in known
