"""FRE rules: each frame row entry, and the rows of one function together.

The declarations, the check (`check_fres`, run by walk/section.py on each FDE's
decoded FREs) and the small pure predicates both use: `info_quiet` (no rule objects
to this fre_info byte), `cfa_offset_ok`, `stack_slot`, `legal_counts`. The fast path
(walk/fre_patterns.py) builds its byte classes by evaluating these predicates, so a
new FRE rule changes them here and nowhere else. The start rules are the functions
`start_out_of_order`, `first_start_off`, `start_past` (and `starts_ok`, all three over one
function's starts), which the fast path maps over whole tables.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from functools import cache

from ..format import constants
from ..format.abi import has_pauth, max_reg
from ..format.bounds import first_start_off, start_out_of_order, start_past
from ..format.datawords import cfa_offset
from ..format.fre_info_table import COUNT, INFO
from ..format.model import FDE, FRE, Header
from ..wording import plural
from .defect import FRE_START_AT_SIZE
from .registry import MODEL_ONLY, PROFILE_ONLY, rule

MODEL_WALK_LOOPS = rule(
    "fre-reader-walk-loops", "fre", "error", "reader's walker repeats a frame",
    f"""A row whose CFA does not move above the stack pointer: a walker with no
    CFA-direction check and no frame cap repeats the frame until its buffer is full.
    {MODEL_ONLY}""",
    "CFA offsets from SP are positive in every real ABI.")
MODEL_WALK_WARN = rule(
    "fre-reader-warn", "fre", "error", "reader's walker hits a kernel warning",
    f"""A flex FRE whose RA or FP control word is non-zero without reg_p or deref_p gives
    the rule "CFA + offset" (not a load); the V3 walker (unwind_user_next_common) has no case
    for it and executes WARN_ON_ONCE: a kernel warning any process can trigger with its own
    .sframe (a panic on panic_on_warn systems). {MODEL_ONLY}""",
    "Set deref_p for a saved register (a CFA-relative slot), or reg_p for a register.")
MODEL_WALK_STOPS = rule(
    "fre-reader-walk-stops", "fre", "warning", "reader's unwind guard ends the walk at a row",
    f"""The V3 walker accepts a row only if the new CFA is strictly above the SP (equal
    only in the topmost frame) and word-aligned, and reads registers other than SP/FP only
    in the topmost frame; a row that fails a guard ends the trace when it is met in a
    deeper frame. {MODEL_ONLY}""",
    "Expected for DRAP prologues (CFA in another register); otherwise check the CFA offset.")
READER_FLEX_ONE_WORD = rule(
    "fre-reader-flex-one-word", "fre", "error", "reader's dumper aborts on a one-word FLEX FRE",
    f"""A FLEX FDE's FRE with one data word: libsframe's dumper (objdump/readelf --sframe)
    reads the CFA control word and the CFA offset (word 1) and asserts both exist, so the
    dump aborts there. fre-word-count reports the count under every profile; this rule says
    which reader dies of it. {PROFILE_ONLY}""",
    "Give a FLEX FRE 0, 2, 4, 5 or 6 words.")
READER_FLEX_ABI = rule(
    "fre-reader-flex-abi", "fre", "error",
    "reader's dumper aborts on a register in a FLEX FRE of an unknown ABI",
    f"""A FLEX FRE whose CFA, RA or FP control word names a register (reg_p) in a section
    whose abi_arch libsframe has no register names for: sframe_get_reg_name asserts, and
    objdump/readelf --sframe abort. {PROFILE_ONLY}""",
    "Use a known abi_arch (1-4), or no FLEX FDEs.")
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
    (binutils 2.46 libsframe/sframe.c, sframe_decode_fre; reproduced under ASan).""",
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
    optionally dereferenced. The kernel returns -EINVAL otherwise
    (kernel/unwind/sframe.c of the V3 kernel series, v13: lkml.iu.edu/2602.1/04596.html).""",
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


# ---------------------------------------------------------------------------
# Predicates (pure; the fast path evaluates them over all byte values).

FLEX_COUNTS = frozenset({0, 2, 4, 5, 6})  # (control, offset) pairs, RA padding: 5


# The FRE-start rules' predicates (start_out_of_order, first_start_off, start_past) are
# stated once in format/bounds.py, below the rules, so the .eh_frame cross-check's row
# reader (semantic/compare.py) asks the same question without an import cycle.


def starts_ok(starts: Sequence[int], size: int) -> bool:
    """No FRE-start rule fires on these starts of a PCINC function of `size` bytes (what
    the fast walks accept; a size-0 function with one row at 0 is left to check_fres)."""
    return not starts or (not first_start_off(starts[0])
                          and not any(map(start_out_of_order, starts, starts[1:]))
                          and not start_past(starts[-1], size))


def fixed_words(h: Header) -> int:
    """How many of the RA/FP words the header fixes (they are then not in the FREs)."""
    return (h.fixed_ra != 0) + (h.fixed_fp != 0)


@cache
def legal_counts(version: int, fixed: int, flex: bool = False) -> frozenset[int]:
    """Data-word counts fre-word-count accepts. DEFAULT: the CFA, then an RA and an FP
    word unless the header fixes them (libsframe's getters, the kernel's
    __read_default_fde_fre_datawords); 0 words (RA undefined) since v2."""
    if flex:
        return FLEX_COUNTS
    return frozenset(range(0 if version >= constants.VERSION_2 else 1, 4 - fixed))


def info_quiet(info: int, legal: frozenset[int], pauth: bool) -> bool:
    """No rule objects to this fre_info byte alone (fre-datawords-size, fre-word-count,
    fre-mangled-ra-abi)."""
    fi = INFO[info]
    # size code 3 is fre-size-code's (the decoder stops there): counted as 1-byte words here
    return (fi.count * (fi.word_size or 1) <= constants.MAX_DATAWORD_BYTES and fi.count in legal
            and (pauth or not fi.mangled_ra))


@cache
def quiet_infos(legal: frozenset[int], pauth: bool) -> bytes:
    """fre_info byte -> 1 where info_quiet holds: one table lookup per clean FRE."""
    return bytes(int(info_quiet(b, legal, pauth)) for b in range(256))


def cfa_offset_ok(offset: int) -> bool:
    """fre-cfa-offset: an SP-based CFA is at or above SP and 8-byte aligned."""
    return offset >= 0 and offset % 8 == 0


def stack_slot(word: int) -> bool:
    """An s390x RA/FP word that is a CFA offset, not a register number (odd)."""
    return not word & 1


# ---------------------------------------------------------------------------
# The check.


def check_fres(ctx, h: Header, fde: FDE, fres: list[FRE], pc: int, loc: dict) -> None:
    """Every FRE rule on one FDE's decoded FREs."""
    flex = fde.flex(h.version)
    legal = legal_counts(h.version, fixed_words(h), flex)
    pauth = has_pauth(h.abi)
    quiet = quiet_infos(legal, pauth)
    regs = max_reg(h.abi)
    pcmask = fde.pcmask
    size = fde.size
    # Starts at or past `limit` need the range rules below; under it none fires.
    if pcmask:
        limit = fde.rep_size if h.version > constants.VERSION_1 and fde.rep_size else 1 << 64
    else:
        limit = size or 1  # a zero-size function: only a start past 0 is wrong
    s390x = h.abi == constants.ABI_S390X_BE
    prev = -1

    def floc() -> dict:
        """The current FRE's location: built only when a finding needs it, not per FRE."""
        return dict(loc, offset=fre.offset, fre=j,
                    fre_pc=fre.start if pcmask else pc + fre.start)

    for j, fre in enumerate(fres):  # noqa: B007  (floc reads j and fre)
        info = fre.info
        if not quiet[info]:
            n = fre.count
            if n * fre.word_size > constants.MAX_DATAWORD_BYTES:
                ctx.emit(DATAWORDS_SIZE, f"{n} words of {fre.word_size} bytes", **floc())
            if n not in legal:
                abi_name = constants.ABI_NAMES.get(h.abi, 'unknown-ABI')
                kind = "FLEX" if flex else f"{abi_name} DEFAULT"
                ctx.emit(WORD_COUNT, f"{kind} FRE with {plural(n, 'data word')} (allowed: "
                         f"{', '.join(map(str, sorted(legal)))})", **floc())
            if INFO[info].mangled_ra and not pauth:
                ctx.emit(MANGLED_ABI, f"fre_info {info:#04x}", **floc())
        start = fre.start
        if start_out_of_order(prev, start):
            ctx.emit(START_ORDER, f"start {start:#x} after {prev:#x}", **floc())
        prev = start
        if j == 0 and first_start_off(start):
            ctx.emit(FIRST_START, f"first row starts at {start:#x}", **floc())
        if start_past(start, limit):
            if pcmask:
                ctx.emit(START_BEYOND_REP, f"start {start:#x} >= rep_size "
                         f"{fde.rep_size}", **floc())
            elif start > size:
                ctx.emit(START_BEYOND, f"start {start:#x} > function size {size:#x}",
                         **floc())
            else:  # start == size != 0
                ctx.emit(FRE_START_AT_SIZE, f"start {start:#x} == function size", **floc())
        if flex:
            _check_flex(ctx, fre, regs, floc)
        elif not COUNT[info]:  # no data words
            pass
        elif s390x:
            _check_default(ctx, h, fre, regs, floc)
        elif INFO[info].base_sp:  # SP-based CFA: word 0 is the offset, unscaled
            cfa = fre.words[0]
            if not cfa_offset_ok(cfa):
                ctx.emit(CFA_OFFSET, f"CFA = SP{cfa:+d}", **floc())


