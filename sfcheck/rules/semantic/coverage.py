"""Coverage: why gas leaves a function out of SFrame."""

from __future__ import annotations

from ...dwarf.cfi import CfaExpr, EhFde, Opaque
from ...format.abi import Abi
from ...format.fre_rules import RegRule
from .show import reg_name


def skip_reason(eh: EhFde, abi: Abi) -> str | None:
    """Why gas would leave this function out of SFrame, read from its CFI; None if no reason."""
    for r in eh.rel:  # the rules only: no absolute rows needed
        if isinstance(r.cfa, CfaExpr | Opaque):
            return "CFA given by a DWARF expression (DRAP, stack realignment, signal frame)"
        if r.cfa.reg not in (abi.sp, abi.fp):
            return f"CFA based on {reg_name(abi, r.cfa.reg)}, not SP or FP"
        if isinstance(r.ra, Opaque) or isinstance(r.fp, Opaque):
            return "RA or FP saved by a DWARF expression (.cfi_escape)"
        if isinstance(r.ra, RegRule) and abi.ra is None and r.ra.offset != -8:
            return f"RA at CFA{r.ra.offset:+d}, not at the fixed CFA-8"
    return None
