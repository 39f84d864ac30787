"""Decode SFrame v1, v2 and v3 sections into the model.

Every read is bounds-checked, and every count field is checked against the
bytes that exist before it drives a loop, so a 40-byte section claiming
2**32-1 FDEs fails at once with a located DecodeError.
"""

from __future__ import annotations

import struct
from collections.abc import Callable, Iterator
from functools import cache

from ..errors import DecodeError
from . import constants as C
from .layout import fre_size
from .model import FDE, FRE, Header, Section
from .reader import Reader

_HEADER_FIELDS = "HBBBbbBIIIII"


@cache
def _struct(big_endian: bool, fmt: str) -> struct.Struct:
    return struct.Struct((">" if big_endian else "<") + fmt)


_FDE_FMT = {C.VERSION_1: "iIIIB", C.VERSION_2: "iIIIBBH", C.VERSION_3: "qII"}
_ATTR_FMT = "HBBB"
_WORD_CODE = {1: "b", 2: "h", 4: "i"}
_ADDR_CODE = {1: "B", 2: "H", 4: "I"}


@cache
def _info_shapes(big_endian: bool) -> tuple[tuple[int, int, Callable] | None, ...]:
    """fre_info byte -> (word count, word size, unpack_from of the words); None for size
    code 3."""
    out: list[tuple[int, int, Callable] | None] = []
    for info in range(256):
        code = (info >> 5) & 3
        if code == 3:
            out.append(None)
            continue
        n, w = (info >> 1) & 0xF, C.WORD_SIZE[code]
        out.append((n, w, _struct(big_endian, _WORD_CODE[w] * n).unpack_from))
    return tuple(out)


# FRE is a frozen slots dataclass: its generated __init__ sets each field through
# object.__setattr__, most of a decoded FRE's cost. The slot descriptors set the same
# fields directly (tests/test_format_props.py compares decoded FREs with built ones).
_new, _FRE = object.__new__, FRE
_set_start, _set_info = FRE.start.__set__, FRE.info.__set__  # type: ignore[attr-defined]
_set_words, _set_offset = FRE.words.__set__, FRE.offset.__set__  # type: ignore[attr-defined]


def byte_order(data: bytes) -> bool:
    """True for big-endian data, from the magic; DecodeError when it is not SFrame."""
    if len(data) < 2:
        raise DecodeError(f"section of {len(data)} byte(s) is too short for the SFrame magic",
                          0, "preamble", "sfp_magic")
    magic = bytes(data[:2])
    if magic == C.MAGIC_LE:
        return False
    if magic == C.MAGIC_BE:
        return True
    raise DecodeError(f"bad magic 0x{magic.hex()} (expected 0xdee2 in either byte order)",
                      0, "preamble", "sfp_magic")


def decode_header(data: bytes) -> Header:
    big = byte_order(data)
    r = Reader(data, big)
    r.need(0, C.HEADER_SIZE, "header")
    (_magic, version, flags, abi, fixed_fp, fixed_ra, aux_len, num_fdes, num_fres, fre_len,
     fdeoff, freoff) = _struct(big, _HEADER_FIELDS).unpack_from(data, 0)
    if version not in C.VERSIONS:
        raise DecodeError(f"unknown SFrame version {version}", 2, "preamble", "sfp_version")
    auxhdr = r.bytes(C.HEADER_SIZE, aux_len, "auxiliary header", "sfh_auxhdr_len")
    return Header(version=version, flags=flags, abi=abi, fixed_fp=fixed_fp, fixed_ra=fixed_ra,
                  num_fdes=num_fdes, num_fres=num_fres, fre_len=fre_len, fdeoff=fdeoff,
                  freoff=freoff, big_endian=big, auxhdr=auxhdr)


def check_fde_array(header: Header, size: int) -> None:
    """The whole FDE array must exist before any FDE is read."""
    need = header.num_fdes * header.fde_size
    if header.fdes_start + need > size:
        raise DecodeError(
            f"{header.num_fdes} FDEs of {header.fde_size} bytes need {need:#x} bytes at "
            f"{header.fdes_start:#x}, but the section has {size:#x} bytes",
            8, "header", "sfh_num_fdes")


def check_fre_subsection(header: Header, size: int) -> None:
    if header.fres_end > size:
        raise DecodeError(
            f"FRE sub-section [{header.fres_start:#x}, {header.fres_end:#x}) runs past the end "
            f"of the {size:#x}-byte section", 0x10, "header", "sfh_fre_len")


