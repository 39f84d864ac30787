"""The rule catalogue and the checks that emit findings under each rule ID.

One module per group (header, layout, fde, fre, elf, semantic, defect, consumer): its
rule declarations, its check and the small pure predicates the check uses. The walk
that drives the structural groups over one SFrame section is sfcheck/walk/.
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
from .registry import DECLARED, GROUPS, RULES, Rule  # noqa: F401  (GROUPS: re-exported)

# The catalogue's order (SARIF's rule list, ties in the summary; `sfcheck rules` groups
# it) is fixed here, module by module (as they were first loaded when every import was
# eager: defect loads the semantic catalogue), then in declaration order; not the order
# the modules happen to be loaded in, which moves whenever an import inside them is made
# lazy (defect-fre-start-at-size, declared in fre.py, followed whichever of fre and
# defect was loaded first).
_MODULES = ("consumer", "coverage", "semantic.catalog", "defect", "elf", "fde", "fre",
            "header", "layout", "linkable")


def _place(r: Rule) -> tuple[int, int]:
    module, seq = DECLARED[r.id]
    name = module.removeprefix(__name__ + ".")
    return (_MODULES.index(name) if name in _MODULES else len(_MODULES), seq)


_ORDERED = sorted(RULES.values(), key=_place)
RULES.clear()
RULES.update((r.id, r) for r in _ORDERED)
