"""What an FRE's data words mean: libsframe's getters, reproduced.

Each getter returns the value or None where libsframe reports "offset not
present". The fixed header offsets, the FP/RA index rules, the flex
control-word pairs and the s390x CFA scaling follow binutils 2.46
`sframe_fre_get_{cfa,fp,ra}_offset`.
"""

from __future__ import annotations

from ..record import Record
from . import constants as C
from .model import FRE, Header


def cfa_scale(header: Header, value: int) -> int:
    """A stored CFA offset as bytes (s390x stores (off - 160) / 8)."""
    return C.s390x_cfa_decode(value) if header.abi == C.ABI_S390X_BE else value


def _word(fre: FRE, idx: int) -> int | None:
    return fre.words[idx] if idx < len(fre.words) else None


def cfa_offset(header: Header, fre: FRE, flex: bool) -> int | None:
    value = _word(fre, 1 if flex else C.CFA_IDX)
    return None if value is None else cfa_scale(header, value)


def ra_offset(header: Header, fre: FRE, flex: bool) -> int | None:
    value = _word(fre, C.RA_IDX * 2 + 1 if flex else C.RA_IDX)
    if (not flex or value is None) and header.fixed_ra != 0 and not fre.ra_undefined:
        return header.fixed_ra
    return value


def flex_ra_padded(fre: FRE) -> bool:
    """A zero control word where the RA pair would be: RA has no rule, FP follows."""
    ctl = fre.uword(C.RA_IDX * 2)
    return ctl == C.RA_OFFSET_INVALID


def fp_offset(header: Header, fre: FRE, flex: bool) -> int | None:
    if flex:
        idx = C.FP_IDX * 2 if flex_ra_padded(fre) else C.FP_IDX * 2 + 1
    else:
        idx = C.RA_IDX if header.fixed_ra != 0 else C.FP_IDX
    value = _word(fre, idx)
    if (not flex or value is None) and header.fixed_fp != 0 and not fre.ra_undefined:
        return header.fixed_fp
    return value


class Control(Record, frozen=True):
    """A flex control word: which register (if any) the rule starts from, and a deref."""

    __slots__ = ("reg_p", "deref", "reg")

    def __init__(self, reg_p: bool, deref: bool, reg: int) -> None:
        self.reg_p = reg_p
        self.deref = deref
        self.reg = reg

    @classmethod
    def of(cls, word: int) -> Control:
        return cls(bool(word & 1), bool(word & 2), word >> 3)


def flex_controls(fre: FRE) -> tuple[Control | None, Control | None, Control | None]:
    """(CFA, RA, FP) control words of a flex FRE; RA is None when absent, FP likewise.

    A zero RA control word is padding (returned as a Control with reg 0 and no
    flags; callers check flex_ra_padded).
    """
    cfa = fre.uword(0)
    ra = fre.uword(C.RA_IDX * 2)
    fp_idx = C.FP_IDX * 2 - (1 if ra == C.RA_OFFSET_INVALID else 0)
    fp = fre.uword(fp_idx)
    return (None if cfa is None else Control.of(cfa),
            None if ra is None else Control.of(ra),
            None if fp is None else Control.of(fp))


def s390x_regnum(header: Header, value: int) -> int | None:
    """v2 s390x stores a register number as (reg << 1) | 1 in the RA/FP words."""
    if header.abi == C.ABI_S390X_BE and header.version <= C.VERSION_2 and value & 1:
        return value >> 1
    return None
