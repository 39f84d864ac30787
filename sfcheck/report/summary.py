"""Counts over a whole scan, shared by the text table, JSON and JUnit renderers."""

from __future__ import annotations

from collections import Counter

from ..record import Record
from ..result import Finding, Result, Severity
from ..rules import RULES


class RuleCount(Record):
    __slots__ = ("rule", "severity", "count", "files", "waived")

    def __init__(self, rule: str, severity: str, count: int = 0, files: int = 0,
                 waived: int = 0) -> None:
        self.rule = rule
        self.severity = severity  # the severity findings of this rule were reported at (highest)
        self.count = count  # findings, waived ones included
        self.files = files  # files (or archive members) with at least one finding of the rule
        self.waived = waived


class Summary(Record):
    __slots__ = ("files_checked", "archive_members", "archives", "with_sframe", "debug_only",
                 "without_sframe", "unreadable", "skipped_non_elf", "skipped_links",
                 "skipped_special", "versions",
                 "severities", "waived", "rules", "unused_waivers", "sframe_bytes",
                 "eh_frame_bytes")

    def __init__(self, files_checked: int = 0, with_sframe: int = 0, debug_only: int = 0,
                 without_sframe: int = 0, unreadable: int = 0, skipped_non_elf: int = 0,
                 skipped_links: int = 0, skipped_special: int = 0,
                 versions: dict[int, int] | None = None, severities: dict[str, int] | None = None,
                 waived: int = 0, rules: list[RuleCount] | None = None,
                 unused_waivers: int = 0, archive_members: int = 0, archives: int = 0,
                 sframe_bytes: int = 0, eh_frame_bytes: int = 0) -> None:
        self.files_checked = files_checked  # ELF images read (archive members included)
        self.archive_members = archive_members  # ... of which members of an archive
        self.archives = archives  # the archives those members came from
        self.with_sframe = with_sframe
        # separate debug files: .sframe headers without bytes (not counted above)
        self.debug_only = debug_only
        self.without_sframe = without_sframe
        self.unreadable = unreadable  # inputs or members that could not be read or were refused
        self.skipped_non_elf = skipped_non_elf
        self.skipped_links = skipped_links
        self.skipped_special = skipped_special
        self.versions = {} if versions is None else versions  # SFrame version -> files
        self.severities = {} if severities is None else severities  # not waived
        self.waived = waived
        self.rules = [] if rules is None else rules  # by count, then catalogue order (RULES)
        self.unused_waivers = unused_waivers
        # Over the files with SFrame data: their .sframe bytes, and the .eh_frame bytes of
        # those files (what a distro weighs when it turns SFrame on)
        self.sframe_bytes = sframe_bytes
        self.eh_frame_bytes = eh_frame_bytes

    def sframe_ratio(self) -> float | None:
        """.sframe bytes per .eh_frame byte (None: no .eh_frame to compare with)."""
        return round(self.sframe_bytes / self.eh_frame_bytes, 4) if self.eh_frame_bytes \
            else None


def _count(s: Summary, rc: RuleCount, severities: Counter[str], f: Finding) -> None:
    """One finding into its rule's row and the totals (waived ones apart)."""
    if Severity.parse(rc.severity) < f.severity:
        rc.severity = str(f.severity)
    rc.count += 1
    if f.waived is not None:
        rc.waived += 1
        s.waived += 1
    else:
        severities[str(f.severity)] += 1


def summarize(result: Result) -> Summary:
    s = Summary(skipped_non_elf=result.skipped.non_elf, skipped_links=result.skipped.links,
                skipped_special=result.skipped.special,
                unused_waivers=len(result.unused_waivers))
    versions: Counter[int] = Counter()
    severities: Counter[str] = Counter()
    rules: dict[str, RuleCount] = {}
    archives: set[str] = set()
    for res in result.files:
        if res.error:
            s.unreadable += 1
            continue
        s.files_checked += 1
        if res.package is not None:
            s.archive_members += 1
            archives.add(res.package)
        if res.sections and all(sec.nobits for sec in res.sections):
            s.debug_only += 1
        elif res.sections:
            s.with_sframe += 1
            s.sframe_bytes += sum(sec.size for sec in res.sections if not sec.nobits)
            s.eh_frame_bytes += res.eh_frame_size or 0
        else:
            s.without_sframe += 1
        versions.update({sec.version for sec in res.sections if sec.version})
        for rid in {f.rule for f in res.findings}:
            rules.setdefault(rid, RuleCount(rid, "info")).files += 1
        for f in res.findings:
            _count(s, rules[f.rule], severities, f)
    for f in result.findings:  # about the scan as a whole: counted, in no file
        _count(s, rules.setdefault(f.rule, RuleCount(f.rule, str(f.severity))), severities, f)
    s.archives = len(archives)
    s.versions = dict(sorted(versions.items()))
    s.severities = {str(sev): severities[str(sev)] for sev in reversed(Severity)}
    order = {rid: i for i, rid in enumerate(RULES)}
    s.rules = sorted(rules.values(), key=lambda r: (-r.count, order.get(r.rule, 1 << 30),
                                                    r.rule))
    return s


def producer(rule_id: str) -> str | None:
    """The toolchain a `defect-*` rule blames (`defect-ld-...` -> ld), None for other rules."""
    if not rule_id.startswith("defect-") or RULES.get(rule_id, None) is None:
        return None
    tool = rule_id.split("-")[1]
    return tool if tool in ("ld", "gas", "lld", "gold") else "toolchain"
