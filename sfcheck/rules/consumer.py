"""Consumer-acceptance rules: what one reader rejects although the format allows it.

These run only under a consumer profile (`--profile`, sfcheck/profiles.py); under `strict`
they are silent, because strict has its own rules for real defects. Each fires only when the
selected profile lists it, and its message names the reader.
"""

from __future__ import annotations

from ..elf.model import ElfSFrameInfo
from ..format.model import Header
from ..profiles import Profile, flag_names
from ..walk.context import SectionContext
from ..wording import plural
from .registry import rule

_ONLY = """Reported only under a consumer profile (--profile); `sfcheck profiles` and `sfcheck
explain` list which readers reject it and the source each fact comes from."""

VERSION = rule(
    "header-version-unsupported", "header", "error", "SFrame version not read by the reader",
    f"""Each reader decodes a fixed set of versions: the kernel V3 series only v3, glibc 2.42
    and LLVM 22 only v2, libsframe 2.46 v2 and v3. Any other version is rejected before the
    FDEs are read. {_ONLY}""",
    "Rebuild with the toolchain that emits the version the reader takes.")
FLAGS_REQUIRED = rule(
    "header-flags-required", "header", "error", "header lacks a flag the reader needs",
    f"""The kernel needs FDE_SORTED and FDE_FUNC_START_PCREL; glibc 2.42 and libsframe's
    sframe_find_fre binary-search only sorted tables; libsframe 2.46 computes PC-relative
    starts whatever the flags. Not applied to .o files, which only linkers read. {_ONLY}""",
    "Link with GNU ld (it sorts and sets FDE_SORTED); use binutils 2.45+ for PC-relative "
    "starts.")
AUXHDR = rule(
    "header-auxhdr-rejected", "header", "error", "reader rejects an auxiliary header",
    f"""sfh_auxhdr_len must be 0 for the kernel, which refuses to register the section
    otherwise. {_ONLY}""",
    "Write sfh_auxhdr_len = 0.")
EMPTY = rule(
    "header-empty-counts", "header", "error", "reader rejects a section without FDEs or FREs",
    f"""The kernel refuses to register a section whose num_fdes or num_fres is 0.
    {_ONLY}""",
    "Drop the empty section, or emit the FDEs it should hold.")
OFFSETS = rule(
    "layout-offsets-ignored", "layout", "error", "reader assumes the canonical layout",
    f"""glibc 2.42 places the FDE array right after the header and the FREs right after the
    FDE array, ignoring sfh_fdeoff and sfh_freoff; LLVM 22 ignores sfh_freoff the same way.
    Any other layout is valid SFrame but makes these readers read the wrong bytes. {_ONLY}""",
    "Write fdeoff = 0 and freoff = num_fdes * FDE size, as gas and ld do.")
STARTS = rule(
    "fde-start-duplicate", "fde", "error", "two FDEs start at the same address",
    f"""Sorted tables may hold equal starts for strict sfcheck, but the kernel's
    CONFIG_SFRAME_VALIDATION pass requires strictly increasing function starts and rejects
    the section. {_ONLY}""",
    "Keep one FDE per function start.")
TEXT = rule(
    "elf-text-segments", "elf", "error", "FDEs start in more than one executable segment",
    f"""The kernel registers a PT_GNU_SFRAME section once per executable PT_LOAD, with that
    segment as the text range, and rejects function starts outside it; with
    CONFIG_SFRAME_VALIDATION every registration then fails. {_ONLY}""",
    "Link the code with SFrame data into one executable segment.")

BYTE_ORDER = rule(
    "header-byte-order-elf", "header", "error", "section byte order differs from the ELF file's",
    f"""LLVM's SFrameParser decodes a section in its ELF file's byte order, so a section whose
    magic is in the other order is refused ('invalid magic number (0xe2de)'); libsframe and
    the runtime readers take either order or see only their own. {_ONLY}""",
    "Emit the section in the byte order of the file that holds it.")

