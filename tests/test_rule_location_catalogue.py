"""Every rule in the catalogue has a case that asserts where its finding points (issue 29
item 2): the section offset, FDE index, PC and FRE index exactly as the rule reports them, so a
one-line bug that shifts an offset by one, names the neighbouring FDE or drops a field fails.

Rules whose located cases live elsewhere are listed with the test that asserts them; the few
that carry no location beyond the file are exempt, each with its reason. Expected locations
are computed from the layout the format defines (28-byte header, v2 20-byte FDE records, v3
16-byte index entries and 5-byte attribute records, v3 starts relative to their field), not
copied from output."""

from __future__ import annotations

import struct
from collections.abc import Callable
from dataclasses import dataclass, replace

import pytest
import test_rule_locations
from elfbuild import (
    SHF_ALLOC,
    SHF_EXECINSTR,
    SHT_GNU_SFRAME,
    SHT_NOBITS,
    SHT_PROGBITS,
    Elf,
    Phdr,
    Sec,
    symbol,
)
from test_rules import FDE_CASES, HEADER_CASES, amd64, build, fde, patch
from test_semantic_units import EH_VMA, eh_frame

from sfcheck.checker import Options, check_elf, check_section_bytes
from sfcheck.elf.constants import MAX_SFRAME_SECTIONS, PT_GNU_SFRAME
from sfcheck.elf.loader import load_elf
from sfcheck.elf.model import CfiView, ElfSFrameInfo, FuncSymbol, TextRange
from sfcheck.format import FDE, build_section, encode, fde_info, make_fre
from sfcheck.format import constants as C
from sfcheck.format.decode import decode_header
from sfcheck.result import SCAN_PATH, FileResult, Finding, SectionSummary
from sfcheck.rules import RULES
from sfcheck.rules.defect import check_raw_copy, check_stubs_only
from sfcheck.rules.elf import check_scan, check_vdso
from sfcheck.rules.semantic import cross_check
from sfcheck.walk.context import SectionContext
from sfcheck.walk.section import check_section

HEADER = 28
V2_FDE, V3_INDEX, V3_ATTR = 20, 16, 5
VMA = 0x10000  # where the reader-model cases place the section


@dataclass(frozen=True)
class Where:
    """A finding's location, every field compared (None: the rule reports no such field)."""

    offset: int | None = None
    fde: int | None = None
    pc: int | None = None
    fre: int | None = None
    fre_pc: int | None = None
    section: str | None = ".sframe"


Make = Callable[[], list[Finding]]
LOCATED: dict[str, tuple[Make, Where]] = {}


def located(rule: str, where: Where) -> Callable[[Make], Make]:
    """Register `make` (returns the findings of one input) as `rule`'s located case."""
    def register(make: Make) -> Make:
        assert rule not in LOCATED, rule
        LOCATED[rule] = (make, where)
        return make
    return register


def section_findings(data: bytes, profile: str = "strict", vma: int = 0) -> list[Finding]:
    return check_section_bytes(data, vma=vma, options=Options(profile=profile)).findings


def v3_pc(start: int, index: int, vma: int = 0) -> int:
    """A v3 function start: relative to its index entry's start field."""
    return vma + HEADER + index * V3_INDEX + start


def fre_size(fre) -> int:
    """Bytes of an FRE with a one-byte start (ADDR1): start, info, words."""
    return 1 + 1 + len(fre.words) * (1, 2, 4)[fre.size_code]


def v3_fre_offset(fdes: list[FDE], index: int, fre: int) -> int:
    """Section offset of FRE `fre` of FDE `index` in a v3 section (ADDR1 FDEs)."""
    at = HEADER + len(fdes) * V3_INDEX
    for i, f in enumerate(fdes):
        at += V3_ATTR
        if i == index:
            return at + sum(fre_size(x) for x in f.fres[:fre])
        at += sum(fre_size(x) for x in f.fres)
    raise AssertionError(index)


# -- header and layout ---------------------------------------------------------------------

@located("header-version-obsolete", Where(offset=2))
def _v1() -> list[Finding]:
    return section_findings(amd64(1, flags=C.F_FDE_SORTED))


@located("header-auxhdr", Where(offset=7))  # sfh_auxhdr_len
def _auxhdr() -> list[Finding]:
    return section_findings(amd64(auxhdr=b"\0\0\0\0"))


@located("layout-fdeoff-nonzero", Where(offset=0x14))  # sfh_fdeoff
def _fdeoff() -> list[Finding]:
    return section_findings(amd64(fdeoff=8))


@located("layout-gap-bytes", Where(offset=HEADER + 5))  # the first nonzero byte of the gap
def _gap() -> list[Finding]:
    data = bytearray(amd64(fdeoff=8))
    data[HEADER + 5] = 0x5A
    data[HEADER + 6] = 0x5A
    return section_findings(bytes(data))


@located("layout-fde-array-overlap", Where(offset=0x18))  # sfh_freoff
def _array_overlap() -> list[Finding]:
    # FDEs moved 16 bytes on: the two 16-byte entries now end 16 bytes into the FREs.
    return section_findings(patch(amd64(), 0x14, "I", 16))


