"""The rule catalogue and the checks that emit findings under each rule ID."""

from . import (  # noqa: F401  (registers the rules)
    consumer,
    coverage,
    defect,
    elf,
    fde,
    fre,
    header,
    layout,
    linkable,
    semantic,
)
from .registry import GROUPS, RULES, Rule

__all__ = ["GROUPS", "RULES", "Rule"]
