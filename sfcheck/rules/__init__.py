"""The rule catalogue and the checks that emit findings under each rule ID.

One module per group, each declaring its group's rules and holding its check and the small
pure predicates the check uses: header, layout, fde, fre, elf, semantic (the package's
catalog), defect. consumer.py runs the rules about one reader's behaviour (declared in their
groups' modules), coverage.py and linkable.py are checks of the elf and header groups too
big to sit in those modules. The walk that drives the structural groups over one SFrame
section is sfcheck/walk/.
"""

from . import (
    consumer,  # noqa: F401  (a check, loaded with the rest)
    coverage,  # noqa: F401
    defect,
    elf,
    fde,
    fre,
    header,
    layout,
    linkable,  # noqa: F401
)
from .registry import GROUPS, RULES, Rule  # noqa: F401  (GROUPS: re-exported)
from .semantic import catalog as semantic

# The module that declares each group's rules, in the catalogue's order (`sfcheck rules`,
# SARIF's rule list, ties in the summary): by group, then as the module declares them.
# Declared here rather than taken from the order modules load in, which moves whenever an
# import inside them is made lazy.
GROUP_MODULES = {"header": header, "layout": layout, "fde": fde, "fre": fre, "elf": elf,
                 "semantic": semantic, "defect": defect}


def _order() -> None:
    """RULES by GROUPS, each group as its module declares it (every rule of a group is
    declared in one module, so the order of registration within a group is that module's)."""
    declared = {rule_id: k for k, rule_id in enumerate(RULES)}
    ordered = sorted(RULES.values(), key=lambda r: (GROUPS.index(r.group), declared[r.id]))
    RULES.clear()
    RULES.update((r.id, r) for r in ordered)


_order()
