"""glibc's reader (`glibc-2.42`: backtrace() with --enable-sframe), each fact next to the
source it was read from."""

from __future__ import annotations

from ..effects import CRASHES, NOTHING, REFUSES, SKIPS
from ..format import constants
from .common import NO_OBJECTS, RUNTIME_GROUPS, SFCHECK_ONLY
from .model import ERR, INFO, WARN, Fact, Override, Profile, alike

GLIBC = "bminor/glibc:sysdeps/generic/sframe-read.c@86fbb4cb"
GLIBC_FIRST = "bminor/glibc:sysdeps/generic/sframe-read.c@3360913c"
GLIBC_V3 = "'sframe: Add SFrame v3 decode support for regular FDEs', libc-alpha, 2026-04-17"

GLIBC_PROFILE = Profile(
    name="glibc-2.42",
    title="glibc 2.42 backtrace() with --enable-sframe",
    reader="glibc 2.42",
    sources=(GLIBC, GLIBC_FIRST),
    versions=frozenset({constants.VERSION_2}),
    required_flags={constants.VERSION_2: constants.F_FDE_SORTED},
    ignores_fdeoff=True, ignores_freoff=True,
    effects={**SFCHECK_ONLY,
             # __sframe_decode fails: backtrace() uses DWARF for the object
             **dict.fromkeys(("header-version-unsupported", "header-flags-unknown",
                              "header-bad-magic", "header-too-short", "header-version-unknown"),
                             REFUSES),
             # decoded, but no lookup succeeds (the binary search needs FDE_SORTED)
             "header-flags-required": SKIPS,
             "fde-pcmask-rep-size": CRASHES,  # SIGFPE inside backtrace()
             # found through PT_GNU_SFRAME: without it glibc never sees the section
             "elf-no-segment": SKIPS,
             **dict.fromkeys(("elf-abi-machine", "layout-gap-bytes", "elf-text-coverage"),
                             NOTHING)},
    group_effects=RUNTIME_GROUPS,
    consumer={
        "header-version-unsupported": Fact(
            "sframe_header_sanity_check_p: version must be SFRAME_VERSION_2; __sframe_decode "
            "fails and backtrace() falls back to DWARF.", GLIBC),
        "header-flags-required": Fact(
            "sframe_get_funcdesc_with_addr_internal returns NULL without SFRAME_F_FDE_SORTED: "
            "no lookup succeeds.", GLIBC),
        "layout-offsets-ignored": Fact(
            "__sframe_decode puts the FDE array right after the header and the FREs right "
            "after the FDE array; sfh_fdeoff and sfh_freoff are never used, so other offsets "
            "make it read the wrong bytes.", GLIBC),
    },
    overrides={
        "defect-fre-start-at-size": Override(
            INFO, "The last FRE covers up to func_size - 1 (sframe_fre_get_end_ip_offset): a row "
            "at func_size is never matched.", GLIBC),
        **alike(("layout-num-fres", "layout-fre-len"), WARN,
                "sfh_num_fres and sfh_fre_len are never used to bound or count reads.", GLIBC),
        "layout-trailing-bytes": Override(
            WARN, "__sframe_decode gets no section size; bytes after the FREs are never read.",
            GLIBC),
        "layout-fdeoff-nonzero": Override(None, "Reported as layout-offsets-ignored.", GLIBC),
        "elf-not-sorted": Override(None, "Reported as header-flags-required.", GLIBC),
        "fde-pcmask-rep-size": Override(
            ERR, "sframe_fre_check_range_p computes pc_offset % rep_block_size with no zero "
            "check: SIGFPE inside backtrace().", GLIBC),
        "fde-unsorted": Override(
            ERR, "The binary search trusts FDE_SORTED: an unsorted table finds the wrong function "
            "or none.", GLIBC),
        "header-flags-unknown": Override(
            ERR, "sframe_header_sanity_check_p rejects flags outside SFRAME_V2_F_ALL_FLAGS.",
            GLIBC),
    },
    notes=(
        Fact("No section size reaches the decoder: every count and offset is trusted, so the "
             "layout bounds rules stay errors (reads past the section).", GLIBC),
        Fact("Both start encodings are read: FDE_FUNC_START_PCREL is honoured "
             "(sframe_decoder_get_secrel_func_start_addr).", GLIBC),
        Fact("The first import accepted only FDE_SORTED|FRAME_POINTER and so rejected "
             "binutils 2.45 PCREL output; which of the two the 2.42 tarball holds was not "
             "verified (the profile follows the later code).", GLIBC_FIRST),
        Fact("Any decode or lookup failure returns 0 frames and backtrace() uses DWARF.", GLIBC),
        Fact("SFrame V3, which binutils 2.46 emits, is not read: a V3 decoder for regular FDEs "
             "(version-dependent FDE layout, outermost-frame detection, bounds checks) was "
             "posted in April 2026 and is not in this profile.", GLIBC_V3),
        NO_OBJECTS,
    ))

