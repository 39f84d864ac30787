"""Semantic rules: does the SFrame data say what `.eh_frame` says, PC by PC?

For every SFrame FDE the rows of the `.eh_frame` FDEs covering the same PCs are
merged with the FRE rows (one pass over both row lists, not one lookup per PC;
only PCs whose CFA is a DWARF expression, i.e. PLT entries, are evaluated one by
one), and the CFA, RA and FP rules are compared on every PC interval where
neither side changes. Mismatches are reported once per FDE and kind, with the
first differing range and both rules.

One concept per module: catalog (the rules, and what a known-defect classifier is
given), check (the driver: sections, FDEs, findings), compare (the exact row
comparison of one FDE), settle (the shortcut deciding quiet FDEs from raw FRE
tokens), coverage (why gas leaves a function out) and show (names in messages).
"""

from .catalog import CLASSIFIERS, COVERAGE_CLASSIFIERS, Facts, Mismatch
from .check import cross_check
from .coverage import skip_reason
from .show import func_name, reg_name, show_cfa, show_slot

__all__ = ["CLASSIFIERS", "COVERAGE_CLASSIFIERS", "Facts", "Mismatch", "cross_check",
           "func_name", "reg_name", "show_cfa", "show_slot", "skip_reason"]
