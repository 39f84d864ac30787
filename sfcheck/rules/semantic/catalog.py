"""The semantic group's rules, and what a known-defect classifier (rules/defect.py) is
given: the mismatch found and the facts of its section."""

from __future__ import annotations

from collections.abc import Callable

from ...dwarf.cfi import EhFde
from ...format.abi import Abi
from ...format.model import Header
from ..registry import Rule as RuleDef
from ..registry import rule

_DROPS = """Where gas documentedly records less than .eh_frame, nothing is reported: SFrame
    keeps only the CFA, RA and FP (other callee-saved registers are ignored); on x86-64 the RA
    is always at CFA-8 (the fixed RA offset); an FP or RA with no rule, the same-value rule or
    (FP) an undefined rule all mean "not saved"; .cfi_remember_state/.cfi_restore_state are
    flattened into plain rows; rows at or past the function end are unused; the aarch64
    pointer-authentication state (.cfi_negate_ra_state) is a separate FRE bit, not compared;
    functions gas cannot describe (DRAP and other stack realignment, a CFA in a register other
    than SP/FP, .cfi_escape with unknown effects, an RA not at a fixed CFA offset) get no
    SFrame FDE at all and are reported as coverage, not as a mismatch."""

CFA_MISMATCH = rule(
    "semantic-cfa-mismatch", "semantic", "error", "CFA rule differs from .eh_frame",
    f"""At these PCs the SFrame FRE gives a different CFA (base register or offset) than the
    DWARF CFI in .eh_frame, which compilers, debuggers and C++ exception handling use. An
    unwinder that trusts SFrame computes a wrong CFA, so a wrong return address and caller,
    for every sample taken there. {_DROPS}""",
    "Regenerate the SFrame section from the same CFI (a fixed gas/ld); compare `objdump "
    "--sframe` with `readelf --debug-dump=frames-interp` at the PC shown.")
RA_MISMATCH = rule(
    "semantic-ra-mismatch", "semantic", "error", "return-address rule differs from .eh_frame",
    f"""The SFrame FRE says the return address is somewhere else than .eh_frame does (another
    CFA offset, not saved, or the outermost frame marker where .eh_frame has an RA, or the
    other way round). {_DROPS}""",
    "Regenerate the SFrame section; check .cfi_offset/.cfi_undefined of the RA column.")
FP_MISMATCH = rule(
    "semantic-fp-mismatch", "semantic", "error", "frame-pointer rule differs from .eh_frame",
    f"""The SFrame FRE says the caller's frame pointer is saved somewhere else than .eh_frame
    does (or saved where .eh_frame has it unsaved, or the reverse). The CFA of the next frame
    up is then wrong whenever that frame's CFA is FP-based. {_DROPS}""",
    "Regenerate the SFrame section; check .cfi_offset/.cfi_restore of the frame pointer.")
NO_SFRAME_FDE = rule(
    "semantic-no-sframe-fde", "semantic", "info", ".eh_frame FDE without SFrame FDE",
    """A function described by .eh_frame has no SFrame FDE, so SFrame-only unwinders (the
    kernel, glibc's backtrace) cannot unwind through it. gas leaves such functions out on
    purpose when SFrame cannot express their CFI (DRAP or other stack realignment, a CFA in a
    register other than SP/FP, .cfi_escape, an unusual RA rule); start files and objects not
    assembled with --gsframe have none either. The message names the function and, where the
    CFI shows it, the reason. Only part of a function being covered is a warning.""",
    "Nothing to do for the known gas cases; build every object with -Wa,--gsframe.")
NO_EH_FDE = rule(
    "semantic-no-eh-frame-fde", "semantic", "warning", "SFrame FDE without .eh_frame FDE",
    """Code that an SFrame FDE describes is not covered by any .eh_frame FDE. gas derives SFrame
    from the same CFI directives, and ld generates both for its PLT sections, so in a file that
    has .eh_frame this points at a function start or size that is wrong in one of the two.""",
    "Check the FDE's start address and size against the symbol table and .eh_frame.")
