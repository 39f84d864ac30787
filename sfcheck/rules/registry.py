"""The rule catalogue: every check has a stable ID, a group, a severity and an explanation."""

from __future__ import annotations

import sys

from ..record import Record
from ..result import Severity

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


RULES: dict[str, Rule] = {}
# rule ID -> (declaring module, declaration number): the catalogue's order (rules/__init__)
DECLARED: dict[str, tuple[str, int]] = {}


def rule(id: str, group: str, severity: str, title: str, explanation: str, hint: str) -> Rule:
    if group not in GROUPS:
        raise ValueError(f"unknown rule group {group!r}")
    if id in RULES:
        raise ValueError(f"duplicate rule id {id!r}")
    r = Rule(id, group, Severity.parse(severity), title, " ".join(explanation.split()),
             " ".join(hint.split()))
    RULES[id] = r
    DECLARED[id] = (sys._getframe(1).f_globals.get("__name__", ""), len(DECLARED))
    return r
