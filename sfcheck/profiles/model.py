"""What a consumer profile is: the Fact, Override and Profile records a reader's table is
written in, and the helpers those tables use.

A profile holds the reader's acceptance facts (versions, required flags, layout assumptions),
which consumer rules (sfcheck/rules/consumer.py) fire under it, severity overrides of the
strict rules, and what the reader does with a finding (sfcheck/effects.py). Every fact and
override names its source: repo:path@commit, a lore Message-ID, or a binary run here.
"""

from __future__ import annotations

from ..effects import MISREADS, NOTHING
from ..format import constants
from ..record import Record
from ..result import Severity

FLAG_NAMES = {constants.F_FDE_SORTED: "FDE_SORTED", constants.F_FRAME_POINTER: "FRAME_POINTER",
              constants.F_FDE_FUNC_START_PCREL: "FDE_FUNC_START_PCREL"}


def flag_names(flags: int) -> str:
    names = [name for bit, name in FLAG_NAMES.items() if flags & bit]
    rest = flags & ~sum(FLAG_NAMES)
    return "|".join(names + ([f"{rest:#x}"] if rest else [])) or "none"


class Fact(Record, frozen=True):
    __slots__ = ("text", "source")

    def __init__(self, text: str, source: str) -> None:
        self.text = text
        self.source = source


class Override(Record, frozen=True):
    __slots__ = ("severity", "why", "source")

    def __init__(self, severity: Severity | None, why: str, source: str) -> None:
        self.severity = severity  # None: the finding is not reported under this profile
        self.why = why
        self.source = source


class Profile(Record, frozen=True, eq=False, shown=("name",)):  # repr: a name, not its facts
    __slots__ = ("name", "title", "reader", "sources", "versions", "required_flags",
                 "ignores_fdeoff", "ignores_freoff", "rejects_auxhdr", "rejects_empty",
                 "increasing_starts", "one_text_segment", "consumer", "overrides", "notes",
                 "model", "effects", "group_effects", "aliases")

    def __init__(self, name: str, title: str, reader: str, sources: tuple[str, ...] = (),
                 versions: frozenset[int] = frozenset(constants.VERSIONS),
                 required_flags: dict[int, int] | None = None, ignores_fdeoff: bool = False,
                 ignores_freoff: bool = False, rejects_auxhdr: bool = False,
                 rejects_empty: bool = False, increasing_starts: bool = False,
                 one_text_segment: bool = False, consumer: dict[str, Fact] | None = None,
                 overrides: dict[str, Override] | None = None, notes: tuple[Fact, ...] = (),
                 model: str = "", effects: dict[str, str | None] | None = None,
                 group_effects: dict[str, str] | None = None,
                 aliases: tuple[str, ...] = ()) -> None:
        self.name = name
        self.title = title
        self.reader = reader  # how findings name the reader: "the kernel (V3 series)"
        self.sources = sources
        self.versions = versions
        # version -> flag bits
        self.required_flags = {} if required_flags is None else required_flags
        self.ignores_fdeoff = ignores_fdeoff  # FDE array assumed right after the header
        self.ignores_freoff = ignores_freoff  # FRE sub-section assumed right after the FDE array
        self.rejects_auxhdr = rejects_auxhdr
        self.rejects_empty = rejects_empty  # num_fdes == 0 or num_fres == 0
        self.increasing_starts = increasing_starts  # equal function starts rejected
        self.one_text_segment = one_text_segment  # every FDE must start in one PF_X segment
        # consumer rule ID -> why it fires
        self.consumer = {} if consumer is None else consumer
        self.overrides = {} if overrides is None else overrides
        self.notes = notes  # what the reader does not check, and other context
        self.model = model  # a reader model in sfcheck/readers/ run against the reference table
        # What the reader does with a finding (sfcheck.effects): rule ID -> effect (None: not
        # the reader's business, counted as under strict), then rule group -> effect for error
        # findings; a finding below error that neither names is "nothing".
        self.effects = {} if effects is None else effects
        self.group_effects = {} if group_effects is None else group_effects
        self.aliases = aliases  # other names `--profile` takes for it

    def effect(self, rule_id: str, group: str | None, severity: Severity) -> str | None:
        """What this profile's reader does with a finding of `rule_id` at `severity` (the
        severity the profile gave it); None under strict."""
        if self.name == "strict":
            return None
        if rule_id in self.effects:
            return self.effects[rule_id]
        if severity < Severity.ERROR:
            return NOTHING  # a profile's warning: the reader takes it without harm
        return self.group_effects.get(group or "", MISREADS)

    def severity(self, rule_id: str, severity: Severity) -> Severity | None:
        """The severity a finding of `rule_id` gets under this profile (None: not reported)."""
        o = self.overrides.get(rule_id)
        return severity if o is None else o.severity


def alike(rules: tuple[str, ...], severity: Severity | None, why: str,
          source: str) -> dict[str, Override]:
    """One Override, said once, for each of `rules`."""
    return {r: Override(severity, why, source) for r in rules}


WARN, ERR, INFO = Severity.WARNING, Severity.ERROR, Severity.INFO
