"""sfcheck/rules/elf.py's section checks on hand-built ELF models, each finding whole (rule,
severity, message, location): check_elf_section (empty sections, ABI against machine and byte
order, section type per version, linked-file flags), _check_segments (which PT_GNU_SFRAME is
compared, short/padded/tailed segments) and check_function_ranges (a range ending at a span's
end and one past it, objects' text sections, non-PF_X loads) (the mutation run's survivors)."""

from __future__ import annotations

import pytest

from sfcheck.elf.constants import SHT_GNU_SFRAME
from sfcheck.elf.model import (
    ElfFacts,
    ElfSFrameInfo,
    LoadSegment,
    SFrameSection,
    SFrameSegment,
    TextRange,
)
from sfcheck.format import constants as C
from sfcheck.format.model import Header
from sfcheck.result import Severity
from sfcheck.rules import elf as elf_rules
from sfcheck.walk.context import SectionContext

SHT_PROGBITS, SHF_ALLOC = 1, 0x2
PF_X, PF_R = 0x1, 0x4
VMA, SIZE, OFFSET = 0x2000, 0x40, 0x2000
LINKED_FLAGS = C.F_FDE_SORTED | C.F_FDE_FUNC_START_PCREL
E, W, INFO = Severity.ERROR, Severity.WARNING, Severity.INFO

Found = list[tuple[str, Severity, str, int | None]]


def section(size: int = SIZE, data: bytes | None = None, sh_type: int = SHT_GNU_SFRAME,
            segment: int | None = None) -> SFrameSection:
    data = b"\0" * size if data is None else data
    return SFrameSection(".sframe", 5, sh_type, SHF_ALLOC, VMA, OFFSET, size, data, 0, data,
                         segment=segment)


def info(e_type: str = "ET_DYN", machine: str = "EM_X86_64", little: bool = True,
         sframe: tuple[SFrameSegment, ...] = (SFrameSegment(3, OFFSET, VMA, SIZE, SIZE, PF_R),),
         loads: tuple[LoadSegment, ...] = (LoadSegment(2, 0x1000, 0x1000, 0x2000, 0x2000, PF_R),),
         tails: tuple[tuple[int, bytes], ...] = (),
         text: tuple[TextRange, ...] = ()) -> ElfSFrameInfo:
    return ElfSFrameInfo("f", e_type, machine, 62, little, 64, (), sframe, loads, text,
                         segment_tails=tails)


def header(version: int = 3, flags: int = LINKED_FLAGS, abi: int = C.ABI_AMD64_LE) -> Header:
    return Header(version, flags, abi, 0, 0, 0, 0, 0, 0, 0, abi in (C.ABI_AARCH64_BE,
                                                                    C.ABI_S390X_BE))


def elf_section(inf: ElfSFrameInfo, sec: SFrameSection, h: Header | None,
                enabled=lambda rule: True) -> Found:
    ctx = SectionContext(inf.path, sec.name, sec.vma, sec.data, enabled=enabled)
    elf_rules.check_elf_section(ctx, inf, sec, h)
    return [(f.rule, f.severity, f.message, f.location.offset) for f in ctx.findings]


# -- check_elf_section ---------------------------------------------------------------------

def test_a_clean_linked_v3_section_has_no_finding() -> None:
    assert elf_section(info(), section(), header()) == []


@pytest.mark.parametrize("sec", [section(0, b""), section(SIZE, b"")])
def test_an_empty_object_section_is_a_warning(sec: SFrameSection) -> None:
    # no size, or a size and no bytes (nothing read): either way nothing to check
    assert elf_section(info("ET_REL"), sec, None) == [
        ("elf-empty-sframe", W, ".sframe has size 0", None)]


def test_a_one_byte_section_is_not_empty() -> None:
    assert elf_section(info("ET_REL"), section(1), None) == []


def test_an_empty_linked_section_is_an_error_when_the_defect_rule_is_off() -> None:
    def no_defects(rule) -> bool:
        return not rule.id.startswith("defect-")
    assert elf_section(info(), section(0, b""), None, no_defects) == [
        ("elf-empty-sframe", E, ".sframe has size 0 in a linked file", None)]


