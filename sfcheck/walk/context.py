"""What a check needs to report: the section's bytes and where findings go."""

from __future__ import annotations

from array import array
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Sequence
from operator import eq, itemgetter

from ..record import Record
from ..result import Finding, Location, Severity
from ..rules.registry import Rule
from ..wording import plural

MAX_PER_RULE = 50  # per section: a broken 100k-FDE table must not flood a gate
_UNDECIDED = object()


def keep_severity(rule: Rule, severity: Severity) -> Severity | None:
    return severity


def enable_all(rule: Rule) -> bool:
    return True


class Ranges(Sequence[tuple[int, int, int]]):
    """The function ranges (pc, size, fde) of the FDEs read, in table order, kept as
    columns: a tuple per FDE cost ~150 bytes (1M FDEs: 150 MB) from the structure check to
    the last consumer. Reads as a sequence of those tuples, made as they are read."""

    __slots__ = ("pcs", "sizes", "fdes")

    def __init__(self, items: Iterable[tuple[int, int, int]] = ()) -> None:
        # Starts at or past 2**63 (kernel addresses) or sizes past 2**32 (hand-made input)
        # turn a column into a list.
        self.pcs: array | list[int] = array("q")
        self.sizes: array | list[int] = array("I")
        # Range k's FDE; None while that is FDE k (every FDE so far has its range).
        self.fdes: array | None = None
        for pc, size, fde in items:
            self.add(pc, size, fde)

    def add(self, pc: int, size: int, fde: int) -> None:
        if self.fdes is None and fde != len(self.pcs):
            self.fdes = array("q", range(len(self.pcs)))
        try:
            self.pcs.append(pc)
        except OverflowError:
            self.pcs = [*self.pcs, pc]
        try:
            self.sizes.append(size)
        except OverflowError:
            self.sizes = [*self.sizes, size]
        if self.fdes is not None:
            self.fdes.append(fde)

    def extend(self, fde: int, pcs: Sequence[int], sizes: Sequence[int]) -> None:
        """The ranges of FDEs fde, fde + 1, ... (as many as `pcs`)."""
        if self.fdes is None and fde != len(self.pcs):
            self.fdes = array("q", range(len(self.pcs)))
        n = len(self.pcs)
        try:
            self.pcs.extend(pcs)
        except OverflowError:  # array.extend stops at the first value that does not fit
            self.pcs = [*self.pcs[:n], *pcs]
        try:
            self.sizes.extend(sizes)
        except OverflowError:
            self.sizes = [*self.sizes[:n], *sizes]
        if self.fdes is not None:
            self.fdes.extend(range(fde, fde + len(pcs)))

    def __len__(self) -> int:
        return len(self.pcs)

    def __iter__(self) -> Iterator[tuple[int, int, int]]:
        fdes = range(len(self.pcs)) if self.fdes is None else self.fdes
        return zip(self.pcs, self.sizes, fdes, strict=True)

    def __getitem__(self, k):  # type: ignore[override]
        if isinstance(k, slice):
            return list(self)[k]
        pc, size = self.pcs[k], self.sizes[k]  # IndexError out of range
        if self.fdes is not None:
            return (pc, size, self.fdes[k])
        return (pc, size, k + len(self.pcs) if k < 0 else k)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Sequence):
            return NotImplemented
        return len(self) == len(other) and all(map(eq, self, other))

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"Ranges({list(self)!r})"


def range_columns(ranges: Sequence[tuple[int, int, int]]) -> tuple[list[int], Sequence[int]]:
    """The starts (a list: read once per span by some checks) and sizes of (pc, size, fde)
    ranges, from a Ranges' columns without making a tuple per range."""
    if isinstance(ranges, Ranges):
        return list(ranges.pcs), ranges.sizes
    return list(map(itemgetter(0), ranges)), list(map(itemgetter(1), ranges))


_CONTEXT_FIELDS = ("path", "name", "vma", "data", "enabled", "severity_for", "findings",
                   "counts", "ranges", "relocatable", "claimed", "fres_walked")


class SectionContext(Record, shown=_CONTEXT_FIELDS):  # block_ends, decided not shown
    __slots__ = (*_CONTEXT_FIELDS, "block_ends", "decided")

    def __init__(self, path: str, name: str, vma: int, data: bytes,
                 enabled: Callable[[Rule], bool] = enable_all,
                 severity_for: Callable[[Rule, Severity], Severity | None] = keep_severity,
                 findings: list[Finding] | None = None, counts: Counter | None = None,
                 ranges: Iterable[tuple[int, int, int]] | None = None, relocatable: bool = False,
                 claimed: set[str] | None = None, fres_walked: bool = False,
                 block_ends: Sequence[int] | None = None,
                 decided: dict[tuple[str, Severity], Severity | None] | None = None) -> None:
        self.path = path
        self.name = name
        self.vma = vma
        self.data = data
        self.enabled = enabled
        # The consumer profile's say (sfcheck.profiles): a new severity, or None to drop it.
        self.severity_for = severity_for
        self.findings = [] if findings is None else findings
        self.counts = Counter() if counts is None else counts
        self.ranges: Sequence[tuple[int, int, int]] = (
            ranges if isinstance(ranges, Ranges) else Ranges(ranges or ()))  # (pc, size, fde)
        # In a .o every text section starts at 0, so function addresses from different
        # sections coincide: overlap and order checks do not apply.
        self.relocatable = relocatable
        # Generic rules a recognised known defect explains (rules/defect.py): not reported.
        self.claimed = set() if claimed is None else claimed
        # Set by the structure check (section.py): every FDE and its FRE block decoded, and the
        # blocks walked fit the FRE sub-section, so a later walk of the same bytes (the
        # .eh_frame cross-check's) cannot stop early and may skip the blocks it does not need.
        self.fres_walked = fres_walked
        # Where each FDE's FRE block ends when the blocks are out of table order (section.py's
        # block_ends, kept for the cross-check's walk of the same bytes); None: table order.
        self.block_ends = block_ends
        # (rule ID, severity) -> what enabled() and severity_for() decided: both depend on
        # the options alone, and a damaged section emits the same rule many times.
        self.decided = {} if decided is None else decided

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
                    f"{plural(count - MAX_PER_RULE, 'more finding')} of this rule not shown",
                    Location(self.path, self.name)))
