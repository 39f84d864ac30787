"""The rule catalogue and the checks that emit findings under each rule ID."""

from . import consumer, elf, fde, fre, header, layout  # noqa: F401  (registers the rules)
from .registry import GROUPS, RULES, Rule

__all__ = ["GROUPS", "RULES", "Rule"]
