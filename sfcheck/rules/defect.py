"""Known toolchain defects: findings that match a recognised producer bug get its rule.

A gate can then tell "a toolchain bug we know and track" (a warning by default)
from "this package is broken" (the generic error). Each rule names the producer
and versions, what it does to unwinders and how to confirm it by hand.
"""

from __future__ import annotations

from ..dwarf.cfi import UNDEFINED, EhFde
from ..elf.model import ElfSFrameInfo, address_set
from ..errors import DecodeError
from ..format import constants
from ..format.abi import Abi
from ..format.decode import Decoder, decode_header
from ..format.fde_table import Columns
from ..format.fre_rules import RegRule
from ..format.model import Header
from ..walk.context import SectionContext
from . import semantic
from .registry import Rule, rule

PLT_GOT_CFA = rule(
    "defect-ld-plt-got-cfa", "defect", "warning", "ld's .plt.got FDE says CFA = SP+16",
    """GNU ld on x86-64 (measured: 2.44 and 2.47.50; versions between 2.40 and 2.44 not
    checked) generates an SFrame FDE for .plt.got whenever the output has one (e.g.
    __cxa_finalize@plt in shared libraries: `jmp *GOT(%rip)`, 8 bytes) whose only FRE says
    CFA = SP+16, like a lazy .plt entry after its push. At a .plt.got entry the call has just
    pushed the RA, so the CFA is SP+8: ld's own .eh_frame for the same range says rsp+8 and a
    debugger agrees. An unwinder trusting SFrame reads the caller's RA one slot too high and
    reports a wrong caller for every sample taken in .plt.got. ld 2.40 emits no FDE for
    .plt.got. Confirm: `readelf --sframe FILE` against `readelf --debug-dump=frames-interp
    FILE` at the .plt.got address.""",
    "A linker bug: nothing to fix in the package. Track the binutils fix; relinking with a "
    "fixed ld corrects it.")
GAS_CFA_REGISTER = rule(
    "defect-gas-cfa-register", "defect", "warning",
    "gas 2.40 wrote SP/FP rows for a CFA in another register",
    """gas 2.40 (SFrame v1) keeps emitting SP- or FP-based rows after .cfi_def_cfa_register
    moves the CFA into another register (e.g. %rbx), silently, with the offset of the new
    rule; later gas skips such an FDE (v2) or writes a flex FDE (v3). The rows are wrong for
    every PC after the directive, so unwinding from there fails or goes astray. Confirm: the
    .eh_frame row at that PC has a CFA based on a register other than SP/FP.""",
    "Rebuild with binutils 2.41 or later.")
GAS_OUTERMOST = rule(
    "defect-outermost-not-marked", "defect", "warning",
    "assembler ignored .cfi_undefined of the return address",
    """.eh_frame marks the outermost frame (e.g. _start: .cfi_undefined %rip) but the SFrame
    FRE gives an RA rule anyway. gas before 2.45 (SFrame v1/v2, x86-64 and aarch64) and LLVM
    MC 22 (v2) do not translate .cfi_undefined RA into the outermost-frame FRE (an FRE without
    data words), so an SFrame unwinder walks one frame past the entry point into whatever the
    stack holds, and needs its own stopping heuristic.""",
    "Rebuild with binutils 2.45 or later (SFrame v3 marks the outermost frame).")
GAS_SKIPPED = rule(
    "defect-gas-skipped-fde", "defect", "info", "assembler left a function out of SFrame",
    """gas (and LLVM MC, "skipping SFrame FDE") writes no SFrame FDE, with at most an
    assembler warning, for a function whose CFI SFrame cannot express: DRAP and other stack
    realignment (CFA from a DWARF expression), a CFA in a register other than SP/FP
    (v1/v2), .cfi_escape with unknown effects, an RA not at the fixed CFA offset. The
    function is a silent coverage hole for SFrame-only unwinders; the message names it and
    the CFI that caused it. This is coverage information, so it is info rather than a
    warning.""",
    "Nothing to do in the package; SFrame v3 (binutils 2.46+) covers more of these with flex "
    "FDEs.")
