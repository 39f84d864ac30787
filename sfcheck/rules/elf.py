"""ELF rules: how the SFrame section sits in its file."""

from __future__ import annotations

from itertools import repeat
from operator import add, and_, le

from ..elf.model import ElfSFrameInfo, SFrameSection
from ..format import constants as C
from ..format.model import Header
from ..result import Severity
from ..walk.context import SectionContext, range_columns
from ..wording import plural
from .defect import check_discarded
from .registry import rule

NO_SFRAME = rule(
    "elf-no-sframe", "elf", "info", "no SFrame section",
    """The file has no .sframe section (built without -Wa,--gsframe, or its SFrame data was
    discarded). Unwinders fall back to frame pointers or DWARF. With --require-sframe this is
    an error.""",
    "Build with -Wa,--gsframe (binutils 2.40+).")
EMPTY = rule(
    "elf-empty-sframe", "elf", "warning", "empty .sframe section",
    """A zero-size .sframe in an object (or a bare section): what some assemblers leave
    (Ubuntu 25.10's Scrt1.o, mold#1646). In a linked file it means the linker discarded every
    SFrame input, reported as the known defect defect-ld-discarded-sframe (an error).""",
    "Rebuild every object with the same, current SFrame version.")
SECTION_TYPE = rule(
    "elf-section-type", "elf", "warning", "section type does not match the SFrame version",
    """binutils 2.45 moved .sframe from SHT_PROGBITS to SHT_GNU_SFRAME (0x6ffffff4). v3 sections
    are always SHT_GNU_SFRAME; ld 2.46 rejects inputs of any other type.""",
    "Rebuild with one toolchain; do not mix objcopy'd sections of different ages.")
NO_SEGMENT = rule(
    "elf-no-segment", "elf", "error", "no PT_GNU_SFRAME segment in a linked file",
    """The kernel and glibc find SFrame data through the PT_GNU_SFRAME program header, not the
    section table. Without it no runtime reader sees the section (zig/lld output has none).""",
    "Link with GNU ld 2.40+ (or a linker that emits PT_GNU_SFRAME).")
SEGMENT_MISMATCH = rule(
    "elf-segment-mismatch", "elf", "error", "PT_GNU_SFRAME does not cover the .sframe section",
    """PT_GNU_SFRAME must start at the section (same file offset and address) and be at least
    as large. Every GNU ld writes it larger than the section, zero-padded (noted as info).""",
    "Relink; the program header was damaged or written by a broken tool.")
SEGMENT_PADDED = rule(
    "elf-segment-padded", "elf", "info", "PT_GNU_SFRAME larger than the .sframe section",
    """GNU ld (2.40-2.47) lays the section out at its pre-merge size and then trims sh_size, so
    p_filesz exceeds sh_size by 30-90 zero bytes. Readers must parse by the header's sizes.
    A nonzero tail is a warning (elf-segment-tail).""",
    "Nothing to do for a zero tail.")
SEGMENT_TAIL = rule(
    "elf-segment-tail", "elf", "warning", "nonzero bytes in PT_GNU_SFRAME past the section",
    """The kernel reads the SFrame data through PT_GNU_SFRAME, whose p_filesz may exceed the
    .sframe section's sh_size (GNU ld pads with zeros). Nonzero bytes in that tail are data
    the section table does not describe but the loader maps as SFrame: a second section
    appended by a tool, or a section header edited after linking.""",
    "Relink; make sure no tool rewrites .sframe after ld.")
SEGMENT_MULTIPLE = rule(
    "elf-segment-multiple", "elf", "error", "more than one PT_GNU_SFRAME program header",
    """A linked file has at most one PT_GNU_SFRAME (GNU ld writes one for the merged .sframe).
    Readers take one of them (the kernel's binfmt loader the last it sees, others the first),
    so which SFrame data is used depends on the reader. Each segment's bytes are checked.""",
    "Relink; the program headers were written by a broken tool or edited.")
SEGMENT_ONLY = rule(
    "elf-segment-unlisted", "elf", "info", "PT_GNU_SFRAME bytes checked without a section",
    """The file has a PT_GNU_SFRAME program header but no .sframe section header at the same
    offset and address (the section table was stripped, e.g. by sstrip, or disagrees with the
    segment). The kernel reads SFrame data through the segment, so its bytes are decoded and
    checked as the section PT_GNU_SFRAME[i].""",
    "Nothing to do if the section table was stripped on purpose.")
NO_DATA = rule(
    "elf-no-sframe-data", "elf", "info", "SFrame section without bytes in this file",
    """A separate debug file (objcopy --only-keep-debug, what -dbgsym and -debuginfo packages
    hold) keeps every allocated section's header as SHT_NOBITS with its size but none of its
    bytes: .sframe, .eh_frame and the code are in the stripped binary. There is no SFrame data
    to check here; check the binary.""",
    "Nothing to do; check the stripped binary the debug file belongs to.")
