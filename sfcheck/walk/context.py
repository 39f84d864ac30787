"""What a check of one section is handed: the input (SectionInput), where its findings go
(FindingSink) and what one pass leaves for the next (PassState), together a
SectionContext."""

from __future__ import annotations

from array import array
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from operator import attrgetter, itemgetter

from ..record import Record
from ..result import Finding, Location, Severity
from ..wording import plural
from .columns import FdeColumns

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing at run time
if TYPE_CHECKING:
    # Only a type here: importing the rules package would load every rule module, which
    # import this one (a cycle when a caller imports the context first).
    from ..rules.registry import Rule

MAX_PER_RULE = 50  # per section: a broken 100k-FDE table must not flood a gate
_UNDECIDED = object()


def keep_severity(rule: Rule, severity: Severity) -> Severity | None:
    return severity


def enable_all(rule: Rule) -> bool:
    return True


class Ranges(FdeColumns):
    """The function ranges (pc, size, fde) of the FDEs read, in table order, kept from the
    structure check to the last consumer."""

    __slots__ = ()
    CODES = ("q", "I")

    @property
    def pcs(self) -> array | list[int]:
        return self._a

    @property
    def sizes(self) -> array | list[int]:
        return self._b


def range_columns(ranges: Sequence[tuple[int, int, int]]) -> tuple[list[int], Sequence[int]]:
    """The starts (a list: read once per span by some checks) and sizes of (pc, size, fde)
    ranges, from a Ranges' columns without making a tuple per range."""
    if isinstance(ranges, Ranges):
        return list(ranges.pcs), ranges.sizes
    return list(map(itemgetter(0), ranges)), list(map(itemgetter(1), ranges))


class Reporter:
    """Where a check's findings go: `emit` (at the rule's severity) is `emit_as`, which each
    kind of reporter implements -- FindingSink keeps findings, walk/fde_shapes' probe
    only notes that one was emitted."""

    __slots__ = ()

    def emit(self, rule: Rule, message: str, **where: int | None) -> None:
        self.emit_as(rule, rule.severity, message, **where)

    def emit_as(self, rule: Rule, severity: Severity, message: str, **where: int | None) -> None:
        raise NotImplementedError


class SectionInput(Record, frozen=True):
    """What is checked: one SFrame section's bytes and where they come from."""

    __slots__ = ("path", "name", "vma", "data", "relocatable")

    def __init__(self, path: str, name: str, vma: int, data: bytes,
                 relocatable: bool = False) -> None:
        self.path = path
        self.name = name
        self.vma = vma
        self.data = data
        # In a .o every text section starts at 0, so function addresses from different
        # sections coincide: overlap and order checks do not apply.
        self.relocatable = relocatable


class PassState(Record, eq=False):
    """What one pass over the section leaves for the later ones: the structure check
    (walk/section.py) fills it, the consumer, coverage, defect and .eh_frame checks read it."""

    __slots__ = ("ranges", "fres_walked", "block_ends")

    def __init__(self, ranges: Iterable[tuple[int, int, int]] | None = None,
                 fres_walked: bool = False, block_ends: Sequence[int] | None = None) -> None:
        self.ranges: Sequence[tuple[int, int, int]] = (
            ranges if isinstance(ranges, Ranges) else Ranges(ranges or ()))  # (pc, size, fde)
        # Every FDE and its FRE block decoded, and the blocks walked fit the FRE
        # sub-section, so a later walk of the same bytes (the .eh_frame cross-check's)
        # cannot stop early and may skip the blocks it does not need.
        self.fres_walked = fres_walked
        # Where each FDE's FRE block ends when the blocks are out of table order (section.py's
        # block_ends, kept for the cross-check's walk of the same bytes); None: table order.
        self.block_ends = block_ends