RAW_COPY = rule(
    "defect-ld-raw-copy", "defect", "warning",
    "SFrame input of another version copied raw by ld",
    """ld merges only the SFrame version it knows; an input section of another version (ld
    2.40 given v2 objects) is copied through as raw bytes instead of being merged. The
    copy keeps the object's flags (not SORTED, not PCREL) but its start fields were relocated
    PC-relative, so every function start is off by the distance to its field: starts land
    outside .text or between functions. Detected when reading the starts as field-relative
    puts them on function starts while the flags' reading does not. Unwinders get wrong
    rows or none at all.""",
    "Link with an ld that supports the objects' SFrame version (or assemble with the linker's "
    "version).")
CONCATENATED = rule(
    "defect-concatenated-sections", "defect", "warning",
    "several SFrame sections concatenated into one",
    """lld (llvm/llvm-project#156667), mold (rui314/mold#1511) and zig do not merge SFrame
    input sections; they concatenate them. Readers see only the first section's header and
    FDEs: every other object's functions are silently uncovered, and the first section's
    flags (often not SORTED) describe only itself. The section is recognised by a second
    SFrame header right after the first section's data (plus alignment padding).""",
    "Link with GNU ld 2.40+ (which merges SFrame), or drop --gsframe for this link.")
DISCARDED = rule(
    "defect-ld-discarded-sframe", "defect", "error", "linker left an empty .sframe",
    """A zero-size .sframe in a linked file: the linker discarded every SFrame input (ld 2.46+
    given v1/v2 objects: "unexpected SFrame section type; section ignored"; ld with inputs of
    mixed SFrame versions: "input SFrame sections with different format versions prevent
    .sframe generation"). The file has no SFrame data at runtime although it was built for
    it, so this stays an error for gates.""",
    "Rebuild every object with the same SFrame version as the linker.")
STUBS_ONLY = rule(
    "defect-ld-stubs-only", "defect", "warning",
    "SFrame covers only the linker's PLT stubs",
    """Every FDE of a linked file's SFrame section lies in the linker-made .plt/.plt.got/
    .plt.sec stubs while the file has other code. GNU ld writes the stubs' FDEs itself; the
    functions' FDEs come from the objects. This is what ld 2.40 leaves when given SFrame v2/v3
    objects ("error in X.o(.sframe); no .sframe will be created", measured: v3 objects
    linked into a .so by ld 2.40 give a v1 section with the two PLT FDEs), and what a link of
    objects built without --gsframe gives when one input (e.g. a crt object) carries an
    empty .sframe. Either way SFrame-only unwinders see no function of the file; the
    cross-check lists the functions as semantic-no-sframe-fde.""",
    "Build every object with --gsframe and link with the ld of the same binutils (libtool "
    "drops -B from link lines: put the toolchain first in PATH instead).")
# Checked by rules/fre.py's check_fres with the other FRE start rules.
FRE_START_AT_SIZE = rule(
    "defect-fre-start-at-size", "defect", "warning",
    "FRE starts exactly at the end of its function",
    """gas emits an FRE whose start equals the function size when a CFI directive follows the
    last instruction (binutils PR libsframe/33131). The row covers no byte of the function, so
    it is harmless to unwinders, but libsframe up to 2.45 asserted fre_start < func_size and
    aborted on such input (now <=): ld 2.40 and 2.44 abort linking such an object
    ("sframe_decoder_get_fre: Assertion `fre->fre_start_addr < fdep->sfde_func_size'
    failed", libsframe/sframe.c). The kernel accepts it (it rejects only ip_off > func_size).""",
    "Nothing to do; the row is unused (a gas fix drops such rows).")
# What a raw-copied section's wrong starts make the cross-check say.
_SEMANTIC = ("semantic-cfa-mismatch", "semantic-ra-mismatch", "semantic-fp-mismatch",
             "semantic-no-eh-frame-fde", "semantic-no-sframe-fde")


