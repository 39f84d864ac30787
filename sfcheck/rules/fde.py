"""FDE rules: one function descriptor at a time, and the table as a whole."""

from __future__ import annotations

from .registry import rule

FRE_TYPE = rule(
    "fde-fre-type", "fde", "error", "FRE type is not ADDR1, ADDR2 or ADDR4",
    """The low 4 bits of the FDE info byte pick the FRE start-address size: 0, 1 or 2. Any other
    value makes libsframe hit assert(0) in sframe_fre_start_addr_size, aborting objdump.""",
    "Use the FRE type that holds the function size (see fde-fre-type-size).")
RESERVED = rule(
    "fde-reserved-bits", "fde", "error", "reserved FDE bits are set",
    """Unused bits must be zero: info bit 6 (and bit 7 before v3), info2 bits 5-7 (v3), the v2
    padding field. Readers ignore them today, so set bits are either corruption or data some
    reader will misread later.""",
    "Clear the unused bits.")
FDE_TYPE = rule(
    "fde-type-unknown", "fde", "error", "unknown v3 FDE type",
    """info2 bits 0-4 hold the FDE type: 0 DEFAULT or 1 FLEX. libsframe treats other values as
    DEFAULT silently; the kernel rejects them (-EFAULT).""",
    "Use DEFAULT (0) or FLEX (1).")
REP_SIZE_ZERO = rule(
    "fde-pcmask-rep-size", "fde", "error", "PCMASK FDE with rep_size 0",
    """A PCMASK FDE looks rows up with (pc - start) % rep_size. With rep_size 0 that is a
    division by zero in the kernel, glibc and libsframe (consumers.md 7).""",
    "Set rep_size to the size of the repeated block (16 for x86-64 PLT entries).")
REP_SIZE_UNUSED = rule(
    "fde-rep-size-unused", "fde", "info", "PCINC FDE with a nonzero rep_size",
    """rep_size is only meaningful for PCMASK FDEs; gas writes 0 for PCINC FDEs. GNU ld 2.41-2.44
    writes 16 on the PCINC FDE of .plt0: harmless, readers ignore it.""",
    "Write rep_size = 0.")
PAUTH_ABI = rule(
    "fde-pauth-abi", "fde", "warning", "pauth key B on a non-aarch64 ABI",
    """Info bit 5 selects the aarch64 pointer-authentication key; it is unused on AMD64 and
    s390x, so a set bit there is corruption.""",
    "Clear bit 5 of the FDE info byte.")
UNSORTED = rule(
    "fde-unsorted", "fde", "error", "FDEs not sorted although SORTED is set",
    """With SFRAME_F_FDE_SORTED readers binary-search the FDE table (libsframe, glibc,
    kernel). libsframe and glibc trust the flag, so an unsorted table silently finds the wrong
    function or none.""",
    "Sort the FDEs by function start address, or clear the flag.")
OVERLAP = rule(
    "fde-overlap", "fde", "error", "function ranges overlap",
    """Two FDEs covering the same PC give readers two answers; which one they take depends on
    the search. No consumer detects this (consumers.md 7).""",
    "Give each function one FDE with its true size.")
FRE_TYPE_SIZE = rule(
    "fde-fre-type-size", "fde", "info", "FRE type wider than needed",
    """gas picks the smallest FRE type whose start address holds the function size
    (sframe_calc_fre_type). A wider type is valid but wastes space.""",
    "Nothing required; a re-encode with the smallest type saves bytes.")
FRE_TYPE_SMALL = rule(
    "fde-fre-type-small", "fde", "warning", "FRE type cannot address the whole function",
    """The start-address width cannot express offsets up to the function size, so the tail of
    the function can only use the last row: gas never does this.""",
    "Use the FRE type that holds the function size.")