class FindingSink(Reporter):
    """Where the findings about one input go: which rules are on and at what severity (the
    options' say, decided once per rule and severity), the findings kept, the per-rule
    counts past the cap, and the rules a known defect claimed."""

    __slots__ = ("input", "enabled", "severity_for", "findings", "counts", "claimed",
                 "decided")

    def __init__(self, source: SectionInput,
                 enabled: Callable[[Rule], bool] = enable_all,
                 severity_for: Callable[[Rule, Severity], Severity | None] = keep_severity,
                 findings: list[Finding] | None = None, counts: Counter | None = None,
                 claimed: set[str] | None = None,
                 decided: dict[tuple[str, Severity], Severity | None] | None = None) -> None:
        self.input = source  # findings are located in it
        self.enabled = enabled
        # The consumer profile's say (sfcheck.profiles): a new severity, or None to drop it.
        self.severity_for = severity_for
        self.findings = [] if findings is None else findings
        self.counts = Counter() if counts is None else counts
        # Generic rules a recognised known defect explains (rules/defect.py): not reported.
        self.claimed = set() if claimed is None else claimed
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
            source = self.input
            self.findings.append(Finding(rid, sev, message,
                                         Location(source.path, source.name, **where)))

    def count_only(self, rule: Rule) -> bool:
        """True when a finding of `rule` (at its own severity) would not be kept: the rule
        is off or claimed (then emit drops it), or past the per-rule cap (then it is
        counted here, as emit would). Its message need not be built then."""
        key = (rule.id, rule.severity)
        if key not in self.decided:
            return False  # the first one: emit decides
        if self.decided[key] is None or rule.id in self.claimed:
            return True
        n = self.counts.get(rule.id, 0)
        if n < MAX_PER_RULE:
            return False
        self.counts[rule.id] = n + 1
        return True

    def count_more(self, rule: Rule, n: int) -> None:
        """`n` more findings of `rule` past the cap (once count_only said so): counted, not
        kept, unless the rule is off or claimed."""
        if self.decided[(rule.id, rule.severity)] is not None and rule.id not in self.claimed:
            self.counts[rule.id] += n

    def _decide(self, rule: Rule, severity: Severity) -> Severity | None:
        """The severity a finding of `rule` is reported with here (None: not reported)."""
        return self.severity_for(rule, severity) if self.enabled(rule) else None

    def finish(self) -> None:
        """Say how many findings the per-rule cap held back."""
        source = self.input
        for rule_id, count in self.counts.items():
            if count > MAX_PER_RULE:
                first = next(f for f in self.findings if f.rule == rule_id)
                self.findings.append(Finding(
                    rule_id, Severity(first.severity),
                    f"{plural(count - MAX_PER_RULE, 'more finding')} of this rule not shown",
                    Location(source.path, source.name)))


def _input_field(name: str) -> property:
    get = attrgetter(f"input.{name}")
    return property(get, doc=f"The input's {name} (read-only).")


def _state_field(name: str) -> property:
    def get(ctx: SectionContext) -> object:
        return getattr(ctx.pass_state, name)

    def put(ctx: SectionContext, value: object) -> None:
        setattr(ctx.pass_state, name, value)

    return property(get, put, doc=f"The pass state's {name}.")


class SectionContext(FindingSink):
    """What a check of one section is handed, in three parts: `input` (SectionInput: the
    bytes and where they come from), the sink it emits into (this object: FindingSink) and
    `pass_state` (PassState: what the structure check leaves for the later checks). The
    rules read the input's and the pass state's fields as ctx.data, ctx.ranges, ...
    (properties; the walk names the part)."""

    __slots__ = ("pass_state",)

    def __init__(self, path: str, name: str, vma: int, data: bytes,
                 enabled: Callable[[Rule], bool] = enable_all,
                 severity_for: Callable[[Rule, Severity], Severity | None] = keep_severity,
                 findings: list[Finding] | None = None, counts: Counter | None = None,
                 ranges: Iterable[tuple[int, int, int]] | None = None, relocatable: bool = False,
                 claimed: set[str] | None = None, fres_walked: bool = False,
                 block_ends: Sequence[int] | None = None,
                 decided: dict[tuple[str, Severity], Severity | None] | None = None) -> None:
        super().__init__(SectionInput(path, name, vma, data, relocatable), enabled,
                         severity_for, findings, counts, claimed, decided)
        self.pass_state = PassState(ranges, fres_walked, block_ends)

    def __repr__(self) -> str:
        return f"SectionContext({self.input!r}, {self.pass_state!r}, findings={self.findings!r})"

    path = _input_field("path")
    name = _input_field("name")
    vma = _input_field("vma")
    data = _input_field("data")
    relocatable = _input_field("relocatable")
    ranges = _state_field("ranges")
    fres_walked = _state_field("fres_walked")
    block_ends = _state_field("block_ends")
