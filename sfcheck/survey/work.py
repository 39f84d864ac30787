"""Survey one package: every ELF member checked under the strict profile and asked, for
each consumer profile, whether that reader takes it. Runs in a worker process or on a
Dask worker: the input and the output are plain data (picklable, no open handles).

The strict run is the full check. A consumer profile differs from strict only by its
severity overrides and its consumer rules (sfcheck.profiles), so each profile's verdict
is the strict findings under its overrides plus a run of only its consumer rules
(checker.check_elf_consumers: the strict run's load and structure walk serve every profile;
tests/test_survey_engine.py holds this equal to full check_elf runs under each profile).
Objects (.o) get full runs: a runtime profile judges them by other rules
(sfcheck/rules/linkable.py).
"""

from __future__ import annotations

import hashlib
import mmap
import os
import time
from collections import Counter
from typing import Any

from ..checker import Options, SectionStats, Walked, check_elf, check_elf_consumers
from ..effects import GRAVITY, TAKES, verdict
from ..fileio import InputFileError, open_regular
from ..inputs.limits import ArchiveError, Limits
from ..inputs.sniff import HEAD_SIZE, classify
from ..inputs.spill import SpillDir
from ..profiles import LISTED, PROFILES, Profile, flag_names
from ..result import FileResult, Finding, Severity, Skipped
from ..rules.registry import RULES
from ..walk.section import no_gc
from .elffacts import elf_facts

UNREADABLE = "input-unreadable"  # the rule a package or member that cannot be read counts as
CONSUMERS = tuple(p.name for p in LISTED if p.name != "strict")  # aliases once
_CHUNK = 1 << 20


def ruleset_digest(profiles: tuple[str, ...] = CONSUMERS, limits: Limits | None = None) -> str:
    """What a stored result depends on besides the package bytes and sfcheck's version:
    every rule's ID, group and severity and every profile's overrides and consumer rules
    (a changed table rechecks everything, even without a version bump), and which
    consumer profiles a survey asks about and the archive limits (a package refused as
    too big must be checked again under larger ones)."""
    lim = limits or Limits()
    h = hashlib.sha256((f"asked:{','.join(profiles)}\nlimits:{lim.max_bytes},"
                        f"{lim.max_members},{lim.max_depth}\n").encode())
    for rid in sorted(RULES):
        r = RULES[rid]
        h.update(f"{rid}|{r.group}|{r.severity}\n".encode())
    for name, p in PROFILES.items():
        h.update(f"{name}|{sorted(p.consumer)}|".encode())
        h.update(repr(sorted((k, str(o.severity)) for k, o in p.overrides.items())).encode())
    return h.hexdigest()[:16]


def file_digest(path: str) -> str:
    """SHA-256 of a regular file (opened without following a swap to a FIFO)."""
    fd, _ = open_regular(path)
    h = hashlib.sha256()
    with open(fd, "rb") as f:
        while chunk := f.read(_CHUNK):
            h.update(chunk)
    return h.hexdigest()


def survey_package(path: str, expected_digest: str | None = None,
                   limits: Limits | None = None,
                   profiles: tuple[str, ...] = CONSUMERS) -> dict[str, Any]:
    """The survey record of one package file (a .deb, .rpm, archive or a bare ELF file):
    {"digest", "size", "error", "seconds", "files": [...]} (see file_record)."""
    start = time.monotonic()
    limits = limits or Limits()
    out: dict[str, Any] = {"digest": expected_digest, "size": 0, "error": None, "files": []}
    try:
        out["digest"] = digest = file_digest(path)
        out["size"] = os.path.getsize(path)
    except (InputFileError, OSError) as exc:
        out["error"] = getattr(exc, "message", None) or f"cannot read: {exc}"
        if out["digest"] is None:  # a key no file has: stored, never found by a rerun
            out["digest"] = "unreadable:" + hashlib.sha256(path.encode()).hexdigest()
        return _done(out, start)
    if expected_digest is not None and digest != expected_digest:
        out["error"] = (f"SHA256 {digest[:16]}... does not match the index's "
                        f"{expected_digest[:16]}...: not checked")
        return _done(out, start)
    with open(path, "rb") as f:
        head = f.read(HEAD_SIZE)
    kind = classify(head, path)
    if kind == "elf":
        with open(path, "rb") as f:
            image = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)
        try:
            out["files"].append(file_record(os.path.basename(path), image, profiles))
        finally:
            image.close()
        return _done(out, start)
    if kind not in ("deb", "rpm", "ar", "tar"):
        return _done(out, start)  # not a package sfcheck reads: no ELF files
    from ..inputs.expand import archive_members

    spill = SpillDir()
    try:
        for m in archive_members(path, kind, limits, Skipped(), spill):
            if m.error is not None:
                out["files"].append(_unreadable(m.member, m.error))
            elif m.data is not None:
                out["files"].append(file_record(m.member, m.data, profiles))
            else:
                assert m.spill is not None
                with open(m.spill, "rb") as f:
                    image = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)
                try:
                    out["files"].append(file_record(m.member, image, profiles))
                finally:
                    image.close()
                    spill.remove(m.spill)
    except ArchiveError as exc:
        out["error"] = f"{kind} refused: {exc}"
    finally:
        spill.close()
    return _done(out, start)


def _done(out: dict[str, Any], start: float) -> dict[str, Any]:
    out["seconds"] = round(time.monotonic() - start, 6)
    return out


