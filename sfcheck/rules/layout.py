"""Layout rules: where the sub-sections are, and whether the counts add up."""

from __future__ import annotations

from .registry import rule

FDEOFF_AFTER_FREOFF = rule(
    "layout-fdeoff-after-freoff", "layout", "error", "FDE sub-section starts after the FREs",
    """sfh_fdeoff must not exceed sfh_freoff: the FDE array comes first. This is the only layout
    check libsframe makes (sframe_header_sanity_check_p).""",
    "Write fdeoff = 0 and freoff = num_fdes * FDE size, as gas and ld do.")
FDE_ARRAY_BOUNDS = rule(
    "layout-fde-array-bounds", "layout", "error", "FDE array runs past the end of the section",
    """header + fdeoff + num_fdes * FDE size must fit in the section. libsframe does not check
    this for native-endian input and over-reads the heap (sframe-format.md 2, reproduced
    under ASan).""",
    "Fix sfh_num_fdes or the section size; the section is truncated or the count is wrong.")
FDE_ARRAY_OVERLAP = rule(
    "layout-fde-array-overlap", "layout", "error", "FDE array runs into the FRE sub-section",
    """fdeoff + num_fdes * FDE size must not exceed freoff, or FDE records and FREs share
    bytes. The kernel requires fres_start >= fdes_end (consumers.md 1.3).""",
    "Lay the FDE array out before the FRE sub-section (freoff = fdeoff + num_fdes * size).")
FRE_BOUNDS = rule(
    "layout-fre-bounds", "layout", "error", "FRE sub-section runs past the end of the section",
    """header + freoff + fre_len must fit in the section. libsframe copies fre_len bytes without
    comparing with the section size (an over-read, sframe-format.md 2).""",
    "Fix sfh_fre_len / sfh_freoff, or the section size.")
FDEOFF_NONZERO = rule(
    "layout-fdeoff-nonzero", "layout", "warning", "FDE sub-section does not start at offset 0",
    """gas and ld always write fdeoff = 0. libsframe computes PC-relative function starts as if
    it were 0 (sframe_decoder_get_offsetof_fde_start_addr ignores it), so objdump and every
    libsframe user get every function address wrong by fdeoff.""",
    "Write the FDE array right after the header (fdeoff = 0).")
FDE_FRES_BOUNDS = rule(
    "layout-fde-fres-bounds", "layout", "error", "an FDE's FREs lie outside the FRE sub-section",
    """Each FDE's FREs (and in v3 its 5-byte attribute record) must lie inside the fre_len bytes
    of the FRE sub-section. libsframe reads them without a bounds check (a SEGV or over-read
    for the v3 attribute, sframe.c sframe_fde_tbl_init).""",
    "Fix the FDE's start_fre_off / num_fres, or fre_len.")
NUM_FRES = rule(
    "layout-num-fres", "layout", "error", "sum of per-FDE FRE counts differs from sfh_num_fres",
    """sfh_num_fres counts every FRE in the section. libsframe checks the sum only on its
    byte-swapping path; native readers trust each FDE's count, so a mismatch means one of the
    counts is wrong.""",
    "Make sfh_num_fres the sum of the FDEs' num_fres.")
FRE_LEN = rule(
    "layout-fre-len", "layout", "error", "FRE bytes used differ from sfh_fre_len",
    """The attribute records and FREs of all FDEs must use exactly fre_len bytes. Unused bytes
    hide data no reader sees; a shortfall means FREs run into whatever follows.""",
    "Make sfh_fre_len the size of all FRE blocks.")
FRE_OVERLAP = rule(
    "layout-fre-overlap", "layout", "error", "FRE blocks of two FDEs overlap",
    """Two FDEs whose FREs share bytes give both functions the same (or shifted) rows. No
    consumer checks this (consumers.md 7).""",
    "Give each FDE its own FRE block.")
TRAILING = rule(
    "layout-trailing-bytes", "layout", "error", "nonzero bytes after the SFrame data",
    """Only zero padding may follow the FRE sub-section; libsframe's byte-swapping path
    rejects anything else. Nonzero bytes are often a second SFrame section concatenated by a
    linker that does not merge (lld, mold, zig).""",
    "Remove the extra bytes, or merge the sections properly.")
GAP_BYTES = rule(
    "layout-gap-bytes", "layout", "error", "nonzero bytes between the header, FDEs and FREs",
    """With a nonzero sfh_fdeoff, or an FRE sub-section that starts after the end of the FDE
    array, the bytes in between belong to no structure. Readers skip them (glibc and LLVM even
    assume there are none and read the FDEs or FREs from the wrong place); nonzero bytes there
    are data some tool wrote that no reader sees, and a decoder that re-encodes the section
    loses them.""",
    "Write sfh_fdeoff = 0 and put the FREs right after the FDE array (what gas and ld do).")
EMPTY = rule(
    "layout-no-fdes", "layout", "info", "section has no FDEs",
    """A section without FDEs covers no code. The kernel refuses to register one
    (num_fdes != 0 && num_fres != 0 is required, consumers.md 1.3).""",
    "Nothing to do if the file really has no code with CFI.")