class Decoder:
    """Random access to one section's FDEs and FREs; nothing is decoded until asked for."""

    def __init__(self, data: bytes) -> None:
        self.data = bytes(data)
        self.header = decode_header(self.data)
        self.reader = Reader(self.data, self.header.big_endian)
        h = self.header
        self._fde_struct = _struct(h.big_endian, _FDE_FMT[h.version])
        self._attr_struct = _struct(h.big_endian, _ATTR_FMT)
        # FREs are read up to the claimed end of the FRE sub-section, but never
        # past the bytes that exist, whatever fre_len says.
        self.fre_limit = min(h.fres_end, len(self.data))

    def __len__(self) -> int:
        return self.header.num_fdes

    def fde_offset(self, index: int) -> int:
        return self.header.fdes_start + index * self.header.fde_size

    def fde(self, index: int, with_fres: bool = True) -> FDE:
        """Decode FDE `index` (with its v3 attribute record and, optionally, its FREs)."""
        h = self.header
        off = self.fde_offset(index)
        what = f"FDE[{index}]"
        self.reader.need(off, h.fde_size, what)
        vals = self._fde_struct.unpack_from(self.data, off)
        if h.version == C.VERSION_3:
            start, size, fre_off = vals
            attr_off = h.fres_start + fre_off
            if (fre_off + C.V3_ATTR_SIZE > h.fre_len
                    or attr_off + C.V3_ATTR_SIZE > self.fre_limit):
                raise DecodeError(
                    f"{what}: attribute record at FRE offset {fre_off:#x} does not fit in the "
                    f"{h.fre_len:#x}-byte FRE sub-section", off + 12, what,
                    "sfdi_func_start_fre_off")
            self.reader.need(attr_off, C.V3_ATTR_SIZE, what + " attribute")
            num_fres, info, info2, rep_size = self._attr_struct.unpack_from(self.data, attr_off)
            fres_pos, padding = attr_off + C.V3_ATTR_SIZE, 0
        else:
            if h.version == C.VERSION_2:
                start, size, fre_off, num_fres, info, rep_size, padding = vals
            else:
                start, size, fre_off, num_fres, info = vals
                rep_size = padding = 0
            info2 = 0
            fres_pos = h.fres_start + fre_off
            if fre_off > h.fre_len:
                raise DecodeError(
                    f"{what}: first FRE at FRE offset {fre_off:#x} is outside the "
                    f"{h.fre_len:#x}-byte FRE sub-section", off + 8, what,
                    "sfde_func_start_fre_off")
        fres: tuple[FRE, ...] = ()
        if with_fres:
            fres = tuple(self.iter_fres(index, info & 0xF, num_fres, fres_pos))
        return FDE(start=start, size=size, info=info, fres=fres, rep_size=rep_size, info2=info2,
                   padding=padding, fre_off=fre_off, num_fres=num_fres, offset=off)

    def iter_fres(self, index: int, fre_type: int, count: int, pos: int) -> Iterator[FRE]:
        """Decode `count` FREs from section offset `pos`, bounded by the FRE sub-section."""
        h = self.header
        where = f"FDE[{index}]"
        asz = C.FRE_ADDR_SIZE.get(fre_type)
        if asz is None:
            raise DecodeError(f"{where}: FRE type {fre_type} is not one of 0, 1, 2",
                              self.fde_offset(index), where, "info")
        limit = self.fre_limit
        if count * (asz + 1) > limit - pos:
            raise DecodeError(
                f"{where}: {count} FREs need at least {count * (asz + 1):#x} bytes from "
                f"{pos:#x}, but the FRE sub-section ends at {limit:#x}", pos, where, "num_fres")
        data = self.data
        addr_unpack = _struct(h.big_endian, _ADDR_CODE[asz]).unpack_from
        shapes = _info_shapes(h.big_endian)
        fast = FRE is _FRE  # not when a test counts constructions by patching FRE
        for j in range(count):
            if pos + asz + 1 > limit:
                raise DecodeError(f"{where}: FRE {j} at {pos:#x} runs past the FRE sub-section "
                                  f"end {limit:#x}", pos, f"{where}.FRE[{j}]", "fre_start_addr")
            start = addr_unpack(data, pos)[0]
            info = data[pos + asz]
            shape = shapes[info]
            if shape is None:
                raise DecodeError(f"{where}: FRE {j} has data-word size code 3 (invalid)",
                                  pos + asz, f"{where}.FRE[{j}]", "fre_info")
            n, w, unpack = shape
            wpos = pos + asz + 1
            end = wpos + n * w
            if end > limit:
                raise DecodeError(
                    f"{where}: FRE {j}'s {n} data word(s) of {w} byte(s) run past the FRE "
                    f"sub-section end {limit:#x}", wpos, f"{where}.FRE[{j}]", "data words")
            words = unpack(data, wpos) if n else ()
            if fast:  # FRE(start, info, words, pos) without the frozen __init__
                fre = _new(_FRE)
                _set_start(fre, start)
                _set_info(fre, info)
                _set_words(fre, words)
                _set_offset(fre, pos)
                yield fre
            else:
                yield FRE(start, info, words, pos)
            pos = end

    def iter_fdes(self) -> Iterator[FDE]:
        """Every FDE with its FREs, in table order, with work bounded by the section size.

        FRE blocks of different FDEs may alias (nothing in the format forbids it), which
        would let a small section make a reader build num_fdes * num_fres rows. A valid
        section uses each FRE byte once, so walking more FRE bytes than the sub-section
        holds is reported as an error instead.
        """
        h = self.header
        check_fde_array(h, len(self.data))
        check_fre_subsection(h, len(self.data))
        budget = h.fre_len
        for i in range(h.num_fdes):
            fde = self.fde(i)
            first, end = self.fre_span(fde)
            budget -= end - first
            if budget < 0:
                raise DecodeError(
                    f"FDE[{i}]: FRE blocks of the FDEs so far use more than the "
                    f"{h.fre_len:#x}-byte FRE sub-section: blocks overlap", first,
                    f"FDE[{i}]", "start_fre_off")
            yield fde

    def fre_span(self, fde: FDE) -> tuple[int, int]:
        """[start, end) section offsets of an FDE's FRE block (v3: including its attribute)."""
        h = self.header
        first = h.fres_start + fde.fre_off
        end = first + (C.V3_ATTR_SIZE if h.version == C.VERSION_3 else 0)
        if fde.fres:
            end = fde.fres[-1].offset + fre_size(fde.fres[-1], fde.fre_type)
        return first, end


def decode(data: bytes) -> Section:
    """Decode a whole section; DecodeError at the first structural problem."""
    dec = Decoder(data)
    h = dec.header
    fdes = tuple(dec.iter_fdes())
    end = max(h.fdes_start + h.num_fdes * h.fde_size, h.fres_end)
    return Section(header=h, fdes=fdes, trailing=dec.data[end:])
