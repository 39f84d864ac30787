"""sfcheck.format.fre_rules: the one reading of an FRE's data words as (CFA, RA, FP) rules.

DEFAULT FREs follow libsframe's getters (sframe_fre_get_{cfa,ra,fp}_offset: CFA word, then
RA unless the header fixes it, then FP unless fixed; s390x scales the CFA and v2 stores a
register as (reg << 1) | 1). FLEX FREs follow the kernel's V3 unwinder
(__read_flex_fde_fre_datawords: (control, offset) pairs, control = reg << 3 | deref << 1 |
reg_p, a zero control word one padding word meaning "no rule").
"""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from sfcheck.format import constants as C
from sfcheck.format.abi import ABIS, max_reg
from sfcheck.format.fre_rules import RegRule, default_rules, flex_rules, fre_rules, intern
from sfcheck.format.model import FRE, Header, fre_info, make_fre

AMD64, S390X = ABIS[C.ABI_AMD64_LE], ABIS[C.ABI_S390X_BE]


def header(version: int = C.VERSION_3, abi: int = C.ABI_AMD64_LE, fixed_fp: int = 0,
           fixed_ra: int = 0) -> Header:
    return Header(version, 0, abi, fixed_fp, fixed_ra, 0, 0, 0, 0, 0,
                  abi == C.ABI_S390X_BE)


def test_default_cfa_base_and_offsets() -> None:
    h = header()
    assert default_rules(h, make_fre(0, (16, -16, -24)), AMD64) == (
        RegRule(7, 16, False), RegRule(None, -16, True), RegRule(None, -24, True))
    assert default_rules(h, make_fre(0, (16, -16, -24), base_sp=False), AMD64)[0] \
        == RegRule(6, 16, False)
    assert default_rules(h, make_fre(0, (8,)), AMD64) == (RegRule(7, 8, False), None, None)
    assert default_rules(h, make_fre(0, (8, -8)), AMD64) == (
        RegRule(7, 8, False), RegRule(None, -8, True), None)


def test_default_fixed_offsets_take_no_word() -> None:
    """A header's fixed RA offset (x86-64: -8) takes the RA's place: the next word is FP."""
    h = header(fixed_ra=-8)
    assert default_rules(h, make_fre(0, (16, -16)), AMD64) == (
        RegRule(7, 16, False), RegRule(None, -8, True), RegRule(None, -16, True))
    assert default_rules(h, make_fre(0, (16,)), AMD64) == (
        RegRule(7, 16, False), RegRule(None, -8, True), None)
    both = header(fixed_ra=-8, fixed_fp=-16)
    assert default_rules(both, make_fre(0, (16,)), AMD64) == (
        RegRule(7, 16, False), RegRule(None, -8, True), RegRule(None, -16, True))
    with pytest.raises(ValueError, match="^2 data words, 1 more than the ABI uses$"):
        default_rules(both, make_fre(0, (16, -24)), AMD64)
    with pytest.raises(ValueError, match="^4 data words, 2 more than the ABI uses$"):
        default_rules(h, make_fre(0, (16, -16, -24, -32)), AMD64)
    with pytest.raises(ValueError, match=r"^no data words \(no CFA rule\)$"):
        default_rules(h, make_fre(0, ()), AMD64)


def test_default_s390x() -> None:
    """s390x: CFA offset stored as (off - 160) / 8; an RA/FP word 0 is padding (not saved); v2
    stores a register as (reg << 1) | 1, v3 has no such form."""
    fre = make_fre(0, (2, 0, -72), base_sp=True)
    for version in (C.VERSION_2, C.VERSION_3):
        assert default_rules(header(version, C.ABI_S390X_BE), fre, S390X) == (
            RegRule(15, 2 * 8 + 160, False), None, RegRule(None, -72, True))
    reg = make_fre(0, (0, (14 << 1) | 1, (11 << 1) | 1))
    assert default_rules(header(C.VERSION_2, C.ABI_S390X_BE), reg, S390X) == (
        RegRule(15, 160, False), RegRule(14, 0, False), RegRule(11, 0, False))
    assert default_rules(header(C.VERSION_3, C.ABI_S390X_BE), reg, S390X)[1:] == (
        RegRule(None, 29, True), RegRule(None, 23, True))
    # the same odd word on x86-64 is an offset
    assert default_rules(header(C.VERSION_2), reg, AMD64)[1] == RegRule(None, 29, True)


def flex(*words: int, size_code: int = 1) -> FRE:
    return FRE(0, fre_info(True, len(words), size_code), tuple(words))


def ctl(reg: int, deref: bool = False, reg_p: bool = True) -> int:
    return reg << 3 | int(deref) << 1 | int(reg_p)