@located("layout-fre-len", Where(offset=0x10))  # sfh_fre_len
def _fre_len() -> list[Finding]:
    data = amd64()
    claimed = struct.unpack_from("<I", data, 0x10)[0] + 1
    return section_findings(patch(data, 0x10, "I", claimed) + b"\0")


@located("layout-no-fdes", Where(offset=8))  # sfh_num_fdes
def _no_fdes() -> list[Finding]:
    return section_findings(amd64(fdes=[]))


@located("layout-fre-overlap", Where(offset=HEADER + 2 * V3_INDEX, fde=1))
def _fre_overlap() -> list[Finding]:
    """FDE 1's FRE block starts where FDE 0's does (the FRE sub-section's first byte)."""
    sec = build_section(3, C.ABI_AMD64_LE, [fde(), fde(start=0x200)])
    second = replace(sec.fdes[1], fre_off=sec.fdes[0].fre_off)
    return section_findings(encode(replace(sec, fdes=(sec.fdes[0], second))))


@located("layout-fde-fres-bounds", Where(offset=HEADER + 3 * V2_FDE + 3 + 3, fde=2, pc=0x300))
def _fde_fres_bounds() -> list[Finding]:
    """FDE 2 of a v2 section claims 5 FREs where 1 is; the decoder stops where FDE 2's block
    would need its second FRE, after FDE 0's and FDE 1's three bytes (start, info, word)."""
    fdes = [fde(fres=(make_fre(0, [8]),)), fde(start=0x200, fres=(make_fre(0, [8]),)),
            fde(start=0x300, fres=(make_fre(0, [8]),))]
    data = bytearray(build(fdes, version=2))
    struct.pack_into("<I", data, HEADER + 2 * V2_FDE + 12, 5)  # FDE 2's num_fres
    return section_findings(bytes(data))


# -- FDE and FRE ---------------------------------------------------------------------------

NO_FRES = [fde(), fde(start=0x200, fres=())]


@located("fde-no-fres", Where(offset=HEADER + V2_FDE, fde=1, pc=0x200))
def _no_fres() -> list[Finding]:
    return section_findings(build(NO_FRES, version=2))


def test_fde_no_fres_v3_location() -> None:
    """In v3 the start is field-relative: FDE 1's PC moves by its entry's offset."""
    (f,) = [f for f in section_findings(build(NO_FRES)) if f.rule == "fde-no-fres"]
    assert (f.location.offset, f.location.fde, f.location.pc) == (
        HEADER + V3_INDEX, 1, v3_pc(0x200, 1))


SIZE_CODE = [fde(), fde(start=0x200)]


@located("fre-size-code", Where(offset=v3_fre_offset(SIZE_CODE, 1, 1) + 1, fde=1,
                                pc=v3_pc(0x200, 1), fre=1))
def _size_code() -> list[Finding]:
    """Size code 3 in FRE 1 of FDE 1: the finding names the info byte (after the start)."""
    data = bytearray(build(SIZE_CODE))
    data[v3_fre_offset(SIZE_CODE, 1, 1) + 1] |= 0x60
    return section_findings(bytes(data))


S390 = [fde(fres=(make_fre(0, [0]), make_fre(4, [20, -49])))]


@located("fre-s390x-regnum-v3", Where(offset=v3_fre_offset(S390, 0, 1), fde=0,
                                      pc=v3_pc(0x100, 0), fre=1, fre_pc=v3_pc(0x100, 0) + 4))
def _s390x_odd() -> list[Finding]:
    return section_findings(encode(build_section(3, C.ABI_S390X_BE, S390)))


# -- consumer rules (a reader's limits, under its profile) ---------------------------------

@located("header-version-unsupported", Where(offset=2))
def _version_unsupported() -> list[Finding]:
    return section_findings(amd64(2), "kernel")


@located("header-flags-required", Where(offset=3))
def _flags_required() -> list[Finding]:
    return section_findings(amd64(3, flags=C.F_FDE_SORTED), "kernel")


@located("header-auxhdr-rejected", Where(offset=7))
def _auxhdr_rejected() -> list[Finding]:
    return section_findings(amd64(3, auxhdr=b"\0\0\0\0"), "kernel")


@located("header-empty-counts", Where(offset=8))
def _empty_counts() -> list[Finding]:
    return section_findings(amd64(3, fdes=[]), "kernel")


@located("layout-offsets-ignored", Where(offset=0x14))
def _offsets_ignored() -> list[Finding]:
    return section_findings(amd64(2, flags=C.F_FDE_SORTED, fdeoff=8), "glibc-2.42")


@located("fde-start-duplicate", Where(fde=1, pc=v3_pc(0x100, 0)))
def _start_duplicate() -> list[Finding]:
    """v3 starts are field-relative: FDE 1's field is 16 bytes on, so start - 16 is the same
    address; a size-0 FDE 0 keeps the ranges from overlapping."""
    fdes = [fde(size=0, fres=(make_fre(0, [8]),)),
            fde(start=0x100 - V3_INDEX, size=0x20, fres=(make_fre(0, [8]),))]
    return section_findings(build(fdes), "kernel")


def _plus(*extra: FDE) -> list[FDE]:
    """Two clean FDEs, then the ones under test (so a finding on FDE 0 is a wrong index)."""
    return [fde(start=0x100, size=0x40), fde(start=0x200, size=0x20), *extra]


