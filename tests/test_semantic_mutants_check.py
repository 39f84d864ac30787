"""The cross-check's driver (rules/semantic/check.py: cross_check, _cross_check and
_SectionPass.run) on hand-built files: no CFI view, no .eh_frame, an .eh_frame that cannot
be decoded, a 32-bit one, .eh_frame FDEs named by the text section holding them (or none),
the per-section work bound at its value and one past, several SFrame sections (one with
no header, one whose walk stops), a broken FRE block the reference walk stops at, and FRE
blocks out of table order. Each case asserts the findings a user sees: rule, severity,
section, FDE index, PC and message."""

from __future__ import annotations

import gc
import struct

import pytest
from test_semantic_mutants_walk import ERROR, INFO, WARNING, _uncovered, counting
from test_semantic_units import CIE, EH_VMA, _entry, cfa_rows, eh_frame

from sfcheck.elf.model import CfiView, ElfSFrameInfo, TextRange
from sfcheck.errors import DecodeError
from sfcheck.format import constants as C
from sfcheck.format.decode import Decoder, decode_header
from sfcheck.format.encode import encode
from sfcheck.format.fde_table import block_ends
from sfcheck.format.layout import build_section
from sfcheck.format.model import FDE, fde_info, make_fre
from sfcheck.rules.semantic import check as check_mod
from sfcheck.rules.semantic import cross_check
from sfcheck.walk.context import SectionContext

from helpers import uleb
from strategies import permute_blocks

NO_EH_FRAME = "semantic-no-eh-frame"
NO_SF = "semantic-no-sframe-fde"
CFA = "semantic-cfa-mismatch"
TRUNCATED = "semantic-truncated"
TEXT = (TextRange(".text", 0x1000, 0x100000),)

Rows = list[tuple[int, int]]  # (FRE start, CFA offset from rsp)


def sframe(fdes: list[tuple[int, int, Rows]], vma: int = 0) -> bytes:
    """A v2 amd64 section of ADDR1 FDEs (start, size, rows) at address `vma`."""
    built = [FDE(start=s - vma, size=n, info=fde_info(C.FRE_TYPE_ADDR1),
                 fres=tuple(make_fre(pc, [off]) for pc, off in rows)) for s, n, rows in fdes]
    return encode(build_section(2, C.ABI_AMD64_LE, built, flags=C.F_FDE_SORTED))


def check(sections: list[tuple[int, bytes]], eh: bytes | None, *, text=TEXT, elfclass=64,
          error: str | None = None, walked: bool = False, headers=None,
          ends: list | None = None) -> list[tuple]:
    """cross_check over SFrame sections (address, bytes): every finding as (section index,
    rule, severity, FDE, PC, message). `walked`: the structure check walked every FRE
    block (SectionContext.fres_walked), `ends` its block_ends per section."""
    view = CfiView(eh, EH_VMA, tuple(sections), (), text, error)
    info = ElfSFrameInfo("t", "ET_DYN", "EM_X86_64", 62, True, elfclass, (), (), (), text, view)
    ctxs = [SectionContext("t", ".sframe", vma, sf, fres_walked=walked,
                           block_ends=ends[k] if ends else None)
            for k, (vma, sf) in enumerate(sections)]
    if headers is None:
        headers = [decode_header(sf) for _vma, sf in sections]
    cross_check(ctxs, headers, info)
    out = []
    for k, ctx in enumerate(ctxs):
        ctx.finish()
        out += [(k, f.rule, f.severity.value, f.location.fde, f.location.pc, f.message)
                for f in ctx.findings]
    return out


def uncovered(k: int, i: int, start: int, size: int) -> tuple:
    u = _uncovered(i, start, size)
    return (k, *u[:4], u[6])


ONE = sframe([(0x1000, 0x10, [(0, 8)])])