def test_flex_rules() -> None:
    h = header()
    # CFA = r7 + 16; RA at CFA - 8; FP = *(r6 - 16)
    fre = flex(ctl(7), 16, ctl(0, True, False), -8, ctl(6, True), -16)
    assert flex_rules(h, fre) == (RegRule(7, 16, False), RegRule(None, -8, True),
                                  RegRule(6, -16, True))
    # CFA loaded: *(r6 + 0x10); RA in register 30 (not loaded)
    assert flex_rules(h, flex(ctl(6, True), 0x10, ctl(30), 0)) == (
        RegRule(6, 0x10, True), RegRule(30, 0, False), None)
    # a zero control word is one padding word: RA "no rule", then the FP pair
    assert flex_rules(h, flex(ctl(7), 8, 0, ctl(0, True, False), -16)) == (
        RegRule(7, 8, False), None, RegRule(None, -16, True))


def test_flex_fixed_offsets_and_the_highest_register() -> None:
    h = header(fixed_ra=-8, fixed_fp=-16)
    assert flex_rules(h, flex(ctl(7), 8)) == (
        RegRule(7, 8, False), RegRule(None, -8, True), RegRule(None, -16, True))
    # a padding word keeps the fixed rule
    assert flex_rules(h, flex(ctl(7), 8, 0, ctl(6), 0)) == (
        RegRule(7, 8, False), RegRule(None, -8, True), RegRule(6, 0, False))
    # control words are unsigned: a 1-byte control of register 31 (0xf9) reads as 31
    top = max_reg(C.ABI_AARCH64_LE)
    assert flex_rules(header(), flex(ctl(top) - 256, 0, size_code=0))[0] == \
        RegRule(top, 0, False)
    assert flex_rules(header(), flex(ctl(top + 1) - 65536, 0))[0] == RegRule(32, 0, False)


def test_flex_malformed() -> None:
    h = header()
    with pytest.raises(ValueError, match="^flex FRE with 1 data word; the CFA rule needs 2$"):
        flex_rules(h, flex(ctl(7)))
    with pytest.raises(ValueError, match="^flex FRE with 0 data words; the CFA rule needs 2$"):
        flex_rules(h, flex())
    with pytest.raises(ValueError, match=r"^flex CFA rule is not register-based \(reg_p"):
        flex_rules(h, flex(ctl(7, reg_p=False), 8))
    with pytest.raises(ValueError, match="^flex FRE has 1 data word left over$"):
        flex_rules(h, flex(ctl(7), 8, ctl(6), -16, ctl(5), -8, 1))
    # a lone control word after the CFA is left over, not a rule
    with pytest.raises(ValueError, match="^flex FRE has 1 data word left over$"):
        flex_rules(h, flex(ctl(7), 8, ctl(6)))


def test_flex_s390x_scales_the_cfa() -> None:
    assert flex_rules(header(abi=C.ABI_S390X_BE), flex(ctl(15), 2))[0] \
        == RegRule(15, 2 * 8 + 160, False)


def test_fre_rules_dispatches_on_flex() -> None:
    h = header()
    fre = flex(ctl(7), 8)
    assert fre_rules(h, True, fre, AMD64) == (RegRule(7, 8, False), None, None)
    assert fre_rules(h, False, fre, AMD64) == (
        RegRule(7, ctl(7), False), RegRule(None, 8, True), None)


@given(st.integers(-(1 << 31), (1 << 31) - 1), st.integers(0, 40), st.booleans())
def test_intern_gives_one_object_per_value(off: int, reg: int, deref: bool) -> None:
    a, b = RegRule(reg, off, deref), RegRule(reg, off, deref)
    assert a == b and hash(a) == hash(b) and a is not b
    assert intern(a) is intern(b)
    assert intern(None) is None
    assert RegRule(reg, off, deref) != RegRule(reg, off, not deref)
    assert RegRule(reg, off, deref) != RegRule(reg + 1, off, deref)
    assert RegRule(reg, off, deref) != RegRule(reg, off + 1, deref)
    assert RegRule(None, off, deref) != RegRule(reg, off, deref)
    assert RegRule(reg, off, deref) != (reg, off, deref)


def test_abi_facts_for_the_rules() -> None:
    """The highest register a word may name (31 for an ABI byte sframe.h does not define:
    the widest file), and the fixed RA offset a built section gets (x86-64's call pushes
    the RA at CFA - 8; the others keep it in a register)."""
    from sfcheck.format.abi import has_pauth
    from sfcheck.format.layout import build_section, default_fixed_ra

    assert [max_reg(a) for a in (C.ABI_AMD64_LE, C.ABI_AARCH64_LE, C.ABI_S390X_BE, 0xEE)] \
        == [16, 31, 31, 31]
    assert [has_pauth(a) for a in (C.ABI_AMD64_LE, C.ABI_AARCH64_BE, 0xEE)] \
        == [False, True, False]
    assert [default_fixed_ra(a) for a in (C.ABI_AMD64_LE, C.ABI_AARCH64_LE,
                                          C.ABI_S390X_BE)] == [-8, 0, 0]
    assert build_section(C.VERSION_2, C.ABI_AMD64_LE, []).header.fixed_ra == -8
    assert build_section(C.VERSION_2, C.ABI_AARCH64_LE, []).header.fixed_ra == 0


