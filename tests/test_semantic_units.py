"""The cross-check on hand-built `.eh_frame` + SFrame pairs: every semantic rule, and the
invariant "the check is silent exactly when both sides say the same"."""

from __future__ import annotations

import struct

from hypothesis import given
from hypothesis import strategies as st

from sfcheck.elf.model import CfiView, ElfSFrameInfo, FuncSymbol, TextRange
from sfcheck.format import constants as C
from sfcheck.format.decode import decode_header
from sfcheck.format.encode import encode
from sfcheck.format.layout import build_section
from sfcheck.format.model import FDE, fde_info, make_fre
from sfcheck.result import Severity
from sfcheck.rules.semantic import cross_check
from sfcheck.walk.context import SectionContext

from helpers import uleb

EH_VMA = 0x100000


def _entry(body: bytes) -> bytes:
    body += b"\0" * (-(len(body) + 4) % 8)  # DW_CFA_nop padding
    return struct.pack("<I", len(body)) + body


# CIE "zR" (as GNU tools write; FDE pointers absolute 8-byte), code align 1, data align -8,
# RA column 16; initial rules CFA = rsp+8, RA at CFA-8.
CIE = _entry(struct.pack("<IB", 0, 1) + b"zR\0" + uleb(1) + b"\x78" + b"\x10"
             + uleb(1) + b"\x00" + b"\x0c\x07\x08" + b"\x90\x01")


def eh_fde(offset_in_section: int, start: int, size: int, instrs: bytes) -> bytes:
    cie_ptr = offset_in_section + 4  # distance from this field back to the CIE at 0
    return _entry(struct.pack("<IQQ", cie_ptr, start, size) + uleb(0) + instrs)


def eh_frame(fdes: list[tuple[int, int, bytes]]) -> bytes:
    out = bytearray(CIE)
    for start, size, instrs in fdes:
        out += eh_fde(len(out), start, size, instrs)
    return bytes(out + b"\0\0\0\0")


def cfa_rows(rows: list[tuple[int, int]]) -> bytes:
    """DW_CFA_advance_loc/def_cfa_offset for (pc offset, CFA offset) rows after the first."""
    out, at = bytearray(), 0
    for pc, off in rows:
        out += bytes([0x02, pc - at]) if pc > at else b""  # DW_CFA_advance_loc1
        out += b"\x0e" + uleb(off)  # DW_CFA_def_cfa_offset
        at = pc
    return bytes(out)


def sframe(fdes: list[tuple[int, int, list[tuple[int, int]]]], version: int = 2) -> bytes:
    built = [FDE(start=s, size=n, info=fde_info(C.FRE_TYPE_ADDR1),
                 fres=tuple(make_fre(pc, [off]) for pc, off in rows))
             for s, n, rows in fdes]
    return encode(build_section(version, C.ABI_AMD64_LE, built, flags=C.F_FDE_SORTED))


def run(sf: bytes, eh: bytes, symbols=()) -> list:
    view = CfiView(eh, EH_VMA, ((0, sf),), tuple(symbols),
                   (TextRange(".text", 0x1000, 0x100000),))
    info = ElfSFrameInfo("t", "ET_DYN", "EM_X86_64", 62, True, 64, (), (), (),
                         view.text_ranges, view)
    ctx = SectionContext("t", ".sframe", 0, sf)
    cross_check([ctx], [decode_header(sf)], info)
    ctx.finish()
    return ctx.findings


def rule_set(findings) -> set[str]:
    return {f.rule for f in findings}


ROWS = [(0, 8), (1, 16), (8, 8)]


def test_agreement_is_silent() -> None:
    sf = sframe([(0x1000, 0x10, ROWS)])
    eh = eh_frame([(0x1000, 0x10, cfa_rows(ROWS[1:]))])
    assert run(sf, eh) == []


def test_unevaluated_expression_is_reported_as_not_compared() -> None:
    sf = sframe([(0x1000, 0x10, ROWS)])
    expr = b"\x38"  # DW_OP_lit8: a constant CFA
    eh = eh_frame([(0x1000, 0x10, b"\x0f" + uleb(len(expr)) + expr)])
    got = run(sf, eh)
    assert rule_set(got) == {"semantic-not-compared"}
    assert got[0].severity == Severity.INFO


def test_work_bound_truncates() -> None:
    size = 0x20000  # more PCs under a CFA expression than the bound allows
    sf = sframe([(0x1000, size, [(0, 8)])])
    expr = b"\x77\x08"  # DW_OP_breg7 8: CFA = rsp+8, but as an expression
    eh = eh_frame([(0x1000, size, b"\x0f" + uleb(len(expr)) + expr)])
    assert "semantic-truncated" in rule_set(run(sf, eh))


def test_sframe_fde_without_eh_frame_fde() -> None:
    sf = sframe([(0x1000, 0x10, ROWS), (0x2000, 0x10, [(0, 8)])])
    eh = eh_frame([(0x1000, 0x10, cfa_rows(ROWS[1:]))])
    got = run(sf, eh)
    assert [(f.rule, f.location.fde, f.severity) for f in got] == [
        ("semantic-no-eh-frame-fde", 1, Severity.WARNING)]