def _third(**kw) -> FDE:
    return FDE(**{"start": 0x300, "size": 0x10, "info": fde_info(C.FRE_TYPE_ADDR1), **kw})


def _rfc(*extra: FDE) -> list[Finding]:
    data = encode(build_section(1, C.ABI_AMD64_LE, _plus(*extra), flags=C.F_FDE_SORTED))
    return section_findings(data, "kernel-rfc-2023", VMA)


def _v3k(*extra: FDE, abi: int = C.ABI_AMD64_LE, profile: str = "kernel") -> list[Finding]:
    return section_findings(encode(build_section(3, abi, _plus(*extra))), profile, VMA)


# The reader models report the FDE whose lookup disagrees, and nothing more.
@located("fde-reader-wrong-row", Where(fde=2))
def _wrong_row() -> list[Finding]:
    """The RFC reader reads a one-byte CFA offset unsigned: fp-16 becomes fp+240."""
    return _rfc(_third(fres=(make_fre(0, [-16], base_sp=False),)))


@located("fde-reader-uninit", Where(fde=2))
def _uninit() -> list[Finding]:
    return _rfc(_third())


@located("fre-reader-walk-loops", Where(fde=2))
def _walk_loops() -> list[Finding]:
    return _rfc(_third(fres=(make_fre(0, [0]),)))


@located("fde-reader-gap-row", Where(fde=1))
def _gap_row() -> list[Finding]:
    """The RFC reader never checks a function's size: FDE 1 (FDE 0 ends where it starts)
    answers for the gap after its 0x20 bytes. The probe below the lowest function has no
    FDE to name (fde None), and is left out."""
    data = encode(build_section(1, C.ABI_AMD64_LE, [fde(size=0x40), fde(start=0x140, size=0x20)],
                                flags=C.F_FDE_SORTED))
    return [f for f in section_findings(data, "kernel-rfc-2023", VMA)
            if f.location.fde is not None]


@located("fde-reader-lookup-fails", Where(fde=2))
def _lookup_fails() -> list[Finding]:
    """The V3 series faults on an FRE past the function (even one no lookup needs)."""
    return _v3k(_third(size=4, fres=(make_fre(0, [8]), make_fre(9, [16]))))


@located("fde-reader-lookup-fails-spec", Where(fde=2))
def _lookup_fails_spec() -> list[Finding]:
    """A v3 FDE without FREs marks an outermost frame; the V3 series fails the lookup."""
    return _v3k(_third())


@located("fre-reader-walk-stops", Where(fde=2))
def _walk_stops() -> list[Finding]:
    return _v3k(_third(fres=(make_fre(0, [12]),)))


@located("fde-reader-div-zero", Where(fde=2))
def _div_zero() -> list[Finding]:
    return _v3k(_third(info=fde_info(C.FRE_TYPE_ADDR1, pcmask=True), rep_size=0,
                       fres=(make_fre(0, [8]), make_fre(11, [16]))))


@located("layout-reader-past", Where(fde=1))
def _reader_past() -> list[Finding]:
    """FDE 1 claims 5 FREs where the section holds 1; the probe just past FDE 0 lands in
    FDE 1, whose FREs the RFC reader reads past the section's end."""
    fdes = [fde(size=0x40), fde(start=0x140, size=0x20, fres=(make_fre(0, [8]),))]
    data = bytearray(encode(build_section(1, C.ABI_AMD64_LE, fdes, flags=C.F_FDE_SORTED)))
    struct.pack_into("<I", data, HEADER + 17 + 12, 5)  # v1 record: start size fre_off num_fres
    return section_findings(bytes(data), "kernel-rfc-2023", VMA)


@located("header-reader-refused", Where())  # a refusal is the section's, at no one field
def _reader_refused() -> list[Finding]:
    return section_findings(encode(build_section(1, C.ABI_AMD64_LE, _plus(), flags=0)),
                            "kernel-rfc-2023", VMA)


FLEX_SP = (7 << 3) | 1  # control word: register 7 (rsp), reg_p


def _flex_fres(*fres) -> list[FDE]:
    return _plus(_third(info2=C.FDE_TYPE_FLEX, fres=fres))


ONE_WORD = _flex_fres(make_fre(0, [FLEX_SP, 8]), make_fre(4, [FLEX_SP]))


@located("fre-reader-flex-one-word", Where(offset=v3_fre_offset(ONE_WORD, 2, 1), fde=2, fre=1))
def _flex_one_word() -> list[Finding]:
    return section_findings(encode(build_section(3, C.ABI_AMD64_LE, ONE_WORD)), "libsframe-2.46")


# FRE 0's CFA word has reg_p clear (the dumper names no register); FRE 1's names rsp.
UNKNOWN_ABI = _flex_fres(make_fre(0, [0, 8]), make_fre(4, [FLEX_SP, 16]))


@located("fre-reader-flex-abi", Where(offset=v3_fre_offset(UNKNOWN_ABI, 2, 1), fde=2, fre=1))
def _flex_abi() -> list[Finding]:
    return section_findings(encode(build_section(3, 9, UNKNOWN_ABI)), "libsframe-2.46")


