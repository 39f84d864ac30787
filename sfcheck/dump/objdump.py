"""`objdump --sframe` text, byte for byte (binutils 2.46 sframe-dump.c).

The text starts with the line `Contents of the SFrame section NAME:`. v1
sections print in the same modern style (2.40's own dumper differed in
showing RA as `u` and omitting the `CFA fixed RA offset` line).
"""

from __future__ import annotations

import gc
import re
import struct
from collections.abc import Iterator
from functools import cache
from itertools import repeat
from operator import add, and_, itemgetter

from ..errors import DecodeError
from ..format import constants as C
from ..format import datawords as W
from ..format.decode import Decoder, check_fde_array, check_fre_subsection
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
    for chunk in dump_chunks(data, section_vma, name):
        yield from chunk.split("\n")


_BATCH = 2048  # FDEs per chunk
_MAX_TEMPLATES = 1 << 16  # distinct FRE sequences remembered per section


def dump_chunks(data: bytes, section_vma: int = 0, name: str = ".sframe") -> Iterator[str]:
    """dump_text's lines, several thousand at a time joined by newlines (no final one).

    FDEs whose FRE blocks lie in table order are walked by one regex call each
    (section_fast-style), and each distinct FRE (info byte and data words) is
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
    check_fde_array(h, len(dec.data))
    check_fre_subsection(h, len(dec.data))
    rows = _Rows(dec, section_vma)
    out: list[str] = []
    i, n = 0, h.num_fdes
    while i < n:
        was = gc.isenabled()
        gc.disable()  # one str per FRE and no cycles: collections would only rescan them
        try:
            i = rows.render(i, min(n, i + _BATCH), out)
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
        self.order = ">" if h.big_endian else "<"

    def __missing__(self, key: bytes) -> str:
        info = key[0]
        n = (info >> 1) & 0xF
        w = C.WORD_SIZE[(info >> 5) & 3]
        words = struct.unpack(self.order + {1: "b", 2: "h", 4: "i"}[w] * n, key[1:])
        fre = FRE(0, info, words)
        text = "  RA undefined" if fre.ra_undefined else (
            _flex_row(self.h, fre) if self.flex else _simple_row(self.h, fre))
        self[key] = text
        return text


@cache
def _token_pattern(asz: int) -> re.Pattern[bytes]:
    """Any FRE with an `asz`-byte start: (start bytes, info + data-word bytes); ("", "") for
    a byte where none starts (size code 3)."""
    by_len: dict[int, list[int]] = {}
    for info in range(256):
        code = (info >> 5) & 3
        if code != 3:
            by_len.setdefault(((info >> 1) & 0xF) * C.WORD_SIZE[code], []).append(info)
    alts = [b"[" + b"".join(b"\\x%02x" % i for i in infos) + b"]" + b"." * k
            for k, infos in sorted(by_len.items(), key=lambda kv: (kv[0] == 0, kv[0]))]
    return re.compile(b"(" + b"." * asz + b")(" + b"|".join(alts) + b")|.", re.DOTALL)


# FRE type -> (start-address size, the findall of its token pattern)
_FINDERS = {t: (asz, _token_pattern(asz).findall) for t, asz in C.FRE_ADDR_SIZE.items()}

_COLS = {m: f"    {'STARTPC':<7}{'[m]' if m else '   ':<8} {'CFA':<10}{'FP':<10}{'RA':<13}"
         for m in (False, True)}


class _Rows:
    """Renders FDEs of one section; see dump_chunks."""

    def __init__(self, dec: Decoder, vma: int) -> None:
        h = self.h = dec.header
        self.dec, self.vma = dec, vma
        self.v3 = h.version == C.VERSION_3
        n, fsz = h.num_fdes, h.fde_size
        rec = dec.data[h.fdes_start:h.fdes_start + n * fsz]
        self.recs = list(struct.iter_unpack(dec._fde_struct.format, rec))
        offs = list(map(itemgetter(2), self.recs))
        self.nexts = [h.fres_start + o for o in offs[1:]] + [dec.fre_limit]
        starts = map(itemgetter(0), self.recs)
        # func_start(honour_fdeoff=False): libsframe's PC-relative base ignores fdeoff.
        if h.pcrel:
            pcs = map(add, starts, range(vma + h.size, vma + h.size + n * fsz, fsz))
        else:
            pcs = map(add, starts, repeat(vma))
        self.pcs = list(map(and_, pcs, repeat(_U64)))
        self.suffixes = (_Suffixes(h, False), _Suffixes(h, True))
        self.templates: dict[tuple, str] = {}
        self.budget = h.fre_len
        self.aarch64 = h.abi in (C.ABI_AARCH64_BE, C.ABI_AARCH64_LE)
        self.order = ">" if h.big_endian else "<"

    def render(self, begin: int, stop: int, out: list[str]) -> int:
        """Append FDEs begin..stop-1 to `out`; returns stop."""
        h, dec, data, recs, nexts = self.h, self.dec, self.dec.data, self.recs, self.nexts
        fres_start, fre_len, limit = h.fres_start, h.fre_len, dec.fre_limit
        attr = C.V3_ATTR_SIZE if self.v3 else 0
        attr_struct = dec._attr_struct
        finders = _FINDERS
        fde_text, append = self._fde_text, out.append
        for i in range(begin, stop):
            rec = recs[i]
            off = rec[2]
            first = fres_start + off
            nxt = nexts[i]
            walk_from = first + attr
            toks = None
            if off + attr <= fre_len and walk_from <= nxt <= limit:
                if attr:
                    nf, info, info2, _rep = attr_struct.unpack_from(data, first)
                else:
                    nf, info, info2 = rec[3], rec[4], 0
                found = finders.get(info & 0xF)
                if found is not None:
                    toks = found[1](data, walk_from, nxt)
                    if len(toks) != nf or not all(map(itemgetter(0), toks)):
                        toks = None
            if toks is None:  # the decoder's way, errors included
                fde = dec.fde(i)
                first, end = dec.fre_span(fde)
                self._spend(i, first, end)
                append("\n".join(fde_lines(dec, i, fde, self.vma)))
                continue
            self.budget -= nxt - first
            if self.budget < 0:
                self._spend(i, first, nxt)  # raises
            append(fde_text(i, rec[1], info, info2, found[0], toks))
        return stop

    def _spend(self, i: int, first: int, end: int) -> None:
        """Decoder.iter_fdes' bound on the FRE bytes walked (aliasing blocks)."""
        self.budget -= end - first
        if self.budget < 0:
            raise DecodeError(
                f"FDE[{i}]: FRE blocks of the FDEs so far use more than the "
                f"{self.h.fre_len:#x}-byte FRE sub-section: blocks overlap", first,
                f"FDE[{i}]", "start_fre_off")

    def _fde_text(self, i: int, size: int, info: int, info2: int, asz: int,
                  toks: list[tuple[bytes, bytes]]) -> str:
        flex = self.v3 and (info2 & 0x1F) == C.FDE_TYPE_FLEX
        # The FDE's head and rows are one %-template, shared by every FDE with the same
        # attributes and FREs: only the index, pc, size and row addresses differ.
        key = (info | (0x100 if flex else 0), *map(itemgetter(1), toks))
        tmpl = self.templates.get(key)
        if tmpl is None:
            tmpl = self._template(key, flex, info, toks)
        pc = self.pcs[i]
        if not toks:
            return tmpl % (i, pc, _i32(size))
        if asz == 1:
            starts: bytes | tuple[int, ...] = b"".join(map(itemgetter(0), toks))
        else:
            fmt = self.order + str(len(toks)) + ("H" if asz == 2 else "I")
            starts = struct.unpack(fmt, b"".join(map(itemgetter(0), toks)))
        if info & 0x10:  # pcmask: the rows show the start offsets themselves
            return tmpl % (i, pc, _i32(size), *starts)
        if pc + max(starts) <= _U64:
            return tmpl % (i, pc, _i32(size), *map(add, starts, repeat(pc)))
        return tmpl % (i, pc, _i32(size), *map(and_, map(add, starts, repeat(pc)),
                                                 repeat(_U64)))

    def _template(self, key: tuple, flex: bool, info: int,
                  toks: list[tuple[bytes, bytes]]) -> str:
        attrs = ("S" if self.v3 and info & 0x80 else "") + ("F" if flex else "")
        head = "\n    func idx [%d]: pc = %#x, size = %d bytes"
        if attrs:
            head += f', attr = "{attrs}"'
        if self.aarch64 and (info >> 5) & 1 == C.PAUTH_KEY_B:
            head += ", pauth = B key"
        head += "\n" + _COLS[bool(info & 0x10)]
        sufs = map(self.suffixes[flex].__getitem__, map(itemgetter(1), toks))
        tmpl = head + "".join("\n    %016x" + t.replace("%", "%%") for t in sufs)
        if len(self.templates) < _MAX_TEMPLATES:
            self.templates[key] = tmpl
        return tmpl
