"""rules/fre.check_fres's row findings located whole: a PCMASK FDE's row PC is its offset in
the repeated block (not the function start plus it), at rep_size - 1 and at rep_size; the
fre-datawords-size message names the words and their size, at 24 bytes and one word past
(the mutation run's survivors: neither was asserted)."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sfcheck.format import constants as C
from sfcheck.format.model import FDE, FRE, Header, fde_info, make_fre
from sfcheck.result import Severity
from sfcheck.rules import fre as fre_rules
from sfcheck.walk.context import SectionContext

PC = 0x1000
FOUR_BYTES = 2  # fre_info size code of 4-byte data words


def run(fde: FDE, fres: list[FRE], version: int = C.VERSION_2) -> list[tuple]:
    h = Header(version, 0, C.ABI_AMD64_LE, 0, -8, 1, len(fres), 0, 0, 0, False)
    ctx = SectionContext("f", ".sframe", 0, b"")
    fre_rules.check_fres(ctx, h, fde, fres, PC, {"fde": 2, "pc": PC})
    return [(f.rule, f.severity, f.message, f.location.offset, f.location.fde, f.location.fre,
             f.location.fre_pc) for f in ctx.findings]


def rows(starts: tuple[int, ...], words: tuple[int, ...] = (16,), size_code: int | None = None
         ) -> list[FRE]:
    row = make_fre(0, words, size_code=size_code)
    return [FRE(s, row.info, row.words, 0x30 + 8 * j) for j, s in enumerate(starts)]


@pytest.mark.parametrize("version", [C.VERSION_2, C.VERSION_3])
@pytest.mark.parametrize(("last", "found"), [
    (0xF, []),
    (0x10, [("fre-start-beyond-rep", Severity.ERROR, "start 0x10 >= rep_size 16", 0x40, 2, 2,
             0x10)]),
])
def test_a_pcmask_row_is_located_in_the_repeated_block(version: int, last: int,
                                                       found: list) -> None:
    fres = rows((0, 4, last))
    fde = FDE(0, 0x100, fde_info(C.FRE_TYPE_ADDR1, pcmask=True), tuple(fres), rep_size=16)
    assert run(fde, fres, version) == found


def test_a_pcinc_row_is_located_from_the_function_start() -> None:
    fres = rows((0, 4, 0x20))
    fde = FDE(0, 0x20, fde_info(C.FRE_TYPE_ADDR1), tuple(fres))
    assert run(fde, fres) == [("defect-fre-start-at-size", Severity.WARNING,
                               "start 0x20 == function size", 0x40, 2, 2, PC + 0x20)]


@pytest.mark.parametrize(("words", "size_code", "found"), [
    ((16, -8, -16), FOUR_BYTES, []),                   # 3 words of 4 bytes: 12
    ((16,) * 6, FOUR_BYTES, []),                       # 6 of 4: 24, the buffer's size
    ((16,) * 7, FOUR_BYTES, ["7 words of 4 bytes"]),   # one word past
    ((16,) * 15, FOUR_BYTES, ["15 words of 4 bytes"]),
])
def test_datawords_past_24_bytes_are_named(words: tuple[int, ...], size_code: int,
                                           found: list[str]) -> None:
    fres = rows((0,), words, size_code)
    fde = FDE(0, 0x20, fde_info(C.FRE_TYPE_ADDR1), tuple(fres))
    got = [f for f in run(fde, fres) if f[0] == "fre-datawords-size"]
    assert got == [("fre-datawords-size", Severity.ERROR, m, 0x30, 2, 0, PC) for m in found]


@settings(deadline=None, max_examples=200)
@given(st.lists(st.integers(0, 0x30), max_size=5), st.integers(0, 0x30))
def test_starts_ok_is_no_start_finding(starts: list[int], size: int) -> None:
    """fre.starts_ok (what the fast walks accept) holds exactly when check_fres reports none
    of the start rules on those starts (a size-0 function's one row at 0 aside: left to
    check_fres, which accepts it)."""
    fres = rows(tuple(starts))
    fde = FDE(0, size, fde_info(C.FRE_TYPE_ADDR1), tuple(fres))
    start_rules = {"fre-first-start", "fre-start-order", "fre-start-beyond-size",
                   "defect-fre-start-at-size"}
    quiet = not {f[0] for f in run(fde, fres)} & start_rules
    if size == 0 and starts == [0]:
        assert quiet and not fre_rules.starts_ok(starts, size)
    else:
        assert fre_rules.starts_ok(starts, size) == quiet


@pytest.mark.parametrize(("starts", "size", "ok"), [
    ([], 0x10, True), ([0], 0x10, True), ([1], 0x10, False), ([0, 0xF], 0x10, True),
    ([0, 0x10], 0x10, False), ([0, 4, 4], 0x10, False), ([0, 4, 2], 0x10, False),
])
def test_starts_ok_at_each_edge(starts: list[int], size: int, ok: bool) -> None:
    assert fre_rules.starts_ok(starts, size) is ok