@located("fre-reader-warn", Where(fde=2))
def _reader_warn() -> list[Finding]:
    """A FLEX RA control word with neither reg_p nor deref_p: the V3 walker's WARN_ON_ONCE."""
    return _v3k(_third(info2=C.FDE_TYPE_FLEX, fres=(make_fre(0, [FLEX_SP, 16, 1 << 3, -8]),)))


# -- ELF rules: a linked file built from parts ----------------------------------------------

TEXT_VMA, TEXT_SIZE, SFRAME_VMA = 0x1000, 0x100, 0x2000
PT_LOAD, PF_X, PF_W, PF_R = 1, 1, 2, 4
NO_CFI = Options(disable={"semantic", "defect"})


def text_fdes(version: int, sframe_vma: int = SFRAME_VMA, extra: int = 0) -> list[FDE]:
    """Two functions filling the 0x100-byte .text, plus `extra` bytes past its end for FDE 1
    (v2/v3 starts relative to their field, v1 to the section)."""
    out = []
    for i, (addr, size) in enumerate(((TEXT_VMA, 0x80), (TEXT_VMA + 0x80, 0x80 + extra))):
        field = sframe_vma + (HEADER + i * {1: 17, 2: V2_FDE, 3: V3_INDEX}[version]
                              if version > 1 else 0)
        out.append(fde(start=addr - field, size=size, fres=(make_fre(0, [8]),)))
    return out


def sframe_bytes(version: int = 3, flags: int | None = None, abi: int = C.ABI_AMD64_LE,
                 extra: int = 0) -> bytes:
    if flags is None:
        flags = C.F_FDE_SORTED | (C.F_FDE_FUNC_START_PCREL if version > 1 else 0)
    return encode(build_section(version, abi, text_fdes(version, extra=extra), flags=flags))


def linked_elf(sframe: bytes, *, machine: int = 62, sh_type: int = SHT_GNU_SFRAME,
               sh_flags: int = SHF_ALLOC, sframe_phdrs: int = 1, seg_shift: int = 0,
               tail: bytes = b"", section: bool = True, e_type: int = 3,
               text_phdrs: tuple[tuple[int, int], ...] = ((TEXT_VMA, TEXT_SIZE),)) -> bytes:
    """An ET_DYN (default) with .text and .sframe, each in a PT_LOAD, and `sframe_phdrs`
    PT_GNU_SFRAME headers (`seg_shift` bytes off the section; `tail` bytes past it in the
    segment). Offsets follow elfbuild's layout: sections in order, 8-aligned, after the
    program headers."""
    nph = len(text_phdrs) + 1 + sframe_phdrs
    text_off = 64 + 56 * nph
    text_off += -text_off % 8
    sf_off = text_off + TEXT_SIZE
    secs = [Sec(".text", SHT_PROGBITS, b"\xc3" * TEXT_SIZE, flags=SHF_ALLOC | SHF_EXECINSTR,
                addr=TEXT_VMA),
            Sec(".sframe" if section else ".data", sh_type if section else SHT_PROGBITS,
                sframe + tail, flags=sh_flags, addr=SFRAME_VMA, size=len(sframe))]
    phdrs = [Phdr(PT_LOAD, text_off + vaddr - TEXT_VMA, vaddr, size, size, PF_R | PF_X)
             for vaddr, size in text_phdrs]
    phdrs.append(Phdr(PT_LOAD, sf_off, SFRAME_VMA, len(sframe + tail), len(sframe + tail),
                      PF_R))
    phdrs += [Phdr(PT_GNU_SFRAME, sf_off + seg_shift, SFRAME_VMA + seg_shift,
                   len(sframe + tail), len(sframe + tail)) for _ in range(sframe_phdrs)]
    return Elf(e_type=e_type, machine=machine, sections=secs, phdrs=phdrs).build()


def elf_findings(data: bytes, options: Options = NO_CFI) -> list[Finding]:
    res = check_elf(data, options=options)
    assert res.error is None, res.error
    return res.findings


def test_the_built_file_is_clean() -> None:
    """The base every ELF case changes one thing in: no finding at all."""
    assert elf_findings(linked_elf(sframe_bytes())) == []
    assert elf_findings(linked_elf(sframe_bytes(2))) == []


@located("elf-abi-machine", Where(offset=4))  # sfh_abi_arch
def _abi_machine() -> list[Finding]:
    return elf_findings(linked_elf(sframe_bytes(), machine=183))  # EM_AARCH64


@located("elf-not-sorted", Where(offset=3))  # sfh_flags
def _not_sorted() -> list[Finding]:
    return elf_findings(linked_elf(sframe_bytes(flags=C.F_FDE_FUNC_START_PCREL)))


@located("elf-not-pcrel", Where(offset=3))
def _not_pcrel() -> list[Finding]:
    """v2 without PCREL: the starts are then read from the section's address."""
    fdes = [replace(f, start=f.start + HEADER + i * V2_FDE) for i, f in enumerate(text_fdes(2))]
    sec = encode(build_section(2, C.ABI_AMD64_LE, fdes, flags=C.F_FDE_SORTED))
    return elf_findings(linked_elf(sec, sh_type=SHT_PROGBITS))


