"""`objdump --sframe` text, byte for byte (binutils 2.46 sframe-dump.c).

The text starts with the line `Contents of the SFrame section NAME:`. v1
sections print in the same modern style (2.40's own dumper differed in
showing RA as `u` and omitting the `CFA fixed RA offset` line).
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from itertools import repeat
from operator import add, and_, itemgetter

from ..errors import DecodeError
from ..format import constants, datawords
from ..format.abi import ABIS, has_pauth
from ..format.decode import Decoder
from ..format.fde_table import Columns
from ..format.fre_blocks import FreBlocks, Tokens, starts_of, token_fre
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
    known = [(constants.F_FDE_SORTED, "SFRAME_F_FDE_SORTED")]
    if h.version < constants.VERSION_3:  # FRAME_POINTER was removed in v3
        known.append((constants.F_FRAME_POINTER, "SFRAME_F_FRAME_POINTER"))
    known.append((constants.F_FDE_FUNC_START_PCREL, "SFRAME_F_FDE_FUNC_START_PCREL"))
    for bit, label in known:
        if flags & bit:
            flags &= ~bit
            yield f"{prefix:>11}{label}{',' if flags else ''}"
            prefix = " "
    if flags:
        yield f"{prefix:>11}{flags}"


def _disp(abi: int, ctl: datawords.Control, offset: int) -> str:
    name = "c"
    if ctl.reg_p:
        a = ABIS.get(abi)
        name = ("sp" if a and ctl.reg == a.sp else "fp" if a and ctl.reg == a.fp
                else f"r{ctl.reg}")
    text = f"{name}{offset:+d}"
    # libsframe reads the deref bit only for register-based rules.
    return f"({text})" if ctl.reg_p and ctl.deref else text


def _simple_row(h: Header, fre: FRE) -> str:
    cfa = datawords.cfa_offset(h, fre, False)
    text = f"{'sp' if fre.base_sp else 'fp'}+{cfa if cfa is not None else -1}"
    row = f"  {text:<10}"
    fp = datawords.fp_offset(h, fre, False)
    if fp is None:
        text = "u"
    else:
        reg = datawords.s390x_regnum(h, fp)
        text = f"r{reg}" if reg is not None else f"c{fp:+d}"
    row += f"{text:<10}"
    ra = datawords.ra_offset(h, fre, False)
    if h.fixed_ra != 0:
        text = "f"
    elif ra is None:
        text = "u"
    elif ra == constants.RA_OFFSET_INVALID:
        text = "U"
    else:
        reg = datawords.s390x_regnum(h, ra)
        text = f"r{reg}" if reg is not None else f"c{ra:+d}"
    return row + _ra_cell(text, fre)


def _flex_row(h: Header, fre: FRE) -> str:
    cfa_ctl, ra_ctl, fp_ctl = datawords.flex_controls(fre)
    cfa = datawords.cfa_offset(h, fre, True)
    # libsframe asserts on a flex FRE without a CFA pair; a validator rule reports it.
    text = "u" if cfa_ctl is None or cfa is None else _disp(h.abi, cfa_ctl, cfa)
    row = f"  {text:<10}"
    fp = datawords.fp_offset(h, fre, True)
    text = "u" if fp_ctl is None or fp is None else _disp(h.abi, fp_ctl, fp)
    row += f"{text:<10}"
    if ra_ctl is None:
        text = "f" if h.fixed_ra != 0 else "u"
    elif datawords.flex_ra_padded(fre):
        text = "U"
    else:
        ra = datawords.ra_offset(h, fre, True)
        text = _disp(h.abi, ra_ctl, -1 if ra is None else ra)
    return row + _ra_cell(text, fre)


def _ra_cell(text: str, fre: FRE) -> str:
    return f"{text + ('[s]' if fre.mangled_ra else '   '):<13}"


def fde_lines(dec: Decoder, index: int, fde: FDE, section_vma: int) -> Iterator[str]:
    h = dec.header
    pc = h.func_start(index, fde.start, section_vma, honour_fdeoff=False) & _U64
    attrs = ("S" if h.version >= constants.VERSION_3 and fde.signal else "") + (
        "F" if fde.flex(h.version) else "")
    line = f"    func idx [{index}]: pc = {pc:#x}, size = {_i32(fde.size)} bytes"
    if attrs:
        line += f', attr = "{attrs}"'
    if has_pauth(h.abi) and fde.pauth_key == constants.PAUTH_KEY_B:
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
    for chunk in dump_chunks(data, section_vma, name):
        yield from chunk.split("\n")


_BATCH = 2048  # FDEs per chunk
_MAX_TEMPLATES = 1 << 16  # distinct FRE sequences remembered per section


def dump_chunks(data: bytes, section_vma: int = 0, name: str = ".sframe") -> Iterator[str]:
    """dump_text's lines, several thousand at a time joined by newlines (no final one).

    FDEs whose FRE blocks lie in table order are walked by one regex call each
    (walk/fast.py-style), and each distinct FRE (info byte and data words) is
    formatted once per section; rows differ only by address. Any FDE the fast
    walk does not account for exactly is decoded and printed by fde_lines, so the
    text and the DecodeError raised (after everything before it was yielded) are
    those of the plain decoder walk.
    """
    if not data:
        return
    dec = Decoder(data)
    h = dec.header
    yield "\n".join([*header_lines(h, name), "", "  Function Index :"])
    out: list[str] = []
    rows = _Rows(dec, section_vma, out)  # DecodeError here: FDE or FRE table cut short
    i, n = 0, h.num_fdes
    while i < n:
        was = gc.isenabled()
        gc.disable()  # one str per FRE and no cycles: collections would only rescan them
        try:
            i = rows.render(i, min(n, i + _BATCH))
        except DecodeError:
            if out:
                yield "\n".join(out)
            raise
        finally:
            if was:
                gc.enable()
        yield "\n".join(out)
        out.clear()


class _Suffixes(dict):
    """(info byte + data-word bytes) -> the row text after the address, made on first use."""

    def __init__(self, h: Header, flex: bool) -> None:
        super().__init__()
        self.h, self.flex = h, flex

    def __missing__(self, key: bytes) -> str:
        fre = token_fre(key, self.h.big_endian)
        text = "  RA undefined" if fre.ra_undefined else (
            _flex_row(self.h, fre) if self.flex else _simple_row(self.h, fre))
        self[key] = text
        return text


_START, _REST = itemgetter(0), itemgetter(1)

_COLS = {m: f"    {'STARTPC':<7}{'[m]' if m else '   ':<8} {'CFA':<10}{'FP':<10}{'RA':<13}"
         for m in (False, True)}


class _Rows:
    """Renders FDEs of one section; see dump_chunks."""

    def __init__(self, dec: Decoder, vma: int, out: list[str]) -> None:
        """Rendered FDEs are appended to `out` (the caller joins and clears it)."""
        h = self.h = dec.header
        self.dec, self.vma = dec, vma
        self.v3 = h.version == constants.VERSION_3
        self.blocks = FreBlocks(dec)
        # honour_fdeoff=False: libsframe's PC-relative base ignores fdeoff.
        pcs = Columns(dec.data, h, 0, h.num_fdes).pcs(h, vma, honour_fdeoff=False)
        self.pcs = list(map(and_, pcs, repeat(_U64)))
        # No row address can pass 2**64 (starts are < 2**32): no per-FDE wrap test.
        self.no_wrap = not self.pcs or max(self.pcs) + 0xFFFFFFFF <= _U64
        self.suffixes = (_Suffixes(h, False), _Suffixes(h, True))
        self.templates: dict[tuple, str] = {}
        self.pauth = has_pauth(h.abi)
        self.append = out.append

    def render(self, begin: int, stop: int) -> int:
        """Append FDEs begin..stop-1 to the output list; returns stop."""
        self.blocks.run(begin, stop, self._fde_text, self._decoded)
        return stop

    def _decoded(self, i: int, fde: FDE) -> None:  # the decoder's way, errors included
        self.append("\n".join(fde_lines(self.dec, i, fde, self.vma)))

    def _fde_text(self, i: int, rec: tuple, info: int, info2: int, asz: int,
                  toks: Tokens) -> None:
        flex = self.v3 and (info2 & 0x1F) == constants.FDE_TYPE_FLEX
        # The FDE's head and rows are one %-template, shared by every FDE with the same
        # attributes and FREs: only the index, pc, size and row addresses differ.
        key = (info | (0x100 if flex else 0), *map(_REST, toks))
        tmpl = self.templates.get(key)
        if tmpl is None:
            tmpl = self._template(key, flex, info, toks)
        pc, size, append = self.pcs[i], rec[1], self.append
        if size & 0x80000000:
            size = _i32(size)
        if not toks:
            append(tmpl % (i, pc, size))
            return
        starts = (b"".join(map(_START, toks)) if asz == 1
                  else starts_of(toks, asz, self.h.big_endian))
        if info & 0x10:  # pcmask: the rows show the start offsets themselves
            append(tmpl % (i, pc, size, *starts))
        elif self.no_wrap or pc + max(starts) <= _U64:
            append(tmpl % (i, pc, size, *map(add, starts, repeat(pc))))
        else:
            append(tmpl % (i, pc, size, *map(and_, map(add, starts, repeat(pc)), repeat(_U64))))

    def _template(self, key: tuple, flex: bool, info: int,
                  toks: list[tuple[bytes, bytes]]) -> str:
        attrs = ("S" if self.v3 and info & 0x80 else "") + ("F" if flex else "")
        head = "\n    func idx [%d]: pc = %#x, size = %d bytes"
        if attrs:
            head += f', attr = "{attrs}"'
        if self.pauth and (info >> 5) & 1 == constants.PAUTH_KEY_B:
            head += ", pauth = B key"
        head += "\n" + _COLS[bool(info & 0x10)]
        sufs = map(self.suffixes[flex].__getitem__, map(itemgetter(1), toks))
        tmpl = head + "".join("\n    %016x" + t.replace("%", "%%") for t in sufs)
        if len(self.templates) < _MAX_TEMPLATES:
            self.templates[key] = tmpl
        return tmpl
