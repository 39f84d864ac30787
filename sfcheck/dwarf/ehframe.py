"""A lean `.eh_frame` reader: CIEs and FDEs, each FDE's program run to rows (callframe.py).

Only what the SFrame cross-check needs is tracked (the CFA, the RA column and the
FP column), so one FDE costs a single pass over its instruction bytes. pyelftools
decodes the same data some 70 times slower (it builds a row of every register per
location); tests/test_ehframe.py checks this reader against it row by row.

Every read is bounds-checked against the entry it belongs to (cursor.py); anything
malformed raises :class:`EhFrameError` with the offset. Work is bounded too (callframe.py's
MAX_* bounds): an FDE past a bound gets no rows and says why (`RawFde.limit`), so the
cross-check reports it instead of comparing a partial table.
"""

from __future__ import annotations

import os
import struct
from array import array
from types import ModuleType

from ..record import NamedTuple
from . import callframe
from .callframe import (
    EXPRESSION,
    OFFSET,
    REGISTER,
    SAME_VALUE,
    UNDEFINED,
    VAL_EXPRESSION,
    VAL_OFFSET,
    Budget,
    Convert,
    RawCfa,
    RawRule,
    Row,
    WorkBound,
    run,
)
from .cursor import Cursor, EhFrameError

__all__ = ["EhFrameError", "FdeColumns", "RawFde", "Row", "read_columns", "read_eh_frame"]


class RawFde(NamedTuple):  # a tuple: one per FDE, made by the hundred thousand
    offset: int
    start: int
    size: int
    # Rows with pc relative to `start`. FDEs with the same CIE and instruction bytes
    # share one tuple (the program ran once): leaf functions and look-alike functions
    # are most of a large binary.
    rel: tuple[Row, ...]
    limit: str | None = None  # why the program was not run to the end (then no rows)

    @property
    def rows(self) -> tuple[Row, ...]:
        """The rows at absolute addresses."""
        return tuple(r._replace(pc=self.start + r.pc) for r in self.rel)


class Cie:
    __slots__ = ("code_align", "data_align", "fde_enc", "has_z", "program", "program_offset",
                 "initial")

    def __init__(self, code_align: int, data_align: int, fde_enc: int, has_z: bool,
                 program: bytes, program_offset: int) -> None:
        self.code_align, self.data_align = code_align, data_align
        self.fde_enc, self.has_z = fde_enc, has_z
        self.program, self.program_offset = program, program_offset
        # (CFA, RA, FP, remember stack) after the initial instructions: run once per CIE
        self.initial: tuple | None = None


class FdeColumns:
    """The FDEs of a section in section order, as columns: a machine word per FDE and
    field rather than a RawFde tuple and its int objects (a large library has a million
    FDEs, and the cross-check keeps them all). `rels[k]` is RawFde.rel; `limits` maps the
    index of each FDE a work bound stopped to why (those, and only those, have no rows:
    a program run to its end always gives one)."""

    __slots__ = ("offsets", "starts", "sizes", "rels", "limits")

    def __init__(self) -> None:
        self.offsets = array("q")
        self.starts = array("Q")  # masked to the address size: they fit
        self.sizes = array("Q")
        self.rels: list[tuple[Row, ...]] = []
        self.limits: dict[int, str] = {}

    def __len__(self) -> int:
        return len(self.rels)


def read_eh_frame(data: bytes, vma: int, big_endian: bool, address_size: int,
                  ra_column: int, fp_column: int, convert: Convert | None = None,
                  ) -> list[RawFde]:
    """Every FDE of the section with its rows (sorted by pc, one per location); with
    `convert`, each distinct rule triple is converted once and rows carry the result."""
    c = read_columns(data, vma, big_endian, address_size, ra_column, fp_column, convert)
    return [RawFde(*f, c.limits.get(k))
            for k, f in enumerate(zip(c.offsets, c.starts, c.sizes, c.rels, strict=True))]


def _load_cfirun() -> ModuleType | None:
    """The C reader of the common case, unless SFCHECK_PURE_PYTHON is set (to anything) or
    it was not built."""
    if "SFCHECK_PURE_PYTHON" in os.environ:
        return None
    try:
        from . import _cfirun
    except ImportError:
        return None
    return _cfirun


# The one switch between the readers, read once at import (tests replace it).
CFIRUN = _load_cfirun()

# _cfirun's rule kinds, by number (0: no rule).
_KINDS = (None, UNDEFINED, SAME_VALUE, OFFSET, VAL_OFFSET, REGISTER, EXPRESSION, VAL_EXPRESSION)
_ROW = struct.Struct("=7q")


