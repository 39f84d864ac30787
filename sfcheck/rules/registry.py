"""The rule catalogue: every check has a stable ID, a group, a severity and an explanation."""

from __future__ import annotations

from ..record import Record
from ..result import Severity

# Explanation tails of the rules about one reader's behaviour (rules/consumer.py runs them),
# which are declared in their groups' modules.
PROFILE_ONLY = """Reported only under a consumer profile (--profile); `sfcheck profiles` and
`sfcheck explain` list which readers reject it and the source each fact comes from."""
MODEL_ONLY = """Computed by running a model of the reader's code (sfcheck/readers/) and
sfcheck's reference lookup on the same PCs: function starts, row starts, last bytes, the
byte after each function and below the lowest one. Reported only under a profile with a
model (kernel-rfc-2023, kernel)."""

GROUPS = ("header", "layout", "fde", "fre", "elf", "semantic", "defect")


class Rule(Record, frozen=True):
    __slots__ = ("id", "group", "severity", "title", "explanation", "hint")

    def __init__(self, id: str, group: str, severity: Severity, title: str,  # noqa: A002
                 explanation: str, hint: str) -> None:
        self.id = id
        self.group = group
        self.severity = severity
        self.title = title  # one line: what is wrong
        self.explanation = explanation  # why it matters, with the spec or source reference
        self.hint = hint  # how to fix it


# Filled as the group modules declare their rules; rules/__init__ then puts it in catalogue
# order (by group, then as each group's module declares them).
RULES: dict[str, Rule] = {}


def rule(id: str, group: str, severity: str, title: str, explanation: str, hint: str) -> Rule:
    if group not in GROUPS:
        raise ValueError(f"unknown rule group {group!r}")
    if id in RULES:
        raise ValueError(f"duplicate rule id {id!r}")
    r = Rule(id, group, Severity.parse(severity), title, " ".join(explanation.split()),
             " ".join(hint.split()))
    RULES[id] = r
    return r
