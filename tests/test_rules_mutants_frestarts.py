"""rules/fre.check_fres's start findings whole (fre-start-order at a repeated start and one
below, fre-first-start at 1, fre-cfa-offset either side of SP and of alignment), and the
data-word counts allowed when the header fixes the FP offset, alone or with the RA, and
fre-mangled-ra-abi off aarch64 (the mutation run's survivors: their messages and the fixed-FP
header were never checked)."""

from __future__ import annotations

import pytest

from sfcheck.format import constants as C
from sfcheck.format.model import FDE, FRE, Header, fde_info, make_fre
from sfcheck.result import Severity
from sfcheck.rules import fre as fre_rules
from sfcheck.walk.context import SectionContext

PC = 0x1000


def run(starts: tuple[int, ...], words: tuple[int, ...] = (16,), fixed_ra: int = -8,
        fixed_fp: int = 0, abi: int = C.ABI_AMD64_LE, mangled_ra: bool = False) -> list[tuple]:
    h = Header(C.VERSION_3, 0, abi, fixed_fp, fixed_ra, 1, len(starts), 0, 0, 0,
               abi == C.ABI_AARCH64_BE)
    row = make_fre(0, words, mangled_ra=mangled_ra)
    fres = [FRE(s, row.info, row.words, 0x30 + 8 * j) for j, s in enumerate(starts)]
    fde = FDE(0, 0x40, fde_info(C.FRE_TYPE_ADDR1), tuple(fres))
    ctx = SectionContext("f", ".sframe", 0, b"")
    fre_rules.check_fres(ctx, h, fde, fres, PC, {"fde": 1, "pc": PC})
    return [(f.rule, f.severity, f.message, f.location.offset, f.location.fde, f.location.fre,
             f.location.fre_pc) for f in ctx.findings]


@pytest.mark.parametrize(("third", "found"), [
    (9, []),
    (8, [("fre-start-order", Severity.ERROR, "start 0x8 after 0x8", 0x40, 1, 2, PC + 8)]),
    (7, [("fre-start-order", Severity.ERROR, "start 0x7 after 0x8", 0x40, 1, 2, PC + 7)]),
])
def test_starts_must_increase(third: int, found: list) -> None:
    assert run((0, 8, third)) == found


@pytest.mark.parametrize(("first", "found"), [
    (0, []),
    (1, [("fre-first-start", Severity.WARNING, "first row starts at 0x1", 0x30, 1, 0,
          PC + 1)]),
])
def test_the_first_row_starts_at_zero(first: int, found: list) -> None:
    assert run((first, 0x10)) == found


def word_count(n: int, allowed: str) -> list[tuple]:
    return [("fre-word-count", Severity.ERROR,
             f"amd64 DEFAULT FRE with {n} data words (allowed: {allowed})", 0x30, 1, 0, PC)]


@pytest.mark.parametrize(("fixed_ra", "words", "found"), [
    (0, (16, -16), []),                                  # FP fixed, RA not: CFA, RA
    (0, (16, -8, -16), word_count(3, "0, 1, 2")),
    (-8, (16,), []),                                     # both fixed: the CFA alone
    (-8, (16, -8), word_count(2, "0, 1")),
])
def test_a_header_fixing_the_fp_offset(fixed_ra: int, words: tuple[int, ...],
                                       found: list) -> None:
    assert run((0,), words, fixed_ra=fixed_ra, fixed_fp=-16) == found


@pytest.mark.parametrize(("cfa", "found"), [
    (0, []), (8, []),                                  # at SP, one slot above
    (-8, ["CFA = SP-8"]), (12, ["CFA = SP+12"]),       # below SP; not 8-byte aligned
])
def test_an_sp_based_cfa_at_or_above_sp_and_aligned(cfa: int, found: list[str]) -> None:
    assert run((0,), (cfa,)) == [("fre-cfa-offset", Severity.WARNING, m, 0x30, 1, 0, PC)
                                 for m in found]


@pytest.mark.parametrize(("abi", "found"), [
    (C.ABI_AMD64_LE, [("fre-mangled-ra-abi", Severity.ERROR, "fre_info 0x83", 0x30, 1, 0, PC)]),
    (C.ABI_AARCH64_LE, []), (C.ABI_AARCH64_BE, []),
])
def test_the_mangled_ra_bit_off_aarch64(abi: int, found: list) -> None:
    fixed_ra = -8 if abi == C.ABI_AMD64_LE else 0
    assert run((0,), (16,), fixed_ra=fixed_ra, abi=abi, mangled_ra=True) == found
