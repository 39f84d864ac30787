"""FDE rules: one function descriptor at a time, and the table as a whole.

The declarations, the per-FDE check (`check_fde`, run by walk/section.py on each
decoded FDE) and its pure predicates. The fast path (walk/fde_shapes.py) runs
`check_fde` itself on one probe FDE per distinct shape of the table -- (info, info2,
rep_size, padding, needed_fre_type(size), num_fres) -- so a new FDE rule is a change
to this module alone, as long as it reads the function size only through
`needed_fre_type` (the start and FRE offset are the section walk's business:
unsorted and overlapping functions are checked in walk/section.py and layout.py).
"""

from __future__ import annotations

from bisect import bisect_right

from ..format import constants as C
from ..format.abi import has_pauth
from ..format.model import FDE, Header
from ..result import Severity
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
    """gas picks the smallest FRE type whose start address holds the function size
    (sframe_calc_fre_type). A wider type is valid but wastes space.""",
    "Nothing required; a re-encode with the smallest type saves bytes.")
FRE_TYPE_SMALL = rule(
    "fde-fre-type-small", "fde", "warning", "FRE type cannot address the whole function",
    """The start-address width cannot express offsets up to the function size, so the tail of
    the function can only use the last row: gas never does this.""",
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
    return C.FDE_INFO_UNUSED | (C.FDE_INFO_SIGNAL if version < C.VERSION_3 else 0)


# A function of size s needs the smallest FRE type whose start address holds s - 1 ...
# s: SIZE_STEPS[t] is the first size FRE type t no longer holds.
SIZE_STEPS = tuple(1 << 8 * C.FRE_ADDR_SIZE[t] for t in (C.FRE_TYPE_ADDR1, C.FRE_TYPE_ADDR2))


def needed_fre_type(size: int) -> int:
    """The FRE type gas picks for a function of `size` bytes (sframe_calc_fre_type)."""
    return bisect_right(SIZE_STEPS, size)


# ---------------------------------------------------------------------------
# The check.


def check_fde(ctx, h: Header, fde: FDE, loc: dict) -> None:
    """Every rule on one FDE's own fields."""
    # The info bits are read inline (fre_type, pcmask, pauth_key): this runs per FDE.
    info, v = fde.info, h.version
    fre_type = info & C.FDE_INFO_FRE_TYPE
    if fre_type > C.FRE_TYPE_ADDR4:
        ctx.emit(FRE_TYPE, f"FRE type {fre_type}", **loc)
    v3 = v == C.VERSION_3
    if info & reserved_info_bits(v) or (v3 and fde.info2 & C.FDE_INFO2_UNUSED) or fde.padding:
        ctx.emit(RESERVED, f"info {info:#04x}" + (
            f", info2 {fde.info2:#04x}" if v3 else "") + (
            f", padding {fde.padding:#x}" if fde.padding else ""), **loc)
    if v3 and fde.info2 & C.FDE_INFO2_TYPE > C.FDE_TYPE_FLEX:
        ctx.emit(FDE_TYPE, f"FDE type {fde.fde_type}", **loc)
    pcmask = info & C.FDE_INFO_PCMASK
    if v == C.VERSION_1:
        pass  # v1 FDEs have no rep_size field
    elif pcmask and fde.rep_size == 0:
        ctx.emit(REP_SIZE_ZERO, "PCMASK FDE with rep_size 0", **loc)
    elif not pcmask and fde.rep_size:
        ctx.emit(REP_SIZE_UNUSED, f"rep_size {fde.rep_size} on a PCINC FDE", **loc)
    if info & C.FDE_INFO_PAUTH_B and not has_pauth(h.abi):
        ctx.emit(PAUTH_ABI, f"info {info:#04x} selects pauth key B", **loc)
    if fre_type <= C.FRE_TYPE_ADDR4 and not pcmask:
        size = fde.size
        need = needed_fre_type(size)
        if fre_type > need:
            ctx.emit(FRE_TYPE_SIZE, f"ADDR{C.FRE_ADDR_SIZE[fre_type]} for a "
                     f"{size}-byte function (ADDR{C.FRE_ADDR_SIZE[need]} holds it)", **loc)
        elif fre_type < need:
            ctx.emit(FRE_TYPE_SMALL, f"ADDR{C.FRE_ADDR_SIZE[fre_type]} cannot address a "
                     f"{size}-byte function", **loc)
    if fde.num_fres == 0:
        if v3 and fde.fde_type == C.FDE_TYPE_DEFAULT:
            ctx.emit_as(NO_FRES, Severity.INFO, "no FREs: in v3 this marks an outermost "
                        "frame (RA undefined over the whole function)", **loc)
        elif v3:
            ctx.emit(NO_FRES, f"no FREs in a v3 FDE of type {fde.fde_type}: the spec gives "
                     "only DEFAULT FDEs without FREs a meaning (outermost frame)", **loc)
        else:
            ctx.emit(NO_FRES, f"no FREs: v{v} gives that no meaning, so every lookup in the "
                     "function fails", **loc)