@pytest.mark.parametrize("was", [True, False])
def test_garbage_collector_state_is_restored(monkeypatch, was: bool) -> None:
    """The cyclic collector is off during the check and as it was afterwards."""
    eh = eh_frame([(0x1000, 0x10, b"")])
    seen = []
    real = check_mod._cross_check

    def spy(*args):  # type: ignore[no-untyped-def]
        seen.append(gc.isenabled())
        return real(*args)

    monkeypatch.setattr(check_mod, "_cross_check", spy)
    before = gc.isenabled()
    try:
        (gc.enable if was else gc.disable)()
        assert check([(0, ONE)], eh) == []
        assert (seen, gc.isenabled()) == ([False], was)
    finally:
        (gc.enable if before else gc.disable)()


def test_no_cfi_view_and_no_sections_report_nothing() -> None:
    """No CFI view (the file was loaded without it): nothing, even with a section; a view
    but no section with bytes: nothing, and no .eh_frame finding either."""
    ctx = SectionContext("t", ".sframe", 0, ONE)
    info = ElfSFrameInfo("t", "ET_DYN", "EM_X86_64", 62, True, 64, (), (), (), TEXT, None)
    cross_check([ctx], [decode_header(ONE)], info)
    ctx.finish()
    assert ctx.findings == []
    view = CfiView(None, 0, (), (), TEXT)
    cross_check([], [], ElfSFrameInfo("t", "ET_DYN", "EM_X86_64", 62, True, 64, (), (), (),
                                      TEXT, view))


@pytest.mark.parametrize("error", [None, ".eh_frame: section runs past the file"])
def test_no_eh_frame_section(error: str | None) -> None:
    """No .eh_frame: one note on the first section, with why the loader gave up if it did."""
    msg = "no .eh_frame section: SFrame not compared with DWARF CFI"
    assert check([(0, ONE), (0x800, ONE)], None, error=error) == [
        (0, NO_EH_FRAME, INFO, None, None, msg + (f" ({error})" if error else ""))]


def test_undecodable_eh_frame_is_a_warning() -> None:
    """An FDE (at .eh_frame+0x18) whose CIE pointer, 0x1000 back from its field at 0x1c,
    leads outside .eh_frame: a warning on the first section saying why, nothing compared."""
    bad = CIE + _entry(struct.pack("<IQQ", 0x1000, 0x1000, 0x10) + uleb(0)) + b"\0" * 4
    assert check([(0, ONE)], bad) == [
        (0, NO_EH_FRAME, WARNING, None, None, ".eh_frame cannot be decoded: FDE's CIE pointer "
         "leads outside the section (-0xfe4) (at .eh_frame+0x1c)")]


def _eh_frame32(fdes: list[tuple[int, int, bytes]]) -> bytes:
    """eh_frame() with 4-byte pointers (an ELFCLASS32 file's absolute addresses)."""
    out = bytearray(CIE)
    for start, size, instrs in fdes:
        out += _entry(struct.pack("<III", len(out) + 4, start, size) + uleb(0) + instrs)
    return bytes(out + b"\0\0\0\0")


def test_32_bit_eh_frame_pointers_are_4_bytes() -> None:
    """ELFCLASS32: .eh_frame addresses are 4 bytes. The first FDE agrees with SFrame, the
    second's CFA differs at 4, the third has no SFrame FDE."""
    sf = sframe([(0x1000, 0x10, [(0, 8)]), (0x2000, 0x10, [(0, 8), (4, 16)])])
    eh = _eh_frame32([(0x1000, 0x10, b""), (0x2000, 0x10, cfa_rows([(4, 24)])),
                      (0x3000, 0x20, b"")])
    assert check([(0, sf)], eh, elfclass=32) == [
        (0, CFA, ERROR, 1, 0x2000, "CFA differs from .eh_frame at 1 PC range, 12 bytes; "
         "first [0x2004, 0x2010): SFrame rsp+16, .eh_frame rsp+24"),
        (0, NO_SF, INFO, None, None,
         "code in .text [0x3000, 0x3020) (.eh_frame+0x48) has no SFrame FDE")]