def _check_flex(ctx, fre: FRE, regs: int, floc: Callable[[], dict]) -> None:
    n = fre.count
    if n < 2:
        return
    words = [fre.uword(k) or 0 for k in range(n)]
    if not words[0] & 1:
        ctx.emit(FLEX_CFA_REG, f"CFA control word {words[0]:#x} has reg_p clear", **floc())
    ctl_positions = [0]
    if n >= 3:
        if words[2] == 0:
            if n != 5:
                ctx.emit(FLEX_PADDING, f"RA padding word with {n} words (needs an FP pair: "
                         "5 words)", **floc())
            if n >= 4:
                ctl_positions.append(3)
        else:
            ctl_positions.append(2)
            if n == 5:
                ctx.emit(FLEX_PADDING, "5 words but no padding in the RA position", **floc())
            if n >= 5:
                ctl_positions.append(4)
    for k in ctl_positions[1:]:
        if k < n and words[k] == 0 and k != 2:
            ctx.emit(FLEX_PADDING, f"zero control word at word {k}", **floc())
    for k in ctl_positions:
        if k < n and words[k] & 1 and (words[k] >> 3) > regs:
            ctx.emit(REGISTER, f"control word {k} names register {words[k] >> 3}", **floc())


def _check_default(ctx, h: Header, fre: FRE, regs: int, floc: Callable[[], dict]) -> None:
    cfa = cfa_offset(h, fre, False)
    if fre.base_sp and cfa is not None and not cfa_offset_ok(cfa):
        ctx.emit(CFA_OFFSET, f"CFA = SP{cfa:+d}", **floc())
    if h.abi != constants.ABI_S390X_BE:
        return
    for k in range(1, fre.count):
        w = fre.words[k]
        if not stack_slot(w):
            if h.version >= constants.VERSION_3:
                ctx.emit(S390X_REGNUM, f"word {k} is {w}", **floc())
            elif (w >> 1) > regs or w < 0:
                ctx.emit(REGISTER, f"word {k} encodes register {w >> 1}", **floc())