def read_columns(data: bytes, vma: int, big_endian: bool, address_size: int,
                 ra_column: int, fp_column: int, convert: Convert | None = None,
                 ) -> FdeColumns:
    """read_eh_frame's FDEs as columns."""
    if CFIRUN is not None:
        # Bounds the C reader keeps under, so that no work bound can be met on its path:
        # the programs' bytes (each row takes an instruction byte, plus one per FDE)
        # against the file's bounds, one program's against the per-FDE row bound. Read
        # from callframe at each call: the bounds are its (tests lower them).
        got = CFIRUN.scan(data, vma, big_endian, address_size, ra_column, fp_column,
                          min(callframe.MAX_FILE_OPS, callframe.MAX_FILE_ROWS),
                          callframe.MAX_FDE_ROWS - 1)
        if got is not None:
            return _scanned(got, data, vma, big_endian, address_size, ra_column, fp_column,
                            convert)
    return _read_columns(data, vma, big_endian, address_size, ra_column, fp_column, convert)


def _scanned(got: tuple, data: bytes, vma: int, big: bool, address_size: int,
             ra_column: int, fp_column: int, convert: Convert | None) -> FdeColumns:
    """read_columns from _cfirun.scan's columns and rows; the programs it left (a tuple)
    run here, in section order, as read_columns runs them."""
    offsets, starts, sizes, index, descs = got
    out = FdeColumns()
    out.offsets.frombytes(offsets)
    out.starts.frombytes(starts)
    out.sizes.frombytes(sizes)
    budget = Budget(convert)
    cies: dict[int, Cie] = {}
    made: list[tuple[Row, ...]] = []
    for desc in descs:
        if type(desc) is bytes:
            made.append(_rows(desc, data, convert, budget.converted))
            continue
        cie_at, prog_at, end, start = desc
        cie = cies.get(cie_at)
        if cie is None:
            cie = _cie_at(data, cie_at, cie_at, vma, big, address_size, cies)
        made.append(run(cie, data[prog_at:end], prog_at, start, vma, address_size, big,
                        ra_column, fp_column, budget)[0])
    out.rels = list(map(made.__getitem__, array("q", index)))
    return out


def _rule(kind: int, value: int, data: bytes) -> RawRule:
    if kind >= 6:  # an expression: its block's place in data
        at = value >> 32
        return _KINDS[kind], data[at:at + (value & 0xFFFFFFFF)]
    return (_KINDS[kind], value if kind >= 3 else None) if kind else None


def _rows(desc: bytes, data: bytes, convert: Convert | None, converted: dict,
          ) -> tuple[Row, ...]:
    """_cfirun's rows as callframe's advance() makes them (raw, or converted and
    interned in `converted`)."""
    rows = []
    for loc, cfa_reg, cfa_off, ra_k, ra_v, fp_k, fp_v in _ROW.iter_unpack(desc):
        if cfa_reg == -2:  # an expression
            cfa: RawCfa = data[cfa_off >> 32:(cfa_off >> 32) + (cfa_off & 0xFFFFFFFF)]
        else:
            cfa = (cfa_reg, cfa_off)
        ra = _rule(ra_k, ra_v, data) if ra_k else None
        fp = _rule(fp_k, fp_v, data) if fp_k else None
        if convert is None:
            rows.append(Row(loc, cfa, ra, fp))
            continue
        key = (cfa, ra, fp)
        got = converted.get(key)
        if got is None:
            got = converted[key] = (convert(*key), {})
        row = got[1].get(loc)
        if row is None:
            rules = got[0]
            row = got[1][loc] = Row(loc, rules[0], rules[1], rules[2])
        rows.append(row)
    return tuple(rows)


