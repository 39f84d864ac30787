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


def test_order_sorts_by_group_then_declaration(monkeypatch) -> None:
    """rules._order (run once at import) puts RULES in catalogue order: by GROUPS, each
    group as declared."""
    import sfcheck.rules as rules_pkg

    def make(rule_id: str, group: str) -> registry.Rule:
        return registry.Rule(rule_id, group, Severity.INFO, "t", "e", "h")

    mixed = {r.id: r for r in (make("d1", "defect"), make("f1", "fre"), make("h1", "header"),
                                make("f0", "fre"), make("h0", "header"), make("l1", "layout"))}
    monkeypatch.setattr(rules_pkg, "RULES", mixed)
    rules_pkg._order()
    assert list(mixed) == ["h1", "h0", "l1", "f1", "f0", "d1"]
    assert all(mixed[k].id == k for k in mixed)
