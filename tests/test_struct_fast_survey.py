"""survey/work.py asks each consumer profile about each distinct (rule, severity) of the
strict findings once: the same verdicts as asking about every finding."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from sfcheck.profiles import PROFILES
from sfcheck.result import Finding, Location, Severity
from sfcheck.rules.registry import RULES
from sfcheck.survey.work import CONSUMERS, _counts, _refuses, finding_kinds

FINDINGS = st.lists(st.builds(
    lambda rule, sev: Finding(rule, sev, "m", Location("f")),
    st.sampled_from(sorted(RULES) + ["no-such-rule"]), st.sampled_from(list(Severity))),
    max_size=30)


@settings(max_examples=200, deadline=None)
@given(FINDINGS)
def test_kinds_decide_as_every_finding(findings: list[Finding]) -> None:
    kinds = finding_kinds(findings)
    assert len(set(kinds)) == len(kinds)
    for name in CONSUMERS:
        p = PROFILES[name]
        assert any(_refuses(p, r, s) for r, s in kinds) == any(
            _refuses(p, f.rule, f.severity) for f in findings)


@settings(max_examples=200, deadline=None)
@given(FINDINGS)
def test_counts_per_rule_and_severity(findings: list[Finding]) -> None:
    want: dict[tuple[str, str], int] = {}
    for f in findings:
        want[f.rule, str(f.severity)] = want.get((f.rule, str(f.severity)), 0) + 1
    assert _counts(findings) == [[r, s, n] for (r, s), n in sorted(want.items())]


def test_some_profile_refuses_some_error() -> None:
    """The property above is not vacuous: an error finding refuses under some profile."""
    errors = [Finding(r, Severity.ERROR, "m", Location("f")) for r in sorted(RULES)]
    assert any(any(_refuses(PROFILES[n], r, s) for r, s in finding_kinds(errors))
               for n in CONSUMERS)
