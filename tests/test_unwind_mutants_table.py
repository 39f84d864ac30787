"""SFrameTable and TableSet as a caller sees them: every Miss compared whole (kind, message,
FDE index, offset), the table's text ranges and function starts, and which of two
overlapping sections a PC is found in. Written against the unwind group's mutation
survivors (issue 29); each test names the mistakes it catches."""

from __future__ import annotations

import pytest

from sfcheck.format import constants as C
from sfcheck.format import decode, make_fre
from sfcheck.unwind import SFrameTable, TableSet
from sfcheck.unwind.table import Miss, Row

from unwind_build import SECTION_VMA, Func, section_bytes

FRE16 = make_fre(0, (16,))


def _empty_section(version: int = 3) -> bytes:
    return section_bytes(version, C.ABI_AMD64_LE, [])


def test_default_vma_is_zero() -> None:
    # Built for a section at address 0: without vma=, the table must place its
    # functions there (a default of 1 would shift every function start by one).
    data = section_bytes(3, C.ABI_AMD64_LE, [Func(0x1000, 0x40, [FRE16])], vma=0)
    tab = SFrameTable(data)
    assert (tab.vma, tab.bias, tab.name) == (0, 0, ".sframe")
    assert tab.func_starts == [0x1000]
    assert tab.text_ranges == [(0x1000, 0x1040)]
    row = tab.lookup(0x1010)
    assert isinstance(row, Row) and (row.fde_index, row.fre_index, row.func_start) == (
        0, 0, 0x1000)
    assert tab.lookup(0xFFF) == Miss("no-fde", ".sframe: no FDE covers 0xfff")


@pytest.mark.parametrize("version", [1, 2, 3])
def test_section_without_fdes(version: int) -> None:
    tab = SFrameTable(_empty_section(version), vma=SECTION_VMA, name=".sframe.e")
    assert tab.error is None
    assert tab.func_starts == [] and tab.text_ranges == []
    assert tab.lookup(0x1000) == Miss("no-fde", ".sframe.e: no FDE covers 0x1000")
    assert tab.lookup(0) == Miss("no-fde", ".sframe.e: no FDE covers 0x0")


def test_section_that_does_not_decode_has_no_function_starts() -> None:
    tab = SFrameTable(bytes(28), vma=SECTION_VMA)
    assert tab.error is not None
    assert tab.func_starts == [] and tab.text_ranges == []


def test_function_starts_by_fde_index_at_a_bias() -> None:
    # FDEs stored out of address order: func_starts follows the FDE array, not the index
    funcs = [Func(0x1000, 0x40, [FRE16]), Func(0x1040, 0x20, [FRE16]),
             Func(0x1080, 0x10, [FRE16])]
    data = section_bytes(3, C.ABI_AMD64_LE, funcs, order=[2, 0, 1], sorted_flag=False)
    tab = SFrameTable(data, vma=SECTION_VMA, bias=0x5000)
    assert tab.func_starts == [0x6080, 0x6000, 0x6040]
    assert tab.text_ranges == [(0x6000, 0x6090)]
    row = tab.lookup(0x6085)
    assert isinstance(row, Row) and (row.fde_index, row.func_start) == (0, 0x6080)


def test_text_ranges_move_with_the_bias() -> None:
    data = section_bytes(3, C.ABI_AMD64_LE, [Func(0x1000, 0x40, [FRE16])])
    tab = SFrameTable(data, vma=SECTION_VMA, bias=0x5000,
                      text_ranges=[(0x2000, 0x2100), (0x1000, 0x1800)])
    assert tab.text_ranges == [(0x6000, 0x6800), (0x7000, 0x7100)]


def test_empty_text_ranges_are_dropped() -> None:
    data = section_bytes(3, C.ABI_AMD64_LE, [Func(0x1000, 0x40, [FRE16])])
    tab = SFrameTable(data, vma=SECTION_VMA, bias=0x100,
                      text_ranges=[(0x3000, 0x3000), (0x2000, 0x2010), (0x4000, 0x3000)])
    assert tab.text_ranges == [(0x2100, 0x2110)]
    # only empty ones given: the FDEs' span stands for the text
    tab = SFrameTable(data, vma=SECTION_VMA, bias=0x100, text_ranges=[(0x3000, 0x3000)])
    assert tab.text_ranges == [(0x1100, 0x1140)]