def _read_columns(data: bytes, vma: int, big_endian: bool, address_size: int,
                  ra_column: int, fp_column: int, convert: Convert | None = None,
                  ) -> FdeColumns:
    """read_columns in Python: the reference, and every case _cfirun leaves."""
    out = FdeColumns()
    add_offset, add_start = out.offsets.append, out.starts.append
    add_size, add_rel, limits = out.sizes.append, out.rels.append, out.limits
    budget = Budget(convert)
    cies: dict[int, Cie] = {}
    # (CIE content, program) -> rows: every object file brings its own copy of the same
    # CIE, so programs are shared by what the CIE says, not where it is.
    ran: dict[tuple, tuple[Row, ...]] = {}
    pos, n = 0, len(data)
    o = ">" if big_endian else "<"
    # What nearly every FDE is: 32-bit length and CIE pointer, pcrel sdata4 start and
    # size (DW_EH_PE_pcrel | sdata4, 0x1b), a one-byte augmentation length.
    common = struct.Struct(o + "IiiB")
    mask = (1 << (8 * address_size)) - 1
    length_at = struct.Struct(o + "I").unpack_from  # (not a format string per entry)
    while pos + 4 <= n:
        length = length_at(data, pos)[0]
        if length == 0:  # a terminator (ld writes one; some objects carry several)
            pos += 4
            continue
        hdr, id_size = 4, 4
        if length == 0xFFFFFFFF:
            if pos + 12 > n:
                raise EhFrameError("64-bit length cut short", pos)
            length = struct.unpack_from(o + "Q", data, pos + 4)[0]
            hdr, id_size = 12, 8
        body, end = pos + hdr, pos + hdr + length
        if end > n or length < id_size:
            raise EhFrameError(f"entry of {length:#x} bytes runs past the section", pos)
        cie = None
        if hdr == 4 and body + 13 <= end:
            ident, rel_start, rel_size, aug = common.unpack_from(data, body)
            cie = cies.get(body - ident) if ident else None
        if cie is not None and cie.fde_enc == 0x1B and cie.has_z and aug < 0x80 and (
                body + 13 + aug <= end):
            start = (vma + body + 4 + rel_start) & mask
            size = rel_size & mask
            prog_at = body + 13 + aug
        else:  # anything else, field by field (with the errors located)
            c = Cursor(data, body, end, big_endian)
            ident = c.fixed("Q" if id_size == 8 else "I", id_size)
            if ident == 0:
                cies[pos] = _cie(c, vma, address_size)
                pos = end
                continue
            cie_at = body - ident
            cie = cies.get(cie_at)
            if cie is None:
                cie = _cie_at(data, cie_at, body, vma, big_endian, address_size, cies)
            start = c.pointer(cie.fde_enc, vma, address_size)
            size = c.pointer(cie.fde_enc & 0x0F, vma, address_size)
            if cie.has_z:
                c.block()
            prog_at = c.pos
        program = data[prog_at:end]
        key = (cie.code_align, cie.data_align, cie.program, program)
        rows = ran.get(key)
        limit = None
        if rows is None:
            try:
                rows, position_free = run(cie, program, prog_at, start, vma, address_size,
                                           big_endian, ra_column, fp_column, budget)
            except WorkBound as exc:
                rows, position_free, limit = (), False, str(exc)
            if position_free:
                ran[key] = rows
        if limit is not None:
            limits[len(out.rels)] = limit
        add_offset(pos)
        add_start(start)
        add_size(size)
        add_rel(rows)
        pos = end
    return out


def _cie_at(data: bytes, at: int, where: int, vma: int, big: bool, address_size: int,
            cies: dict[int, Cie]) -> Cie:
    """A CIE an FDE (whose CIE pointer is at `where`) points at that the walk has not met."""
    if not 0 <= at <= len(data) - 8:
        raise EhFrameError(f"FDE's CIE pointer leads outside the section ({at:#x})", where)
    length = struct.unpack_from((">" if big else "<") + "I", data, at)[0]
    if length in (0, 0xFFFFFFFF) or at + 4 + length > len(data):
        raise EhFrameError(f"FDE's CIE pointer does not lead to a CIE ({at:#x})", where)
    c = Cursor(data, at + 4, at + 4 + length, big)
    if c.fixed("I", 4) != 0:
        raise EhFrameError(f"FDE's CIE pointer leads to an FDE ({at:#x})", where)
    cies[at] = _cie(c, vma, address_size)
    return cies[at]


def _cie(c: Cursor, vma: int, address_size: int) -> Cie:
    version = c.u8()
    if version not in (1, 3, 4):
        raise EhFrameError(f"CIE version {version}", c.pos - 1)
    aug = c.cstring()
    if b"eh" in aug:
        c.need(address_size)
    if version == 4:
        c.need(2)  # address_size, segment_selector_size
    code_align, data_align = c.uleb(), c.sleb()
    c.u8() if version == 1 else c.uleb()  # the CIE's RA column: the ABI's is used
    fde_enc, has_z = 0x00, aug.startswith(b"z")
    if has_z:
        aug_data = c.block()
        ac = Cursor(aug_data, 0, len(aug_data), c.o == ">", c.pos - len(aug_data))
        for ch in aug[1:].decode("latin-1"):
            if ch == "R":
                fde_enc = ac.u8()
            elif ch == "P":
                ac.pointer(ac.u8() & 0x7F, 0, address_size)
            elif ch == "L":
                ac.u8()
            elif ch in "SBG":  # signal frame, BTI, MTE: no data
                continue
            else:  # unknown: the z length lets us skip the rest safely
                break
    return Cie(code_align, data_align, fde_enc, has_z, c.data[c.pos:c.end], c.pos)