def _unreadable(member: str, error: str) -> dict[str, Any]:
    rec = _blank(member)
    rec["error"] = error
    rec["findings"] = [[UNREADABLE, "error", 1]]
    return rec


def _blank(member: str) -> dict[str, Any]:
    return {"path": member, "sframe": False, "version": None, "flags": None, "fdes": 0,
            "fres": 0, "text_bytes": 0, "text_bytes_covered": 0, "sframe_bytes": 0,
            "eh_frame_bytes": 0, "producer": "unknown", "error": None, "findings": [],
            "refused_by": []}


def _counts(findings: list[Finding]) -> list[list[Any]]:
    by_kind = Counter((f.rule, f.severity) for f in findings)
    c: Counter[tuple[str, str]] = Counter()
    for (r, s), n in by_kind.items():  # str() once per kind, not per finding
        c[r, str(s)] += n
    return [[r, s, n] for (r, s), n in sorted(c.items())]


def file_record(member: str, image: bytes | mmap.mmap,
                profiles: tuple[str, ...] = CONSUMERS) -> dict[str, Any]:
    """One ELF image's record: SFrame figures, producer, strict findings per (rule,
    severity) and the consumer profiles that refuse it."""
    # The checks allocate by the thousand and keep few objects: the collections those
    # allocations trigger found nothing to free but took ~5 % of a survey's CPU. The
    # cycles one file leaves (its loaded headers, a few dozen objects) wait for the next
    # collection after it.
    with no_gc():
        return _file_record(member, image, profiles)


def _file_record(member: str, image: bytes | mmap.mmap,
                 profiles: tuple[str, ...]) -> dict[str, Any]:
    rec = _blank(member)
    facts = elf_facts(image if isinstance(image, bytes) else memoryview(image))
    rec["eh_frame_bytes"], rec["producer"] = facts.eh_frame_bytes, facts.producer
    stats: list[SectionStats] = []
    walked: list[Walked] = []
    res = check_elf(image, path=member, stats=stats, walked=walked)
    if res.error is not None:
        rec["error"] = res.error
        rec["findings"] = [[UNREADABLE, "error", 1]]
        return rec
    rec["findings"] = _counts(res.findings)
    live = [s for s in res.sections if not s.nobits]
    rec["sframe"] = bool(live)
    rec["sframe_bytes"] = sum(s.size for s in live)
    if live:
        first = live[0]
        rec["version"] = first.version
        rec["fdes"] = sum(s.num_fdes or 0 for s in live)
        rec["fres"] = sum(s.num_fres or 0 for s in live)
        flags = next((s.flags for s in stats if s.flags is not None), None)
        rec["flags"] = None if flags is None else flag_names(flags)
    if stats:
        # Sections describe the same text; the best-covering one counts.
        best = min(stats, key=lambda s: s.missing)
        rec["text_bytes"] = best.text_bytes
        rec["text_bytes_covered"] = best.text_bytes - best.missing
    else:
        rec["text_bytes"] = facts.text_bytes
    if live:
        rec["refused_by"] = refusing_profiles(image, member, res, profiles,
                                              walked[0] if walked else None)
    return rec


def _refuses(profile: Profile, rule_id: str, strict_severity: Severity) -> bool:
    """Whether a strict finding of that rule and severity, under `profile`, is an error the
    reader acts on (the effect with_effects would give it is one of effects.GRAVITY)."""
    rule = RULES.get(rule_id)
    if rule is None:
        return False
    severity = profile.severity(rule_id, strict_severity)
    return severity == Severity.ERROR and profile.effect(
        rule_id, rule.group, severity) in GRAVITY


def finding_kinds(findings: list[Finding]) -> list[tuple[str, Severity]]:
    """The distinct (rule, severity) pairs of `findings`, in order: all _refuses reads of a
    finding, so each pair is asked once per profile, not once per finding."""
    return list(dict.fromkeys((f.rule, f.severity) for f in findings))


def refusing_profiles(image: bytes | mmap.mmap, member: str, strict: FileResult,
                      profiles: tuple[str, ...] = CONSUMERS,
                      walked: Walked | None = None) -> list[str]:
    """The consumer profiles (of `profiles`) whose reader would not take `image`: the
    verdict of a full check under that profile (sfcheck.effects) is not "takes".
    `walked`: the strict run's load and walk, which the consumer runs then reuse."""
    refused = set()
    consumers = []  # profiles the strict findings do not decide: their consumer rules do
    relocatable = image[16:18] in (b"\x01\x00", b"\x00\x01")  # e_type ET_REL
    kinds = finding_kinds(strict.findings)
    for name in profiles:
        p = PROFILES[name]
        if relocatable:  # objects: other rules judge them (linkable.py): a full run
            res = check_elf(image, path=member, options=Options(profile=name))
            if verdict(res)[0] != TAKES:
                refused.add(name)
        elif any(_refuses(p, rule_id, severity) for rule_id, severity in kinds):
            refused.add(name)
        elif p.consumer:
            consumers.append(p)
    if consumers:  # one load and one structure walk for all of them (the strict run's)
        for p, res in zip(consumers, check_elf_consumers(image, consumers, member, walked),
                          strict=True):
            if verdict(res)[0] != TAKES:
                refused.add(p.name)
    return [name for name in profiles if name in refused]

