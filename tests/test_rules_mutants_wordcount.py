"""rules/fre.check_fres's fre-word-count finding whole: a DEFAULT FRE names its ABI (an ABI
byte sfcheck does not know is named so), a FLEX FRE says FLEX, each with the counts allowed,
at the highest allowed count and one past (the mutation run's survivors: no test read the
message, which is all that names the ABI whose limits were applied)."""

from __future__ import annotations

import pytest

from sfcheck.format import constants as C
from sfcheck.format.model import FDE, FRE, Header, fde_info, make_fre
from sfcheck.result import Severity
from sfcheck.rules import fre as fre_rules
from sfcheck.walk.context import SectionContext

PC = 0x1000
UNKNOWN_ABI = 7
assert UNKNOWN_ABI not in C.ABI_NAMES


def run(abi: int, words: tuple[int, ...], fixed_ra: int = 0, version: int = C.VERSION_3,
        flex: bool = False) -> list[tuple]:
    h = Header(version, 0, abi, 0, fixed_ra, 1, 2, 0, 0, 0, abi in (C.ABI_AARCH64_BE,
                                                                    C.ABI_S390X_BE))
    shape = make_fre(0, words)
    first = (0x31, 16) if flex else (16,)  # a legal first row: CFA = r6 + 16 in FLEX
    # the row at +4 of a 16-byte function, stored at section offset 0x40
    fres = [FRE(0, make_fre(0, first).info, first, 0x30), FRE(4, shape.info, shape.words, 0x40)]
    fde = FDE(0, 0x10, fde_info(C.FRE_TYPE_ADDR1), tuple(fres),
              info2=C.FDE_TYPE_FLEX if flex else C.FDE_TYPE_DEFAULT)
    ctx = SectionContext("f", ".sframe", 0, b"")
    fre_rules.check_fres(ctx, h, fde, fres, PC, {"fde": 3, "pc": PC})
    return [(f.rule, f.severity, f.message, f.location.offset, f.location.fde, f.location.fre,
             f.location.fre_pc) for f in ctx.findings if f.rule == "fre-word-count"]


def word_count(message: str) -> list[tuple]:
    return [("fre-word-count", Severity.ERROR, message, 0x40, 3, 1, PC + 4)]


@pytest.mark.parametrize(("abi", "name"), [(C.ABI_AMD64_LE, "amd64"),
                                           (C.ABI_AARCH64_LE, "aarch64-le"),
                                           (C.ABI_AARCH64_BE, "aarch64-be")])
def test_a_default_fre_names_its_abi(abi: int, name: str) -> None:
    # the RA fixed by the header: CFA and FP words at most
    assert run(abi, (16, -16), fixed_ra=-8) == []
    assert run(abi, (16, -8, -16), fixed_ra=-8) == word_count(
        f"{name} DEFAULT FRE with 3 data words (allowed: 0, 1, 2)")


def test_s390x_names_itself() -> None:
    assert run(C.ABI_S390X_BE, (-20, 8, 16)) == []
    assert run(C.ABI_S390X_BE, (-20, 8, 16, 24)) == word_count(
        "s390x DEFAULT FRE with 4 data words (allowed: 0, 1, 2, 3)")


def test_an_abi_byte_sfcheck_does_not_know_is_named_so() -> None:
    assert run(UNKNOWN_ABI, (16, -8, -16)) == []
    assert run(UNKNOWN_ABI, (16, -8, -16, 0)) == word_count(
        "unknown-ABI DEFAULT FRE with 4 data words (allowed: 0, 1, 2, 3)")


def test_v1_allows_no_empty_fre() -> None:
    assert run(C.ABI_AMD64_LE, (), fixed_ra=-8, version=C.VERSION_1) == word_count(
        "amd64 DEFAULT FRE with 0 data words (allowed: 1, 2)")


@pytest.mark.parametrize(("words", "found"), [
    ((0x31, 16, 0x31, 0, 0x31, -16), []),   # 6 words: the most a FLEX FRE holds
    ((0x31, 16, 0x31), word_count("FLEX FRE with 3 data words (allowed: 0, 2, 4, 5, 6)")),
    ((0x31,), word_count("FLEX FRE with 1 data word (allowed: 0, 2, 4, 5, 6)")),
    ((0x31, 16, 0x31, 0, 0x31, -16, 0),
     word_count("FLEX FRE with 7 data words (allowed: 0, 2, 4, 5, 6)")),
])
def test_a_flex_fre_says_flex(words: tuple[int, ...], found: list) -> None:
    assert run(C.ABI_AMD64_LE, words, fixed_ra=-8, flex=True) == found
