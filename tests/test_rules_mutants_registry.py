"""rules/registry.rule and Rule, called again here: every real rule is declared while the
rule modules are imported, before mutmut switches a mutant on (tests/mutation.py)."""

from __future__ import annotations

import pytest

from sfcheck.result import Severity
from sfcheck.rules import registry


@pytest.fixture
def empty(monkeypatch) -> dict:
    rules: dict = {}
    monkeypatch.setattr(registry, "RULES", rules)
    return rules


def test_rule_is_declared_with_its_fields(empty: dict) -> None:
    r = registry.rule("x-demo", "fre", "warning", "A title",
                      """An explanation
                      over   two lines.""", "  A   hint\n here ")
    assert empty == {"x-demo": r}
    assert (r.id, r.group, r.severity, r.title, r.explanation, r.hint) == (
        "x-demo", "fre", Severity.WARNING, "A title", "An explanation over two lines.",
        "A hint here")
    assert isinstance(r, registry.Rule)


def test_rule_refuses_unknown_groups_and_duplicates(empty: dict) -> None:
    with pytest.raises(ValueError, match="unknown rule group 'nope'"):
        registry.rule("x-a", "nope", "error", "t", "e", "h")
    assert empty == {}
    registry.rule("x-a", "elf", "error", "t", "e", "h")
    with pytest.raises(ValueError, match="duplicate rule id 'x-a'"):
        registry.rule("x-a", "fde", "error", "t", "e", "h")
    assert empty["x-a"].group == "elf"
    for group in registry.GROUPS:
        assert registry.rule(f"x-{group}", group, "info", "t", "e", "h").group == group
