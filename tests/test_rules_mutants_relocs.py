"""sfcheck/rules/elf.py's check_object_relocs on hand-built object models: each finding whole
(rule, severity, message, offset), the COMDAT list at 4 and 5 groups, the FDE start table at
its 2^20 cap and one past, R_*_NONE skipped, zig's note (the mutation run's survivors)."""

from __future__ import annotations

import pytest

from sfcheck.elf.model import ElfFacts, ElfSFrameInfo, SFrameReloc, SFrameSection
from sfcheck.format.model import Header
from sfcheck.result import Severity
from sfcheck.rules import elf as elf_rules
from sfcheck.walk.context import SectionContext

SEC = 2  # the .sframe section's index
PC32, PC64, R_NONE, R_64 = 2, 24, 0, 1  # x86-64 relocation types
NAMES = ((R_NONE, "R_X86_64_NONE"), (R_64, "R_X86_64_64"), (PC32, "R_X86_64_PC32"),
         (PC64, "R_X86_64_PC64"))
WARNING, INFO = Severity.WARNING, Severity.INFO
COMDAT_TAIL = ("lld and gold stop with \"relocation refers to a discarded section\" when "
               "another object's copy wins; GNU ld drops those FDEs")
MISREAD = "GNU ld misreads the function starts; lld, gold and mold copy the section as it is"
ZIG = ("zig's self-hosted ELF linker (0.15, 0.16) stops with \"unhandled relocation type\"; "
       "GNU ld, lld, gold and mold link it")


def header(version: int = 3, num_fdes: int = 2) -> Header:
    # FDEs right after the 28-byte header: starts at 28, 28 + fde_size, ...
    return Header(version, 0, 3, 0, 0, num_fdes, 0, 0, 0, 0, False)


def starts(h: Header) -> list[int]:
    return [h.fdes_start + i * h.fde_size for i in range(h.num_fdes)]


def run(relocs: list[tuple[int, int, int]], h: Header | None, *, e_type: str = "ET_REL",
        machine: str = "EM_X86_64", comdat: tuple[tuple[int, str], ...] = (),
        segment: int | None = None) -> list[tuple[str, Severity, str, int | None]]:
    """Findings for relocations (offset, type, target section) against section SEC."""
    facts = ElfFacts(comdat=comdat, reloc_names=NAMES,
                     relocs=tuple(SFrameReloc(SEC, o, t, g) for o, t, g in relocs))
    sec = SFrameSection(".sframe", SEC, 0x70000006, 0x2, 0, 0x40, 0x40, b"\0" * 0x40, 0,
                        b"\0" * 0x40, segment=segment)
    inf = ElfSFrameInfo("f.o", e_type, machine, 62, True, 64, (sec,), (), (), (), facts=facts)
    ctx = SectionContext(inf.path, sec.name, sec.vma, sec.data)
    elf_rules.check_object_relocs(ctx, inf, sec, h)
    return [(f.rule, f.severity, f.message, f.location.offset) for f in ctx.findings]


def test_starts_relocated_as_ld_reads_them_are_quiet() -> None:
    h = header()
    assert run([(s, PC64, 1) for s in starts(h)], h) == [
        ("elf-sframe-reloc-type", INFO,
         f"2 relocations of type R_X86_64_PC64: {ZIG}", starts(h)[0])]
    h2 = header(2)
    assert run([(s, PC32, 1) for s in starts(h2)], h2) == []


@pytest.mark.parametrize(("groups", "shown"), [
    (1, "g0"),
    (4, "g0, g1, g2, g3"),                # at the limit: all named
    (5, "g0, g1, g2, g3, ..."),           # one past: four and an ellipsis
])
def test_comdat_targets_name_up_to_four_groups(groups: int, shown: str) -> None:
    h = header(2, num_fdes=groups + 1)
    comdat = tuple((10 + i, f"g{i}") for i in range(groups))
    # FDE 0 against .text (section 1), FDE i+1 against group member 10+i
    relocs = [(starts(h)[0], PC32, 1)] + [(starts(h)[i + 1], PC32, 10 + i) for i in range(groups)]
    n = "1 relocation" if groups == 1 else f"{groups} relocations"
    g = "1 COMDAT group" if groups == 1 else f"{groups} COMDAT groups"
    assert run(relocs, h, comdat=comdat) == [
        ("elf-comdat-sframe-reloc", WARNING, f"{n} against sections of {g} ({shown}): "
         f"{COMDAT_TAIL}", starts(h)[1])]


