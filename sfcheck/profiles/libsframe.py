"""GNU libsframe and the dumpers over it (objdump/readelf --sframe): `libsframe-2.46` and
`libsframe-2.40` (Debian 12's), each fact next to the source it was read from."""

from __future__ import annotations

from ..effects import CRASHES, MISREADS, REFUSES
from ..format import constants
from ..record import replace
from .common import DUMPER_GROUPS, DUMPER_NOTHING, SFCHECK_ONLY
from .model import ERR, INFO, WARN, Fact, Override, Profile, alike

LIBSFRAME = "ROCm/ROCgdb:libsframe/sframe.c@5a7c9b2c"
LIBSFRAME_DUMP = "ROCm/ROCgdb:libsframe/sframe-dump.c@a2c63f05"
# What the real binaries did, run here on ELF files built by fuzz/oracle_cases.py.
OBJDUMP_SEEN = "objdump 2.47.50.20261021 (Debian sid binutils-x86-64-linux-gnu), run here"

LIBSFRAME_PROFILE = Profile(
    name="libsframe-2.46",
    title="GNU libsframe 2.46 (sframe_decode, sframe_find_fre; objdump/readelf --sframe)",
    reader="libsframe 2.46",
    sources=(LIBSFRAME, LIBSFRAME_DUMP),
    versions=frozenset({constants.VERSION_2, constants.VERSION_3}),
    required_flags={constants.VERSION_2: constants.F_FDE_SORTED | constants.F_FDE_FUNC_START_PCREL,
                    constants.VERSION_3: constants.F_FDE_SORTED | constants.F_FDE_FUNC_START_PCREL},
    effects={**SFCHECK_ONLY, **DUMPER_NOTHING,
             # the native-endian path copies without comparing with the section size, and
             # sframe_assert aborts: objdump asserts or segfaults
             **dict.fromkeys(("layout-fde-array-bounds", "layout-fde-fres-bounds",
                              "layout-fre-bounds", "fde-fre-type", "fre-start-beyond-size",
                              "fre-datawords-size", "fre-reader-flex-one-word",
                              "fre-reader-flex-abi"), CRASHES),
             "layout-fdeoff-nonzero": MISREADS,
             "defect-ld-discarded-sframe": REFUSES},  # a zero-size section: 'Corrupt SFrame'
    group_effects=DUMPER_GROUPS,
    consumer={
        "header-version-unsupported": Fact(
            "sframe_fde_tbl_init reads only v2 and v3 ('Not possible ATM'): sframe_decode "
            "fails with SFRAME_ERR_BUF_INVAL for v1.", LIBSFRAME),
        "header-foreign-order-refused": Fact(
            "sframe_decode byte-swaps a section of the other order only after "
            "flip_sframe_fdes_with_fres walks it with bounds, counts, fre_len and zero-padding "
            "checks: any of those fails the decode ('Buffer does not contain SFrame data.').",
            f"{LIBSFRAME}; {OBJDUMP_SEEN}"),
        "header-flags-required": Fact(
            "sframe_find_fre fails with SFRAME_ERR_FDE_NOTSORTED without FDE_SORTED, and "
            "sframe_decoder_get_secrel_func_start_addr adds the field offset whatever the "
            "flags, so lookups in a section without FDE_FUNC_START_PCREL use wrong function "
            "starts (objdump's dumper checks the flag and still prints them right).",
            f"{LIBSFRAME}; {LIBSFRAME_DUMP}"),
        "fre-reader-flex-one-word": Fact(
            "dump_sframe_func_fres_flex reads a FLEX FRE's CFA control word (word 0) and CFA "
            "offset (word 1) and runs sframe_assert (!err_cfa_reg && !err_cfa_offset): one "
            "data word aborts objdump/readelf --sframe (a DEFAULT FDE's one word is its CFA "
            "offset and dumps).", f"{LIBSFRAME_DUMP}; {OBJDUMP_SEEN}"),
        "fre-reader-flex-abi": Fact(
            "sframe_format_fre_disp names a FLEX FRE's reg_p control word with "
            "sframe_get_reg_name, which knows abi_arch 1-4 only and runs sframe_assert "
            "(false) otherwise: objdump/readelf --sframe abort (sframe_decode accepts the "
            "unknown ABI).", f"{LIBSFRAME_DUMP}; {OBJDUMP_SEEN}"),
    },
    overrides={
        "defect-fre-start-at-size": Override(
            INFO, "sframe_decoder_get_fre asserts fre_start_addr <= func_size, relaxed from < for "
            "real gas output (PR libsframe/33131): start == size is accepted.", LIBSFRAME),
        "fre-start-beyond-size": Override(
            ERR, "sframe_assert(fre_start_addr <= func_size) in sframe_decoder_get_fre aborts "
            "objdump/readelf.", LIBSFRAME),
        "fde-fre-type": Override(
            ERR, "sframe_fre_start_addr_size hits sframe_assert(0) for an FRE type > 2.",
            LIBSFRAME),
        "fde-pcmask-rep-size": Override(
            ERR, "sframe_fre_check_range_p computes pc_offset % rep_block_size with no zero "
            "check.", LIBSFRAME),
        "layout-fdeoff-nonzero": Override(
            ERR, "sframe_decoder_get_offsetof_fde_start_addr ignores sfh_fdeoff: every "
            "PC-relative function start is off by fdeoff.", LIBSFRAME),
        "fre-datawords-size": Override(
            ERR, "sframe_decode_fre copies the data words into a MAX_OFFSET_BYTES buffer before "
            "any sanity check.", LIBSFRAME),
        "fde-unsorted": Override(
            ERR, "sframe_find_fre binary-searches whenever FDE_SORTED is set.", LIBSFRAME),
        **alike(("elf-not-sorted", "elf-not-pcrel"), None,
                "Reported as header-flags-required.", LIBSFRAME),
        **alike(("elf-fde-outside-text", "elf-abi-machine", "elf-no-segment"), WARN,
                "libsframe is handed the section's bytes and objdump finds it by name: the "
                "text mapping, e_machine and PT_GNU_SFRAME are never looked at.",
                f"{LIBSFRAME}; {OBJDUMP_SEEN}"),
    },
    notes=(
        Fact("Header checks: size >= header, magic in either byte order, version 1-3, flags "
             "within the version's flags, fdeoff <= freoff.", LIBSFRAME),
        Fact("Only the foreign-endian path walks the section with bounds, counts, fre_len, "
             "zero padding and auxhdr_len == 0 checks; the native path copies fre_len bytes "
             "from freoff without comparing with the section size. Rules whose outcome "
             "depends on the host byte order keep their strict severity.", LIBSFRAME),
        Fact("Runtime lookups never see a .o: header-flags-required is not applied to "
             "relocatable files.", "sfcheck"),
        Fact("Seen running objdump --sframe on hostile native-endian sections: an FDE array or "
             "FRE block past the section's end (layout-fde-array-bounds, "
             "layout-fde-fres-bounds, layout-fre-bounds: truncation, num_fdes wrapping at 32 "
             "bits, fre_len 0xffffffff, an FRE offset past the end, FDE table and FRE data "
             "overlapping, a v1 header relabelled v2, an FRE info byte changed in place) makes "
             "it fault or assert in sframe_fre_start_addr_size, sframe_decode_fre or "
             "sframe_decoder_get_fre; which one, or a dump of the bytes beyond, depends on "
             "the heap past the section.", OBJDUMP_SEEN),
        Fact("auxhdr_len 255 moves the FDE array past the section: SIGSEGV or the "
             "sframe_decode_fre assertion, not a refusal; a default FDE retyped FLEX aborts in "
             "dump_sframe_func_fres_flex (sframe-dump.c); num_fdes = 0xffffffff fails with "
             "'SFrame decode failure: Out of Memory.'; a zero-size section with 'Corrupt "
             "SFrame.'.", OBJDUMP_SEEN),
        Fact("objdump/readelf --sframe read the section named .sframe and libsframe is handed "
             "a buffer: PT_GNU_SFRAME is never read, so findings on the segment alone are "
             "warnings.", f"{LIBSFRAME_DUMP}; {OBJDUMP_SEEN}"),
    ))

