"""rules/fre.check_fres on s390x DEFAULT FREs in process (the only ABI whose FREs take
_check_default): an SP-based CFA stored as (offset - 160) / 8, at SP (stored -20) and one step
below it (stored -21), each finding whole with its location (the mutation run's survivors)."""

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
    fres = [FRE(0, shape.info, (2,), 0x30), FRE(4, shape.info, shape.words, 0x40)]
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
