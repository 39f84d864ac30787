"""FRE rules: each frame row entry, and the rows of one function together."""

from __future__ import annotations

from .registry import rule

SIZE_CODE = rule(
    "fre-size-code", "fre", "error", "FRE data-word size code 3",
    """Bits 5-6 of fre_info give the data-word size: 0, 1, 2 for 1, 2, 4 bytes; 3 is invalid.
    The FRE's length is then unknown, so no later FRE of the function can be read. libsframe's
    dumper ignores the failure and prints an uninitialised row.""",
    "Use size code 0, 1 or 2.")
DATAWORDS_SIZE = rule(
    "fre-datawords-size", "fre", "error", "FRE data words exceed 24 bytes",
    """N words of S bytes must fit libsframe's 24-byte buffer. libsframe 2.46 copies them before
    checking: fre_info 0x5e (15 four-byte words) is a stack buffer overflow in objdump
    (sframe-format.md 2, reproduced under ASan).""",
    "Use at most 6 data words (fewer for DEFAULT FDEs, see fre-word-count).")
WORD_COUNT = rule(
    "fre-word-count", "fre", "error", "data-word count not legal for the ABI and FDE type",
    """DEFAULT FREs carry CFA[, RA][, FP]: AMD64 0-2 words (RA is fixed), aarch64 and s390x 0-3.
    FLEX FREs carry (control, offset) pairs: 0, 2, 4, 5 or 6 words. 0 words (RA undefined)
    exists only from v2 errata 2 on. The kernel rejects leftover words (-EFAULT).""",
    "Emit exactly the words the ABI defines.")
START_ORDER = rule(
    "fre-start-order", "fre", "error", "FRE start addresses not strictly increasing",
    """Rows are looked up by the last FRE whose start is <= the PC offset, so starts must
    strictly increase. The kernel treats equal or decreasing starts as corruption and drops the
    whole section (binutils PR 31654: gas with listings emitted duplicates).""",
    "Sort the FREs and drop duplicates.")
FIRST_START = rule(
    "fre-first-start", "fre", "warning", "first FRE does not start at offset 0",
    """PCs between the function start and the first FRE have no row, so lookups there fail.
    gas always starts the first row at 0.""",
    "Add a row at offset 0 (CFA = SP + the entry offset).")
START_BEYOND = rule(
    "fre-start-beyond-size", "fre", "error", "FRE starts past the end of its function",
    """An FRE start must be below the function size; a row past the end is unreachable and
    libsframe asserts start <= size while dumping. A size-0 function with one row at 0 is real
    gas output and valid.""",
    "Fix the function size or drop the row.")
# A known gas quirk, so it lives in the defect group (rules/defect.py reads the same way).
START_AT_SIZE = rule(
    "defect-fre-start-at-size", "defect", "warning",
    "FRE starts exactly at the end of its function",
    """gas emits an FRE whose start equals the function size when a CFI directive follows the
    last instruction (binutils PR libsframe/33131). The row covers no byte of the function, so
    it is harmless to unwinders, but libsframe up to 2.45 asserted fre_start < func_size and
    aborted on such input (now <=): ld 2.40 and 2.44 abort linking such an object
    (corpus/defects/BUILD.log). The kernel accepts it (it rejects only ip_off > func_size).""",
    "Nothing to do; the row is unused (a gas fix drops such rows).")
START_BEYOND_REP = rule(
    "fre-start-beyond-rep", "fre", "error", "PCMASK FRE starts beyond the repeated block",
    """In a PCMASK FDE the start is an offset within the rep_size-byte block; a start >=
    rep_size can never match (pc - start) % rep_size.""",
    "Keep PCMASK FRE starts below rep_size.")
MANGLED_ABI = rule(
    "fre-mangled-ra-abi", "fre", "error", "mangled-RA bit on a non-aarch64 ABI",
    """fre_info bit 7 marks a return address signed with pointer authentication, which exists
    only on aarch64.""",
    "Clear bit 7 of fre_info.")
FLEX_CFA_REG = rule(
    "fre-flex-cfa-reg", "fre", "error", "flex CFA rule is not register-based",
    """A FLEX FRE's CFA control word must have reg_p set: the CFA is a register plus an offset,
    optionally dereferenced. The kernel returns -EINVAL otherwise (consumers.md 1.3).""",
    "Set reg_p and the DWARF register number in the CFA control word.")
FLEX_PADDING = rule(
    "fre-flex-padding", "fre", "error", "flex padding word where none is allowed",
    """A zero control word is padding and is allowed only in the RA position, when RA has no
    rule but FP does (then 5 words: CFA pair, padding, FP pair). libsframe 2.46
    sframe_fre_get_fp_offset and the kernel read the words this way.""",
    "Use padding only before an FP pair.")
REGISTER = rule(
    "fre-register", "fre", "error", "register number not valid for the ABI",
    """Flex control words (and v2 s390x register-encoded RA/FP words) name DWARF registers:
    0-16 on AMD64, 0-31 on aarch64, 0-31 on s390x (GPRs and FPRs).""",
    "Use a DWARF register number of the target.")
CFA_OFFSET = rule(
    "fre-cfa-offset", "fre", "warning", "implausible CFA offset",
    """An SP-based CFA is at or above the stack pointer and 8-byte aligned on every supported
    ABI (AMD64 CFA = SP + 8 at entry, aarch64 SP + 0, s390x SP + 160). A negative or
    misaligned offset is almost certainly wrong.""",
    "Check the CFI the section was generated from.")
S390X_REGNUM = rule(
    "fre-s390x-regnum-v3", "fre", "error", "odd s390x RA/FP offset in v3",
    """v2 encoded a register number as an odd RA/FP offset on s390x; v3 uses FLEX FDEs for that
    instead, so an odd offset in a v3 DEFAULT FRE is a misaligned stack slot.""",
    "Emit a FLEX FDE for register-saved RA/FP.")
