"""The rule catalogue: each rule declared in its group's module, in a declared order that
does not follow the order modules happen to be loaded in."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import sfcheck.rules as rules
from sfcheck.rules.registry import GROUPS, RULES

RULES_DIR = Path(rules.__file__).parent


def declarations() -> dict[str, tuple[str, str]]:
    """rule ID -> (its group, the module whose source declares it), read from the sources:
    every `rule("id", "group", ...)` call under sfcheck/rules/."""
    out = {}
    for path in sorted(RULES_DIR.rglob("*.py")):
        module = ".".join(path.relative_to(RULES_DIR.parent.parent).with_suffix("").parts)
        for node in ast.walk(ast.parse(path.read_text())):
            if (isinstance(node, ast.Call) and getattr(node.func, "id", None) == "rule"
                    and node.args and isinstance(node.args[0], ast.Constant)):
                out[node.args[0].value] = (node.args[1].value, module)
    return out


def test_every_rule_is_declared_in_its_groups_module() -> None:
    found = declarations()
    assert set(found) == set(RULES)
    assert set(rules.GROUP_MODULES) == set(GROUPS)
    for rid, (group, module) in found.items():
        assert module == rules.GROUP_MODULES[group].__name__, (rid, group, module)


def test_order_is_group_then_declaration() -> None:
    groups = [GROUPS.index(r.group) for r in RULES.values()]
    assert groups == sorted(groups)
    found = declarations()  # dicts keep the order the source walk met the calls in
    for group, module in rules.GROUP_MODULES.items():
        in_source = [rid for rid, (g, _m) in found.items() if g == group]
        assert [rid for rid, r in RULES.items() if r.group == group] == in_source, module


def test_same_order_whatever_is_loaded_first() -> None:
    """A command that loads the readers or the unwinder before the rules (as `proc` and
    `unwind` do) lists the rules in the same order as a plain check."""
    code = "import {}; from sfcheck.rules import RULES; print(','.join(RULES))"
    orders = {subprocess.run([sys.executable, "-c", code.format(first)], capture_output=True,
                             text=True, check=True).stdout
              for first in ("sfcheck.cli", "sfcheck.readers.compare", "sfcheck.rules.fre",
                            "sfcheck.rules.defect", "sfcheck.proc", "sfcheck.report.sarif")}
    assert len(orders) == 1 and ",".join(RULES) + "\n" in orders