TOO_MANY = rule(
    "elf-sframe-sections-capped", "elf", "warning", "too many SFrame sections to check",
    """Linked files have one .sframe section and objects one per .sframe input (rarely more
    than a few). sfcheck checks the first 64 of a file and says how many it left unchecked,
    so a hostile file cannot make one check take minutes.""",
    "Look at why the file has so many SFrame sections.")
NOT_ALLOC = rule(
    "elf-not-alloc", "elf", "error", ".sframe is not allocated or not in a read-only PT_LOAD",
    """Runtime readers read SFrame data from memory: the section must be SHF_ALLOC and inside a
    PT_LOAD that is not writable (ld puts it with .eh_frame: a read-only segment on x86-64,
    the read+execute text segment on aarch64 and s390x).""",
    "Relink; check the linker script keeps .sframe in a read-only load segment.")
ABI_MACHINE = rule(
    "elf-abi-machine", "elf", "error", "SFrame ABI does not match the ELF machine",
    """sfh_abi_arch must agree with e_machine and EI_DATA: AMD64 with EM_X86_64 little-endian,
    aarch64 LE/BE with EM_AARCH64 of that byte order, s390x with EM_S390 big-endian.""",
    "Regenerate the section for the file's target.")
OUTSIDE_TEXT = rule(
    "elf-fde-outside-text", "elf", "error", "function range outside executable code",
    """Every FDE's [start, start+size) must lie inside executable code: an executable PT_LOAD
    in linked files, an executable section in objects. The kernel rejects FDEs outside the
    registered text range. Starts that miss by the field position are the sign of an input
    section of another version copied raw by ld (see the defect rules).""",
    "Relink with matching SFrame versions; check relocations.")
NOT_SORTED = rule(
    "elf-not-sorted", "elf", "error", "linked file without SFRAME_F_FDE_SORTED",
    """ld sorts the FDEs of linked output and sets the flag; glibc, libsframe's lookup and the
    kernel refuse unsorted tables.""",
    "Link with GNU ld, which sorts.")
NOT_PCREL = rule(
    "elf-not-pcrel", "elf", "warning", "linked file without FDE_FUNC_START_PCREL",
    """v3 always uses PC-relative function starts and v2 does from errata 1 (binutils 2.45);
    the kernel series requires the flag. Older v2 output (2.41-2.44) works with glibc 2.42.""",
    "Rebuild with binutils 2.45+ (v2) or 2.46+ (v3).")

CAPPED = rule(
    "elf-findings-capped", "elf", "info", "more findings in the file than are shown",
    """Each rule reports at most 50 findings per section, and a file at most 1,000 findings
    in all (the most severe kept), so a hostile or badly broken file gives a report of
    bounded size in every output format. This finding says how many were left out.""",
    "Fix the findings shown and check again.")


def linked(info: ElfSFrameInfo) -> bool:
    return info.e_type in ("ET_EXEC", "ET_DYN")


_MACHINES = {C.ABI_AMD64_LE: ("EM_X86_64", True), C.ABI_AARCH64_LE: ("EM_AARCH64", True),
             C.ABI_AARCH64_BE: ("EM_AARCH64", False), C.ABI_S390X_BE: ("EM_S390", False)}


def check_elf_section(ctx: SectionContext, info: ElfSFrameInfo, sec: SFrameSection,
                      h: Header | None) -> None:
    """Rules about the section's place in the file (h is None when the header is unreadable)."""
    is_linked = linked(info)
    if sec.size == 0 or not sec.data:
        if is_linked:
            if not check_discarded(ctx, True):  # the defect group is switched off
                ctx.emit_as(EMPTY, Severity.ERROR, f"{sec.name} has size 0 in a linked file")
        else:  # in an object this is what some assemblers leave: a warning only
            ctx.emit_as(EMPTY, Severity.WARNING, f"{sec.name} has size 0")
        return
    if is_linked:
        _check_segments(ctx, info, sec)
    if h is None:
        return
    want = _MACHINES.get(h.abi)
    if want and (info.e_machine, info.little_endian) != want:
        ctx.emit(ABI_MACHINE, f"ABI {C.ABI_NAMES[h.abi]} in a {info.e_machine} "
                 f"{'little' if info.little_endian else 'big'}-endian file", offset=4)
    if sec.segment is not None:
        pass  # no section header: no section type to judge
    elif h.version == C.VERSION_3 and not sec.gnu_sframe_type:
        ctx.emit(SECTION_TYPE, f"v3 section of type {sec.sh_type:#x}, expected "
                 "SHT_GNU_SFRAME")
    elif h.version == C.VERSION_1 and sec.gnu_sframe_type:
        ctx.emit(SECTION_TYPE, "v1 section of type SHT_GNU_SFRAME (binutils 2.40 wrote "
                 "SHT_PROGBITS)")
    if is_linked:
        if not h.sorted:
            ctx.emit(NOT_SORTED, "flags lack SFRAME_F_FDE_SORTED", offset=3)
        if h.version >= C.VERSION_2 and not h.pcrel:
            ctx.emit(NOT_PCREL, "flags lack SFRAME_F_FDE_FUNC_START_PCREL", offset=3)


