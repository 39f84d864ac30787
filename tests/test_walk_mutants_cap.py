"""The per-rule cap's closing note (walk/context.FindingSink.finish) at the cap and one past:
MAX_PER_RULE findings of a rule are all shown with no note; one more is counted in a note of
the first finding's severity, located at the section (file and section name, no offset),
singular and plural (tests/mutation.py's walk group)."""

from __future__ import annotations

import pytest

from sfcheck.result import Location, Severity
from sfcheck.rules.layout import NUM_FRES
from sfcheck.walk.context import MAX_PER_RULE, SectionContext


def emitted(n: int) -> list[tuple]:
    ctx = SectionContext("lib.so", ".sframe", 0, b"")
    for k in range(n):
        ctx.emit(NUM_FRES, f"finding {k}", offset=k)
    ctx.finish()
    return [(f.rule, f.severity, f.message, f.location) for f in ctx.findings]


def shown(n: int) -> list[tuple]:
    return [("layout-num-fres", Severity.ERROR, f"finding {k}",
             Location("lib.so", ".sframe", offset=k)) for k in range(n)]


def note(more: str) -> tuple:
    return ("layout-num-fres", Severity.ERROR, f"{more} of this rule not shown",
            Location("lib.so", ".sframe"))


def test_up_to_the_cap_every_finding_is_shown() -> None:
    assert emitted(MAX_PER_RULE) == shown(MAX_PER_RULE)


@pytest.mark.parametrize(("extra", "more"), [(1, "1 more finding"), (2, "2 more findings")])
def test_past_the_cap_a_note_counts_the_rest(extra: int, more: str) -> None:
    assert emitted(MAX_PER_RULE + extra) == [*shown(MAX_PER_RULE), note(more)]
