"""FDE rules: one function descriptor at a time, and the table as a whole.

The declarations, the per-FDE check (`check_fde`, run by walk/section.py on each
decoded FDE) and its pure predicates. The fast path (walk/fde_shapes.py) runs
`check_fde` itself on one probe FDE per distinct shape of the table -- (info, info2,
rep_size, padding, size_class(size), num_fres) -- so a new FDE rule is a change
to this module alone, as long as what it asks of the function size changes only at
SIZE_BOUNDS (the start and FRE offset are the section walk's business: it
applies `out_of_order` for fde-unsorted; overlapping functions are layout.py's).
"""

from __future__ import annotations

from bisect import bisect_right
from operator import gt

from ..format import constants
from ..format.abi import has_pauth
from ..format.model import FDE, Header
from ..result import Severity
from .registry import MODEL_ONLY, PROFILE_ONLY, rule

READER_STARTS = rule(
    "fde-start-duplicate", "fde", "error", "two FDEs start at the same address",
    f"""Sorted tables may hold equal starts for strict sfcheck, but the kernel's
    CONFIG_SFRAME_VALIDATION pass requires strictly increasing function starts and rejects
    the section. {PROFILE_ONLY}""",
    "Keep one FDE per function start.")
MODEL_WRONG_ROW = rule(
    "fde-reader-wrong-row", "fde", "error", "reader answers a lookup with the wrong row",
    f"""At this PC the reader returns other CFA/RA/FP rules than the section says (an
    unsorted table searched as sorted, a PCMASK test compiled out, offsets read unsigned,
    FREs out of order): it silently mis-unwinds. {MODEL_ONLY}""",
    "Write sorted FDEs, increasing FRE starts and 4-byte offsets where a narrower unsigned "
    "read would change the value; or use a fixed reader.")
MODEL_UNINIT = rule(
    "fde-reader-uninit", "fde", "error", "reader's lookup reads an uninitialised variable",
    f"""The reader's answer at this PC depends on a local variable it never set (an FDE
    without FREs, a first FRE after the function start, an RA offset of 0): garbage on
    kernels that do not zero-initialise the stack, a failed lookup on those that do.
    {MODEL_ONLY}""",
    "Give every FDE a first FRE at offset 0 and an RA rule.")
MODEL_FAILS = rule(
    "fde-reader-lookup-fails", "fde", "error", "reader fails a lookup the section answers",
    f"""The reader returns an error where the section has a row for the PC; for the V3
    series -EFAULT also removes the whole section from the process. {MODEL_ONLY}""",
    "See the reason in the message; `sfcheck profiles NAME` lists the reader's checks.")
MODEL_FAILS_SPEC = rule(
    "fde-reader-lookup-fails-spec", "fde", "warning",
    "reader fails where the format marks an outermost or signal frame",
    f"""SFrame v3 gives an FDE without FREs a meaning (an outermost frame; with the signal
    bit, a signal frame). The reader fails the lookup instead and the unwinder falls back
    to frame pointers. {MODEL_ONLY}""",
    "Nothing to fix in the section; the reader does not implement this part of v3.")
MODEL_DIV0 = rule(
    "fde-reader-div-zero", "fde", "error", "reader divides by zero",
    f"""A PCMASK FDE with rep_size 0: the reader computes the PC offset modulo rep_size
    without a check (in the kernel: a division-by-zero oops). {MODEL_ONLY}""",
    "Write the PLT entry size in rep_size.")
MODEL_GAP_ROW = rule(
    "fde-reader-gap-row", "fde", "warning", "reader unwinds a PC that no function holds",
    f"""No FDE covers this PC (a gap between functions, past the last one, below the
    first), yet the reader answers with a row, reads an uninitialised pointer or reads
    outside the section. It matters only if code without an FDE runs there (alignment
    padding never does). {MODEL_ONLY}""",
    "Emit FDEs for all code (or accept it: padding never runs).")
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
    division by zero in the kernel V3 series (kernel/unwind/sframe.c), glibc 2.43
    (sysdeps/generic/sframe-read.c) and binutils 2.46 libsframe (sframe_find_fre).""",
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
    the search. No reader detects this: neither libsframe 2.46 (libsframe/sframe.c), glibc 2.43
    (sysdeps/generic/sframe-read.c) nor the kernel V3 series (kernel/unwind/sframe.c) checks
    it.""",
    "Give each function one FDE with its true size.")
