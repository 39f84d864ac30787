"""What an FRE says about the caller: CFA, RA and FP as register rules.

One reading of the data words for every consumer in the project (the
reference unwinder and the `.eh_frame` cross-check), following the kernel's
V3 unwinder (`__read_{default,flex}_fde_fre_datawords`) and libsframe's
getters for v1/v2.
"""

from __future__ import annotations

from ..record import Record
from ..wording import plural
from . import constants as C
from .abi import Abi
from .datawords import cfa_scale, s390x_regnum
from .model import FRE, Header


class RegRule(Record, frozen=True):
    """value = (base register, or the CFA when reg is None) + offset, then loaded if deref."""

    __slots__ = ("reg", "offset", "deref")

    def __init__(self, reg: int | None, offset: int, deref: bool) -> None:
        self.reg = reg  # DWARF register; None means "the CFA"
        self.offset = offset
        self.deref = deref

    # Written out (not Record's generic ones): compared and interned per FRE rule.
    def __eq__(self, other: object) -> bool:
        if other.__class__ is self.__class__:
            return (self.reg == other.reg and self.offset == other.offset  # type: ignore[attr-defined]
                    and self.deref == other.deref)  # type: ignore[attr-defined]
        return NotImplemented

    def __hash__(self) -> int:
        return hash((self.reg, self.offset, self.deref))


_INTERNED: dict[RegRule, RegRule] = {}


def intern(rule):
    """The one shared instance of an equal RegRule (others pass through), so hot
    comparisons can test identity first."""
    if not isinstance(rule, RegRule):
        return rule
    if len(_INTERNED) > 1 << 16:  # hostile input cannot grow it without bound
        _INTERNED.clear()
    return _INTERNED.setdefault(rule, rule)


def default_rules(h: Header, fre: FRE, abi: Abi) -> tuple[RegRule, RegRule | None,
                                                          RegRule | None]:
    """DEFAULT FREs: w0 CFA; then RA unless the header fixes it; then FP unless fixed.

    Raises ValueError for an FRE without a CFA word or with words left over.
    """
    words = list(fre.words)
    if not words:
        raise ValueError("no data words (no CFA rule)")
    cfa = RegRule(abi.sp if fre.base_sp else abi.fp, cfa_scale(h, words.pop(0)), False)
    ra_off: int | None = h.fixed_ra or None
    if ra_off is None and words:
        ra_off = words.pop(0)
    fp_off: int | None = h.fixed_fp or None
    if fp_off is None and words:
        fp_off = words.pop(0)
    if words:
        raise ValueError(f"{fre.count} data words, {len(words)} more than the ABI uses")
    return cfa, _saved(h, ra_off), _saved(h, fp_off)


def _saved(h: Header, off: int | None) -> RegRule | None:
    """A DEFAULT RA/FP word: a CFA-relative slot, or (s390x) not saved / in a register."""
    if off is None or off == C.RA_OFFSET_INVALID:  # 0 is s390x padding: not saved
        return None
    regnum = s390x_regnum(h, off)
    if regnum is not None:  # v2 s390x: the value lives in another register
        return RegRule(regnum, 0, False)
    return RegRule(None, off, True)


def flex_rules(h: Header, fre: FRE) -> tuple[RegRule, RegRule | None, RegRule | None]:
    """FLEX FREs: (control, offset) pairs for CFA, then RA, then FP; a zero control
    word is a single padding word meaning "no rule" (kernel __read_flex_fde_fre_datawords)."""
    mask = (1 << (8 * fre.word_size)) - 1
    words = list(fre.words)
    if len(words) < 2:
        raise ValueError(f"flex FRE with {plural(len(words), 'data word')}; the CFA rule needs 2")
    ctl, off = words[0] & mask, words[1]
    if not ctl & 1:
        raise ValueError("flex CFA rule is not register-based (reg_p clear)")
    cfa = RegRule(ctl >> 3, cfa_scale(h, off), bool(ctl & 2))
    rest = words[2:]
    rules: list[RegRule | None] = []
    for fixed in (h.fixed_ra, h.fixed_fp):
        rule = RegRule(None, fixed, True) if fixed else None
        if len(rest) >= 2:
            ctl = rest.pop(0) & mask
            if ctl:
                off = rest.pop(0)
                rule = RegRule(ctl >> 3 if ctl & 1 else None, off, bool(ctl & 2))
        rules.append(rule)
    if rest:
        raise ValueError(f"flex FRE has {plural(len(rest), 'data word')} left over")
    return cfa, rules[0], rules[1]


def fre_rules(h: Header, flex: bool, fre: FRE, abi: Abi) -> tuple[RegRule, RegRule | None,
                                                                  RegRule | None]:
    """(CFA, RA, FP) rules of an FRE that has data words; ValueError if malformed."""
    return flex_rules(h, fre) if flex else default_rules(h, fre, abi)