@pytest.mark.parametrize(("abi", "machine", "little", "message"), [
    (C.ABI_AMD64_LE, "EM_AARCH64", True, "ABI amd64 in a EM_AARCH64 little-endian file"),
    (C.ABI_AARCH64_BE, "EM_AARCH64", True, "ABI aarch64-be in a EM_AARCH64 little-endian file"),
    (C.ABI_AARCH64_LE, "EM_AARCH64", False, "ABI aarch64-le in a EM_AARCH64 big-endian file"),
    (C.ABI_S390X_BE, "EM_X86_64", False, "ABI s390x in a EM_X86_64 big-endian file"),
])
def test_abi_against_machine_and_byte_order(abi: int, machine: str, little: bool,
                                            message: str) -> None:
    assert elf_section(info("ET_REL", machine, little), section(), header(abi=abi)) == [
        ("elf-abi-machine", E, message, 4)]


@pytest.mark.parametrize(("version", "sh_type", "found"), [
    (3, SHT_PROGBITS, [("elf-section-type", W, "v3 section of type 0x1, expected "
                        "SHT_GNU_SFRAME", None)]),
    (3, SHT_GNU_SFRAME, []),
    (2, SHT_PROGBITS, []),
    (2, SHT_GNU_SFRAME, []),
    (1, SHT_PROGBITS, []),
    (1, SHT_GNU_SFRAME, [("elf-section-type", W, "v1 section of type SHT_GNU_SFRAME (binutils "
                          "2.40 wrote SHT_PROGBITS)", None)]),
])
def test_section_type_per_version(version: int, sh_type: int, found: Found) -> None:
    assert elf_section(info("ET_REL"), section(sh_type=sh_type), header(version)) == found


def test_a_segment_stand_in_has_no_section_type() -> None:
    assert elf_section(info("ET_REL"), section(sh_type=SHT_PROGBITS, segment=3), header()) == []


@pytest.mark.parametrize(("version", "flags", "found"), [
    (3, 0, [("elf-not-sorted", E, "flags lack SFRAME_F_FDE_SORTED", 3),
            ("elf-not-pcrel", W, "flags lack SFRAME_F_FDE_FUNC_START_PCREL", 3)]),
    (2, C.F_FDE_SORTED, [("elf-not-pcrel", W, "flags lack SFRAME_F_FDE_FUNC_START_PCREL", 3)]),
    (1, C.F_FDE_SORTED, []),          # v1 has no PCREL flag to lack
    (2, LINKED_FLAGS, []),
])
def test_linked_flags(version: int, flags: int, found: Found) -> None:
    sec = section(sh_type=SHT_PROGBITS if version < 3 else SHT_GNU_SFRAME)
    assert elf_section(info(), sec, header(version, flags)) == found


def test_an_objects_flags_are_not_judged() -> None:
    assert elf_section(info("ET_REL"), section(), header(3, 0)) == []


# -- _check_segments -----------------------------------------------------------------------

def segments(sframe: tuple[SFrameSegment, ...], tails: tuple[tuple[int, bytes], ...] = (),
             size: int = SIZE) -> Found:
    inf, sec = info(sframe=sframe, tails=tails), section(size)
    ctx = SectionContext(inf.path, sec.name, sec.vma, sec.data)
    elf_rules._check_segments(ctx, inf, sec)
    return [(f.rule, f.severity, f.message, f.location.offset) for f in ctx.findings]


def test_the_segment_matching_offset_and_address_is_compared() -> None:
    # two decoys before it, each matching one of the two
    decoys = (SFrameSegment(7, OFFSET, VMA + 0x100, 8, 8, PF_R),
              SFrameSegment(8, OFFSET + 0x100, VMA, 8, 8, PF_R))
    assert segments((*decoys, SFrameSegment(9, OFFSET, VMA, SIZE, SIZE, PF_R))) == []


def test_with_no_match_the_first_segment_is_named() -> None:
    segs = (SFrameSegment(7, OFFSET, VMA + 0x100, SIZE, SIZE, PF_R),
            SFrameSegment(8, OFFSET + 0x100, VMA, SIZE, SIZE, PF_R))
    assert segments(segs) == [
        ("elf-segment-mismatch", E, "PT_GNU_SFRAME offset 0x2000 vaddr 0x2100 filesz 0x40; "
         "section offset 0x2000 addr 0x2000 size 0x40", None)]