def test_s390x_cfa_encode_truncates_toward_zero() -> None:
    """gas stores (offset - 160) / 8 with C's division: an offset off the 8-byte grid
    truncates toward zero on both sides of 160 (and the result is an integer)."""
    from sfcheck.format.constants import s390x_cfa_decode, s390x_cfa_encode

    got = [s390x_cfa_encode(off) for off in (160, 165, 168, 155, 150, 152, 0)]
    assert got == [0, 0, 1, 0, -1, -1, -20]
    assert all(type(v) is int for v in got)
    assert s390x_cfa_decode(s390x_cfa_encode(176)) == 176


def test_intern_returns_an_equal_rule_and_bounds_its_table(monkeypatch) -> None:
    """intern gives back a rule equal to its argument (the first such object), and its table
    is emptied once it holds more than 2**16 rules: at 2**16 + 1 it is kept, the next
    call starts afresh."""
    from sfcheck.format import fre_rules

    table: dict = {}
    monkeypatch.setattr(fre_rules, "_INTERNED", table)
    a = RegRule(7, 8, False)
    assert intern(a) is a and intern(RegRule(7, 8, False)) is a
    b = RegRule(6, -16, True)
    assert intern(b) is b and intern(b) == RegRule(6, -16, True)
    table.clear()
    table.update((RegRule(1, k, False), None) for k in range(1 << 16))
    intern(RegRule(2, 0, False))  # 2**16 entries: not over the bound yet
    assert len(table) == (1 << 16) + 1
    c = RegRule(3, 0, False)
    assert intern(c) is c and len(table) == 1


def test_flex_control_words() -> None:
    """(CFA, RA, FP) controls of a flex FRE (kernel __read_flex_fde_fre_datawords): reg_p
    bit 0, deref bit 1, register from bit 3; a zero RA control is one padding word, so FP's
    control follows it directly."""
    from sfcheck.format.datawords import Control, flex_controls

    full = flex(ctl(7), 8, ctl(0, True, False), -8, ctl(6, True), -16)
    assert flex_controls(full) == (Control(True, False, 7), Control(False, True, 0),
                                   Control(True, True, 6))
    padded = flex(ctl(7), 8, 0, ctl(6), -16)
    assert flex_controls(padded) == (Control(True, False, 7), Control(False, False, 0),
                                     Control(True, False, 6))
    assert flex_controls(flex(ctl(7), 8)) == (Control(True, False, 7), None, None)
    assert flex_controls(flex()) == (None, None, None)
    # a 1-byte control word of register 31, stored as a negative byte, reads unsigned
    assert flex_controls(flex(ctl(31) - 256, 0, size_code=0))[0] == Control(True, False, 31)


def test_fre_starts_in_both_byte_orders() -> None:
    from sfcheck.format.fre_blocks import starts_of

    toks = [(b"\x01\x02", b"x"), (b"\x00\x10", b"y")]
    assert starts_of(toks, 2, True) == (0x0102, 0x0010)
    assert starts_of(toks, 2, False) == (0x0201, 0x1000)
    assert starts_of([(b"\x00\x00\x01\x02", b"")], 4, True) == (0x0102,)
    assert starts_of([(b"\x00\x00\x01\x02", b"")], 4, False) == (0x02010000,)
    assert list(starts_of([(b"\x05", b""), (b"\x07", b"")], 1, True)) == [5, 7]


def test_flex_offsets_and_fixed_fallbacks() -> None:
    """datawords' offsets of a flex FRE: RA's offset is word 3, FP's word 5 (word 4 after a
    padding RA control); a header's fixed offset stands in for a word that is absent
    (DEFAULT: always), never for an FRE with no words (RA undefined)."""
    from sfcheck.format.datawords import cfa_offset, fp_offset, ra_offset

    h = header()
    full = flex(ctl(7), 8, ctl(0, True, False), -8, ctl(6, True), -16)
    assert (cfa_offset(h, full, True), ra_offset(h, full, True), fp_offset(h, full, True)) \
        == (8, -8, -16)
    padded = flex(ctl(7), 8, 0, ctl(6, True), -24)
    assert fp_offset(h, padded, True) == -24
    fixed = header(fixed_ra=-8, fixed_fp=-16)
    short = flex(ctl(7), 8)
    assert (ra_offset(fixed, short, True), fp_offset(fixed, short, True)) == (-8, -16)
    # flex words present win over the header's fixed offsets
    assert (ra_offset(fixed, full, True), fp_offset(fixed, full, True)) == (-8, -16)
    other = flex(ctl(7), 8, ctl(0, True, False), -40, ctl(6, True), -48)
    assert (ra_offset(fixed, other, True), fp_offset(fixed, other, True)) == (-40, -48)
    # DEFAULT: the fixed offsets whatever the words; none for an FRE with no words
    default = make_fre(0, (16, -24))
    assert (ra_offset(fixed, default, False), fp_offset(fixed, default, False)) == (-8, -16)
    assert fp_offset(header(fixed_ra=-8), default, False) == -24
    assert fp_offset(header(), make_fre(0, (16, -8, -32)), False) == -32
    none = FRE(0, fre_info(True, 0, 0), ())
    assert (ra_offset(fixed, none, False), fp_offset(fixed, none, False)) == (None, None)
