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
from ..wording import plural
from . import constants as C
from .bounds import block_starts_within, fres_fit, min_fres_len, over_budget
from .fre_info_table import INFO
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
def _fre_shapes(big_endian: bool, asz: int) -> tuple[tuple[int, ...], tuple[Callable, ...]]:
    """Per fre_info byte: the FRE's whole length with an `asz`-byte start address, and an
    unpack_from of (start, info, *words). Size code 3 gets length 1 << 62 (never fits), so
    one comparison per FRE covers both the bounds and the size code."""
    lens: list[int] = []
    unpacks: list[Callable] = []
    for fi in INFO:
        if not fi.valid:
            lens.append(1 << 62)
            unpacks.append(_struct(big_endian, _ADDR_CODE[asz] + "B").unpack_from)
            continue
        lens.append(asz + 1 + fi.data_len)
        unpacks.append(_struct(big_endian, _ADDR_CODE[asz] + "B"
                               + _WORD_CODE[fi.word_size] * fi.count).unpack_from)
    return tuple(lens), tuple(unpacks)


# FRE is a frozen slots dataclass: its generated __init__ sets each field through
# object.__setattr__, most of a decoded FRE's cost. The slot descriptors set the same
# fields directly (tests/test_format_props.py compares decoded FREs with built ones).
_new, _FRE = object.__new__, FRE
_set_start, _set_info = FRE.start.__set__, FRE.info.__set__  # type: ignore[attr-defined]
_set_words, _set_offset = FRE.words.__set__, FRE.offset.__set__  # type: ignore[attr-defined]


def byte_order(data: bytes) -> bool:
    """True for big-endian data, from the magic; DecodeError when it is not SFrame."""
    if len(data) < 2:
        raise DecodeError(f"section of {plural(len(data), 'byte')} is too short for the SFrame "
                          "magic", 0, "preamble", "sfp_magic")
    magic = bytes(data[:2])
    if magic == C.MAGIC_LE:
        return False
    if magic == C.MAGIC_BE:
        return True
    raise DecodeError(f"bad magic 0x{magic.hex()} (expected 0xdee2 in either byte order)",
                      0, "preamble", "sfp_magic")


_HEADERS: dict[bytes, Header] = {}
_HEADERS_MAX = 1024


def decode_header(data: bytes) -> Header:
    """The header of `data`; DecodeError when it is not SFrame or is cut short.

    A Header depends only on the bytes it is read from, so headers are kept by those
    bytes: the checker, dumper and unwinder each read the same section's header."""
    if len(data) < C.HEADER_SIZE:
        return _decode_header(data)  # raises
    key = bytes(data[:C.HEADER_SIZE + data[7]])
    got = _HEADERS.get(key)
    if got is not None:
        return got
    h = _decode_header(data)
    if len(_HEADERS) >= _HEADERS_MAX:
        _HEADERS.clear()
    _HEADERS[key] = h
    return h