@pytest.mark.parametrize(("filesz", "found"), [
    (SIZE - 1, [("elf-segment-mismatch", E, "PT_GNU_SFRAME offset 0x2000 vaddr 0x2000 filesz "
                 "0x3f; section offset 0x2000 addr 0x2000 size 0x40", None)]),
    (SIZE, []),
    (SIZE + 1, [("elf-segment-padded", INFO, "p_filesz 0x41 > sh_size 0x40", None)]),
])
def test_segment_size_at_the_section_size_and_one_either_side(filesz: int,
                                                              found: Found) -> None:
    assert segments((SFrameSegment(3, OFFSET, VMA, filesz, filesz, PF_R),)) == found


def test_zero_padding_is_padding() -> None:
    seg = SFrameSegment(3, OFFSET, VMA, SIZE + 4, SIZE + 4, PF_R)
    assert segments((seg,), ((3, b"\0" * 4),)) == [
        ("elf-segment-padded", INFO, "p_filesz 0x44 > sh_size 0x40", None)]


@pytest.mark.parametrize(("tail", "count", "at"), [
    (b"\0\0\x01", "3 bytes", 2), (b"\x07", "1 byte", 0)])
def test_a_nonzero_tail_is_located(tail: bytes, count: str, at: int) -> None:
    seg = SFrameSegment(3, OFFSET, VMA, SIZE + len(tail), SIZE + len(tail), PF_R)
    assert segments((seg,), ((3, tail),)) == [
        ("elf-segment-tail", W, f"PT_GNU_SFRAME[3] holds {count} past sh_size 0x40, nonzero "
         f"from +{at:#x}", SIZE + at)]


# -- check_function_ranges -----------------------------------------------------------------

def ranges_found(inf: ElfSFrameInfo, ranges: list[tuple[int, int, int]]
                 ) -> list[tuple[str, Severity, str, int | None, int | None]]:
    ctx = SectionContext(inf.path, ".sframe", VMA, b"\0")
    elf_rules.check_function_ranges(ctx, inf, ranges)
    return [(f.rule, f.severity, f.message, f.location.fde, f.location.pc)
            for f in ctx.findings]


def outside(pc: int, end: int, fde: int) -> tuple[str, Severity, str, int, int]:
    return ("elf-fde-outside-text", E, f"function [{pc:#x}, {end:#x}) is not inside "
            "executable code", fde, pc)


TEXT_LOAD = LoadSegment(2, 0x1000, 0x1000, 0x100, 0x100, PF_R | PF_X)
DATA_LOAD = LoadSegment(3, 0x3000, 0x3000, 0x100, 0x100, PF_R)


def test_a_range_ending_at_the_span_end_is_inside_one_past_is_not() -> None:
    inf = info(loads=(TEXT_LOAD,))
    # FDE 0 ends exactly at 0x1100; FDE 1 one byte past it
    assert ranges_found(inf, [(0x10F0, 0x10, 0), (0x10F0, 0x11, 1)]) == [
        outside(0x10F0, 0x1101, 1)]


def test_a_range_in_a_non_executable_load_is_outside() -> None:
    inf = info(loads=(TEXT_LOAD, DATA_LOAD))
    assert ranges_found(inf, [(0x1000, 8, 0), (0x3000, 8, 1)]) == [outside(0x3000, 0x3008, 1)]


def test_no_executable_load_judges_nothing() -> None:
    assert ranges_found(info(loads=(DATA_LOAD,)), [(0x3000, 8, 0), (0x5000, 8, 1)]) == []


def test_an_objects_ranges_are_judged_by_its_text_sections() -> None:
    inf = info("ET_REL", loads=(), text=(TextRange(".text", 0, 0x20),
                                         TextRange(".text.f", 0x40, 0x50)))
    assert ranges_found(inf, [(0, 0x20, 0), (0x40, 0x10, 1), (0x20, 4, 2)]) == [
        outside(0x20, 0x24, 2)]


def test_touching_spans_take_the_exact_walk() -> None:
    """Two executable loads meeting at 0x1100: an empty range there lies in both, so counting
    ranges per span would reach the range count with FDE 1 outside every span."""
    touching = (TEXT_LOAD, LoadSegment(4, 0x1100, 0x1100, 0x100, 0x100, PF_R | PF_X))
    assert ranges_found(info(loads=touching), [(0x1100, 0, 0), (0x5000, 8, 1)]) == [
        outside(0x5000, 0x5008, 1)]


# -- check_vdso ----------------------------------------------------------------------------

VDSO_FACTS = ElfFacts(soname="linux-vdso.so.1")
NOT_REGISTERED = (": the kernel maps the vDSO itself and registers no SFrame data for it unless "
                  "built for it")