def test_uncovered_eh_fdes_are_named_by_their_text_section() -> None:
    """.eh_frame FDEs no SFrame FDE covers, named by the text section holding their start:
    the first section's first byte, its one-past-last byte (between sections: unnamed),
    the second's last byte, its one-past-last (past every section) and below the first."""
    text = (TextRange(".text", 0x1000, 0x2000), TextRange(".text.b", 0x3000, 0x4000))
    eh = eh_frame([(0x800, 0x10, b""), (0x1000, 0x10, b""), (0x2000, 0x10, b""),
                   (0x3fff, 1, b""), (0x4000, 0x10, b"")])
    sf = sframe([(0x5000, 0x10, [(0, 8)])])
    got = check([(0, sf)], eh, text=text)
    assert got[0] == uncovered(0, 0, 0x5000, 0x10)
    assert [g[5] for g in got[1:]] == [
        "an unnamed function [0x800, 0x810) (.eh_frame+0x18) has no SFrame FDE",
        "code in .text [0x1000, 0x1010) (.eh_frame+0x38) has no SFrame FDE",
        "an unnamed function [0x2000, 0x2010) (.eh_frame+0x58) has no SFrame FDE",
        "code in .text.b [0x3fff, 0x4000) (.eh_frame+0x78) has no SFrame FDE",
        "an unnamed function [0x4000, 0x4010) (.eh_frame+0x98) has no SFrame FDE"]


# DW_CFA_def_cfa_expression "DW_OP_breg7 8; DW_OP_deref": a CFA read at no PC, so each
# byte of the row counts one interval against the section's bound (compare._windows).
DEREF = b"\x0f" + uleb(3) + b"\x77\x08\x06"
SHOWN = "SFrame rsp+8, .eh_frame *(rsp+8)"


def _bound(sf: bytes, eh: bytes) -> int:
    """The section's interval bound: 64 per byte of the SFrame section and .eh_frame, and
    4096 more."""
    return 64 * (len(sf) + len(eh)) + 4096


def _deref_case(size: int) -> tuple[bytes, bytes]:
    return sframe([(0x1000, size, [(0, 8)])]), eh_frame([(0x1000, size, DEREF)])


@pytest.mark.parametrize("walked", [False, True])
@pytest.mark.parametrize("past", [0, 1])
def test_work_bound_at_its_value_and_one_past(walked: bool, past: int) -> None:
    """An FDE costing exactly the bound is compared in full; one byte more and the
    cross-check stops there, saying so at the FDE."""
    probe = _deref_case(0x1000)
    size = _bound(*probe) + past
    sf, eh = _deref_case(size)
    assert (len(sf), len(eh)) == tuple(map(len, probe))  # the size field's width is fixed
    mismatch = (0, CFA, ERROR, 0, 0x1000, f"CFA differs from .eh_frame at 1 PC range, "
                f"{size} bytes; first [0x1000, {0x1000 + size:#x}): {SHOWN}")
    stop = (0, TRUNCATED, INFO, 0, 0x1000, "cross-check stopped at FDE 0 (work bound reached)")
    assert check([(0, sf)], eh, walked=walked) == ([stop] if past else [mismatch])


def _two_sections(first: bytes, first_eh: list) -> tuple[list, bytes]:
    """`first` at 0 and a second section at 0x800 whose one FDE (at 0x80000) no .eh_frame
    FDE covers, with `first_eh` and an .eh_frame FDE at 0x90000 no SFrame FDE covers."""
    second = sframe([(0x80000, 0x10, [(0, 8)])], vma=0x800)
    return [(0, first), (0x800, second)], eh_frame([*first_eh, (0x90000, 0x10, b"")])


LAST = (0, NO_SF, INFO, None, None,
        "code in .text [0x90000, 0x90010) (.eh_frame+0x38) has no SFrame FDE")


@pytest.mark.parametrize("walked", [False, True])
def test_section_after_a_stopped_one_is_checked(walked: bool) -> None:
    """The first section's walk stops at the work bound: the second is still compared, and
    .eh_frame FDEs are still looked up."""
    sf = _deref_case(0x1000)[0]
    size = _bound(sf, _two_sections(sf, [(0x1000, 0x1000, DEREF)])[1]) + 1
    sections, eh = _two_sections(_deref_case(size)[0], [(0x1000, size, DEREF)])
    assert check(sections, eh, walked=walked) == [
        (0, TRUNCATED, INFO, 0, 0x1000, "cross-check stopped at FDE 0 (work bound reached)"),
        LAST, uncovered(1, 0, 0x80000, 0x10)]


