"""ELF rules: how the SFrame section sits in its file.

Over 400 lines because it is the elf group's one module (rules/__init__.GROUP_MODULES):
each of the group's 23 rules is declared here with its explanation, beside the check
that emits it.
"""

from __future__ import annotations

from itertools import repeat
from operator import add, and_, le

from ..elf.model import ElfSFrameInfo, SFrameSection
from ..format import constants
from ..format.model import Header
from ..result import SCAN_PATH, FileResult, Finding, Location, Severity, clip
from ..walk.context import SectionContext, range_columns
from ..wording import plural
from .defect import check_discarded
from .registry import PROFILE_ONLY, Rule, rule

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing at run time
if TYPE_CHECKING:
    from collections.abc import Callable

READER_TEXT = rule(
    "elf-text-segments", "elf", "error", "FDEs start in more than one executable segment",
    f"""The kernel registers a PT_GNU_SFRAME section once per executable PT_LOAD, with that
    segment as the text range, and rejects function starts outside it; with
    CONFIG_SFRAME_VALIDATION every registration then fails. {PROFILE_ONLY}""",
    "Link the code with SFrame data into one executable segment.")
TEXT_COVERAGE = rule(
    "elf-text-coverage", "elf", "info", "executable bytes no FDE covers",
    """For each executable PT_LOAD segment, the bytes outside every FDE's [start, start +
    size): a sample taken there cannot be unwound with SFrame (the kernel falls back to
    frame pointers, glibc's backtrace to DWARF). Alignment padding between functions is
    counted too, so 100% is rare even for complete data; large or many ranges point to
    functions gas skipped or code without CFI.""",
    "Check gas's warnings for skipped FDEs; add CFI to hand-written assembly.")
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


_MACHINES = {constants.ABI_AMD64_LE: ("EM_X86_64", True),
             constants.ABI_AARCH64_LE: ("EM_AARCH64", True),
             constants.ABI_AARCH64_BE: ("EM_AARCH64", False),
             constants.ABI_S390X_BE: ("EM_S390", False)}


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
        ctx.emit(ABI_MACHINE, f"ABI {constants.ABI_NAMES[h.abi]} in a {info.e_machine} "
                 f"{'little' if info.little_endian else 'big'}-endian file", offset=4)
    if sec.segment is not None:
        pass  # no section header: no section type to judge
    elif h.version == constants.VERSION_3 and not sec.gnu_sframe_type:
        ctx.emit(SECTION_TYPE, f"v3 section of type {sec.sh_type:#x}, expected "
                 "SHT_GNU_SFRAME")
    elif h.version == constants.VERSION_1 and sec.gnu_sframe_type:
        ctx.emit(SECTION_TYPE, "v1 section of type SHT_GNU_SFRAME (binutils 2.40 wrote "
                 "SHT_PROGBITS)")
    if is_linked:
        if not h.sorted:
            ctx.emit(NOT_SORTED, "flags lack SFRAME_F_FDE_SORTED", offset=3)
        if h.version >= constants.VERSION_2 and not h.pcrel:
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


# -- what users trip on: linkers, the vDSO -----------------------------------------------------

COMDAT_RELOC = rule(
    "elf-comdat-sframe-reloc", "elf", "warning",
    ".sframe in an object relocated against COMDAT group members",
    """The object's .rela.sframe points FDEs at sections of COMDAT groups (C++ inline
    functions and template instances: g++ puts each in a group, one per function with
    -ffunction-sections), while .sframe itself is in no group. When another object's copy of
    a group wins, the linker discards this object's copy, and the .sframe relocation still
    refers to it. GNU ld parses .sframe and drops those FDEs (binutils bfd/elf-sframe.c,
    _bfd_elf_discard_section_sframe), but lld and gold treat .sframe as an ordinary section
    and stop: "relocation refers to a discarded section" (llvm/llvm-project#156667; gold 1.16,
    measured here: "relocation refers to local symbol ... defined in a discarded section").
    Linking with either fails as soon as two objects share an inline function.""",
    "Link with GNU ld (2.40+); with lld or gold, assemble C++ code without --gsframe "
    "(-Wa,--gsframe=no) until the linker merges SFrame.")