BUILT_FOR = " and PT_GNU_SFRAME: what the kernel's vDSO SFrame support builds"


def vdso(h: Header | None, facts: ElfFacts = VDSO_FACTS, e_type: str = "ET_DYN",
         segs: bool = True, data: bytes | None = None) -> Found:
    sframe = (SFrameSegment(3, OFFSET, VMA, SIZE, SIZE, PF_R),) if segs else ()
    inf = ElfSFrameInfo("vdso.so", e_type, "EM_X86_64", 62, True, 64, (), sframe, (), (),
                        facts=facts)
    sec = section(data=data)
    ctx = SectionContext(inf.path, sec.name, sec.vma, sec.data)
    elf_rules.check_vdso(ctx, inf, sec, h)
    return [(f.rule, f.severity, f.message, f.location.offset) for f in ctx.findings]


@pytest.mark.parametrize(("h", "segs", "found"), [
    (header(3), True, [("elf-vdso-sframe", INFO, "a vDSO (soname linux-vdso.so.1) with a v3 "
                        f".sframe{BUILT_FOR}", None)]),
    (header(3), False, [("elf-vdso-sframe", W, "a vDSO (soname linux-vdso.so.1) with a v3 "
                         f".sframe{NOT_REGISTERED}", None)]),
    (header(2), True, [("elf-vdso-sframe", W, "a vDSO (soname linux-vdso.so.1) with a v2 "
                        f".sframe{NOT_REGISTERED}", None)]),
    (None, True, [("elf-vdso-sframe", W, "a vDSO (soname linux-vdso.so.1) with a unreadable "
                   f".sframe{NOT_REGISTERED}", None)]),
])
def test_a_vdso_is_info_only_as_v3_with_its_segment(h: Header | None, segs: bool,
                                                     found: Found) -> None:
    assert vdso(h, segs=segs) == found


def test_a_vdso_without_soname_is_named_by_its_versions() -> None:
    assert vdso(header(3), ElfFacts(verdefs=("LINUX_2.6",))) == [
        ("elf-vdso-sframe", INFO, f"a vDSO (LINUX_* versions) with a v3 .sframe{BUILT_FOR}",
         None)]


@pytest.mark.parametrize("case", [
    {"e_type": "ET_EXEC"},          # not a shared object
    {"data": b""},                  # no bytes in this file
    {"facts": ElfFacts(soname="libc.so.6")},
])
def test_only_a_vdso_with_bytes_is_named(case: dict) -> None:
    assert vdso(header(3), **case) == []


# -- check_file ----------------------------------------------------------------------------

def file_findings(inf: ElfSFrameInfo) -> Found:
    ctx = SectionContext(inf.path, ".sframe", VMA, b"\0")
    elf_rules.check_file(ctx, inf)
    return [(f.rule, f.severity, f.message, f.location.offset) for f in ctx.findings]


def with_sections(total: int, listed: int, stand_ins: int = 0) -> ElfSFrameInfo:
    secs = tuple(section() for _ in range(listed)) + tuple(section(segment=3)
                                                          for _ in range(stand_ins))
    return ElfSFrameInfo("f", "ET_DYN", "EM_X86_64", 62, True, 64, secs, (), (), (),
                         sframe_sections_total=total)


def test_sections_past_the_loaders_cap_are_counted() -> None:
    # a PT_GNU_SFRAME stand-in is no section of the cap
    assert file_findings(with_sections(5, 3, stand_ins=1)) == [
        ("elf-sframe-sections-capped", W, "5 SFrame sections; only the first 3 are checked",
         None)]
    assert file_findings(with_sections(3, 3, stand_ins=1)) == []


@pytest.mark.parametrize(("count", "shown"), [
    (2, "0, 1"),
    (16, ", ".join(map(str, range(16)))),              # at the limit: all listed
    (17, ", ".join(map(str, range(16))) + ", ..."),    # one past: 16 and an ellipsis
])
def test_more_than_one_sframe_segment_lists_up_to_16(count: int, shown: str) -> None:
    segs = tuple(SFrameSegment(i, OFFSET, VMA, SIZE, SIZE, PF_R) for i in range(count))
    assert file_findings(info(sframe=segs)) == [
        ("elf-segment-multiple", E, f"{count} PT_GNU_SFRAME program headers (indices {shown})",
         None)]
    assert file_findings(info("ET_REL", sframe=segs)) == []