FRE_TYPE_SIZE = rule(
    "fde-fre-type-size", "fde", "info", "FRE type wider than needed",
    """gas picks ADDR1 for functions below 0x100 bytes and ADDR2 below 0x10000 (binutils 2.46
    gas/sframe-opt.c, sframe_convert_frag; ld's PLT entries use libsframe's
    sframe_calc_fre_type, with the same limits). A wider type is valid but wastes space.""",
    "Nothing required; a re-encode with the smallest type saves bytes.")
FRE_TYPE_SMALL = rule(
    "fde-fre-type-small", "fde", "warning", "FRE type cannot address the whole function",
    """An FRE's start address is an unsigned 1-, 2- or 4-byte offset from the function start
    (SFrame spec, binutils 2.46 (sourceware.org/binutils/docs-2.46/sframe-spec.html), "The
    SFrame FRE Types"), so ADDR1 addresses every PC of a function of up to 0x100 bytes and
    ADDR2 up to 0x10000. In a longer function the tail can only use the last row reachable:
    gas never does this.""",
    "Use the FRE type that holds the function size.")
NO_FRES = rule(
    "fde-no-fres", "fde", "warning", "FDE has no FREs",
    """An FDE with sfde_func_num_fres 0 gives no row for any PC of its function. In v1 and v2
    the spec gives that no meaning and gas never emits it: libsframe's and glibc's lookups fail
    there, and the 2023 kernel RFC reader goes on with an uninitialised row
    (kernel/unwind/sframe.c in "[PATCH RFC 09/10] unwind: Introduce SFrame user space
    unwinding", message-id
    09460e60dd1c2f8ea1abb8d9188195db699ce76f.1699487758.git.jpoimboe@kernel.org). In v3 a
    DEFAULT FDE without FREs is defined: it marks an outermost frame (RA undefined over the
    whole function; SFrame spec, binutils 2.46
    (sourceware.org/binutils/docs-2.46/sframe-spec.html), "SFrame FRE"), and is reported as
    info. A v3 FLEX FDE without FREs has no rules to be flexible about and stays a warning.""",
    "Emit the function's rows, or (v3) rely on the outermost-frame meaning on purpose.")


# ---------------------------------------------------------------------------
# Predicates (pure; the fast path reads the same facts).


def reserved_info_bits(version: int) -> int:
    """FDE info bits that must be 0: bit 6, and bit 7 before v3 gave it the signal flag."""
    signal = constants.FDE_INFO_SIGNAL if version < constants.VERSION_3 else 0
    return constants.FDE_INFO_UNUSED | signal


# (prev, pc): fde-unsorted fires, the function start is below the previous FDE's. An operator
# function: walk/fast.py maps it over whole start columns at C speed.
out_of_order = gt

# GAS_STEPS[t]: the first function size for which gas no longer picks FRE type t
# (gas/sframe-opt.c, sframe_convert_frag: fsize < 0x100 gives ADDR1, < 0x10000 ADDR2;
# libsframe's sframe_calc_fre_type, which ld uses, draws the same lines).
GAS_STEPS = tuple(1 << 8 * constants.FRE_ADDR_SIZE[t]
                  for t in (constants.FRE_TYPE_ADDR1, constants.FRE_TYPE_ADDR2))
# REACH_STEPS[t]: the first function size some PC of which type t's start addresses cannot
# address. A start is an unsigned N-byte offset from the function start (SFrame spec,
# "The SFrame FRE Types"), so it reaches offsets 0 .. 2**(8N) - 1: every PC of a function
# of 2**(8N) bytes, one step more than gas's choice.
REACH_STEPS = tuple(step + 1 for step in GAS_STEPS)
# The sizes at which either answer changes: both are constant within a size_class, so
# walk/fde_shapes.py probes one size per class (CLASS_SIZES[k] lies in class k).
SIZE_BOUNDS = tuple(sorted(GAS_STEPS + REACH_STEPS))
CLASS_SIZES = (0, *SIZE_BOUNDS)