RELOC_TYPE = rule(
    "elf-sframe-reloc-type", "elf", "warning",
    "relocation in .rela.sframe a linker does not handle",
    """GNU ld merges .sframe by reading one relocation per FDE, on its start field, as the
    PC-relative start of the function (binutils bfd/elf-sframe.c,
    sframe_decoder_init_func_bfdinfo and _bfd_elf_merge_section_sframe): the 32-bit
    PC-relative type in v1/v2 (R_X86_64_PC32, R_AARCH64_PREL32, R_390_PC32) and the
    64-bit one in v3, whose start field is 64 bits (R_X86_64_PC64, R_AARCH64_PREL64,
    R_390_PC64). Any other type (absolute, another width) is applied by the target and
    then read as that offset, giving wrong function starts; a relocation that is neither
    on an FDE start field nor R_*_NONE trips ld's assertion (binutils bug ld/33401). lld,
    gold and mold copy .sframe as an ordinary section and apply any type they know. zig's
    self-hosted ELF linker (0.15, 0.16) knows no R_X86_64_PC64 in .sframe: "fatal linker
    error: unhandled relocation type R_X86_64_PC64" on every v3 x86-64 object, glibc's
    crt1.o among them (ziglang/zig#31272). That case is noted as info: the object is right,
    one linker cannot link it.""",
    "Assemble with GNU as; with zig, link with -fllvm -flld (or strip .sframe from the "
    "objects) until its linker handles R_X86_64_PC64.")
VDSO_SFRAME = rule(
    "elf-vdso-sframe", "elf", "warning", ".sframe in a vDSO",
    """The file is a vDSO (soname linux-vdso.so.1, linux-gate.so.1, linux-vdso32/64.so.1, or
    LINUX_* version definitions and no DT_NEEDED). The kernel maps the vDSO itself, as a
    special mapping (install_special_mapping, e.g. arch/x86/entry/vdso/vma.c), so the
    exec-time detection of PT_GNU_SFRAME in the program and its interpreter
    ("unwind_user/sframe: Detect .sframe sections in executables", Josh Poimboeuf's
    series) never sees it: the vDSO's SFrame data is used only when the kernel was built
    for it ("x86/vdso: Enable sframe generation in VDSO" and Jens Remus's s390 port, which
    emit V3 with --gsframe-3 and place .sframe in the linker script). A .sframe that a
    toolchain defaulting to --gsframe left in a vDSO built without that support is an
    orphan section (Debian's aarch64 gcc 15.2.0-4: ld.lld "orphan section" warning): bytes
    in the mapped vDSO no reader is told about, of a version the kernel may not read. A v3
    section with PT_GNU_SFRAME (what the vDSO series builds) is noted as info.""",
    "Build the vDSO with -Wa,--gsframe=no, or with the kernel's own SFrame support "
    "(--gsframe-3 and .sframe in the vDSO linker script).")

# The FDE start field's relocation, per machine: (32-bit PC-relative, 64-bit PC-relative,
# the R_*_NONE types); names from the loader's table.
_START_RELOCS = {"EM_X86_64": (2, 24, (0,)), "EM_AARCH64": (261, 260, (0, 256)),
                 "EM_S390": (5, 23, (0,))}
_ZIG_UNHANDLED = {("EM_X86_64", 24)}  # (machine, type) zig's self-hosted linker stops on
_VDSO_SONAMES = ("linux-vdso.so.1", "linux-gate.so.1", "linux-vdso32.so.1",
                 "linux-vdso64.so.1")


