"""rules/fre.check_fres on s390x DEFAULT FREs in process (the only ABI whose FREs take
_check_default): an SP-based CFA stored as (offset - 160) / 8, at SP (stored -20) and one step
below it (stored -21); RA/FP words that are registers (odd): v3 has no such form, v2's highest
register (31) and one past it, a negative one; each finding whole with its location (the
mutation run's survivors)."""

from __future__ import annotations

import pytest

from sfcheck.format import constants as C
from sfcheck.format.model import FDE, FRE, Header, fde_info, make_fre
from sfcheck.result import Severity
from sfcheck.rules import fre as fre_rules
from sfcheck.walk.context import SectionContext

PC = 0x1000


def run(version: int, words: tuple[int, ...], base_sp: bool = True
        ) -> list[tuple[str, Severity, str, int | None, int | None, int | None, int | None]]:
    h = Header(version, 0, C.ABI_S390X_BE, 0, 0, 1, 2, 0, 0, 0, True)
    shape = make_fre(0, words, base_sp)
    # the row at +4 of a 16-byte function, stored at section offset 0x40
    fres = [FRE(0, make_fre(0, (2,)).info, (2,), 0x30), FRE(4, shape.info, shape.words, 0x40)]
    fde = FDE(0, 0x10, fde_info(C.FRE_TYPE_ADDR1), tuple(fres))
    ctx = SectionContext("f", ".sframe", 0, b"")
    fre_rules.check_fres(ctx, h, fde, fres, PC, {"fde": 3, "pc": PC})
    return [(f.rule, f.severity, f.message, f.location.offset, f.location.fde, f.location.fre,
             f.location.fre_pc) for f in ctx.findings]


@pytest.mark.parametrize("version", [C.VERSION_2, C.VERSION_3])
def test_cfa_at_sp_is_plausible(version: int) -> None:
    assert run(version, (-20,)) == []   # (-20 * 8) + 160 = 0


@pytest.mark.parametrize("version", [C.VERSION_2, C.VERSION_3])
def test_cfa_below_sp_is_named_at_its_row(version: int) -> None:
    assert run(version, (-21,)) == [
        ("fre-cfa-offset", Severity.WARNING, "CFA = SP-8", 0x40, 3, 1, PC + 4)]


def test_an_fp_based_cfa_is_not_judged() -> None:
    assert run(C.VERSION_3, (-21,), base_sp=False) == []


@pytest.mark.parametrize(("words", "found"), [
    ((2, 4), []),                                           # even: a CFA offset
    ((2, 5), [("fre-s390x-regnum-v3", Severity.ERROR, "word 1 is 5", 0x40, 3, 1, PC + 4)]),
    ((2, 0, 7), [("fre-s390x-regnum-v3", Severity.ERROR, "word 2 is 7", 0x40, 3, 1, PC + 4)]),
])
def test_v3_has_no_register_words(words: tuple[int, ...], found: list) -> None:
    assert run(C.VERSION_3, words) == found


@pytest.mark.parametrize(("words", "found"), [
    ((2, (31 << 1) | 1), []),                               # r31: the highest
    ((2, (32 << 1) | 1), [("fre-register", Severity.ERROR, "word 1 encodes register 32",
                           0x40, 3, 1, PC + 4)]),
    ((2, 0, -1), [("fre-register", Severity.ERROR, "word 2 encodes register -1",
                   0x40, 3, 1, PC + 4)]),
])
def test_v2_register_words_up_to_r31(words: tuple[int, ...], found: list) -> None:
    assert run(C.VERSION_2, words) == found