@located("elf-segment-tail", Where(offset=len(sframe_bytes()) + 3))
def _segment_tail() -> list[Finding]:
    """PT_GNU_SFRAME holds 4 bytes past sh_size, the fourth nonzero: offset size + 3."""
    return elf_findings(linked_elf(sframe_bytes(), tail=b"\0\0\0\x07"))


@located("elf-fde-outside-text", Where(fde=1, pc=TEXT_VMA + 0x80))
def _outside_text() -> list[Finding]:
    """FDE 1 runs 0x10 bytes past the executable segment."""
    return elf_findings(linked_elf(sframe_bytes(extra=0x10)))


# Rules about the section as a whole: the location is the section's name alone.
SECTION = Where()


@located("elf-section-type", SECTION)
def _section_type() -> list[Finding]:
    return elf_findings(linked_elf(sframe_bytes(), sh_type=SHT_PROGBITS))


@located("elf-no-segment", SECTION)
def _no_segment() -> list[Finding]:
    return elf_findings(linked_elf(sframe_bytes(), sframe_phdrs=0))


@located("elf-segment-mismatch", SECTION)
def _segment_mismatch() -> list[Finding]:
    return elf_findings(linked_elf(sframe_bytes(), seg_shift=8))


@located("elf-segment-padded", SECTION)
def _segment_padded() -> list[Finding]:
    return elf_findings(linked_elf(sframe_bytes(), tail=bytes(8)))


@located("elf-segment-multiple", SECTION)
def _segment_multiple() -> list[Finding]:
    return elf_findings(linked_elf(sframe_bytes(), sframe_phdrs=2))


@located("elf-not-alloc", SECTION)
def _not_alloc() -> list[Finding]:
    return elf_findings(linked_elf(sframe_bytes(), sh_flags=0))


@located("elf-text-coverage", SECTION)
def _text_coverage() -> list[Finding]:
    """The executable segment is 0x10 bytes longer than the functions."""
    return elf_findings(linked_elf(sframe_bytes(), text_phdrs=((TEXT_VMA, TEXT_SIZE + 0x10),)))


@located("elf-text-segments", SECTION)
def _text_segments() -> list[Finding]:
    """Each function in its own PF_X segment: the kernel registers per segment."""
    halves = ((TEXT_VMA, 0x80), (TEXT_VMA + 0x80, 0x80))
    return elf_findings(linked_elf(sframe_bytes(), text_phdrs=halves),
                        Options(profile="kernel", disable={"semantic", "defect"}))


@located("elf-segment-unlisted", Where(section="PT_GNU_SFRAME[2]"))
def _segment_unlisted() -> list[Finding]:
    """No .sframe section header: the segment (program header 2) is checked, and named."""
    return elf_findings(linked_elf(sframe_bytes(), section=False))


@located("elf-empty-sframe", SECTION)
def _empty_object() -> list[Finding]:
    return elf_findings(Elf(e_type=1, sections=[
        Sec(".sframe", SHT_GNU_SFRAME, b"", flags=SHF_ALLOC)]).build())


@located("defect-ld-discarded-sframe", SECTION)
def _discarded() -> list[Finding]:
    return elf_findings(linked_elf(b"", sframe_phdrs=0), Options())


@located("elf-no-sframe-data", SECTION)
def _nobits() -> list[Finding]:
    return elf_findings(Elf(sections=[
        Sec(".sframe", SHT_NOBITS, b"", flags=SHF_ALLOC, size=0x40)]).build())


@located("semantic-no-eh-frame", SECTION)
def _no_eh_frame() -> list[Finding]:
    return elf_findings(linked_elf(sframe_bytes()), Options())


@located("header-byte-order-elf", Where(offset=0))  # the magic, read in the file's order
def _byte_order_elf() -> list[Finding]:
    """A big-endian v2 section (the version LLVM reads) in a little-endian file."""
    data = encode(build_section(2, C.ABI_AARCH64_BE, text_fdes(2), big_endian=True,
                                flags=C.F_FDE_SORTED | C.F_FDE_FUNC_START_PCREL))
    return elf_findings(linked_elf(data, machine=183),
                        Options(profile="llvm-22", disable={"semantic", "defect"}))


@located("header-foreign-order-refused", Where(offset=0))
def _foreign_refused() -> list[Finding]:
    """A big-endian section in a little-endian file whose sfh_fre_len claims a byte more:
    libsframe's swapping walk refuses it."""
    data = encode(build_section(3, C.ABI_AARCH64_BE, text_fdes(3), big_endian=True))
    fre_len = struct.unpack_from(">I", data, 0x10)[0]
    data = data[:0x10] + struct.pack(">I", fre_len + 1) + data[0x14:] + b"\0"
    return elf_findings(linked_elf(data, machine=183),
                        Options(profile="libsframe-2.46", disable={"semantic", "defect"}))


SHT_RELA, SHT_SYMTAB, SHT_STRTAB, SHT_GROUP = 4, 2, 3, 17
R_X86_64_PC32, R_X86_64_PC64 = 2, 24