# binutils 2.40 (Debian 12's own): the same library a generation earlier, reading v1 only.
LIBSFRAME_240 = "bminor/binutils-gdb:libsframe/sframe.c@078d3868"
OBJDUMP_240_SEEN = "objdump 2.40 (Debian 12 binutils-x86-64-linux-gnu 2.40-2), run here"
LIBSFRAME_240_PROFILE = replace(
    LIBSFRAME_PROFILE,
    name="libsframe-2.40",
    title="GNU libsframe 2.40 (Debian 12; objdump/readelf --sframe), SFrame v1 only",
    reader="libsframe 2.40",
    sources=(LIBSFRAME_240, OBJDUMP_240_SEEN),
    versions=frozenset({constants.VERSION_1}),
    required_flags={constants.VERSION_1: constants.F_FDE_SORTED},
    consumer={
        "header-version-unsupported": Fact(
            "sframe_decode accepts only SFRAME_VERSION_1; objdump 2.40 reports a v2 or v3 "
            "section as 'file format not recognized' (readelf: 'SFrame decode failure: Out "
            "of Memory.').", f"{LIBSFRAME_240}; {OBJDUMP_240_SEEN}"),
        "header-flags-required": Fact(
            "sframe_find_fre binary-searches only a section with FDE_SORTED (v1 has no "
            "FDE_FUNC_START_PCREL).", LIBSFRAME_240),
    },
    # the dumper's effects, and the strict assertion's abort
    effects={**LIBSFRAME_PROFILE.effects, "defect-fre-start-at-size": CRASHES},
    overrides={
        **LIBSFRAME_PROFILE.overrides,
        "defect-fre-start-at-size": Override(
            ERR, "sframe_decoder_get_fre asserts fre_start_addr < func_size (relaxed to <= only "
            "after PR libsframe/33131): gas 2.40's FRE at a function's end aborts objdump "
            "2.40.", f"{LIBSFRAME_240}; {OBJDUMP_240_SEEN}"),
    },
    notes=(
        Fact("Same decoder structure as 2.46: the native-endian path copies the FDE array and "
             "fre_len bytes without comparing them with the section size.", LIBSFRAME_240),
        Fact("objdump 2.40 dumps nothing, silently, for a zero-size .sframe.", OBJDUMP_240_SEEN),
    ))

