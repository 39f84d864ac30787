"""The rule catalogue's order does not follow the order modules happen to be loaded in."""

from __future__ import annotations

import subprocess
import sys

import sfcheck.rules as rules
from sfcheck.rules.registry import DECLARED, RULES


def test_every_declaring_module_has_a_place() -> None:
    for rid, (module, _seq) in DECLARED.items():
        assert module.removeprefix("sfcheck.rules.") in rules._MODULES, (rid, module)


def test_order_is_module_then_declaration() -> None:
    places = [rules._place(r) for r in RULES.values()]
    assert places == sorted(places)


def test_same_order_whatever_is_loaded_first() -> None:
    """A command that loads the readers or the unwinder before the rules (as `proc` and
    `unwind` do) lists the rules in the same order as a plain check."""
    code = "import {}; from sfcheck.rules import RULES; print(','.join(RULES))"
    orders = {subprocess.run([sys.executable, "-c", code.format(first)], capture_output=True,
                             text=True, check=True).stdout
              for first in ("sfcheck.cli", "sfcheck.readers.compare", "sfcheck.rules.fre",
                            "sfcheck.proc", "sfcheck.report.sarif")}
    assert len(orders) == 1 and ",".join(RULES) + "\n" in orders
