"""What a check needs to report: the section's bytes and where findings go."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field

from ..result import Finding, Location, Severity
from .registry import Rule

MAX_PER_RULE = 50  # per section: a broken 100k-FDE table must not flood a gate
_UNDECIDED = object()


def keep_severity(rule: Rule, severity: Severity) -> Severity | None:
    return severity


@dataclass
class SectionContext:
    path: str
    name: str
    vma: int
    data: bytes
    enabled: Callable[[Rule], bool] = lambda rule: True
    # The consumer profile's say (sfcheck.profiles): a new severity, or None to drop it.
    severity_for: Callable[[Rule, Severity], Severity | None] = keep_severity
    findings: list[Finding] = field(default_factory=list)
    counts: Counter = field(default_factory=Counter)

    ranges: list[tuple[int, int, int]] = field(default_factory=list)  # (pc, size, fde)
    # In a .o every text section starts at 0, so function addresses from different
    # sections coincide: overlap and order checks do not apply.
    relocatable: bool = False
    # Generic rules a recognised known defect explains (rules/defect.py): not reported.
    claimed: set[str] = field(default_factory=set)
    # Set by the structure check (section.py): every FDE and its FRE block decoded, and the
    # blocks walked fit the FRE sub-section, so a later walk of the same bytes (the
    # .eh_frame cross-check's) cannot stop early and may skip the blocks it does not need.
    fres_walked: bool = False
    # Where each FDE's FRE block ends when the blocks are out of table order (section.py's
    # block_ends, kept for the cross-check's walk of the same bytes); None: table order.
    block_ends: list[int] | None = field(default=None, repr=False)
    # (rule ID, severity) -> what enabled() and severity_for() decided: both depend on
    # the options alone, and a damaged section emits the same rule many times.
    decided: dict[tuple[str, Severity], Severity | None] = field(default_factory=dict,
                                                                 repr=False)

    def claim(self, by: Rule, rule_ids: tuple[str, ...]) -> None:
        """`by` (a known-defect rule) explains these generic rules here: drop their findings."""
        if not self.enabled(by):
            return
        self.claimed.update(rule_ids)
        self.findings = [f for f in self.findings if f.rule not in self.claimed]
        for rule_id in rule_ids:
            self.counts.pop(rule_id, None)

    def emit(self, rule: Rule, message: str, **where: int | None) -> None:
        self.emit_as(rule, rule.severity, message, **where)

    def emit_as(self, rule: Rule, severity: Severity, message: str, **where: int | None) -> None:
        """Emit under `rule` with a severity the context decides (e.g. .o vs linked file).
        The decision is cached per (rule, severity): a damaged section emits thousands."""
        rid = rule.id
        key = (rid, severity)
        sev = self.decided.get(key, _UNDECIDED)
        if sev is _UNDECIDED:
            sev = self.decided[key] = self._decide(rule, severity)
        if sev is None or rid in self.claimed:
            return
        count = self.counts[rid] = self.counts.get(rid, 0) + 1
        if count <= MAX_PER_RULE:
            self.findings.append(Finding(rid, sev, message,
                                         Location(self.path, self.name, **where)))

    def _decide(self, rule: Rule, severity: Severity) -> Severity | None:
        """The severity a finding of `rule` is reported with here (None: not reported)."""
        return self.severity_for(rule, severity) if self.enabled(rule) else None

    def finish(self) -> None:
        """Say how many findings the per-rule cap held back."""
        for rule_id, count in self.counts.items():
            if count > MAX_PER_RULE:
                first = next(f for f in self.findings if f.rule == rule_id)
                self.findings.append(Finding(
                    rule_id, Severity(first.severity),
                    f"{count - MAX_PER_RULE} more finding(s) of this rule not shown",
                    Location(self.path, self.name)))
