"""What the cross-check's messages show as evidence (rules/semantic/show.py): register
names per ABI at each table's edges and one past, RA/FP and CFA rules in objdump's terms,
the function a PC falls in, and why gas leaves a function out (coverage.skip_reason). The
semantic mutation run left these unasserted."""

from __future__ import annotations

import pytest

from sfcheck.dwarf.cfi import UNDEFINED, CfiRow, EhFde
from sfcheck.dwarf.linear import Opaque
from sfcheck.elf.model import FuncSymbol, addresses
from sfcheck.format import constants as C
from sfcheck.format.abi import ABIS
from sfcheck.format.fre_rules import RegRule
from sfcheck.rules.semantic import func_name, reg_name, show_cfa, show_slot, skip_reason

AMD64, AARCH64 = ABIS[C.ABI_AMD64_LE], ABIS[C.ABI_AARCH64_LE]
AARCH64_BE, S390X = ABIS[C.ABI_AARCH64_BE], ABIS[C.ABI_S390X_BE]


# x86-64 psABI DWARF numbering: 0-15 the GPRs in rax, rdx, rcx, rbx, rsi, rdi, rbp, rsp,
# r8-r15 order, 16 the return address (rip); past the table, the bare number.
@pytest.mark.parametrize(("reg", "name"), [
    (-1, "r-1"), (0, "rax"), (1, "rdx"), (6, "rbp"), (7, "rsp"), (8, "r8"), (15, "r15"),
    (16, "rip"), (17, "r17"), (31, "r31")])
def test_amd64_register_names(reg: int, name: str) -> None:
    assert reg_name(AMD64, reg) == name


# AArch64 DWARF: 0-30 are x0-x30, 31 is sp; both byte orders name them alike.
@pytest.mark.parametrize("abi", [AARCH64, AARCH64_BE], ids=lambda a: a.name)
@pytest.mark.parametrize(("reg", "name"), [
    (-1, "r-1"), (0, "x0"), (1, "x1"), (29, "x29"), (30, "x30"), (31, "sp"), (32, "r32"),
    (33, "r33")])
def test_aarch64_register_names(abi, reg: int, name: str) -> None:
    assert reg_name(abi, reg) == name


# s390x: 0-15 the GPRs, 16-31 the FPRs; the ends of the FPR range name the same register
# whichever order the middle has (16 is f0, 24 f8, 31 f15 in the ELF ABI's table).
@pytest.mark.parametrize(("reg", "name"), [
    (0, "r0"), (11, "r11"), (14, "r14"), (15, "r15"), (16, "f0"), (24, "f8"), (31, "f15"),
    (32, "r32"), (33, "r33"), (-1, "r-1")])
def test_s390x_register_names(reg: int, name: str) -> None:
    assert reg_name(S390X, reg) == name


def test_s390x_fpr_names_follow_the_abi_table() -> None:
    order = [0, 2, 4, 6, 1, 3, 5, 7, 8, 10, 12, 14, 9, 11, 13, 15]
    assert [reg_name(S390X, 16 + k) for k in range(16)] == [f"f{n}" for n in order]


@pytest.mark.parametrize(("rule", "shown"), [
    (None, "u (not saved)"),
    (UNDEFINED, "undefined (outermost frame)"),
    (RegRule(None, -16, True), "c-16"),          # saved at CFA-16
    (RegRule(None, 8, True), "c+8"),
    (RegRule(None, -16, False), "value c-16"),   # val_offset: the value is CFA-16
    (RegRule(6, 0, False), "in rbp"),            # kept in a register
    (RegRule(6, 8, False), "in rbp+8"),
    (RegRule(7, -8, True), "*(rsp-8)"),          # loaded from a register + offset
    (RegRule(7, 0, True), "*(rsp)"),
    (Opaque("DW_OP_call4"), "<DW_OP_call4>"),
])
def test_show_slot_amd64(rule: object, shown: str) -> None:
    assert show_slot(AMD64, rule) == shown