# -- lookups that find an FDE but no row ------------------------------------------------

TEXT = [Func(0x1000, 0x40, [FRE16]), Func(0x1040, 0x40, [FRE16])]


def test_signal_fde_miss() -> None:
    data = section_bytes(3, C.ABI_AMD64_LE, [*TEXT, Func(0x2000, 0x10, [], signal=True)])
    tab = SFrameTable(data, vma=SECTION_VMA, name=".sframe.s")
    assert tab.lookup(0x2000) == Miss("signal", ".sframe.s: FDE[2] is a signal frame", 2)
    assert tab.lookup(0x200F) == Miss("signal", ".sframe.s: FDE[2] is a signal frame", 2)


def test_v3_default_fde_without_fres_is_outermost() -> None:
    data = section_bytes(3, C.ABI_AMD64_LE, [*TEXT, Func(0x2000, 0x10, [])])
    tab = SFrameTable(data, vma=SECTION_VMA, name=".sframe.o")
    assert tab.lookup(0x2008) == Miss("outermost", ".sframe.o: FDE[2] has no FREs", 2)


@pytest.mark.parametrize(("version", "flex"), [(1, False), (2, False), (3, True)])
def test_fde_without_fres_has_no_fre(version: int, flex: bool) -> None:
    # v1/v2 have no outermost marker; a v3 FLEX FDE without FREs is not one either
    data = section_bytes(version, C.ABI_AMD64_LE, [*TEXT, Func(0x2000, 0x10, [], flex=flex)])
    tab = SFrameTable(data, vma=SECTION_VMA, name=".sframe.n")
    assert tab.lookup(0x2008) == Miss("no-fre", ".sframe.n: FDE[2] has no FREs", 2)


@pytest.mark.parametrize("version", [2, 3])
def test_pcmask_fde_with_rep_size_zero_is_malformed_at_the_fde(version: int) -> None:
    plt = Func(0x2000, 0x40, [make_fre(0, (8,))], pcmask=True, rep_size=0)
    data = section_bytes(version, C.ABI_AMD64_LE, [*TEXT, plt])
    offset = decode(data).fdes[2].offset
    assert offset > 2  # not mistakable for the FDE index
    tab = SFrameTable(data, vma=SECTION_VMA, name=".plt.sframe")
    assert tab.lookup(0x2018) == Miss(
        "malformed", ".plt.sframe: FDE[2] is PCMASK with rep_size 0", 2, offset)


# -- TableSet: overlapping claims ---------------------------------------------------------

def _claiming(*ranges: tuple[int, int]) -> SFrameTable:
    data = section_bytes(3, C.ABI_AMD64_LE, [Func(0x1000, 0x40, [FRE16])])
    return SFrameTable(data, vma=SECTION_VMA, text_ranges=list(ranges))


def test_overlapping_sections_lower_start_wins() -> None:
    a = _claiming((0x10000, 0x20000))
    b = _claiming((0x18000, 0x30000))
    c = _claiming((0x40000, 0x50000))
    tables = TableSet([c, b, a])
    for pc, want in [(0xFFFF, None), (0x10000, a), (0x18000, a), (0x1FFFF, a),
                     (0x20000, b), (0x2FFFF, b), (0x30000, None), (0x3FFFF, None),
                     (0x40000, c), (0x4FFFF, c), (0x50000, None), (0x1, None)]:
        assert tables.find(pc) is want, hex(pc)


def test_a_claim_inside_another_is_dropped_and_the_next_one_clipped() -> None:
    a = _claiming((0x10000, 0x20000))
    inner = _claiming((0x14000, 0x18000))
    d = _claiming((0x1C000, 0x28000))
    tables = TableSet([inner, d, a])
    for pc, want in [(0x14000, a), (0x17FFF, a), (0x1C000, a), (0x1FFFF, a),
                     (0x20000, d), (0x27FFF, d), (0x28000, None)]:
        assert tables.find(pc) is want, hex(pc)
