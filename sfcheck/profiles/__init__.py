"""Consumer profiles: how one SFrame reader (kernel, glibc, libsframe, LLVM) reacts to a section.

`sfcheck --profile NAME` answers "will this reader take it?". Under a consumer profile every
finding also carries what the reader does with it (sfcheck/effects.py: refuses, skips,
crashes, misreads, nothing; `effects` per rule and `group_effects` per rule group), and what
is nothing to the reader is shown but not counted. Severities:
  error   = the reader rejects the section or the lookup, crashes, divides by zero, asserts,
            or silently mis-unwinds because of it;
  warning = strict sfcheck finds it wrong, but this reader accepts it without harm to itself;
  info    stays info.
`strict` (the default) keeps every rule's own severity and runs no consumer rule.

The records are in model.py, each reader family's table in its own module (kernel.py,
glibc.py, libsframe.py, llvm.py; common.py what they share); this module is the registry
(`get`, LISTED, PROFILES) and the text `sfcheck profiles` and `sfcheck explain` print.
"""

from __future__ import annotations

from ..effects import EFFECT_TEXT
from ..result import Severity
from .common import NO_OBJECTS
from .glibc import GLIBC_PROFILE
from .kernel import KERNEL_PROFILE, RFC2023_PROFILE
from .libsframe import LIBSFRAME_240_PROFILE, LIBSFRAME_PROFILE
from .llvm import LLVM_PROFILE
from .model import Fact, Override, Profile, flag_names

__all__ = ["GLIBC_PROFILE", "KERNEL_PROFILE", "LIBSFRAME_240_PROFILE", "LIBSFRAME_PROFILE",
           "LISTED", "LLVM_PROFILE", "NO_OBJECTS", "PROFILES", "PROFILE_NAMES",
           "RFC2023_PROFILE", "STRICT", "Fact", "Override", "Profile", "describe",
           "empty_section_message", "explain", "flag_names", "get", "reads_segment"]

STRICT = Profile(
    name="strict", title="every rule at its own severity (the default)", reader="sfcheck",
    notes=(Fact("No consumer rule runs; nothing is overridden.", "sfcheck"),))


# What each reader prints for a zero-size .sframe (run on one built here): every reader
# refuses it, so header-too-short names them.
EMPTY_SECTION_READERS = (
    "llvm-readobj 22/23: 'invalid sframe section: unexpected end of data at offset 0x0'",
    "objdump/readelf 2.47: 'SFrame decode failure: Corrupt SFrame.'",
    "the kernel and glibc: no header to read",
)
# Profiles whose reader finds .sframe through the section table only and never reads
# PT_GNU_SFRAME: findings on a segment with no section header are not errors under them.
SECTION_TABLE_ONLY = frozenset({LLVM_PROFILE.name, LIBSFRAME_PROFILE.name,
                                LIBSFRAME_240_PROFILE.name})


def empty_section_message(p: Profile) -> str:
    """header-too-short's message for a zero-size .sframe in a linked file."""
    if p.name == STRICT.name:
        return "0 bytes: every reader refuses it (" + "; ".join(EMPTY_SECTION_READERS) + ")"
    return f"0 bytes: {p.reader} refuses it (no SFrame header to read)"


def reads_segment(p: Profile) -> bool:
    return p.name not in SECTION_TABLE_ONLY


# Each profile once, in the order `sfcheck profiles` lists them.
LISTED: tuple[Profile, ...] = (
    STRICT, KERNEL_PROFILE, RFC2023_PROFILE, GLIBC_PROFILE, LIBSFRAME_PROFILE,
    LIBSFRAME_240_PROFILE, LLVM_PROFILE)
# Every name --profile takes: a profile's own name, then its aliases (`kernel`: the latest
# kernel posting), each mapped to the one Profile object.
PROFILES: dict[str, Profile] = {name: p for p in LISTED for name in (p.name, *p.aliases)}
PROFILE_NAMES: tuple[str, ...] = tuple(PROFILES)


def get(name: str) -> Profile:
    try:
        return PROFILES[name]
    except KeyError:
        raise ValueError(f"unknown profile: {name} (one of {', '.join(PROFILE_NAMES)})") from None


def explain(rule_id: str, group: str, severity: Severity) -> list[str]:
    """Per profile, what it says about a rule (`sfcheck explain RULE`): the severity it
    reports the rule at, what its reader does (sfcheck.effects), and why, with the source.
    A consumer rule is left out of the profiles that do not run it."""
    consumer_rule = any(rule_id in p.consumer for p in LISTED)
    lines = []
    for p in LISTED:
        if p is STRICT or (consumer_rule and rule_id not in p.consumer):
            continue
        why = ""
        sev: Severity | None = severity
        if rule_id in p.consumer:
            fact = p.consumer[rule_id]
            sev, why = Severity.ERROR, f" {fact.text} [{fact.source}]"
        elif rule_id in p.overrides:
            o = p.overrides[rule_id]
            sev, why = o.severity, f" {o.why} [{o.source}]"
        if sev is None:
            lines.append(f"--profile {p.name}: not reported.{why}")
            continue
        effect = p.effect(rule_id, group, sev)
        said = "" if effect is None else ", " + EFFECT_TEXT[effect]
        lines.append(f"--profile {p.name}: {sev}{said}.{why}")
    return lines


def describe(p: Profile) -> list[str]:
    """The profile's facts with their sources, as text lines (`sfcheck profiles`)."""
    lines = [f"{p.name}: {p.title}"]
    if p.name == STRICT.name:
        return lines + [f"  {n.text}" for n in p.notes]
    lines.append(f"  versions: {', '.join(f'v{v}' for v in sorted(p.versions))}")
    for v in sorted(p.required_flags):
        lines.append(f"  required flags (v{v}): {flag_names(p.required_flags[v])}")
    lines.append("  sources: " + "; ".join(p.sources))
    lines.append("  consumer rules (only under a profile; see `sfcheck rules` for severities):")
    for rid, fact in p.consumer.items():
        lines.append(f"    {rid}: {fact.text} [{fact.source}]")
    lines.append("  severity overrides:")
    for rid, o in p.overrides.items():
        sev = "not reported" if o.severity is None else str(o.severity)
        lines.append(f"    {rid} -> {sev}: {o.why} [{o.source}]")
    if p.aliases:
        lines.insert(1, f"  also named: {', '.join(p.aliases)}")
    lines.append("  what the reader does with an error finding, by rule group (sfcheck explain "
                 "RULE gives each rule):")
    lines.append("    " + "; ".join(f"{g}: {EFFECT_TEXT[e]}" for g, e in p.group_effects.items())
                 + "; a warning or info: nothing")
    named = [f"{rid}: {EFFECT_TEXT[e]}" for rid, e in p.effects.items() if e is not None]
    if named:
        lines.append("    by rule: " + "; ".join(named))
    if p.notes:
        lines.append("  notes:")
        lines.extend(f"    {n.text} [{n.source}]" for n in p.notes)
    return lines
