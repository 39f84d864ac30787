"""fre._check_flex's reading of a FLEX FRE's words, case by case, each finding whole.

Words: 0 the CFA control word, 1 its offset; from 3 words on, word 2 is the RA control word or,
when 0, padding allowed only before an FP pair (5 words: CFA pair, padding, FP pair). The FP
control word is word 3 after padding, word 4 after an RA pair. A control word with reg_p set
(bit 0) names register word >> 3. (The V3 kernel series' sframe.c and libsframe 2.46 read the
words this way; see the rules' explanations.)"""

from __future__ import annotations

import pytest

from sfcheck.format import make_fre
from sfcheck.rules.fre import FLEX_CFA_REG, FLEX_PADDING, REGISTER, _check_flex

REGS = 16  # AMD64's highest DWARF register number as the rules take it
WHERE = {"offset": 0x40, "fde": 2, "fre": 1}


def reg(n: int, deref: bool = False) -> int:
    return (n << 3) | (int(deref) << 1) | 1


class Emitted:
    def __init__(self) -> None:
        self.findings: list[tuple[str, str, dict]] = []

    def emit(self, rule, message, **where) -> None:  # noqa: ANN001 (the rules' ctx interface)
        self.findings.append((rule.id, message, where))


def check(words: list[int]) -> list[tuple[str, str, dict]]:
    ctx = Emitted()
    _check_flex(ctx, make_fre(0, words, size_code=2), REGS, lambda: dict(WHERE))
    return ctx.findings


def test_one_word_is_not_read() -> None:
    assert check([0]) == []


def test_cfa_control_word_without_reg_p() -> None:
    assert check([0x38, 16]) == [
        (FLEX_CFA_REG.id, "CFA control word 0x38 has reg_p clear", WHERE)]


@pytest.mark.parametrize("n", [3, 4, 6])
def test_padding_is_allowed_only_with_five_words(n: int) -> None:
    words = [reg(7), 16, 0] + [reg(6), 16, 0][:n - 3]
    expected = [(FLEX_PADDING.id, f"RA padding word with {n} words (needs an FP pair: 5 words)",
                 WHERE)]
    assert check(words) == expected


def test_five_words_with_padding_then_an_fp_pair() -> None:
    assert check([reg(7), 16, 0, reg(6), 8]) == []


def test_a_zero_fp_control_word_after_padding() -> None:
    # word 3 is the FP control word after padding: zero there is padding where none is allowed
    assert check([reg(7), 16, 0, 0, 8]) == [
        (FLEX_PADDING.id, "zero control word at word 3", WHERE)]
    assert check([reg(7), 16, 0, 0]) == [
        (FLEX_PADDING.id, "RA padding word with 4 words (needs an FP pair: 5 words)", WHERE),
        (FLEX_PADDING.id, "zero control word at word 3", WHERE)]


def test_five_words_without_padding() -> None:
    assert check([reg(7), 16, reg(16), 8, reg(6)]) == [
        (FLEX_PADDING.id, "5 words but no padding in the RA position", WHERE)]


def test_a_zero_fp_control_word_after_an_ra_pair() -> None:
    assert check([reg(7), 16, reg(16), 8, 0, 0]) == [
        (FLEX_PADDING.id, "zero control word at word 4", WHERE)]
    assert check([reg(7), 16, reg(16), 8, 0]) == [
        (FLEX_PADDING.id, "5 words but no padding in the RA position", WHERE),
        (FLEX_PADDING.id, "zero control word at word 4", WHERE)]


@pytest.mark.parametrize(("words", "position"), [
    ([reg(REGS + 1), 16], 0),
    ([reg(7), 16, reg(REGS + 1)], 2),                       # the RA control word
    ([reg(7), 16, reg(16), 8, reg(REGS + 1), 8], 4),        # FP after an RA pair
    ([reg(7), 16, 0, reg(REGS + 1), 8], 3),                 # FP after padding
])
def test_a_control_word_naming_a_register_past_the_abi(words: list[int], position: int) -> None:
    assert check(words) == [
        (REGISTER.id, f"control word {position} names register {REGS + 1}", WHERE)]


@pytest.mark.parametrize("words", [
    [reg(REGS), 16], [reg(7), 16, reg(REGS)], [reg(7), 16, reg(16), 8, reg(REGS), 8],
    [reg(7), 16, 0, reg(REGS), 8],
    [reg(7), 16, (REGS + 1) << 3],  # reg_p clear: an offset, not a register
])
def test_the_highest_register_and_offsets_are_taken(words: list[int]) -> None:
    assert check(words) == []
