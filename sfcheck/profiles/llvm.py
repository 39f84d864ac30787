"""LLVM's SFrameParser (`llvm-22`: llvm-readobj/llvm-readelf --sframe), each fact next to
the source it was read from."""

from __future__ import annotations

from ..effects import MISREADS, SKIPS
from ..format import constants
from .common import DUMPER_GROUPS, DUMPER_NOTHING, SFCHECK_ONLY
from .model import ERR, WARN, Fact, Profile, alike

LLVM_SEEN = "llvm-readobj 22.1.8 and 23.1.4 (Debian sid llvm-22, llvm-23), run here"
LLVM = "denzor200/llvm-project:llvm/lib/Object/SFrameParser.cpp@682321d3"
LLVM_H = "Hardcode84/llvm-project:llvm/include/llvm/Object/SFrameParser.h@9d8bac3c"
LLVM_RELEASE = ("llvm/llvm-project PRs #147294, #149828 (July-Aug 2025, after the LLVM 21 "
                "branch): LLVM 22 is the first release with the parser (inferred from dates)")


_LLVM_DUMPS = (
    "fde-unsorted", "fde-overlap", "fde-pcmask-rep-size", "fde-reserved-bits", "fde-type-unknown",
    "fre-start-order", "fre-start-beyond-size", "fre-start-beyond-rep", "fre-word-count",
    "fre-datawords-size", "fre-flex-cfa-reg", "fre-flex-padding", "fre-register",
    "fre-mangled-ra-abi", "fre-s390x-regnum-v3",
    "layout-num-fres", "layout-fre-len", "layout-fre-bounds", "layout-fre-overlap",
    "layout-fde-array-overlap", "layout-trailing-bytes", "header-flags-unknown",
    "header-fixed-ra", "header-abi-endian", "header-abi-unknown",
)

LLVM_PROFILE = Profile(
    name="llvm-22",
    title="LLVM 22 SFrameParser (llvm-readobj/llvm-readelf --sframe)",
    reader="LLVM 22",
    sources=(LLVM, LLVM_H, LLVM_RELEASE),
    versions=frozenset({constants.VERSION_2}),
    ignores_freoff=True,
    # 'unexpected end of data', an unsupported version or enum: llvm-readobj warns and
    # skips the section; it never loads PT_GNU_SFRAME (the elf group is nothing to it)
    effects={**SFCHECK_ONLY, **DUMPER_NOTHING,
             **dict.fromkeys(("fde-fre-type", "fre-size-code"), SKIPS),
             # a zero-size section: 'unexpected end of data at offset 0x0'
             "defect-ld-discarded-sframe": SKIPS,
             "layout-offsets-ignored": MISREADS},
    group_effects={**DUMPER_GROUPS, "header": SKIPS, "layout": SKIPS},
    consumer={
        "header-version-unsupported": Fact(
            "SFrameParser::create: 'invalid/unsupported version number (N)' unless V2; "
            "llvm-readobj warns and skips the section.", LLVM),
        "layout-offsets-ignored": Fact(
            "getFREBase() = getFDEBase() + NumFDEs * sizeof(FDE): sfh_freoff is ignored, so "
            "FREs are read from the end of the FDE array (sfh_fdeoff is honoured).", LLVM_H),
        "header-byte-order-elf": Fact(
            "SFrameParser<E> reads the section in the ELF file's endianness: a section in the "
            "other order is 'invalid magic number (0xe2de)' and skipped.",
            f"{LLVM_H}; {LLVM_SEEN}"),
    },
    overrides={
        **alike(_LLVM_DUMPS, WARN,
                "SFrameParser makes no semantic checks and sfh_fre_len is never read: "
                "llvm-readobj dumps the values as stored, every read bounded by the section "
                "(SaturatingAdd in getDataSlice).", LLVM),
        **alike(("elf-no-segment", "elf-not-sorted", "elf-not-alloc", "elf-segment-mismatch",
                 "elf-fde-outside-text", "elf-abi-machine",
                 "layout-gap-bytes", "defect-ld-discarded-sframe"),
                WARN, "llvm-readobj --sframe dumps sections from the section table; it never "
                "loads PT_GNU_SFRAME, maps the text, compares e_machine with the ABI or "
                "searches the FDEs, and skips bytes no offset points at (an empty section "
                "is header-too-short).", LLVM),
        **alike(("fde-fre-type", "fre-size-code", "layout-fde-array-bounds",
                 "layout-fde-fres-bounds"), ERR,
                "'unsupported FRE type', 'unsupported FRE offset size' and 'unexpected end of "
                "data' errors stop the dump of the section.", LLVM),
    },
    notes=(
        Fact("Checks: preamble and header fit, magic, version == 2, aux header, FDE array and "
             "each FRE inside the section, FRE type and offset-size enums.", LLVM),
        Fact("The start address is PC-relative when FDE_FUNC_START_PCREL is set "
             "(getAbsoluteStartAddress); LLVM 22 emits v2 only.", LLVM),
    ))