def check_object_relocs(ctx: SectionContext, info: ElfSFrameInfo, sec: SFrameSection,
                        h: Header | None) -> None:
    """COMDAT targets and relocation types of this section's .rela.sframe (objects)."""
    relocs = [r for r in info.facts.relocs if r.section == sec.index]
    if info.e_type != "ET_REL" or not relocs or sec.segment is not None:
        return
    groups = dict(info.facts.comdat)
    hit = [r for r in relocs if r.target in groups]
    if hit:
        sigs = sorted({groups[r.target] for r in hit})
        shown = ", ".join(clip_name(s) for s in sigs[:4]) + (", ..." if len(sigs) > 4 else "")
        ctx.emit(COMDAT_RELOC, f"{plural(len(hit), 'relocation')} against sections of "
                 f"{plural(len(sigs), 'COMDAT group')} ({shown}): lld and gold stop with "
                 "\"relocation refers to a discarded section\" when another object's copy "
                 "wins; GNU ld drops those FDEs", offset=hit[0].offset)
    if h is None or info.e_machine not in _START_RELOCS:
        return
    pc32, pc64, none = _START_RELOCS[info.e_machine]
    want = pc64 if h.version >= constants.VERSION_3 else pc32
    starts = {h.fdes_start + i * h.fde_size for i in range(min(h.num_fdes, 1 << 20))}
    odd: dict[int, list[int]] = {}
    for r in relocs:
        if r.type in none:
            continue
        if r.type != want or r.offset not in starts:
            odd.setdefault(r.type, []).append(r.offset)
    for rtype, offs in sorted(odd.items()):
        where = ("not on an FDE start field" if rtype == want
                 else f"where GNU ld reads {info.facts.reloc_name(want)}")
        ctx.emit(RELOC_TYPE, f"{plural(len(offs), 'relocation')} of type "
                 f"{info.facts.reloc_name(rtype)} in v{h.version} .rela.sframe, {where} (first "
                 f"at +{offs[0]:#x}): GNU ld misreads the function starts; lld, gold and "
                 "mold copy the section as it is", offset=offs[0])
    zig = [r for r in relocs if (info.e_machine, r.type) in _ZIG_UNHANDLED]
    if zig and not odd:
        ctx.emit_as(RELOC_TYPE, Severity.INFO, f"{plural(len(zig), 'relocation')} of type "
                    f"{info.facts.reloc_name(zig[0].type)}: zig's self-hosted ELF linker (0.15, "
                    "0.16) stops with \"unhandled relocation type\"; GNU ld, lld, gold and "
                    "mold link it", offset=zig[0].offset)


def clip_name(name: str) -> str:
    return name if len(name) <= 64 else name[:64] + "..."


def is_vdso(info: ElfSFrameInfo) -> bool:
    """A kernel vDSO: its soname, or LINUX_* version definitions and no DT_NEEDED."""
    facts = info.facts
    if facts.soname in _VDSO_SONAMES:
        return True
    return not facts.needed and any(
        v.startswith("LINUX_") and v[6:7].isdigit() for v in facts.verdefs)


def check_vdso(ctx: SectionContext, info: ElfSFrameInfo, sec: SFrameSection,
               h: Header | None) -> None:
    if info.e_type != "ET_DYN" or not sec.data or not is_vdso(info):
        return
    what = f"soname {info.facts.soname}" if info.facts.soname else "LINUX_* versions"
    version = f"v{h.version}" if h is not None else "unreadable"
    intended = h is not None and h.version >= constants.VERSION_3 and bool(info.sframe_segments)
    ctx.emit_as(VDSO_SFRAME, Severity.INFO if intended else VDSO_SFRAME.severity,
                f"a vDSO ({what}) with a {version} {sec.name}"
                + (" and PT_GNU_SFRAME: what the kernel's vDSO SFrame support builds"
                   if intended else ": the kernel maps the vDSO itself and registers no "
                   "SFrame data for it unless built for it"))


MIXED_VERSIONS = rule(
    "elf-mixed-versions", "elf", "warning", "SFrame versions mixed within one scan",
    """A finding about the scan as a whole: its files carry SFrame sections of more than one
    version (e.g. one package set built partly with binutils 2.45, v2, and partly with
    2.46, v3). Each reader takes one version: glibc 2.42/2.43 and LLVM read v2 only, the
    kernel's posted series (Jens Remus's v13) v3 only, so part of the set is invisible to
    each. Objects and static libraries of different versions do not link into SFrame at
    all: GNU ld says "input SFrame sections with different format versions prevent
    .sframe generation" (binutils bfd/elf-sframe.c, _bfd_elf_merge_section_sframe) and
    ld 2.46 ignores v1/v2 inputs ("unexpected SFrame section type").""",
    "Rebuild the set with one toolchain (one binutils release series).")


def check_scan(files: list[FileResult], enabled: Callable[[Rule], bool],
               severity_for: Callable[[Rule, Severity], Severity | None]) -> list[Finding]:
    """Findings about the files of a scan together (Result.findings)."""
    rule_ = MIXED_VERSIONS
    if not enabled(rule_):
        return []
    by_version: dict[int, list[str]] = {}
    for res in files:
        if res.error is None:
            for v in sorted({s.version for s in res.sections if s.version}):
                by_version.setdefault(v, []).append(res.path)
    sev = severity_for(rule_, rule_.severity) if len(by_version) > 1 else None
    if sev is None:
        return []
    parts = [f"v{v} in {plural(len(paths), 'file')} (first: {clip(paths[0])})"
             for v, paths in sorted(by_version.items())]
    return [Finding(rule_.id, sev, "SFrame " + ", ".join(parts) + ": each reader takes one "
                    "version, and GNU ld links objects of one version only",
                    Location(SCAN_PATH))]