def _check_segments(ctx: SectionContext, info: ElfSFrameInfo, sec: SFrameSection) -> None:
    if not sec.sh_flags & 0x2:  # SHF_ALLOC
        ctx.emit(NOT_ALLOC, f"{sec.name} is not SHF_ALLOC")
    else:
        loads = [seg for seg in info.load_segments
                 if seg.vaddr <= sec.vma and sec.vma + sec.size <= seg.vaddr + seg.memsz]
        if not loads:
            ctx.emit(NOT_ALLOC, f"{sec.name} [{sec.vma:#x}, {sec.vma + sec.size:#x}) is in no "
                     "PT_LOAD")
        elif any(seg.flags & 0x2 for seg in loads):  # PF_W; R+X is normal on aarch64/s390x
            ctx.emit(NOT_ALLOC, f"{sec.name} is in a writable PT_LOAD")
    if sec.segment is not None:
        ctx.emit(SEGMENT_ONLY, f"no .sframe section header at offset {sec.offset:#x}, address "
                 f"{sec.vma:#x}: checking the segment's {sec.size:#x} bytes")
        return
    segs = info.sframe_segments
    if not segs:
        ctx.emit(NO_SEGMENT, "no PT_GNU_SFRAME program header")
        return
    seg = next((s for s in segs if s.offset == sec.offset and s.vaddr == sec.vma), segs[0])
    if seg.offset != sec.offset or seg.vaddr != sec.vma or seg.filesz < sec.size:
        ctx.emit(SEGMENT_MISMATCH, f"PT_GNU_SFRAME offset {seg.offset:#x} vaddr {seg.vaddr:#x} "
                 f"filesz {seg.filesz:#x}; section offset {sec.offset:#x} addr {sec.vma:#x} "
                 f"size {sec.size:#x}")
    elif seg.filesz > sec.size:
        tail = dict(info.segment_tails).get(seg.index, b"")
        nonzero = next((i for i, b in enumerate(tail) if b), None)
        if nonzero is None:
            ctx.emit(SEGMENT_PADDED, f"p_filesz {seg.filesz:#x} > sh_size {sec.size:#x}")
        else:
            ctx.emit(SEGMENT_TAIL, f"PT_GNU_SFRAME[{seg.index}] holds "
                     f"{plural(len(tail), 'byte')} past sh_size {sec.size:#x}, nonzero from "
                     f"+{nonzero:#x}",
                     offset=sec.size + nonzero)


def check_file(ctx: SectionContext, info: ElfSFrameInfo) -> None:
    """Once per file (on the first section's context): the SFrame sections and segments
    as a whole."""
    checked = len([s for s in info.sections if s.segment is None])  # the loader's cap
    if info.sframe_sections_total > checked:
        ctx.emit(TOO_MANY, f"{info.sframe_sections_total} SFrame sections; only the first "
                 f"{checked} are checked")
    segs = info.sframe_segments
    if linked(info) and len(segs) > 1:
        ctx.emit(SEGMENT_MULTIPLE, f"{len(segs)} PT_GNU_SFRAME program headers (indices "
                 f"{', '.join(str(s.index) for s in segs[:16])}"
                 f"{', ...' if len(segs) > 16 else ''})")


def check_function_ranges(ctx: SectionContext, info: ElfSFrameInfo,
                          ranges: list[tuple[int, int, int]]) -> None:
    """Each (pc, size, fde) must lie in executable code."""
    if linked(info):
        spans = sorted((s.vaddr, s.vaddr + s.memsz) for s in info.load_segments if s.flags & 1)
    else:
        spans = sorted((t.start, t.end) for t in info.text_ranges)
    if not spans or _all_inside(ranges, spans):
        return
    for pc, size, i in ranges:
        if not any(a <= pc and pc + size <= b for a, b in spans):
            ctx.emit(OUTSIDE_TEXT, f"function [{pc:#x}, {pc + size:#x}) is not inside "
                     "executable code", fde=i, pc=pc)


def _all_inside(ranges: list[tuple[int, int, int]], spans: list[tuple[int, int]]) -> bool:
    """True when every range lies inside one of the sorted, non-touching spans, counted with
    C-level map/sum (a 100k-FDE table otherwise costs 100k Python-level any() calls).
    Overlapping or touching spans answer False: the caller's exact loop decides."""
    if any(b1 >= a2 for (_a1, b1), (a2, _b2) in zip(spans, spans[1:], strict=False)):
        return False
    pcs, sizes = range_columns(ranges)
    ends = list(map(add, pcs, sizes))
    inside = sum(sum(map(and_, map(le, repeat(a), pcs), map(le, ends, repeat(b))))
                 for a, b in spans)
    return inside == len(ranges)
