"""fast.Table and the regex walk, pinned where the equivalence tests cannot see a change.

Most fast-path slips only send more FDEs to the reference path: the findings stay the same
and only the time grows, so comparing findings misses them. Here each chunk's columns and
verdicts are compared with what the decoder reads (a clean table: only the FDEs the patterns
cannot walk go to the reference path), on both byte orders and across chunk edges; and the
two slips that do lose a finding are shown by the finding (tests/mutation.py's walk group).
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from sfcheck.format import FDE, build_section, encode, fde_info, make_fre
from sfcheck.format import constants as C
from sfcheck.format.decode import Decoder
from sfcheck.rules import fre as fre_rules
from sfcheck.walk import fast
from sfcheck.walk import section as section_mod
from sfcheck.walk.context import SectionContext
from sfcheck.walk.fast import Table, TableSource
from sfcheck.walk.section import check_section

from synth import Layout, Shape, plan, synth_fdes

BE, LE = C.ABI_AARCH64_BE, C.ABI_AMD64_LE



@pytest.fixture
def regex_walk(monkeypatch) -> None:
    monkeypatch.setattr(fast, "FREWALK", None)


def _clean(version: int, abi: int) -> tuple[bytes, Layout]:
    """24 realistic functions (synth's shapes: ADDR1 and ADDR2 FREs, the PLT's PCMASK FDE,
    v3 FLEX ones) and one ADDR4 function after them: a section with no FDE finding."""
    lay = plan(24, version, seed=version)
    big = Shape(0x20000, fde_info(C.FRE_TYPE_ADDR4), (make_fre(0, (16,)),
                                                       make_fre(0x10010, (24,))))
    end = lay.text_end + big.size
    lay = Layout(version, (end + 0xFFFF) & ~0xFFF, lay.text_start, end,
                 [*lay.addrs, lay.text_end], [*lay.shapes, big])
    flags = C.F_FDE_SORTED | (C.F_FDE_FUNC_START_PCREL if version > 1 else 0)
    return encode(build_section(version, abi, synth_fdes(lay), flags=flags)), lay


def _findings(data: bytes, fast_path: bool = True) -> list[tuple]:
    ctx = SectionContext("x", ".sframe", 0, data)
    check_section(ctx, fast=fast_path)
    ctx.finish()
    return [(f.rule, f.location.fde, f.location.offset, f.location.pc, f.location.fre)
            for f in ctx.findings]


def _chunks(n: int, chunk: int) -> Iterator[tuple[int, int]]:
    for a in range(0, n, chunk):
        yield a, min(n, a + chunk)


@pytest.mark.parametrize("chunk", [7, 25])
@pytest.mark.parametrize("abi", [LE, BE], ids=["le", "be"])
@pytest.mark.parametrize("version", [1, 2, 3])
def test_table_chunks_read_like_the_decoder(version: int, abi: int, chunk: int,
                                            walk: str) -> None:
    """Each chunk's columns are the decoder's values, the last block of a chunk ends where
    the next chunk's first begins (read from that FDE's record, in the section's byte
    order), and only the FDEs the patterns cannot walk (PCMASK, FLEX) are left to the
    reference path."""
    data, lay = _clean(version, abi)
    assert _findings(data, fast_path=False) == (
        [("header-version-obsolete", None, 2, None, None)] if version == 1 else [])
    dec = Decoder(data)
    h = dec.header
    n = h.num_fdes
    fdes = [dec.fde(i, with_fres=False) for i in range(n)]
    firsts = [h.fres_start + f.fre_off for f in fdes]
    walkable = [not f.info & C.FDE_INFO_PCMASK
                and f.info2 & C.FDE_INFO2_TYPE == C.FDE_TYPE_DEFAULT for f in fdes]
    assert walkable.count(False) >= 1 + (version == 3)  # the PLT (and a FLEX function)
    source = TableSource(data, h, n, dec.fre_limit, lay.sframe_vma, h.pcrel, True)
    prev_pc, prev_oob = None, False
    for a, b in _chunks(n, chunk):
        tab = Table(source, a, b, prev_pc, prev_oob)  # blocks in table order: no block_ends
        assert tab.n == b - a
        assert tab.pcs == lay.addrs[a:b]
        assert list(tab.size_col) == [s.size for s in lay.shapes[a:b]]
        assert tab.fre_counts == [len(s.fres) for s in lay.shapes[a:b]]
        assert tab.firsts == firsts[a:b]
        assert list(tab.ends) == [*firsts, dec.fre_limit][a + 1:b + 1]
        assert list(tab.bad) == [int(not ok) for ok in walkable[a:b]]
        assert not tab.prev_out_of_bounds
        prev_pc, prev_oob = tab.pcs[-1], tab.prev_out_of_bounds


def _addr1(start: int, size: int = 0x20) -> FDE:
    return FDE(start=start, size=size, info=fde_info(C.FRE_TYPE_ADDR1),
               fres=(make_fre(0, (8,)), make_fre(4, (16,))))


@pytest.mark.parametrize("chunk", [10, 11, 20], ids=["last-of-chunk", "next-to-last", "one"])
def test_unreadable_fde_sends_the_next_one_to_the_reference_path(chunk: int, walk: str,
                                                                 monkeypatch) -> None:
    """v3 FDE 9's attribute record lies past the FRE data: the reference path reports it and,
    the FDE not decoded, compares FDE 10 with FDE 8's start: 0x200 below 0x9000 is
    fde-unsorted. The fast path must leave FDE 10 to the reference path whether FDE
    9 ends a chunk, is next to last in one, or sits inside the only one."""
    monkeypatch.setattr(section_mod, "CHUNK", chunk)
    starts = [0x1000 + 0x40 * k for k in range(20)]
    starts[8:11] = [0x9000, 0x100, 0x200]  # FDE 9's start would not be out of order at 10
    sec = build_section(3, LE, [_addr1(s) for s in starts], flags=C.F_FDE_SORTED)
    data = bytearray(encode(sec))
    h = sec.header
    field = h.fdes_start + 9 * h.fde_size + 12  # FDE 9's sfdi_func_start_fre_off
    data[field:field + 4] = (0xFFFFFF00).to_bytes(4, "little")
    reference = _findings(bytes(data), fast_path=False)
    assert reference == [
        ("layout-fde-fres-bounds", 9, field, None, None),
        ("fde-unsorted", 10, h.fdes_start + 10 * h.fde_size, 0x200, None)]
    assert _findings(bytes(data)) == reference


@pytest.mark.parametrize("version", [2, 3])
def test_fre_starts_read_in_big_endian_order(version: int, regex_walk: None) -> None:
    """ADDR2 starts 0, 0x101, 0x2 in a big-endian section: 0x2 after 0x101 is
    fre-start-order. Read in the wrong order they would be 0, 0x101, 0x200, increasing and
    below the size 0x400, and the regex walk would accept the FDE."""
    fdes = [_addr1(0x1000 + 0x40 * k) for k in range(20)]
    fdes[5] = FDE(start=0x1000 + 0x40 * 5, size=0x400, info=fde_info(C.FRE_TYPE_ADDR2),
                  fres=(make_fre(0, (16,)), make_fre(0x101, (16,)), make_fre(2, (16,))))
    for k in range(6, 20):
        fdes[k] = _addr1(0x2000 + 0x40 * k)
    sec = build_section(version, BE, fdes)
    data = encode(sec)
    reference = _findings(data, fast_path=False)
    third = Decoder(data).fde(5).fres[2].offset
    assert [f for f in reference if f[0] == "fre-start-order"] == [
        ("fre-start-order", 5, third, sec.header.func_start(5, fdes[5].start), 2)]
    assert _findings(data) == reference


@pytest.mark.parametrize("abi", [LE, BE], ids=["le", "be"])
@pytest.mark.parametrize("version", [1, 2, 3])
def test_clean_starts_are_accepted_in_bulk(version: int, abi: int, regex_walk: None,
                                           monkeypatch) -> None:
    """The regex walk checks the FRE starts of a whole table at once (fre.starts_ok mapped
    over columns); it asks fre.starts_ok FDE by FDE only when that test fails, to find the
    FDEs at fault. A clean table never gets there, a table with one bad FDE does, for it."""
    asked: list[tuple[list[int], int]] = []
    starts_ok = fre_rules.starts_ok

    def spy(starts, size: int) -> bool:
        asked.append((list(starts), size))
        return starts_ok(starts, size)

    monkeypatch.setattr(fre_rules, "starts_ok", spy)
    data, lay = _clean(version, abi)
    dec = Decoder(data)
    h = dec.header
    source = TableSource(data, h, h.num_fdes, dec.fre_limit, lay.sframe_vma, h.pcrel, True)
    clean = Table(source, 0, h.num_fdes, None, False).bad
    assert asked == []
    pcmask = [i for i, s in enumerate(lay.shapes) if s.info & C.FDE_INFO_PCMASK]
    assert pcmask and all(clean[i] for i in pcmask)
    # an ADDR1 function's second FRE start set to its first's (0): fre-start-order
    k = next(i for i, s in enumerate(lay.shapes)
             if s.info == fde_info(C.FRE_TYPE_ADDR1) and len(s.fres) > 1)
    second = dec.fde(k).fres[1].offset
    broken = bytearray(data)
    broken[second] = 0
    bad = Table(TableSource(bytes(broken), h, h.num_fdes, dec.fre_limit, lay.sframe_vma,
                            h.pcrel, True), 0, h.num_fdes, None, False).bad
    expect = bytearray(clean)
    expect[k] = 1
    assert bad == expect
    assert ([0, 0], lay.shapes[k].size) in [(s[:2], z) for s, z in asked]