OPAQUE = rule(
    "semantic-not-compared", "semantic", "info", "CFI rule sfcheck cannot compare",
    """.eh_frame gives a rule as a DWARF expression outside the subset sfcheck evaluates
    (register plus constant, optionally loaded, with arithmetic on the PC as in PLT entries),
    so those PCs were not compared. Also reported, with the reason, for .eh_frame FDEs whose
    call-frame program was stopped by a work bound (rows or instructions per FDE, per file:
    sfcheck.dwarf.ehframe), which hostile input cannot exceed.""",
    "Nothing to do; report the expression to sfcheck if it is common.")
NO_EH_FRAME = rule(
    "semantic-no-eh-frame", "semantic", "info", "no usable .eh_frame to cross-check against",
    """The file has no .eh_frame section (built with -fno-asynchronous-unwind-tables and
    .cfi_sections .sframe only, or stripped), or it could not be decoded (then a warning with
    the decoder's message), so the SFrame data was not compared with DWARF CFI.""",
    "Nothing to do if .eh_frame is absent on purpose.")
TRUNCATED = rule(
    "semantic-truncated", "semantic", "info", "cross-check stopped early",
    """The cross-check compares at most a fixed number of PC intervals per section (a bound
    proportional to the section sizes) so hostile input cannot make it run for long. The rest
    of the section was not compared.""",
    "Nothing to do unless the section is very large: then report it.")



# Plain classes with __slots__ here and below, not dataclasses: every `sfcheck FILE`
# imports this module, and each dataclass costs about a millisecond to create.
class Mismatch:
    """Where SFrame and .eh_frame disagree on one thing (CFA, RA or FP) in one FDE."""

    __slots__ = ("kind", "fde", "func", "first", "fre", "sframe", "eh", "ranges", "nbytes",
                 "last")

    def __init__(self, kind: str, fde: int, func: int, first: tuple[int, int],
                 fre: int | None, sframe: object, eh: object, ranges: int = 1,
                 nbytes: int = 0) -> None:
        self.kind = kind  # "CFA" | "RA" | "FP"
        self.fde, self.func = fde, func  # FDE index, function start
        self.first = first  # [pc, end) of the first differing range
        self.fre, self.sframe, self.eh = fre, sframe, eh
        self.ranges, self.nbytes = ranges, nbytes
        # (end, SFrame rule, .eh_frame rule) of the latest range: a next interval that
        # starts at its end with the same rules extends it instead of counting anew
        self.last: tuple[int, object, object] = (first[1], sframe, eh)

    def add(self, p: int, q: int, sframe: object, eh: object) -> None:
        """One more differing interval [p, q), compared after the ones before it: a range
        is a run of adjacent intervals with the same two rules."""
        end, last_s, last_e = self.last
        if end == p and last_s == sframe and last_e == eh:
            if self.ranges == 1:
                self.first = (self.first[0], q)
        else:
            self.ranges += 1
        self.last = (q, sframe, eh)
        self.nbytes += q - p



# A known-defect classifier (rules/defect.py) may claim a mismatch: it returns the rule
# and message to use instead of the generic one.
Classifier = Callable[["Mismatch", "Facts"], tuple[RuleDef, str] | None]
CLASSIFIERS: list[Classifier] = []
# Likewise for an .eh_frame FDE without SFrame FDE: (rule, reason) or None.
COVERAGE_CLASSIFIERS: list[Callable[[EhFde, Abi], tuple[RuleDef, str] | None]] = []


class Facts:
    """What a classifier may look at."""

    __slots__ = ("header", "abi", "section_of")

    def __init__(self, header: Header, abi: Abi,
                 section_of: Callable[[int], str | None]) -> None:
        self.header, self.abi = header, abi
        self.section_of = section_of  # name of the text section holding a PC
