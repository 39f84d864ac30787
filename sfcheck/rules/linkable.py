"""Consumer profiles on relocatable objects: what a runtime reader will get once it is linked.

The kernel and glibc load linked files only (the profiles say so with the NO_OBJECTS fact),
so their consumer rules ("does this reader take this section?") do not apply to a `.o`, and
neither do their overrides of header and layout rules: the linker writes a new header and
layout when it merges the objects' sections. What a `.o` can still be asked is "will the
linker produce something this reader takes?":
  * the SFrame version: GNU ld merges inputs of its own version into an output of that
    version; an ld of another version copies the section raw or discards it (binutils 2.46
    bfd/elf-sframe.c, _bfd_elf_parse_sframe). So an object of a version the reader does not
    read never becomes SFrame it uses;
  * FDE and FRE contents: ld copies them as they are, so the profile's severities for
    FDE/FRE rules (e.g. a zero repetition block size the reader divides by) still hold.
Empty counts, flags, auxiliary headers, offsets and duplicate starts in a `.o` are normal
(ld merges, sorts and sets the flags). Profiles that read objects directly (libsframe's
dumper, llvm-readobj) keep judging the `.o` as it is. One place for every profile: a new
runtime profile only needs the NO_OBJECTS fact in its notes.
"""

from __future__ import annotations

from ..format.model import Header
from ..profiles import NO_OBJECTS, Profile
from ..result import Severity
from ..walk.context import SectionContext
from .registry import rule

OBJECT_VERSION = rule(
    "object-version-unsupported", "header", "warning",
    "object's SFrame version is not one the reader takes once linked",
    """Under a runtime reader's profile (kernel, glibc) a .o is judged by what the linker will
    make of it. GNU ld merges SFrame inputs of its own version into an output of the same
    version, and copies inputs of another version raw (wrong function starts) or discards
    them. An object whose version the reader does not read therefore never contributes
    SFrame data that reader uses. A warning: the object is not broken, and the linked files
    of the package carry header-version-unsupported if they inherit the version.""",
    "Assemble with the toolchain that emits the version the reader takes.")

# Strict rule groups whose subject the linker rewrites when it merges objects.
_REWRITTEN = ("header-", "layout-", "elf-")


def runtime_only(profile: Profile) -> bool:
    """True for readers that load linked files only (kernel, glibc)."""
    return NO_OBJECTS in profile.notes


def object_severity(profile: Profile, rule_id: str, severity: Severity) -> Severity | None:
    """A finding's severity in a .o under a runtime-only profile."""
    if rule_id.startswith(_REWRITTEN):
        return severity  # the profile's override is about the linked file's header/layout
    return profile.severity(rule_id, severity)


def check_object(ctx: SectionContext, profile: Profile, h: Header) -> None:
    """The consumer question for a .o under a runtime-only profile."""
    if not profile.consumer or h.version in profile.versions:
        return
    takes = ", ".join(f"v{v}" for v in sorted(profile.versions))
    ctx.emit(OBJECT_VERSION, f"a file GNU ld links from this object has SFrame v{h.version} "
             f"(or none); {profile.reader} reads {takes}", offset=2)
