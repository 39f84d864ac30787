"""The rule catalogue and the checks that emit findings under each rule ID.

One module per group (header, layout, fde, fre, elf, semantic, defect, consumer): its
rule declarations, its check and the small pure predicates the check uses. section.py
is the reference pass over one SFrame section that drives the structural groups;
section_fast.py only decides which FDEs that pass would accept silently, from the
same predicates (fast_fre.py) and checks (fast_fde.py), and is held to the same
findings by tests/test_fastpath_equivalence.py.
"""

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