def object_file(sframe: bytes, relocs: list[tuple[int, int, int]] = ()) -> bytes:
    """An ET_REL: .text, .text.f (in COMDAT group "f"), .sframe and its .rela.sframe;
    `relocs` are (offset, symbol, type) with symbol 1 = .text, 2 = f in .text.f."""
    rela = b"".join(struct.pack("<QQq", off, (sym << 32) | rtype, 0)
                    for off, sym, rtype in relocs)
    symtab = bytes(24) + symbol(0, 0, 0, 2, info=0x03) + symbol(1, 0, 0x10, 3)
    return Elf(e_type=1, sections=[
        Sec(".group", SHT_GROUP, struct.pack("<II", 1, 3), link=6, info=2, entsize=4),  # [1]
        Sec(".text", SHT_PROGBITS, b"\xc3" * 0x10, flags=SHF_ALLOC | SHF_EXECINSTR),  # [2]
        Sec(".text.f", SHT_PROGBITS, b"\xc3" * 0x10, flags=SHF_ALLOC | SHF_EXECINSTR),  # [3]
        Sec(".sframe", SHT_GNU_SFRAME, sframe, flags=SHF_ALLOC),  # [4]
        Sec(".rela.sframe", SHT_RELA, rela, link=6, info=4, entsize=24),  # [5]
        Sec(".symtab", SHT_SYMTAB, symtab, link=7, info=2, entsize=24),  # [6]
        Sec(".strtab", SHT_STRTAB, b"\0f\0"),  # [7]
    ]).build()


OBJECT_FDES = [fde(start=0, size=0x10, fres=(make_fre(0, [8]),)),
               fde(start=0, size=0x10, fres=(make_fre(0, [8]),))]
START_FIELDS = (HEADER, HEADER + V3_INDEX)  # v3: each index entry begins with its start


@located("elf-comdat-sframe-reloc", Where(offset=START_FIELDS[1]))
def _comdat_reloc() -> list[Finding]:
    """FDE 0's start is relocated against .text, FDE 1's against the COMDAT member: the
    finding names the first relocation into the group."""
    obj = object_file(encode(build_section(3, C.ABI_AMD64_LE, OBJECT_FDES)),
                      [(START_FIELDS[0], 1, R_X86_64_PC64), (START_FIELDS[1], 2, R_X86_64_PC64)])
    return elf_findings(obj)


@located("elf-sframe-reloc-type", Where(offset=START_FIELDS[1]))
def _reloc_type() -> list[Finding]:
    """A v3 start field is 8 bytes (R_X86_64_PC64); FDE 1's is relocated as PC32."""
    obj = object_file(encode(build_section(3, C.ABI_AMD64_LE, OBJECT_FDES)),
                      [(START_FIELDS[0], 1, R_X86_64_PC64), (START_FIELDS[1], 1, R_X86_64_PC32)])
    return elf_findings(obj)


@located("object-version-unsupported", Where(offset=2))
def _object_version() -> list[Finding]:
    """A v2 object under the kernel's profile (it reads v3 only, once linked)."""
    return elf_findings(object_file(encode(build_section(2, C.ABI_AMD64_LE, OBJECT_FDES))),
                        Options(profile="kernel", disable={"semantic", "defect"}))


@located("elf-sframe-sections-capped", SECTION)
def _sections_capped() -> list[Finding]:
    sec = encode(build_section(3, C.ABI_AMD64_LE, OBJECT_FDES))
    return elf_findings(Elf(e_type=1, sections=[
        Sec(".sframe", SHT_GNU_SFRAME, sec, flags=SHF_ALLOC)
        for _ in range(MAX_SFRAME_SECTIONS + 1)]).build())


@located("elf-vdso-sframe", SECTION)
def _vdso() -> list[Finding]:
    """The loaded file, told its soname is the vDSO's (elfbuild writes no dynamic section)."""
    data = sframe_bytes(2)
    info = load_elf(linked_elf(data, sh_type=SHT_PROGBITS))
    info = replace(info, facts=replace(info.facts, soname="linux-vdso.so.1"))
    ctx = SectionContext("vdso", ".sframe", SFRAME_VMA, data)
    check_vdso(ctx, info, info.sections[0], decode_header(data))
    return ctx.findings


# -- the .eh_frame cross-check and the known defects --------------------------------------
# Each SFrame section has two functions, at 0x1000 and 0x2000 (v1/v2 starts as stored: the
# section is at address 0, flags without PCREL); the disagreement is in FDE 1, FRE 1 (PC
# 0x2004) unless said otherwise, so a finding on FDE 0 or the wrong row fails.

EH = eh_frame
ADV4 = b"\x44"  # DW_CFA_advance_loc 4
UNDEF_RA = b"\x07\x10"  # DW_CFA_undefined r16 (amd64's RA column)
SF_ROWS = [(0, 8), (4, 16)]  # CFA sp+8, then sp+16 from PC 4
EH_ROWS = ADV4 + b"\x0e\x10"  # the same in CFI: advance 4, def_cfa_offset 16


def sf(rows1: tuple, version: int = 2, rows0: tuple = (make_fre(0, [8]), make_fre(4, [16])),
       size1: int = 0x10) -> bytes:
    fdes = [fde(start=0x1000, size=0x10, fres=rows0), fde(start=0x2000, size=size1, fres=rows1)]
    return encode(build_section(version, C.ABI_AMD64_LE, fdes, flags=C.F_FDE_SORTED))