# What libsframe's foreign-endian path (flip_sframe_fdes_with_fres) checks before swapping:
# every FDE, attribute record and FRE inside the buffer, valid FRE types and sizes, the FRE
# count and bytes used against the header, zero padding after the last FRE.
FOREIGN_WALK_RULES = frozenset((
    "layout-fde-array-bounds", "layout-fde-fres-bounds", "layout-fre-bounds", "layout-num-fres",
    "layout-fre-len", "layout-trailing-bytes", "layout-fre-overlap", "fde-fre-type",
    "fre-size-code", "fre-datawords-size", "header-auxhdr"))
FOREIGN = rule(
    "header-foreign-order-refused", "header", "error",
    "reader's byte-swapping walk refuses the section",
    f"""libsframe swaps a section of the other byte order than the host's only after a bounded
    walk of every FDE and FRE (flip_sframe_fdes_with_fres): anything out of bounds, an FRE
    count or length that disagrees with the header, or nonzero bytes after the FREs make
    sframe_decode fail ('Buffer does not contain SFrame data.'), where a native-endian section
    would be read as it is. The host is taken to have the ELF file's byte order. {_ONLY}""",
    "Fix the layout findings reported with it, or emit the section in the host's byte order.")


def check_consumer(ctx: SectionContext, profile: Profile, h: Header,
                   info: ElfSFrameInfo | None = None) -> None:
    """Run the consumer rules `profile` lists on a section whose header decoded."""
    want = profile.consumer
    if not want:
        return
    reader = profile.reader
    if VERSION.id in want and h.version not in profile.versions:
        takes = ", ".join(f"v{v}" for v in sorted(profile.versions))
        ctx.emit(VERSION, f"{reader} rejects version {h.version} (reads {takes})", offset=2)
        return  # nothing past the header is read
    if BYTE_ORDER.id in want and info is not None and h.big_endian == info.little_endian:
        ctx.emit(BYTE_ORDER, f"{reader} rejects a {'big' if h.big_endian else 'little'}-endian "
                 f"section in a {'little' if info.little_endian else 'big'}-endian file",
                 offset=0)
        return  # the magic is all it reads
    if FOREIGN.id in want and info is not None and h.big_endian == info.little_endian:
        bad = sorted({f.rule for f in ctx.findings if f.rule in FOREIGN_WALK_RULES})
        if bad:
            ctx.emit(FOREIGN, f"{reader} swaps a {'big' if h.big_endian else 'little'}-endian "
                     f"section only after a bounded walk, which refuses it ({', '.join(bad)})",
                     offset=0)
    need = profile.required_flags.get(h.version, 0)
    if FLAGS_REQUIRED.id in want and need & ~h.flags and not ctx.relocatable:
        ctx.emit(FLAGS_REQUIRED, f"{reader} needs {flag_names(need & ~h.flags)}; flags are "
                 f"{h.flags:#x} ({flag_names(h.flags)})", offset=3)
    if AUXHDR.id in want and profile.rejects_auxhdr and h.auxhdr:
        ctx.emit(AUXHDR, f"{reader} rejects sfh_auxhdr_len {len(h.auxhdr)}", offset=7)
    if EMPTY.id in want and profile.rejects_empty and not (h.num_fdes and h.num_fres):
        ctx.emit(EMPTY, f"{reader} rejects num_fdes {h.num_fdes}, num_fres {h.num_fres}",
                 offset=8)
    if OFFSETS.id in want:
        _check_offsets(ctx, profile, h)
    if STARTS.id in want and profile.increasing_starts and not ctx.relocatable:
        prev = None
        for pc, _size, i in ctx.ranges:
            if pc == prev:
                ctx.emit(STARTS, f"function start {pc:#x} equals the previous FDE's; "
                         f"{reader} with CONFIG_SFRAME_VALIDATION rejects the section",
                         fde=i, pc=pc)
            prev = pc
    if TEXT.id in want and profile.one_text_segment and info is not None:
        _check_text_segments(ctx, info, reader)
    if profile.model:
        check_reader_model(ctx, profile, info)