# -- mismatch classifiers ---------------------------------------------------------------

def _plt_got(m: semantic.Mismatch, f: semantic.Facts) -> tuple[Rule, str] | None:
    sp = f.abi.sp
    if (m.kind == "CFA" and f.section_of(m.func) == ".plt.got"
            and m.sframe == RegRule(sp, 16, False) and m.eh == RegRule(sp, 8, False)):
        return PLT_GOT_CFA, "ld's .plt.got FDE says CFA = SP+16 where the CFA is SP+8"
    return None


def _cfa_register(m: semantic.Mismatch, f: semantic.Facts) -> tuple[Rule, str] | None:
    abi = f.abi
    if (m.kind == "CFA" and f.header.version == constants.VERSION_1
            and isinstance(m.eh, RegRule) and m.eh.reg not in (abi.sp, abi.fp)
            and isinstance(m.sframe, RegRule) and m.sframe.reg in (abi.sp, abi.fp)):
        return GAS_CFA_REGISTER, (f"gas 2.40 kept SP/FP rows after the CFA moved to "
                                  f"{semantic.reg_name(abi, m.eh.reg)}")
    return None


def _outermost(m: semantic.Mismatch, f: semantic.Facts) -> tuple[Rule, str] | None:
    if m.kind == "RA" and m.eh is UNDEFINED and f.header.version <= constants.VERSION_2 and (
            m.sframe is None or isinstance(m.sframe, RegRule)):
        return GAS_OUTERMOST, "the outermost frame is not marked in SFrame"
    return None


def _skipped(eh: EhFde, abi: Abi) -> tuple[Rule, str] | None:
    reason = semantic.skip_reason(eh, abi)
    return (GAS_SKIPPED, reason) if reason else None


semantic.CLASSIFIERS.extend((_plt_got, _cfa_register, _outermost))
semantic.COVERAGE_CLASSIFIERS.append(_skipped)


# -- section-level defects ------------------------------------------------------------------

def _header_bytes(data: bytes, off: int) -> bytes:
    """Just what decode_header reads (fixed header + at most 255 auxiliary bytes): slicing
    the whole tail for each of up to 4096 parts would copy the section thousands of times."""
    return data[off:off + constants.HEADER_SIZE + 0xFF]


def concatenated_parts(data: bytes, limit: int = 4096) -> list[int]:
    """Offsets of the SFrame sections laid end to end in `data` (one entry: not concatenated).

    A next part starts at the first nonzero byte after the previous part's data, if that
    is no further than 8 bytes of alignment padding and a valid header starts there.
    """
    parts, off = [0], 0
    while len(parts) < limit:
        try:
            h = decode_header(_header_bytes(data, off))
        except DecodeError:
            break
        end = off + h.data_end
        if end <= off or end >= len(data):
            break
        nxt = end
        while nxt < len(data) and nxt - end < 8 and data[nxt] == 0:
            nxt += 1
        if data[nxt:nxt + 2] not in (constants.MAGIC_LE, constants.MAGIC_BE):
            break
        try:
            decode_header(_header_bytes(data, nxt))
        except DecodeError:
            break
        parts.append(nxt)
        off = nxt
    return parts


def check_concatenated(ctx: SectionContext) -> bool:
    """Report a concatenated section (instead of layout-trailing-bytes)."""
    parts = concatenated_parts(ctx.data)
    if len(parts) < 2:
        return False
    ctx.claim(CONCATENATED, ("layout-trailing-bytes",))
    shown = ", ".join(f"{p:#x}" for p in parts[:8]) + (", ..." if len(parts) > 8 else "")
    ctx.emit(CONCATENATED, f"{len(parts)} SFrame sections laid end to end (headers at "
             f"{shown}); readers see only the first, covering "
             f"{_fdes_at(ctx.data, 0)} of {sum(_fdes_at(ctx.data, p) for p in parts)} FDEs",
             offset=parts[1])
    return True