def _decode_header(data: bytes) -> Header:
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
                  freoff=freoff, big_endian=big, auxhdr=bytes(auxhdr))


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
    """Random access to one section's FDEs and FREs; nothing is decoded until asked for.

    `header`, when given, must be decode_header(data) (a caller that has it already)."""

    def __init__(self, data: bytes, header: Header | None = None) -> None:
        self.data = bytes(data)
        self.header = h = header or decode_header(self.data)
        self.reader = Reader(self.data, h.big_endian)
        self._fde_struct = _struct(h.big_endian, _FDE_FMT[h.version])
        self._attr_struct = _struct(h.big_endian, _ATTR_FMT)
        self._fdes_start, self._fde_size, self._v3 = h.fdes_start, h.fde_size, h.version == 3
        # FREs are read up to the claimed end of the FRE sub-section, but never
        # past the bytes that exist, whatever fre_len says.
        self.fre_limit = min(h.fres_end, len(self.data))

    def __len__(self) -> int:
        return self.header.num_fdes

    def fde_offset(self, index: int) -> int:
        return self._fdes_start + index * self._fde_size

    def fde(self, index: int, with_fres: bool = True) -> FDE:
        """Decode FDE `index` (with its v3 attribute record and, optionally, its FREs)."""
        h = self.header
        off = self._fdes_start + index * self._fde_size
        if off < 0 or off + self._fde_size > self.reader.size:
            self.reader.need(off, h.fde_size, f"FDE[{index}]")
        vals = self._fde_struct.unpack_from(self.data, off)
        if self._v3:
            start, size, fre_off = vals
            attr_off = h.fres_start + fre_off
            if (not block_starts_within(fre_off, C.V3_ATTR_SIZE, h.fre_len)
                    or attr_off + C.V3_ATTR_SIZE > self.fre_limit):
                what = f"FDE[{index}]"
                raise DecodeError(
                    f"{what}: attribute record at FRE offset {fre_off:#x} does not fit in the "
                    f"{h.fre_len:#x}-byte FRE sub-section", off + 12, what,
                    "sfdi_func_start_fre_off")
            if attr_off < 0 or attr_off + C.V3_ATTR_SIZE > self.reader.size:
                self.reader.need(attr_off, C.V3_ATTR_SIZE, f"FDE[{index}] attribute")
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
            if not block_starts_within(fre_off, 0, h.fre_len):
                what = f"FDE[{index}]"
                raise DecodeError(
                    f"{what}: first FRE at FRE offset {fre_off:#x} is outside the "
                    f"{h.fre_len:#x}-byte FRE sub-section", off + 8, what,
                    "sfde_func_start_fre_off")
        fres: tuple[FRE, ...] = ()
        if with_fres:
            fres = tuple(self.iter_fres(index, info & 0xF, num_fres, fres_pos))
        # FDE(start, size, info, fres, rep_size, info2, padding, fre_off, num_fres, offset)
        return FDE(start, size, info, fres, rep_size, info2, padding, fre_off, num_fres, off)

    def _fre_run(self, index: int, fre_type: int, count: int, pos: int) -> int:
        """The start-address size of FDE `index`'s FREs, once the FRE type is known and
        `count` FREs of the smallest shape fit from `pos` (else the DecodeError)."""
        asz = C.FRE_ADDR_SIZE.get(fre_type)
        if asz is None:
            where = f"FDE[{index}]"
            raise DecodeError(f"{where}: FRE type {fre_type} is not one of 0, 1, 2",
                              self.fde_offset(index), where, "info")
        limit = self.fre_limit
        if not fres_fit(count, asz, pos, limit):
            where = f"FDE[{index}]"
            raise DecodeError(
                f"{where}: {plural(count, 'FRE')} need at least "
                f"{min_fres_len(count, asz):#x} bytes from "
                f"{pos:#x}, but the FRE sub-section ends at {limit:#x}", pos, where, "num_fres")
        return asz

    def iter_fres(self, index: int, fre_type: int, count: int, pos: int) -> Iterator[FRE]:
        """Decode `count` FREs from section offset `pos`, bounded by the FRE sub-section."""
        asz = self._fre_run(index, fre_type, count, pos)
        limit, data = self.fre_limit, self.data
        lens, unpacks = _fre_shapes(self.header.big_endian, asz)
        fast = FRE is _FRE  # not when a test counts constructions by patching FRE
        # One branch per FRE on the clean path: it runs under the fuzzer's coverage
        # instrumentation, where every branch is a call.
        for j in range(count):
            if pos + asz + 1 > limit:
                self._fre_past(index, j, pos, limit)
            info = data[pos + asz]
            end = pos + lens[info]
            if end > limit:
                self._fre_error(index, j, pos, asz, info, limit)
            vals = unpacks[info](data, pos)
            if fast:  # FRE(start, info, words, pos) without the frozen __init__
                fre = _new(_FRE)
                _set_start(fre, vals[0])
                _set_info(fre, info)
                _set_words(fre, vals[2:])
                _set_offset(fre, pos)
                yield fre
            else:
                yield FRE(vals[0], info, vals[2:], pos)
            pos = end

    def fde_rows(self, index: int) -> tuple[FDE, list[int], list[tuple[int, tuple[int, ...]]]]:
        """FDE `index` without FRE objects: its record (fres empty), its FREs' starts and
        each FRE's (info byte, data words), with fde()'s bounds and DecodeErrors. For readers
        of many FDEs that need no FRE object (the reader models' probes)."""
        fde = self.fde(index, with_fres=False)
        pos = self.header.fres_start + fde.fre_off + (C.V3_ATTR_SIZE if self._v3 else 0)
        count = fde.num_fres
        asz = self._fre_run(index, fde.info & 0xF, count, pos)
        limit, data = self.fre_limit, self.data
        lens, unpacks = _fre_shapes(self.header.big_endian, asz)
        starts: list[int] = []
        rows: list[tuple[int, tuple[int, ...]]] = []
        for j in range(count):
            if pos + asz + 1 > limit:
                self._fre_past(index, j, pos, limit)
            info = data[pos + asz]
            end = pos + lens[info]
            if end > limit:
                self._fre_error(index, j, pos, asz, info, limit)
            vals = unpacks[info](data, pos)
            starts.append(vals[0])
            rows.append((info, vals[2:]))
            pos = end
        return fde, starts, rows

    @staticmethod
    def _fre_past(index: int, j: int, pos: int, limit: int) -> None:
        raise DecodeError(f"FDE[{index}]: FRE {j} at {pos:#x} runs past the FRE "
                          f"sub-section end {limit:#x}", pos,
                          f"FDE[{index}].FRE[{j}]", "fre_start_addr")

    @staticmethod
    def _fre_error(index: int, j: int, pos: int, asz: int, info: int, limit: int) -> None:
        """The DecodeError of FRE j, whose info byte at pos + asz is read and whose length
        runs past `limit` (or whose size code is 3)."""
        where = f"FDE[{index}].FRE[{j}]"
        fi = INFO[info]
        if not fi.valid:
            raise DecodeError(f"FDE[{index}]: FRE {j} has data-word size code 3 (invalid)",
                              pos + asz, where, "fre_info")
        n, w = fi.count, fi.word_size
        raise DecodeError(
            f"FDE[{index}]: FRE {j}'s {plural(n, 'data word')} of {plural(w, 'byte')} run past "
            f"the FRE sub-section end {limit:#x}", pos + asz + 1, where, "data words")

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
        walked = 0
        for i in range(h.num_fdes):
            fde = self.fde(i)
            first, end = self.fre_span(fde)
            walked += end - first
            if over_budget(walked, h.fre_len):
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
    end = h.data_end
    return Section(header=h, fdes=fdes, trailing=dec.data[end:])