def cross(sframe: bytes, eh: bytes, text: tuple[TextRange, ...] = (
        TextRange(".text", 0x1000, 0x100000),), symbols: tuple = ()) -> list[Finding]:
    """The cross-check of one section at address 0 against `eh` (as test_semantic_units)."""
    view = CfiView(eh, EH_VMA, ((0, sframe),), symbols, text)
    info = ElfSFrameInfo("t", "ET_DYN", "EM_X86_64", 62, True, 64, (), (), (), text, view)
    ctx = SectionContext("t", ".sframe", 0, sframe)
    cross_check([ctx], [decode_header(sframe)], info)
    ctx.finish()
    return ctx.findings


AT_FRE1 = Where(fde=1, pc=0x2000, fre=1, fre_pc=0x2004)


@located("semantic-cfa-mismatch", AT_FRE1)
def _cfa_mismatch() -> list[Finding]:
    return cross(sf((make_fre(0, [8]), make_fre(4, [24]))),
                 EH([(0x1000, 0x10, EH_ROWS), (0x2000, 0x10, EH_ROWS)]))


@located("semantic-ra-mismatch", AT_FRE1)
def _ra_mismatch() -> list[Finding]:
    """v3 can mark an outermost frame: an undefined RA it does not mark is an error."""
    return cross(sf((make_fre(0, [8]), make_fre(4, [8])), version=3),
                 EH([(0x1000, 0x10, EH_ROWS), (0x2000, 0x10, ADV4 + UNDEF_RA)]))


@located("defect-outermost-not-marked", AT_FRE1)
def _outermost() -> list[Finding]:
    """The same in v2, which had no way to mark it: gas's known omission."""
    return cross(sf((make_fre(0, [8]), make_fre(4, [8]))),
                 EH([(0x1000, 0x10, EH_ROWS), (0x2000, 0x10, ADV4 + UNDEF_RA)]))


@located("semantic-fp-mismatch", AT_FRE1)
def _fp_mismatch() -> list[Finding]:
    """rbp saved at CFA-16 per .eh_frame (DW_CFA_offset r6, 2 * -8), CFA-24 per SFrame."""
    return cross(sf((make_fre(0, [8]), make_fre(4, [16, -24]))),
                 EH([(0x1000, 0x10, EH_ROWS), (0x2000, 0x10, EH_ROWS + b"\x86\x02")]))


@located("defect-gas-cfa-register", AT_FRE1)
def _gas_cfa_register() -> list[Finding]:
    """v1 (gas 2.40): the CFA moves to rbx at PC 4 (DW_CFA_def_cfa_register r3), the SFrame
    row stays SP-based."""
    return cross(sf((make_fre(0, [8]), make_fre(4, [8])), version=1),
                 EH([(0x1000, 0x10, EH_ROWS), (0x2000, 0x10, ADV4 + b"\x0d\x03")]))


@located("defect-ld-plt-got-cfa", Where(fde=1, pc=0x2000, fre=0, fre_pc=0x2000))
def _plt_got() -> list[Finding]:
    """ld's .plt.got FDE: CFA sp+16 where the CFI (and the code) say sp+8."""
    text = (TextRange(".text", 0x1000, 0x1010), TextRange(".plt.got", 0x2000, 0x2010))
    return cross(sf((make_fre(0, [16]),)),
                 EH([(0x1000, 0x10, EH_ROWS), (0x2000, 0x10, b"")]), text)


@located("semantic-no-eh-frame-fde", Where(fde=1, pc=0x2000))
def _no_eh_fde() -> list[Finding]:
    return cross(sf((make_fre(0, [8]),)), EH([(0x1000, 0x10, EH_ROWS)]))


@located("semantic-not-compared", Where(fde=1, pc=0x2000))
def _not_compared() -> list[Finding]:
    """FDE 1's CFA is a constant DWARF expression (DW_OP_lit8): not compared, and said so."""
    return cross(sf((make_fre(0, [8]),)),
                 EH([(0x1000, 0x10, EH_ROWS), (0x2000, 0x10, b"\x0f\x01\x38")]))


@located("semantic-truncated", Where(fde=1, pc=0x2000))
def _truncated() -> list[Finding]:
    """FDE 1's CFA is rsp+8 as an expression over more PCs than the work bound allows."""
    size = 0x20000
    return cross(sf((make_fre(0, [8]),), size1=size, rows0=(make_fre(0, [8]),)),
                 EH([(0x1000, 0x10, b""), (0x2000, size, b"\x0f\x02\x77\x08")]))


# An .eh_frame FDE with no SFrame FDE is reported on the section: .eh_frame is not where
# SFrame findings point (the message names the .eh_frame offset).
@located("semantic-no-sframe-fde", SECTION)
def _no_sframe_fde() -> list[Finding]:
    return cross(sf((make_fre(0, [8]), make_fre(4, [16]))),
                 EH([(0x1000, 0x10, EH_ROWS), (0x2000, 0x10, EH_ROWS),
                     (0x3000, 0x10, b"")]))


@located("defect-gas-skipped-fde", SECTION)
def _gas_skipped() -> list[Finding]:
    """The third function's CFA is based on rbx: gas leaves such a function out."""
    return cross(sf((make_fre(0, [8]), make_fre(4, [16]))),
                 EH([(0x1000, 0x10, EH_ROWS), (0x2000, 0x10, EH_ROWS),
                     (0x3000, 0x10, b"\x0d\x03")]))


