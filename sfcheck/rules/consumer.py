"""Consumer-acceptance rules: what one reader rejects although the format allows it.

These run only under a consumer profile (`--profile`, sfcheck/profiles.py); under `strict`
they are silent, because strict has its own rules for real defects. Each fires only when the
selected profile lists it, and its message names the reader.
"""

from __future__ import annotations

from ..elf import ElfSFrameInfo
from ..format.model import Header
from ..profiles import Profile, flag_names
from .context import SectionContext
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