def _check_offsets(ctx: SectionContext, profile: Profile, h: Header) -> None:
    fdeoff = 0 if profile.ignores_fdeoff else h.fdeoff
    freoff = fdeoff + h.num_fdes * h.fde_size
    wrong = []
    if profile.ignores_fdeoff and h.fdeoff:
        wrong.append(f"FDEs at fdeoff {h.fdeoff:#x} (read from 0)")
    if profile.ignores_freoff and h.freoff != freoff:
        wrong.append(f"FREs at freoff {h.freoff:#x} (read from {freoff:#x})")
    if wrong:
        ctx.emit(OFFSETS, f"{profile.reader} assumes the canonical layout: " + ", ".join(wrong),
                 offset=0x14)


def _check_text_segments(ctx: SectionContext, info: ElfSFrameInfo, reader: str) -> None:
    if info.e_type not in ("ET_EXEC", "ET_DYN"):
        return
    spans = [(s.vaddr, s.vaddr + s.memsz, s.index) for s in info.load_segments if s.flags & 1]
    used: dict[int, int] = {}  # segment index -> first FDE starting in it
    for pc, _size, i in ctx.ranges:
        seg = next((idx for a, b, idx in spans if a <= pc < b), None)
        if seg is not None:
            used.setdefault(seg, i)
    if len(used) > 1:
        where = ", ".join(f"PT_LOAD[{seg}] (from FDE {i})" for seg, i in sorted(used.items()))
        ctx.emit(TEXT, f"function starts lie in {len(used)} executable segments: {where}; "
                 f"{reader} with CONFIG_SFRAME_VALIDATION rejects every registration")


# -- Findings computed by running a reader model (sfcheck/readers/) against the reference
# table (sfcheck/unwind/table.py): the profile's `model` names the model.

_MODEL = """Computed by running a model of the reader's code (sfcheck/readers/) and
sfcheck's reference lookup on the same PCs: function starts, row starts, last bytes, the
byte after each function and below the lowest one. Reported only under a profile with a
model (kernel-rfc-2023, kernel)."""

M_REFUSED = rule(
    "header-reader-refused", "header", "error", "reader refuses to register the section",
    f"""The modelled reader's registration checks fail, so it never unwinds with this
    section. The message gives the reader's reason. {_MODEL}""",
    "Emit what the reader registers (see `sfcheck profiles NAME`).")
M_WRONG = rule(
    "fde-reader-wrong-row", "fde", "error", "reader answers a lookup with the wrong row",
    f"""At this PC the reader returns other CFA/RA/FP rules than the section says (an
    unsorted table searched as sorted, a PCMASK test compiled out, offsets read unsigned,
    FREs out of order): it silently mis-unwinds. {_MODEL}""",
    "Write sorted FDEs, increasing FRE starts and 4-byte offsets where a narrower unsigned "
    "read would change the value; or use a fixed reader.")
M_UNINIT = rule(
    "fde-reader-uninit", "fde", "error", "reader's lookup reads an uninitialised variable",
    f"""The reader's answer at this PC depends on a local variable it never set (an FDE
    without FREs, a first FRE after the function start, an RA offset of 0): garbage on
    kernels that do not zero-initialise the stack, a failed lookup on those that do.
    {_MODEL}""",
    "Give every FDE a first FRE at offset 0 and an RA rule.")
M_PAST = rule(
    "layout-reader-past", "layout", "error", "reader reads outside the section",
    f"""The reader trusts a count or offset and reads bytes outside the section (it knows
    no section size). {_MODEL}""",
    "Keep every count and offset inside the section.")
M_FAILS = rule(
    "fde-reader-lookup-fails", "fde", "error", "reader fails a lookup the section answers",
    f"""The reader returns an error where the section has a row for the PC; for the V3
    series -EFAULT also removes the whole section from the process. {_MODEL}""",
    "See the reason in the message; `sfcheck profiles NAME` lists the reader's checks.")
M_FAILS_SPEC = rule(
    "fde-reader-lookup-fails-spec", "fde", "warning",
    "reader fails where the format marks an outermost or signal frame",
    f"""SFrame v3 gives an FDE without FREs a meaning (an outermost frame; with the signal
    bit, a signal frame). The reader fails the lookup instead and the unwinder falls back
    to frame pointers. {_MODEL}""",
    "Nothing to fix in the section; the reader does not implement this part of v3.")