def test_two_relocations_into_one_group_count_both() -> None:
    h = header(2)
    assert run([(s, PC32, 10) for s in starts(h)], h, comdat=((10, "grp"),)) == [
        ("elf-comdat-sframe-reloc", WARNING,
         f"2 relocations against sections of 1 COMDAT group (grp): {COMDAT_TAIL}", starts(h)[0])]


@pytest.mark.parametrize("where", [
    {"e_type": "ET_DYN"},     # a linked file: its relocations were applied
    {"segment": 3},           # a PT_GNU_SFRAME stand-in, not the object's section
])
def test_only_an_objects_own_section_is_checked(where: dict) -> None:
    h = header(2)
    assert run([(starts(h)[0], R_64, 10)], h, comdat=((10, "grp"),), **where) == []


def test_an_object_without_relocations_is_quiet() -> None:
    assert run([], header(2)) == []


@pytest.mark.parametrize(("h", "machine"), [(None, "EM_X86_64"), (header(2), "EM_RISCV")])
def test_types_are_judged_only_with_a_header_and_a_known_machine(h: Header | None,
                                                                 machine: str) -> None:
    assert run([(100, R_64, 1)], h, machine=machine) == []


def test_a_type_ld_does_not_read_names_the_one_it_reads() -> None:
    h = header(2)
    assert run([(starts(h)[0], R_64, 1), (starts(h)[1], R_64, 1)], h) == [
        ("elf-sframe-reloc-type", WARNING, "2 relocations of type R_X86_64_64 in v2 "
         f".rela.sframe, where GNU ld reads R_X86_64_PC32 (first at +{starts(h)[0]:#x}): "
         f"{MISREAD}", starts(h)[0])]


def test_the_right_type_off_a_start_field_says_so() -> None:
    h = header(2)
    off = starts(h)[0] + 4
    assert run([(starts(h)[0], PC32, 1), (off, PC32, 1)], h) == [
        ("elf-sframe-reloc-type", WARNING, "1 relocation of type R_X86_64_PC32 in v2 "
         f".rela.sframe, not on an FDE start field (first at +{off:#x}): {MISREAD}", off)]


def test_each_odd_type_gets_its_finding_in_type_order() -> None:
    h = header(3)
    s0, s1 = starts(h)
    # R_NONE first: skipped, and the relocations after it still judged
    assert run([(s0, R_NONE, 0), (s1, PC32, 1), (s0, R_64, 1)], h) == [
        ("elf-sframe-reloc-type", WARNING, "1 relocation of type R_X86_64_64 in v3 "
         f".rela.sframe, where GNU ld reads R_X86_64_PC64 (first at +{s0:#x}): {MISREAD}", s0),
        ("elf-sframe-reloc-type", WARNING, "1 relocation of type R_X86_64_PC32 in v3 "
         f".rela.sframe, where GNU ld reads R_X86_64_PC64 (first at +{s1:#x}): {MISREAD}", s1)]


def test_zig_note_names_the_first_pc64_and_yields_to_a_warning() -> None:
    h = header(3)
    s0, s1 = starts(h)
    assert run([(s1, PC64, 1)], h) == [
        ("elf-sframe-reloc-type", INFO, f"1 relocation of type R_X86_64_PC64: {ZIG}", s1)]
    assert [f[:2] for f in run([(s0, PC64, 1), (s0 + 1, PC64, 1)], h)] == [
        ("elf-sframe-reloc-type", WARNING)]


@pytest.mark.parametrize(("index", "odd"), [((1 << 20) - 1, False), (1 << 20, True)])
def test_fde_start_fields_are_taken_from_the_first_2_to_the_20_fdes(index: int,
                                                                     odd: bool) -> None:
    """A header claiming more FDEs than 2^20 builds no bigger table: a start relocated past
    the cap counts as off a start field."""
    h = header(2, num_fdes=(1 << 20) + 1)
    off = h.fdes_start + index * h.fde_size
    found = run([(off, PC32, 1)], h)
    assert found == ([("elf-sframe-reloc-type", WARNING, "1 relocation of type R_X86_64_PC32 "
                       f"in v2 .rela.sframe, not on an FDE start field (first at +{off:#x}): "
                       f"{MISREAD}", off)] if odd else [])
