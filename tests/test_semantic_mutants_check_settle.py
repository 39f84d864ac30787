"""The settle shortcut (rules/semantic/settle.py) on a big-endian section: an aarch64-be
SFrame section against a big-endian .eh_frame, whose FRE start addresses and data words
are two bytes, read in the section's byte order. Each FDE's bytes read in the other order
would agree with .eh_frame, where the section's own order disagrees: the shortcut must not
settle it, and the finding is asserted whole (rule, FDE, PC, FRE, message) on both the
shared walk and the reference pass."""

from __future__ import annotations

import struct

from test_semantic_mutants_walk import ERROR, counting
from test_semantic_units import EH_VMA

from sfcheck.elf.model import CfiView, ElfSFrameInfo, TextRange
from sfcheck.format import constants as C
from sfcheck.format.decode import decode_header
from sfcheck.format.encode import encode
from sfcheck.format.layout import build_section
from sfcheck.format.model import FDE, fde_info, make_fre
from sfcheck.rules.semantic import cross_check
from sfcheck.walk.context import SectionContext

from helpers import sleb, uleb

SF_VMA = 0x800  # the .sframe section's address: starts count from it


def _entry(body: bytes) -> bytes:
    body += b"\0" * (-(len(body) + 4) % 8)  # DW_CFA_nop padding
    return struct.pack(">I", len(body)) + body


# CIE "zR" with absolute 8-byte pointers, code align 4, data align -8, RA column 30 (x30);
# initial rule CFA = sp (r31) + 0, x30 keeps its value (a leaf's entry).
CIE = _entry(struct.pack(">IB", 0, 1) + b"zR\0" + uleb(4) + sleb(-8) + uleb(30)
             + uleb(1) + b"\x00" + b"\x0c\x1f\x00")


def eh_frame(fdes: list[tuple[int, int, bytes]]) -> bytes:
    """A big-endian .eh_frame at test_semantic_units.EH_VMA, one FDE per (start, size,
    instructions)."""
    out = bytearray(CIE)
    for start, size, instrs in fdes:
        out += _entry(struct.pack(">IQQ", len(out) + 4, start, size) + uleb(0) + instrs)
    return bytes(out + b"\0\0\0\0")


def section(fdes: list[tuple[int, int, list[tuple[int, int]]]]) -> bytes:
    """A big-endian v2 aarch64 section of ADDR2 FDEs (start, size, [(FRE start, CFA offset
    from sp)])."""
    built = [FDE(start=s - SF_VMA, size=n, info=fde_info(C.FRE_TYPE_ADDR2),
                 fres=tuple(make_fre(pc, [off]) for pc, off in rows)) for s, n, rows in fdes]
    return encode(build_section(2, C.ABI_AARCH64_BE, built, big_endian=True,
                                flags=C.F_FDE_SORTED))


def findings(sf: bytes, eh: bytes, walked: bool) -> list[tuple]:
    """The cross-check's findings for a big-endian aarch64 file: (rule, severity, FDE,
    PC, FRE, FRE PC, message)."""
    text = (TextRange(".text", 0x1000, 0x100000),)
    view = CfiView(eh, EH_VMA, ((SF_VMA, sf),), (), text)
    info = ElfSFrameInfo("t", "ET_DYN", "EM_AARCH64", 183, False, 64, (), (), (), text, view)
    ctx = SectionContext("t", ".sframe", SF_VMA, sf, fres_walked=walked)
    cross_check([ctx], [decode_header(sf)], info)
    ctx.finish()
    return [(f.rule, f.severity.value, f.location.fde, f.location.pc, f.location.fre,
             f.location.fre_pc, f.message) for f in ctx.findings]


def both(sf: bytes, eh: bytes) -> list[tuple]:
    """The shared walk's findings, which must be the reference pass's."""
    shared = findings(sf, eh, walked=True)
    assert shared == findings(sf, eh, walked=False)
    return shared


def test_two_byte_data_word_in_big_endian_order(monkeypatch) -> None:
    """CFA = sp+0x1000 (bytes 10 00), .eh_frame says sp+0x10 (the bytes read little
    endian): compared exactly, it differs over the whole function."""
    sf = section([(0x1000, 0x10, [(0, 0x1000)])])
    eh = eh_frame([(0x1000, 0x10, b"\x0e" + uleb(0x10))])  # DW_CFA_def_cfa_offset 16
    exact = counting(monkeypatch, "exact")
    assert both(sf, eh) == [
        ("semantic-cfa-mismatch", ERROR, 0, 0x1000, 0, 0x1000,
         "CFA differs from .eh_frame at 1 PC range, 16 bytes; first [0x1000, 0x1010): "
         "SFrame sp+4096, .eh_frame sp+16")]
    assert exact == [0, 0]


def test_two_byte_fre_start_in_big_endian_order(monkeypatch) -> None:
    """The second FRE starts at 0x400 (bytes 04 00), .eh_frame's second row at 4 (the
    bytes read little endian): compared exactly, the CFA differs from 4 to 0x400."""
    sf = section([(0x1000, 0x800, [(0, 16), (0x400, 32)])])
    # DW_CFA_def_cfa_offset 16; DW_CFA_advance_loc 1 (4 bytes); DW_CFA_def_cfa_offset 32
    eh = eh_frame([(0x1000, 0x800, b"\x0e\x10\x41\x0e\x20")])
    exact = counting(monkeypatch, "exact")
    assert both(sf, eh) == [
        ("semantic-cfa-mismatch", ERROR, 0, 0x1000, 0, 0x1000,
         "CFA differs from .eh_frame at 1 PC range, 1020 bytes; first [0x1004, 0x1400): "
         "SFrame sp+16, .eh_frame sp+32")]
    assert exact == [0, 0]