def size_class(size: int) -> int:
    """Which of the intervals SIZE_BOUNDS cut the function sizes into holds `size`."""
    return bisect_right(SIZE_BOUNDS, size)


def needed_fre_type(size: int) -> int:
    """The FRE type gas picks for a function of `size` bytes (fde-fre-type-size: wider)."""
    return bisect_right(GAS_STEPS, size)


def narrowest_fre_type(size: int) -> int:
    """The narrowest FRE type whose starts address every PC of a `size`-byte function
    (fde-fre-type-small: narrower)."""
    return bisect_right(REACH_STEPS, size)


# ---------------------------------------------------------------------------
# The check.


def check_fde(ctx, h: Header, fde: FDE, loc: dict) -> None:
    """Every rule on one FDE's own fields."""
    # The info bits are read inline (fre_type, pcmask, pauth_key): this runs per FDE.
    info, v = fde.info, h.version
    fre_type = info & constants.FDE_INFO_FRE_TYPE
    if fre_type > constants.FRE_TYPE_ADDR4:
        ctx.emit(FRE_TYPE, f"FRE type {fre_type}", **loc)
    v3 = v == constants.VERSION_3
    if (info & reserved_info_bits(v) or (v3 and fde.info2 & constants.FDE_INFO2_UNUSED)
            or fde.padding):
        ctx.emit(RESERVED, f"info {info:#04x}" + (
            f", info2 {fde.info2:#04x}" if v3 else "") + (
            f", padding {fde.padding:#x}" if fde.padding else ""), **loc)
    if v3 and fde.info2 & constants.FDE_INFO2_TYPE > constants.FDE_TYPE_FLEX:
        ctx.emit(FDE_TYPE, f"FDE type {fde.fde_type}", **loc)
    pcmask = info & constants.FDE_INFO_PCMASK
    if v == constants.VERSION_1:
        pass  # v1 FDEs have no rep_size field
    elif pcmask and fde.rep_size == 0:
        ctx.emit(REP_SIZE_ZERO, "PCMASK FDE with rep_size 0", **loc)
    elif not pcmask and fde.rep_size:
        ctx.emit(REP_SIZE_UNUSED, f"rep_size {fde.rep_size} on a PCINC FDE", **loc)
    if info & constants.FDE_INFO_PAUTH_B and not has_pauth(h.abi):
        ctx.emit(PAUTH_ABI, f"info {info:#04x} selects pauth key B", **loc)
    if fre_type <= constants.FRE_TYPE_ADDR4 and not pcmask:
        size = fde.size
        need = needed_fre_type(size)
        if fre_type > need:
            ctx.emit(FRE_TYPE_SIZE, f"ADDR{constants.FRE_ADDR_SIZE[fre_type]} for a "
                     f"{size}-byte function (ADDR{constants.FRE_ADDR_SIZE[need]} holds it)", **loc)
        elif fre_type < narrowest_fre_type(size):
            ctx.emit(FRE_TYPE_SMALL, f"ADDR{constants.FRE_ADDR_SIZE[fre_type]} cannot address a "
                     f"{size}-byte function", **loc)
    if fde.num_fres == 0:
        if v3 and fde.fde_type == constants.FDE_TYPE_DEFAULT:
            ctx.emit_as(NO_FRES, Severity.INFO, "no FREs: in v3 this marks an outermost "
                        "frame (RA undefined over the whole function)", **loc)
        elif v3:
            ctx.emit(NO_FRES, f"no FREs in a v3 FDE of type {fde.fde_type}: the spec gives "
                     "only DEFAULT FDEs without FREs a meaning (outermost frame)", **loc)
        else:
            ctx.emit(NO_FRES, f"no FREs: v{v} gives that no meaning, so every lookup in the "
                     "function fails", **loc)
