"""`objdump --sframe` text, byte for byte (binutils 2.46 sframe-dump.c).

The text starts with the line `Contents of the SFrame section NAME:`. v1
sections print in the same modern style (2.40's own dumper differed in
showing RA as `u` and omitting the `CFA fixed RA offset` line).
"""

from __future__ import annotations

from collections.abc import Iterator

from ..format import constants as C
from ..format import datawords as W
from ..format.decode import Decoder
from ..format.model import FDE, FRE, Header

_U64 = (1 << 64) - 1


def _i32(value: int) -> int:
    """C's `%d` of a uint32 field."""
    return value - (1 << 32) if value & 0x80000000 else value


def header_lines(h: Header, name: str) -> Iterator[str]:
    yield f"Contents of the SFrame section {name}:"
    yield "  Header :"
    yield ""
    names = {1: "SFRAME_VERSION_1", 2: "SFRAME_VERSION_2", 3: "SFRAME_VERSION_3"}
    yield f"    Version: {names.get(h.version, '(null)')}"
    yield from _flag_lines(h)
    if h.fixed_fp != 0:
        yield f"    CFA fixed FP offset: {h.fixed_fp}"
    if h.fixed_ra != 0:
        yield f"    CFA fixed RA offset: {h.fixed_ra}"
    yield f"    Num FDEs: {_i32(h.num_fdes)}"
    yield f"    Num FREs: {_i32(h.num_fres)}"


def _flag_lines(h: Header) -> Iterator[str]:
    flags = h.flags
    if not flags:
        yield "    Flags: NONE"
        return
    prefix = "Flags: "
    known = [(C.F_FDE_SORTED, "SFRAME_F_FDE_SORTED")]
    if h.version < C.VERSION_3:  # FRAME_POINTER was removed in v3
        known.append((C.F_FRAME_POINTER, "SFRAME_F_FRAME_POINTER"))
    known.append((C.F_FDE_FUNC_START_PCREL, "SFRAME_F_FDE_FUNC_START_PCREL"))
    for bit, label in known:
        if flags & bit:
            flags &= ~bit
            yield f"{prefix:>11}{label}{',' if flags else ''}"
            prefix = " "
    if flags:
        yield f"{prefix:>11}{flags}"


def _disp(abi: int, ctl: W.Control, offset: int) -> str:
    name = "c"
    if ctl.reg_p:
        sp, fp = C.SP_FP_REGS.get(abi, (None, None))
        name = "sp" if ctl.reg == sp else "fp" if ctl.reg == fp else f"r{ctl.reg}"
    text = f"{name}{offset:+d}"
    # libsframe reads the deref bit only for register-based rules.
    return f"({text})" if ctl.reg_p and ctl.deref else text


def _simple_row(h: Header, fre: FRE) -> str:
    cfa = W.cfa_offset(h, fre, False)
    text = f"{'sp' if fre.base_sp else 'fp'}+{cfa if cfa is not None else -1}"
    row = f"  {text:<10}"
    fp = W.fp_offset(h, fre, False)
    if fp is None:
        text = "u"
    else:
        reg = W.s390x_regnum(h, fp)
        text = f"r{reg}" if reg is not None else f"c{fp:+d}"
    row += f"{text:<10}"
    ra = W.ra_offset(h, fre, False)
    if h.fixed_ra != 0:
        text = "f"
    elif ra is None:
        text = "u"
    elif ra == C.RA_OFFSET_INVALID:
        text = "U"
    else:
        reg = W.s390x_regnum(h, ra)
        text = f"r{reg}" if reg is not None else f"c{ra:+d}"
    return row + _ra_cell(text, fre)


def _flex_row(h: Header, fre: FRE) -> str:
    cfa_ctl, ra_ctl, fp_ctl = W.flex_controls(fre)
    cfa = W.cfa_offset(h, fre, True)
    # libsframe asserts on a flex FRE without a CFA pair; a validator rule reports it.
    text = "u" if cfa_ctl is None or cfa is None else _disp(h.abi, cfa_ctl, cfa)
    row = f"  {text:<10}"
    fp = W.fp_offset(h, fre, True)
    text = "u" if fp_ctl is None or fp is None else _disp(h.abi, fp_ctl, fp)
    row += f"{text:<10}"
    if ra_ctl is None:
        text = "f" if h.fixed_ra != 0 else "u"
    elif W.flex_ra_padded(fre):
        text = "U"
    else:
        ra = W.ra_offset(h, fre, True)
        text = _disp(h.abi, ra_ctl, -1 if ra is None else ra)
    return row + _ra_cell(text, fre)


def _ra_cell(text: str, fre: FRE) -> str:
    return f"{text + ('[s]' if fre.mangled_ra else '   '):<13}"


def fde_lines(dec: Decoder, index: int, fde: FDE, section_vma: int) -> Iterator[str]:
    h = dec.header
    pc = h.func_start(index, fde.start, section_vma, honour_fdeoff=False) & _U64
    attrs = ("S" if h.version >= C.VERSION_3 and fde.signal else "") + (
        "F" if fde.flex(h.version) else "")
    line = f"    func idx [{index}]: pc = {pc:#x}, size = {_i32(fde.size)} bytes"
    if attrs:
        line += f', attr = "{attrs}"'
    if h.abi in (C.ABI_AARCH64_BE, C.ABI_AARCH64_LE) and fde.pauth_key == C.PAUTH_KEY_B:
        line += ", pauth = B key"
    yield ""
    yield line
    yield f"    {'STARTPC':<7}{'[m]' if fde.pcmask else '   ':<8} {'CFA':<10}{'FP':<10}{'RA':<13}"
    flex = fde.flex(h.version)
    for fre in fde.fres:
        start = (fre.start if fde.pcmask else pc + fre.start) & _U64
        row = f"    {start:016x}"
        if fre.ra_undefined:
            yield row + "  RA undefined"
        else:
            yield row + (_flex_row(h, fre) if flex else _simple_row(h, fre))


def dump_text(data: bytes, section_vma: int = 0, name: str = ".sframe") -> Iterator[str]:
    """Lines of objdump's text for one section; raises DecodeError where decoding stops.

    Lines already yielded stay valid, so a caller can print the readable part of
    a damaged section before reporting the error.
    """
    if not data:
        return
    dec = Decoder(data)
    h = dec.header
    yield from header_lines(h, name)
    yield ""
    yield "  Function Index :"
    for i, fde in enumerate(dec.iter_fdes()):
        yield from fde_lines(dec, i, fde, section_vma)