def test_show_slot_names_registers_per_abi() -> None:
    assert show_slot(AARCH64, RegRule(31, 0, False)) == "in sp"
    assert show_slot(AARCH64, RegRule(29, -16, True)) == "*(x29-16)"
    assert show_slot(S390X, RegRule(16, 0, False)) == "in f0"


@pytest.mark.parametrize(("abi", "rule", "shown"), [
    (AMD64, RegRule(7, 8, False), "rsp+8"),
    (AMD64, RegRule(6, 16, False), "rbp+16"),
    (AMD64, RegRule(7, 0, False), "rsp+0"),
    (AMD64, RegRule(7, 8, True), "*(rsp+8)"),
    (AARCH64, RegRule(31, 16, False), "sp+16"),
    (AARCH64, RegRule(29, -8, True), "*(x29-8)"),
    (S390X, RegRule(15, 160, False), "r15+160"),
])
def test_show_cfa(abi, rule: RegRule, shown: str) -> None:
    assert show_cfa(abi, rule) == shown


def test_show_cfa_of_other_rules_is_their_own_text() -> None:
    """A CFA that is not register + offset (an expression, an outermost frame's None, a
    rule without a register) is shown as itself, never as a register."""
    for rule in (Opaque("DW_OP_deref_size"), None, RegRule(None, 8, False)):
        assert show_cfa(AMD64, rule) == str(rule)
    assert show_cfa(AMD64, Opaque("x")) == "<x>"


SYMS = (FuncSymbol(0x1000, 0x10, "a"), FuncSymbol(0x2000, 0x20, "b"), FuncSymbol(0x3000, 0, "c"))


def _sections(pc: int) -> str | None:
    return ".text" if 0x1000 <= pc < 0x4000 else None


@pytest.mark.parametrize(("pc", "name"), [
    (0x1000, "a"),                 # a symbol's start: its name
    (0x1004, "a+0x4"),
    (0x100f, "a+0xf"),             # its last byte
    (0x1010, "code in .text"),     # one past its end: not the symbol's
    (0x1fff, "code in .text"),
    (0x2000, "b"),
    (0x2008, "b+0x8"),             # inside the second symbol (not the one before it)
    (0x201f, "b+0x1f"),
    (0x2020, "code in .text"),
    (0x3000, "c"),
    (0x3001, "code in .text"),     # a size-0 symbol covers no byte past its start
    (0x0fff, "an unnamed function"),  # before every symbol, in no text section
    (0x4000, "an unnamed function"),
])
def test_func_name(pc: int, name: str) -> None:
    assert func_name(SYMS, addresses(SYMS), pc, _sections) == name


def _fde(cfa: object, ra: object, fp: object) -> EhFde:
    return EhFde(0x1000, 0x1010, (CfiRow(0, cfa, ra, fp),), 0)


SAVED_RA = RegRule(None, -8, True)


@pytest.mark.parametrize(("abi", "fde", "why"), [
    (AMD64, _fde(RegRule(7, 8, False), SAVED_RA, None), None),
    (AMD64, _fde(RegRule(6, 16, False), SAVED_RA, RegRule(None, -16, True)), None),
    (AMD64, _fde(RegRule(0, 8, False), SAVED_RA, None), "CFA based on rax, not SP or FP"),
    (AMD64, _fde(RegRule(7, 8, False), Opaque("x"), None),
     "RA or FP saved by a DWARF expression (.cfi_escape)"),
    (AMD64, _fde(RegRule(7, 8, False), SAVED_RA, Opaque("x")),
     "RA or FP saved by a DWARF expression (.cfi_escape)"),
    (AMD64, _fde(RegRule(7, 16, False), RegRule(None, -16, True), None),
     "RA at CFA-16, not at the fixed CFA-8"),
    # aarch64 keeps the RA in x30 at a call: SFrame records any CFA offset it is saved at
    (AARCH64, _fde(RegRule(31, 16, False), RegRule(None, -16, True), None), None),
    (AARCH64, _fde(RegRule(29, 16, False), RegRule(None, -8, True), None), None),
])
def test_skip_reason(abi, fde: EhFde, why: str | None) -> None:
    """Why gas leaves a function out of SFrame, as the coverage finding shows it."""
    assert skip_reason(fde, abi) == why