def test_section_without_header_is_skipped_not_the_rest() -> None:
    """A section whose header could not be read (None) is passed over: the next one is
    compared."""
    sections, eh = _two_sections(b"\0" * 8, [])
    assert check(sections, eh, headers=[None, decode_header(sections[1][1])]) == [
        (0, NO_SF, INFO, None, None,
         "code in .text [0x90000, 0x90010) (.eh_frame+0x18) has no SFrame FDE"),
        uncovered(1, 0, 0x80000, 0x10)]


def _with_fre_off(sf: bytes, i: int, off: int) -> bytes:
    """`sf` with FDE i's FRE offset field set to `off`."""
    h = decode_header(sf)
    out = bytearray(sf)
    wide = 8 if h.version == C.VERSION_3 else 4
    struct.pack_into("<I", out, h.fdes_start + i * h.fde_size + wide + 4, off)
    return bytes(out)


# FDE 0 and 3 overlap no .eh_frame FDE, 1 agrees with its own; 2's FRE block lies past
# the FRE data (the decoder refuses it) and overlaps nothing.
BROKEN = _with_fre_off(sframe([(0x1000, 0x10, [(0, 8)]), (0x2000, 0x10, [(0, 8)]),
                               (0x3000, 0x10, [(0, 8)]), (0x4000, 0x10, [(0, 8)])]),
                       2, 0x1000)


def test_unwalked_section_stops_at_a_broken_block() -> None:
    """The structure check did not walk the blocks cleanly (fres_walked off): the reference
    walk runs, and stops at FDE 2's broken block (the structural rules say why), so FDE 3
    gets no finding."""
    eh = eh_frame([(0x2000, 0x10, b"")])
    with pytest.raises(DecodeError):
        Decoder(BROKEN).fde(2)
    assert check([(0, BROKEN)], eh, walked=False) == [uncovered(0, 0, 0x1000, 0x10)]
    # Same bytes, walked cleanly (as if): the shared walk skips what nothing overlaps.
    assert check([(0, BROKEN)], eh, walked=True) == [
        uncovered(0, 0, 0x1000, 0x10), uncovered(0, 2, 0x3000, 0x10),
        uncovered(0, 3, 0x4000, 0x10)]


# Three FDEs, each against its own .eh_frame FDE: 0 and 2 agree, 1's CFA differs from 4.
SORTED = sframe([(0x1000, 0x10, [(0, 8), (4, 16)]), (0x2000, 0x10, [(0, 8), (4, 16)]),
                 (0x3000, 0x10, [(0, 8), (4, 16), (8, 8)])])
SORTED_EH = eh_frame([(0x1000, 0x10, cfa_rows([(4, 16)])), (0x2000, 0x10, cfa_rows([(4, 24)])),
                      (0x3000, 0x10, cfa_rows([(4, 16), (8, 8)]))])


@pytest.mark.parametrize("walked", [False, True])
def test_blocks_out_of_table_order_are_walked_as_tokens(monkeypatch, walked: bool) -> None:
    """FRE blocks laid out in another order than the FDEs (gcc's .cold parts): each block
    ends where the next by offset begins (the structure check's block_ends, or found
    again), so every block is walked as its FREs, none sent to the decoder; the findings
    are those of the table-order section."""
    data = permute_blocks(SORTED, seed=1)
    assert data is not None
    ends = block_ends(data, decode_header(data), 3, Decoder(data).fre_limit)
    assert ends is not None  # not table order
    decoded = [counting(monkeypatch, name) for name in ("on_decoded", "on_decoded_single")]
    want = [(0, CFA, ERROR, 1, 0x2000, "CFA differs from .eh_frame at 1 PC range, 12 bytes; "
             "first [0x2004, 0x2010): SFrame rsp+16, .eh_frame rsp+24")]
    assert check([(0, data)], SORTED_EH, walked=walked, ends=[ends] if walked else None) == want
    assert decoded == [[], []]
    assert check([(0, SORTED)], SORTED_EH, walked=walked) == want
