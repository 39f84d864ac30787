"""rules/fre.check_fres on a function of size 0 (a label with unwind rows, as assemblers
emit): its one row at 0 is no finding, a row at 1 is past the function (and at 2); with size 1
the row at 1 is at the size (defect-fre-start-at-size). Each finding whole with its location
(the mutation run's survivor: the zero-size limit moved to 2 went unseen)."""

from __future__ import annotations

import pytest

from sfcheck.format import constants as C
from sfcheck.format.model import FDE, FRE, Header, fde_info, make_fre
from sfcheck.result import Severity
from sfcheck.rules import fre as fre_rules
from sfcheck.walk.context import SectionContext

PC = 0x1000


def run(size: int, starts: tuple[int, ...]) -> list[tuple]:
    h = Header(C.VERSION_3, 0, C.ABI_AMD64_LE, 0, -8, 1, len(starts), 0, 0, 0, False)
    row = make_fre(0, (16,))
    fres = [FRE(s, row.info, row.words, 0x30 + 4 * j) for j, s in enumerate(starts)]
    fde = FDE(0, size, fde_info(C.FRE_TYPE_ADDR1), tuple(fres))
    ctx = SectionContext("f", ".sframe", 0, b"")
    fre_rules.check_fres(ctx, h, fde, fres, PC, {"fde": 2, "pc": PC})
    return [(f.rule, f.severity, f.message, f.location.offset, f.location.fde, f.location.fre,
             f.location.fre_pc) for f in ctx.findings]


def test_one_row_at_zero_is_clean() -> None:
    assert run(0, (0,)) == []


@pytest.mark.parametrize("start", [1, 2])
def test_a_row_past_a_zero_size_function(start: int) -> None:
    assert run(0, (0, start)) == [
        ("fre-start-beyond-size", Severity.ERROR, f"start {start:#x} > function size 0x0",
         0x34, 2, 1, PC + start)]


def test_a_row_at_the_size_of_a_one_byte_function() -> None:
    assert run(1, (0, 1)) == [
        ("defect-fre-start-at-size", Severity.WARNING, "start 0x1 == function size",
         0x34, 2, 1, PC + 1)]