@located("defect-concatenated-sections", Where(offset=len(amd64()) + 4))
def _concatenated() -> list[Finding]:
    """Two sections end to end, 4 bytes of zero padding between: the second header's offset."""
    return section_findings(amd64() + bytes(4) + amd64())


@located("defect-ld-raw-copy", Where(offset=0))  # the header's flags and the whole table
def _raw_copy() -> list[Finding]:
    """v2 without PCREL whose starts are right only read field-relative (how ld copied an
    input section it did not merge)."""
    fdes = [fde(start=0x1000 - HEADER - i * V2_FDE, fres=(make_fre(0, [8]),)) for i in (0, 1)]
    fdes[1] = replace(fdes[1], start=fdes[1].start + 0x1000)  # the second at 0x2000
    data = encode(build_section(2, C.ABI_AMD64_LE, fdes, flags=C.F_FDE_SORTED))
    syms = (FuncSymbol(0x1000, 0x40, "f"), FuncSymbol(0x2000, 0x40, "g"))
    text = (TextRange(".text", 0x1000, 0x3000),)
    view = CfiView(None, 0, ((0, data),), syms, text)
    info = ElfSFrameInfo("t", "ET_DYN", "EM_X86_64", 62, True, 64, (), (), (), text, view)
    ctx = SectionContext("t", ".sframe", 0, data)
    check_raw_copy(ctx, decode_header(data), info)
    return ctx.findings


@located("defect-ld-stubs-only", SECTION)
def _stubs_only() -> list[Finding]:
    """Both FDEs start in .plt while .text has code: ld's stubs are all that is described."""
    data = sf((make_fre(0, [8]),))
    text = (TextRange(".plt", 0x1000, 0x2010), TextRange(".text", 0x3000, 0x4000))
    info = ElfSFrameInfo("t", "ET_DYN", "EM_X86_64", 62, True, 64, (), (), (), text)
    ctx = SectionContext("t", ".sframe", 0, data)
    check_section(ctx)
    check_stubs_only(ctx, info)
    return ctx.findings


# -- the table against the catalogue -------------------------------------------------------

# Rules whose location is asserted by a parametrised case elsewhere: each id -> the test.
ELSEWHERE: dict[str, str] = {
    **{rule: "test_rule_versions.py::test_fde_and_fre_rules_per_version" for rule, _ in FDE_CASES},
    **{rule: "test_rule_versions.py::test_header_rules_point_at_their_field"
       for rule, _ in HEADER_CASES},
    # a module attribute, not an imported name: pytest would collect it here again
    "fde-fre-type": "test_rule_locations.py::"
                    + test_rule_locations.test_fde_fre_type_fires_on_the_fde_that_has_it.__name__,
}

# Rules with no location beyond the file: what they are about is not in one section.
EXEMPT: dict[str, str] = {
    "elf-no-sframe": "the file has no SFrame section to point into",
    "elf-findings-capped": "counts the findings of the whole file",
    "elf-mixed-versions": "about the scan's files together, not one file",
}


def test_exempt_rules_carry_no_location_beyond_the_file() -> None:
    """What makes the exemptions true: each names a file (or the scan), nothing inside it."""
    def where(f: Finding) -> tuple:
        loc = f.location
        return loc.section, loc.offset, loc.fde, loc.pc, loc.fre
    nothing = (None,) * 5
    (no_sframe,) = elf_findings(Elf(sections=[
        Sec(".text", SHT_PROGBITS, b"\xc3", flags=SHF_ALLOC | SHF_EXECINSTR)]).build())
    assert no_sframe.rule == "elf-no-sframe" and where(no_sframe) == nothing
    v2, v3 = FileResult("a"), FileResult("b")
    v2.sections.append(SectionSummary(".sframe", 0, 64, version=2))
    v3.sections.append(SectionSummary(".sframe", 0, 64, version=3))
    (mixed,) = check_scan([v2, v3], lambda _r: True, lambda _r, sev: sev)
    assert mixed.rule == "elf-mixed-versions" and where(mixed) == nothing
    assert mixed.location.path == SCAN_PATH
    # elf-findings-capped: tests/test_elf_bounds.py floods a file past MAX_PER_FILE; the
    # cap's finding is built with the file's path alone (checker._capped).


@pytest.mark.parametrize("rule", sorted(LOCATED))
def test_rule_points_where_it_should(rule: str) -> None:
    make, where = LOCATED[rule]
    got = [f.location for f in make() if f.rule == rule]
    assert got, f"{rule} did not fire"
    loc = got[0]
    assert Where(loc.offset, loc.fde, loc.pc, loc.fre, loc.fre_pc, loc.section) == where
    assert len(got) == 1, [(g.offset, g.fde) for g in got]


def test_every_rule_has_a_located_case() -> None:
    covered = set(LOCATED) | set(ELSEWHERE)
    assert not covered & set(EXEMPT), "an exempt rule has a located case: drop the exemption"
    assert (covered | set(EXEMPT)) - set(RULES) == set(), "stale rule ids"
    assert sorted(set(RULES) - covered - set(EXEMPT)) == []