M_DIV0 = rule(
    "fde-reader-div-zero", "fde", "error", "reader divides by zero",
    f"""A PCMASK FDE with rep_size 0: the reader computes the PC offset modulo rep_size
    without a check (in the kernel: a division-by-zero oops). {_MODEL}""",
    "Write the PLT entry size in rep_size.")
M_GAP = rule(
    "fde-reader-gap-row", "fde", "warning", "reader unwinds a PC that no function holds",
    f"""No FDE covers this PC (a gap between functions, past the last one, below the
    first), yet the reader answers with a row, reads an uninitialised pointer or reads
    outside the section. It matters only if code without an FDE runs there (alignment
    padding never does). {_MODEL}""",
    "Emit FDEs for all code (or accept it: padding never runs).")
M_WALK = rule(
    "fre-reader-walk-loops", "fre", "error", "reader's walker repeats a frame",
    f"""A row whose CFA does not move above the stack pointer: a walker with no
    CFA-direction check and no frame cap repeats the frame until its buffer is full.
    {_MODEL}""",
    "CFA offsets from SP are positive in every real ABI.")

M_WARN = rule(
    "fre-reader-warn", "fre", "error", "reader's walker hits a kernel warning",
    f"""A flex FRE whose RA or FP control word is non-zero without reg_p or deref_p gives
    the rule "CFA + offset" (not a load); the V3 walker (unwind_user_next_common) has no case
    for it and executes WARN_ON_ONCE: a kernel warning any process can trigger with its own
    .sframe (a panic on panic_on_warn systems). {_MODEL}""",
    "Set deref_p for a saved register (a CFA-relative slot), or reg_p for a register.")
M_STOPS = rule(
    "fre-reader-walk-stops", "fre", "warning", "reader's unwind guard ends the walk at a row",
    f"""The V3 walker accepts a row only if the new CFA is strictly above the SP (equal
    only in the topmost frame) and word-aligned, and reads registers other than SP/FP only
    in the topmost frame; a row that fails a guard ends the trace when it is met in a
    deeper frame. {_MODEL}""",
    "Expected for DRAP prologues (CFA in another register); otherwise check the CFA offset.")

MODEL_RULES = {"refused": M_REFUSED, "wrong-row": M_WRONG, "uninit": M_UNINIT,
               "past": M_PAST, "lookup-fails": M_FAILS, "lookup-fails-spec": M_FAILS_SPEC,
               "div0": M_DIV0, "gap-row": M_GAP, "walker": M_WALK, "walker-warn": M_WARN,
               "walk-stops": M_STOPS}


def _exec_spans(info: ElfSFrameInfo | None) -> list[tuple[int, int]]:
    if info is None or info.e_type not in ("ET_EXEC", "ET_DYN"):
        return []
    return sorted((s.vaddr, s.vaddr + s.memsz) for s in info.load_segments if s.flags & 1)


def check_reader_model(ctx: SectionContext, profile: Profile,
                       info: ElfSFrameInfo | None = None) -> None:
    """Run the profile's reader model against the reference table and report each
    (kind, FDE) once, with its first PC and how many more PCs behave the same."""
    if ctx.relocatable:
        return  # only linkers read a .o: no reader registers or searches it
    from ..readers import compare  # the unwinder table is not needed by other rules
    spans = _exec_spans(info)
    if profile.model == "rfc2023":
        # binfmt registers one range from the lowest to the highest PF_X address.
        text = (spans[0][0], max(e for _, e in spans)) if spans else None
        found = compare.run_rfc2023(ctx.data, ctx.vma, text)
    elif profile.model == "v3":
        found = compare.run_v3(ctx.data, ctx.vma, spans)
    else:
        return
    first: dict[tuple[str, int | None], tuple[compare.Disagreement, int]] = {}
    for d in found:
        key = (d.kind, d.fde)
        old = first.get(key)
        first[key] = (d, 1) if old is None else (old[0], old[1] + 1)
    for (kind, fde), (d, n) in first.items():
        r = MODEL_RULES[kind]
        if r.id not in profile.consumer:
            continue
        more = f" (and {plural(n - 1, 'more PC')} of this FDE)" if n > 1 else ""
        ctx.emit(r, d.message + more, fde=fde)