def _fdes_at(data: bytes, off: int) -> int:
    try:
        return decode_header(_header_bytes(data, off)).num_fdes
    except DecodeError:
        return 0


def check_raw_copy(ctx: SectionContext, h: Header, info: ElfSFrameInfo) -> bool:
    """A linked file whose non-PCREL starts only make sense as field-relative ones."""
    if h.pcrel or ctx.relocatable or info.e_type == "ET_REL" or not h.num_fdes:
        return False
    view = info.cfi
    starts = address_set(view.symbols) if view else set()
    if not starts:
        return False
    cols = _start_fields(ctx.data, min(h.num_fdes, 4096))
    if cols is None:
        return False
    n = cols.n
    as_stored = sum(map(starts.__contains__, cols.pcs(h, ctx.vma, field_relative=False)))
    as_field = sum(map(starts.__contains__, cols.pcs(h, ctx.vma, field_relative=True)))
    if as_field < max(1, n // 2) or as_field <= as_stored:
        return False
    ctx.claim(RAW_COPY, _SEMANTIC)
    ctx.emit(RAW_COPY, f"v{h.version} section without SORTED/PCREL whose starts hit function "
             f"symbols only when read as field-relative ({as_field} of {n} FDEs, "
             f"{as_stored} as stored): an input section copied raw by the linker", offset=0)
    return True


def _start_fields(data: bytes, m: int) -> Columns | None:
    """The records of FDEs 0..m-1 read column-wise, or None where Decoder.fde(i,
    with_fres=False) would raise for one of them (header, record cut short, FRE offset or
    v3 attribute record outside the FRE sub-section): its checks, for all m at once."""
    try:
        dec = Decoder(data)
    except DecodeError:
        return None
    h = dec.header
    if h.fdes_start + m * h.fde_size > len(dec.data):
        return None
    cols = Columns(dec.data, h, 0, m)
    last = max(cols.fre_offs)
    if h.version == constants.VERSION_3:
        if last + constants.V3_ATTR_SIZE > min(h.fre_len, dec.fre_limit - h.fres_start):
            return None
    elif last > h.fre_len:
        return None
    return cols


def check_discarded(ctx: SectionContext, linked: bool) -> bool:
    if not linked or ctx.data:
        return False
    ctx.emit(DISCARDED, f"{ctx.name} has size 0 in a linked file: the linker discarded the "
             "SFrame inputs")
    return ctx.enabled(DISCARDED)


def check_section_defects(ctx: SectionContext, h: Header | None,
                          info: ElfSFrameInfo | None = None) -> None:
    """The section-level defects (the mismatch ones run inside the .eh_frame cross-check)."""
    if not ctx.data:
        return
    check_concatenated(ctx)
    if h is not None and info is not None:
        check_raw_copy(ctx, h, info)


def check_stubs_only(ctx: SectionContext, info: ElfSFrameInfo) -> bool:
    """A linked file whose FDEs all start in .plt* sections while it has other code."""
    if info.e_type not in ("ET_EXEC", "ET_DYN") or not ctx.ranges or not ctx.data:
        return False
    stubs = [t for t in info.text_ranges if t.name.startswith(".plt")]
    code = [t for t in info.text_ranges if not t.name.startswith(".plt")]
    if not stubs or not code:
        return False  # no section names (sstrip), or nothing but stubs
    if not all(any(t.start <= pc < t.end for t in stubs) for pc, _size, _i in ctx.ranges):
        return False
    size = sum(t.end - t.start for t in code)
    names = ", ".join(sorted({t.name for t in code}))
    stub_names = ", ".join(sorted({t.name for t in stubs}))
    n = len(ctx.ranges)
    fdes = "the only FDE is" if n == 1 else f"all {n} FDEs are"
    ctx.emit(STUBS_ONLY, f"{fdes} for {stub_names}; "
             f"{size:#x} bytes of code ({names}) have none")
    return True