def test_eh_frame_fde_without_sframe_fde_is_named() -> None:
    sf = sframe([(0x1000, 0x10, ROWS)])
    eh = eh_frame([(0x1000, 0x10, cfa_rows(ROWS[1:])), (0x3000, 0x20, b"")])
    got = run(sf, eh, [FuncSymbol(0x3000, 0x20, "helper")])
    assert [(f.rule, f.severity) for f in got] == [("semantic-no-sframe-fde", Severity.INFO)]
    assert "helper [0x3000, 0x3020)" in got[0].message


def test_partial_coverage_is_a_warning() -> None:
    sf = sframe([(0x1000, 0x10, ROWS)])
    eh = eh_frame([(0x1000, 0x20, cfa_rows(ROWS[1:]))])
    got = run(sf, eh)
    assert [(f.rule, f.severity) for f in got] == [("semantic-no-sframe-fde", Severity.WARNING)]
    assert "only 16 of its 32 bytes" in got[0].message


def test_ra_undefined_against_a_normal_row() -> None:
    eh = eh_frame([(0x1000, 0x10, b"\x07\x10")])  # DW_CFA_undefined r16
    # v3 can mark the outermost frame: not doing so is a plain error ...
    got = run(sframe([(0x1000, 0x10, [(0, 8)])], version=3), eh)
    assert [(f.rule, f.severity) for f in got] == [("semantic-ra-mismatch", Severity.ERROR)]
    assert "undefined (outermost frame)" in got[0].message
    # ... v1/v2 assemblers never did: the known defect, a warning.
    got = run(sframe([(0x1000, 0x10, [(0, 8)])], version=2), eh)
    assert [(f.rule, f.severity) for f in got] == [
        ("defect-outermost-not-marked", Severity.WARNING)]


rows_strategy = st.lists(st.tuples(st.integers(1, 30), st.sampled_from([8, 16, 24, 32, 160])),
                         min_size=0, max_size=8)


@given(rows_strategy, st.data())
def test_silent_exactly_when_both_sides_agree(steps, data) -> None:
    rows, pc = [(0, 8)], 0
    for advance, off in steps:
        pc += advance
        rows.append((pc, off))
    size = pc + 4
    eh = eh_frame([(0x1000, size, cfa_rows(rows[1:]))])
    assert run(sframe([(0x1000, size, rows)]), eh) == []
    # Change one row's CFA offset: exactly one CFA finding, at that row's range.
    k = data.draw(st.integers(0, len(rows) - 1))
    bad = list(rows)
    bad[k] = (rows[k][0], rows[k][1] + 8)
    got = run(sframe([(0x1000, size, bad)]), eh)
    assert rule_set(got) == {"semantic-cfa-mismatch"}
    end = rows[k + 1][0] if k + 1 < len(rows) else size
    assert f"first [{0x1000 + rows[k][0]:#x}, {0x1000 + end:#x})" in got[0].message


PLT = bytes([0x77, 8, 0x80, 0, 0x3F, 0x1A, 0x3B, 0x2A, 0x33, 0x24, 0x22])  # ld's .plt CFA


def plt_sframe(second: int, entries: int) -> bytes:
    fde = FDE(start=0x1000, size=16 * entries, info=fde_info(C.FRE_TYPE_ADDR1, pcmask=True),
              rep_size=16, fres=(make_fre(0, [8]), make_fre(second, [16])))
    return encode(build_section(2, C.ABI_AMD64_LE, [fde], flags=C.F_FDE_SORTED))


def test_large_plt_is_compared_in_full_and_wrong_rows_caught() -> None:
    """A PLT far larger than the per-PC budget: the periodic expression needs one period."""
    entries = 20000
    eh = eh_frame([(0x1000, 16 * entries, b"\x0f" + uleb(len(PLT)) + PLT)])
    assert run(plt_sframe(11, entries), eh) == []
    got = run(plt_sframe(10, entries), eh)
    assert rule_set(got) == {"semantic-cfa-mismatch"}
    assert "first [0x100a, 0x100b): SFrame rsp+16, .eh_frame rsp+8" in got[0].message


def test_mismatch_counts_runs_of_adjacent_intervals_once() -> None:
    """A range is a run of adjacent intervals with the same two rules, wherever it lies:
    the third run here once counted once per interval (4 ranges where 3 are)."""
    from sfcheck.format.fre_rules import RegRule
    from sfcheck.rules.semantic.catalog import Mismatch

    a, b, c = RegRule(7, 8, False), RegRule(6, 16, False), RegRule(7, 16, False)
    m = Mismatch("CFA", 0, 0x100, (0x100, 0x104), 0, a, c, 1, 4)
    m.add(0x104, 0x108, a, c)  # the first run goes on
    m.add(0x110, 0x114, a, c)  # a gap: a second run
    m.add(0x114, 0x118, b, c)  # adjacent, other rules: a third
    m.add(0x118, 0x11c, b, c)  # which goes on
    m.add(0x11c, 0x120, b, c)
    assert (m.first, m.ranges, m.nbytes) == ((0x100, 0x108), 3, 0x18)
