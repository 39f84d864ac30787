"""Write a model back to bytes.

The encoder writes exactly the stored fields it is given (counts, offsets,
info bytes); `layout.build_section` computes them for a section built from
scratch. Values that do not fit their field raise EncodeError.
"""

from __future__ import annotations

import struct

from ..errors import EncodeError
from ..wording import plural
from . import constants as C
from .fre_info_table import INFO
from .model import FDE, FRE, Section


def _pack(order: str, fmt: str, values: tuple[int, ...], what: str) -> bytes:
    try:
        return struct.pack(order + fmt, *values)
    except struct.error as exc:
        raise EncodeError(f"{what}: {exc} (values {values})") from None


def _fit_word(value: int, width: int, what: str) -> int:
    """Words are signed, but flex control words may be given unsigned: accept both."""
    bits = 8 * width
    if not -(1 << (bits - 1)) <= value < (1 << bits):
        raise EncodeError(f"{what}: data word {value} does not fit in {plural(width, 'byte')}")
    return value - (1 << bits) if value >= (1 << (bits - 1)) else value


_FRE_STRUCTS: dict[tuple[str, int, int, int], struct.Struct | None] = {}


def _fre_struct(order: str, fre_type: int, info: int, nwords: int) -> struct.Struct | None:
    """The struct of (start, info, *words) for FREs of this shape, None where encode_fre
    must refuse the shape (unknown FRE type, size code 3, count not len(words))."""
    key = (order, fre_type, info, nwords)
    got = _FRE_STRUCTS.get(key, False)
    if got is False:
        asz = C.FRE_ADDR_SIZE.get(fre_type)
        fi = INFO[info] if 0 <= info < len(INFO) else None  # info past a byte: refused
        if asz is None or fi is None or not fi.valid or fi.count != nwords:
            got = None
        else:
            w = fi.word_size
            got = struct.Struct(order + {1: "B", 2: "H", 4: "I"}[asz] + "B"
                                + {1: "b", 2: "h", 4: "i"}[w] * nwords)
        if len(_FRE_STRUCTS) > 1 << 14:
            _FRE_STRUCTS.clear()
        _FRE_STRUCTS[key] = got
    return got  # type: ignore[return-value]


def encode_fre(fre: FRE, fre_type: int, order: str, what: str = "FRE") -> bytes:
    return _fre_bytes(fre, fre_type, order, what, None)


def _fre_bytes(fre: FRE, fre_type: int, order: str, what: str, j: int | None) -> bytes:
    """FRE j's bytes; errors name `what` (with .FRE[j] when j is given)."""
    # The common case in one struct call: words given signed, start in range. Anything
    # else (unsigned flex control words, a value out of range, a refused shape) takes
    # the checked path, which converts or raises EncodeError.
    st = _fre_struct(order, fre_type, fre.info, len(fre.words))
    if st is not None:
        try:
            return st.pack(fre.start, fre.info, *fre.words)
        except struct.error:
            pass
    return _encode_fre_checked(fre, fre_type, order, what if j is None else f"{what}.FRE[{j}]")


def _encode_fre_checked(fre: FRE, fre_type: int, order: str, what: str) -> bytes:
    asz = C.FRE_ADDR_SIZE.get(fre_type)
    if asz is None:
        raise EncodeError(f"{what}: FRE type {fre_type} has no start-address size")
    if not 0 <= fre.info <= 0xFF:
        raise EncodeError(f"{what}: FRE info {fre.info:#x} does not fit its byte")
    if fre.size_code == 3:
        raise EncodeError(f"{what}: data-word size code 3 cannot be encoded")
    if fre.count != len(fre.words):
        raise EncodeError(f"{what}: info byte says {fre.count} words, {len(fre.words)} given")
    w = fre.word_size
    words = tuple(_fit_word(v, w, what) for v in fre.words)
    code = {1: "B", 2: "H", 4: "I"}[asz]
    wcode = {1: "b", 2: "h", 4: "i"}[w]
    return _pack(order, code + "B" + wcode * len(words), (fre.start, fre.info, *words), what)


def _encode_fde(fde: FDE, version: int, order: str, what: str) -> bytes:
    if version == C.VERSION_1:
        return _pack(order, "iIIIB", (fde.start, fde.size, fde.fre_off, fde.num_fres, fde.info),
                     what)
    if version == C.VERSION_2:
        return _pack(order, "iIIIBBH", (fde.start, fde.size, fde.fre_off, fde.num_fres,
                                        fde.info, fde.rep_size, fde.padding), what)
    return _pack(order, "qII", (fde.start, fde.size, fde.fre_off), what)


def _place(buf: bytearray, pos: int, chunk: bytes) -> None:
    if pos + len(chunk) > len(buf):
        buf.extend(bytes(pos + len(chunk) - len(buf)))
    buf[pos:pos + len(chunk)] = chunk


def encode(section: Section) -> bytes:
    h = section.header
    if h.version not in C.VERSIONS:
        raise EncodeError(f"unknown SFrame version {h.version}")
    if len(h.auxhdr) > 0xFF:
        raise EncodeError("auxiliary header longer than 255 bytes")
    order = ">" if h.big_endian else "<"
    out = bytearray(_pack(order, "HBBBbbBIIIII", (
        C.MAGIC, h.version, h.flags, h.abi, h.fixed_fp, h.fixed_ra, len(h.auxhdr),
        h.num_fdes, h.num_fres, h.fre_len, h.fdeoff, h.freoff), "header"))
    out += h.auxhdr
    fres = bytearray(h.fre_len)
    fdes = bytearray()
    for i, fde in enumerate(section.fdes):
        what = f"FDE[{i}]"
        fdes += _encode_fde(fde, h.version, order, what)
        block = bytearray()
        if h.version == C.VERSION_3:
            block += _pack(order, "HBBB", (fde.num_fres, fde.info, fde.info2, fde.rep_size),
                           what + " attribute")
        fre_type = fde.fre_type
        for j, fre in enumerate(fde.fres):
            block += _fre_bytes(fre, fre_type, order, what, j)
        _place(fres, fde.fre_off, bytes(block))
    _place(out, h.fdes_start, bytes(fdes))
    _place(out, h.fres_start, bytes(fres))
    out += section.trailing
    return bytes(out)
