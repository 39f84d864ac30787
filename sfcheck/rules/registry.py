"""The rule catalogue: every check has a stable ID, a group, a severity and an explanation."""

from __future__ import annotations

from dataclasses import dataclass

from ..result import Severity

GROUPS = ("header", "layout", "fde", "fre", "elf", "semantic", "defect")


@dataclass(frozen=True, slots=True)
class Rule:
    id: str
    group: str
    severity: Severity
    title: str  # one line: what is wrong
    explanation: str  # why it matters, with the spec or source reference
    hint: str  # how to fix it


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
