"""sfcheck/rules/elf.py's placement checks on hand-built ELF models: each finding's rule and
message, one condition at a time (the mutation run's survivors in _check_segments,
clip_name and is_vdso)."""

from __future__ import annotations

import pytest

from sfcheck.elf.model import ElfFacts, ElfSFrameInfo, LoadSegment, SFrameSection, SFrameSegment
from sfcheck.rules import elf as elf_rules
from sfcheck.walk.context import SectionContext

SHF_WRITE, SHF_ALLOC = 0x1, 0x2
PF_X, PF_W, PF_R = 0x1, 0x2, 0x4
VMA, SIZE, OFFSET = 0x2000, 0x40, 0x2000


def section(flags: int = SHF_ALLOC, segment: int | None = None) -> SFrameSection:
    return SFrameSection(".sframe", 5, 0x1, flags, VMA, OFFSET, SIZE, b"\0" * SIZE, 0,
                         b"\0" * SIZE, segment=segment)


def info(loads: tuple[LoadSegment, ...], sframe: tuple[SFrameSegment, ...] = (),
         facts: ElfFacts | None = None) -> ElfSFrameInfo:
    return ElfSFrameInfo("lib.so", "ET_DYN", "EM_X86_64", 62, True, 64, (), sframe, loads, (),
                         facts=facts)


def load(vaddr: int, memsz: int, flags: int = PF_R) -> LoadSegment:
    return LoadSegment(2, vaddr, vaddr, memsz, memsz, flags)


MATCHING = (SFrameSegment(3, OFFSET, VMA, SIZE, SIZE, PF_R),)


def findings(inf: ElfSFrameInfo, sec: SFrameSection) -> list[tuple[str, str]]:
    ctx = SectionContext(inf.path, sec.name, sec.vma, sec.data)
    elf_rules._check_segments(ctx, inf, sec)
    return [(f.rule, f.message) for f in ctx.findings]


def test_a_clean_placement_has_no_finding() -> None:
    assert findings(info((load(0x1000, 0x2000),), MATCHING), section()) == []


def test_write_without_alloc_is_not_allocated() -> None:
    # SHF_WRITE (0x1) is not SHF_ALLOC (0x2): the mask tests bit 1 alone
    assert findings(info((load(0x1000, 0x2000),), MATCHING), section(SHF_WRITE)) == [
        ("elf-not-alloc", ".sframe is not SHF_ALLOC")]


def test_a_section_past_its_load_end_is_in_no_load() -> None:
    # the load covers [0x1000, 0x2020): the section starts inside it, ends 0x20 past it
    assert findings(info((load(0x1000, 0x1020),), MATCHING), section()) == [
        ("elf-not-alloc", ".sframe [0x2000, 0x2040) is in no PT_LOAD")]


def test_a_writable_load_is_named() -> None:
    assert findings(info((load(0x1000, 0x2000, PF_R | PF_W),), MATCHING), section()) == [
        ("elf-not-alloc", ".sframe is in a writable PT_LOAD")]


def test_a_segment_only_section_says_where_it_is() -> None:
    sec = section(segment=3)
    assert findings(info((load(0x1000, 0x2000),), MATCHING), sec) == [
        ("elf-segment-unlisted", "no .sframe section header at offset 0x2000, address "
         "0x2000: checking the segment's 0x40 bytes")]


def test_no_sframe_segment_is_named() -> None:
    assert findings(info((load(0x1000, 0x2000),)), section()) == [
        ("elf-no-segment", "no PT_GNU_SFRAME program header")]


@pytest.mark.parametrize(("name", "shown"), [
    ("f" * 64, "f" * 64),                  # at the limit: kept whole
    ("f" * 64 + "g", "f" * 64 + "..."),    # one past: the first 64 and an ellipsis
    ("f" * 64 + "gh", "f" * 64 + "..."),
    ("main", "main"),
])
def test_clip_name_keeps_64_characters(name: str, shown: str) -> None:
    assert elf_rules.clip_name(name) == shown


@pytest.mark.parametrize(("facts", "vdso"), [
    (ElfFacts(verdefs=("LINUX_2.6",)), True),              # x86-64 vDSO: no soname needed
    (ElfFacts(verdefs=("LINUX_2.6.39",), needed=0), True),
    (ElfFacts(verdefs=("LINUX_2.6",), needed=1), False),   # a library that needs others
    (ElfFacts(verdefs=("GLIBC_2.2.5",)), False),           # digit at [6], not LINUX_
    (ElfFacts(verdefs=("LINUX_X",)), False),               # LINUX_ without a version
    (ElfFacts(), False),
    (ElfFacts(soname="linux-vdso.so.1", needed=1), True),
])
def test_is_vdso(facts: ElfFacts, vdso: bool) -> None:
    assert elf_rules.is_vdso(info((), facts=facts)) is vdso


@pytest.mark.parametrize(("e_type", "is_linked"), [
    ("ET_EXEC", True), ("ET_DYN", True), ("ET_REL", False), ("ET_CORE", False)])
def test_linked_file_types(e_type: str, is_linked: bool) -> None:
    """A non-PIE executable (ET_EXEC) is linked as a shared object is: an empty .sframe in it
    means the linker discarded the inputs, in an object it is a warning (the rules run's
    survivors compared e_type with "XXET_EXECXX" and "et_exec")."""
    inf = ElfSFrameInfo("a", e_type, "EM_X86_64", 62, True, 64, (), (), (), ())
    assert elf_rules.linked(inf) is is_linked
    empty = SFrameSection(".sframe", 5, 0x1, SHF_ALLOC, VMA, OFFSET, 0, b"", 0, b"")
    ctx = SectionContext("a", ".sframe", VMA, b"")
    elf_rules.check_elf_section(ctx, inf, empty, None)
    assert [(f.rule, f.severity.name, f.message) for f in ctx.findings] == (
        [("defect-ld-discarded-sframe", "ERROR", ".sframe has size 0 in a linked file: the "
          "linker discarded the SFrame inputs")] if is_linked else
        [("elf-empty-sframe", "WARNING", ".sframe has size 0")])


def test_mixed_versions_name_each_version_in_order() -> None:
    from sfcheck.result import FileResult, SectionSummary
    files = []
    for path, version in (("d", 3), ("a", 1), ("b", 2), ("c", 2)):
        files.append(FileResult(path))
        files[-1].sections.append(SectionSummary(".sframe", 0, 64, version=version))
    (mixed,) = elf_rules.check_scan(files, lambda _r: True, lambda _r, sev: sev)
    assert mixed.message == (
        "SFrame v1 in 1 file (first: a), v2 in 2 files (first: b), v3 in 1 file (first: d): "
        "each reader takes one version, and GNU ld links objects of one version only")
