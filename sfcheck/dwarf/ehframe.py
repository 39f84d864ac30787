"""A lean `.eh_frame` reader: CIEs, FDEs and their call-frame programs, run to rows.

Only what the SFrame cross-check needs is tracked (the CFA, the RA column and the
FP column), so one FDE costs a single pass over its instruction bytes. pyelftools
decodes the same data some 70 times slower (it builds a row of every register per
location); tests/test_ehframe.py checks this reader against it row by row.

Every read is bounds-checked against the entry it belongs to; anything malformed
raises :class:`EhFrameError` with the offset. Work is bounded too: a program runs at
most MAX_FDE_OPS instructions into MAX_FDE_ROWS rows, and a file at most MAX_FILE_OPS
instructions into MAX_FILE_ROWS rows; an FDE past a bound gets no rows and says why
(`RawFde.limit`), so the cross-check reports it instead of comparing a partial table.

One module on purpose: the entry walk, the CIE reader and the call-frame interpreter
share the cursor, the CIE state and the work budget; cfi.py (rows to rules), expr.py
and leb128.py are already apart.
"""

from __future__ import annotations

import struct
from array import array
from collections.abc import Callable

from ..errors import SfcheckError
from ..record import NamedTuple
from .leb128 import LebError, leb128

# Register rule kinds, spelled as pyelftools' RegisterRule constants.
UNDEFINED, SAME_VALUE, OFFSET, VAL_OFFSET = "UNDEFINED", "SAME_VALUE", "OFFSET", "VAL_OFFSET"
REGISTER, EXPRESSION, VAL_EXPRESSION = "REGISTER", "EXPRESSION", "VAL_EXPRESSION"

RawRule = tuple[str, object] | None  # (kind, int or expression bytes); None: no rule
RawCfa = tuple[int, int] | bytes  # (register, offset) or a DWARF expression


# Work bounds (hostile input: one FDE of six million advance_loc rows, or many big ones).
# Real compilers write a few rows per function; a huge function has thousands.
MAX_FDE_OPS = 1 << 18
MAX_FDE_ROWS = 1 << 16
MAX_FILE_OPS = 1 << 24
MAX_FILE_ROWS = 1 << 21


class EhFrameError(SfcheckError):
    def __init__(self, message: str, offset: int) -> None:
        super().__init__(f"{message} (at .eh_frame+{offset:#x})")
        self.offset = offset


class Row(NamedTuple):  # a tuple: rows are made by the hundred thousand
    """One row of a call-frame table: the package's one row type. It holds the rules as
    the interpreter tracks them (RawCfa, RawRule) or, when read_eh_frame is given a
    converter, the rules the cross-check compares (sfcheck.dwarf.cfi), made as the
    program runs: no conversion pass afterwards."""

    pc: int
    cfa: object
    ra: object
    fp: object


# (raw CFA, raw RA rule, raw FP rule) -> the (CFA, RA, FP) a row should carry
Convert = Callable[[RawCfa, RawRule, RawRule], tuple]


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


class _Cie:
    __slots__ = ("code_align", "data_align", "fde_enc", "has_z", "program", "program_offset",
                 "initial")

    def __init__(self, code_align: int, data_align: int, fde_enc: int, has_z: bool,
                 program: bytes, program_offset: int) -> None:
        self.code_align, self.data_align = code_align, data_align
        self.fde_enc, self.has_z = fde_enc, has_z
        self.program, self.program_offset = program, program_offset
        # (CFA, RA, FP, remember stack) after the initial instructions: run once per CIE
        self.initial: tuple | None = None


class _Cursor:
    """Bounded little/big-endian reads inside [pos, end)."""

    def __init__(self, data: bytes, pos: int, end: int, big: bool, base: int = 0) -> None:
        self.data, self.pos, self.end, self.o = data, pos, end, ">" if big else "<"
        self.base = base  # section offset of data[0], for error messages

    def need(self, n: int) -> int:
        p = self.pos
        if n < 0 or p + n > self.end:
            raise EhFrameError("entry ends inside a field", self.base + p)
        self.pos = p + n
        return p

    def u8(self) -> int:
        return self.data[self.need(1)]

    def fixed(self, code: str, size: int) -> int:
        return struct.unpack_from(self.o + code, self.data, self.need(size))[0]

    def uleb(self) -> int:
        return self._leb(False)

    def sleb(self) -> int:
        return self._leb(True)

    def _leb(self, signed: bool) -> int:
        try:
            value, self.pos = leb128(self.data, self.pos, self.end, signed)
        except LebError as exc:
            raise EhFrameError("entry ends inside a field" if exc.cut else
                               "LEB128 number too long", self.base + exc.pos) from None
        return value

    def cstring(self) -> bytes:
        end = self.data.find(b"\0", self.pos, self.end)
        if end < 0:
            raise EhFrameError("unterminated augmentation string", self.base + self.pos)
        s = self.data[self.pos:end]
        self.pos = end + 1
        return s

    def block(self) -> bytes:
        n = self.uleb()
        p = self.need(n)
        return self.data[p:p + n]

    def pointer(self, enc: int, vma: int, address_size: int) -> int:
        """A DW_EH_PE-encoded pointer (pcrel relative to the field's address)."""
        field_at = vma + self.base + self.pos
        fmt = enc & 0x0F
        if fmt == 0x00:
            v = self.fixed("Q" if address_size == 8 else "I", address_size)
        elif fmt == 0x01:
            v = self.uleb()
        elif fmt == 0x09:
            v = self.sleb()
        elif fmt in _FIXED:
            code, size = _FIXED[fmt]
            v = self.fixed(code, size)
        else:
            raise EhFrameError(f"pointer encoding {enc:#x} not supported", self.base + self.pos)
        app = enc & 0x70
        if app == 0x10:
            v += field_at
        elif app not in (0x00, 0x50):  # textrel/datarel/funcrel have no base here
            raise EhFrameError(f"pointer application {enc:#x} not supported",
                               self.base + self.pos)
        return v & ((1 << (8 * address_size)) - 1)


_FIXED = {0x02: ("H", 2), 0x03: ("I", 4), 0x04: ("Q", 8),
          0x0A: ("h", 2), 0x0B: ("i", 4), 0x0C: ("q", 8)}


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


def read_columns(data: bytes, vma: int, big_endian: bool, address_size: int,
                 ra_column: int, fp_column: int, convert: Convert | None = None,
                 ) -> FdeColumns:
    """read_eh_frame's FDEs as columns."""
    out = FdeColumns()
    add_offset, add_start = out.offsets.append, out.starts.append
    add_size, add_rel, limits = out.sizes.append, out.rels.append, out.limits
    budget = _Budget(convert)
    cies: dict[int, _Cie] = {}
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
            c = _Cursor(data, body, end, big_endian)
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
                rows, position_free = _run(cie, program, prog_at, start, vma, address_size,
                                           big_endian, ra_column, fp_column, budget)
            except _Bound as exc:
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
            cies: dict[int, _Cie]) -> _Cie:
    """A CIE an FDE (whose CIE pointer is at `where`) points at that the walk has not met."""
    if not 0 <= at <= len(data) - 8:
        raise EhFrameError(f"FDE's CIE pointer leads outside the section ({at:#x})", where)
    length = struct.unpack_from((">" if big else "<") + "I", data, at)[0]
    if length in (0, 0xFFFFFFFF) or at + 4 + length > len(data):
        raise EhFrameError(f"FDE's CIE pointer does not lead to a CIE ({at:#x})", where)
    c = _Cursor(data, at + 4, at + 4 + length, big)
    if c.fixed("I", 4) != 0:
        raise EhFrameError(f"FDE's CIE pointer leads to an FDE ({at:#x})", where)
    cies[at] = _cie(c, vma, address_size)
    return cies[at]


def _cie(c: _Cursor, vma: int, address_size: int) -> _Cie:
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
        ac = _Cursor(aug_data, 0, len(aug_data), c.o == ">", c.pos - len(aug_data))
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
    return _Cie(code_align, data_align, fde_enc, has_z, c.data[c.pos:c.end], c.pos)


class _Bound(Exception):
    """A work bound was reached: the message says which."""


class _Budget:
    """What the rest of the file may still spend (instructions run, rows made)."""

    __slots__ = ("ops", "rows", "convert", "converted")

    def __init__(self, convert: Convert | None) -> None:
        self.ops, self.rows = MAX_FILE_OPS, MAX_FILE_ROWS
        # The file's rule converter and its memo (raw triple -> (converted triple, rows
        # with those rules by pc)).
        self.convert, self.converted = convert, {}

    def charge(self, ops: int, rows: int) -> None:
        self.ops -= ops
        self.rows -= rows
        if self.ops < 0 or self.rows < 0:
            self.ops = self.rows = -1  # stays spent: every later FDE says so
            raise _Bound(f"per-file CFI work bound reached ({MAX_FILE_OPS} instructions, "
                         f"{MAX_FILE_ROWS} rows)")


def _run(cie: _Cie, program: bytes, program_at: int, start: int, vma: int,
         address_size: int, big: bool, ra_col: int, fp_col: int, budget: _Budget,
         ) -> tuple[tuple[Row, ...], bool]:
    """Run the CIE's initial instructions, then the FDE's, into rows at pcs relative to
    `start`; and whether those rows depend on nothing but the program (no DW_CFA_set_loc,
    whose operand is an address). _Bound when a work bound stops it."""
    if budget.ops < 0:
        budget.charge(0, 0)
    if cie.initial is None:
        first = _State(ra_col, fp_col, budget)
        _charged(budget, first, cie, cie.program, cie.program_offset, None, vma, address_size,
                 big)
        cie.initial = (first.cfa, first.ra, first.fp, tuple(first.stack))
    state = _State(ra_col, fp_col, budget)
    state.cfa, state.ra, state.fp, stack = cie.initial
    state.stack = list(stack)
    state.initial = (state.ra, state.fp)
    state.loc = 0
    _charged(budget, state, cie, program, program_at, start, vma, address_size, big)
    state.emit()
    return tuple(state.rows), not state.set_loc


def _charged(budget: _Budget, st: _State, cie: _Cie, program: bytes, at: int,
             fde_start: int | None, vma: int, address_size: int, big: bool) -> None:
    """_exec, charging the file's budget with what it spent, also when a bound stops it."""
    try:
        _exec(cie, program, at, st, fde_start, vma, address_size, big)
    except _Bound:
        budget.charge(max(st.ops, MAX_FDE_OPS), len(st.rows))
        raise
    budget.charge(st.ops, len(st.rows))


class _State:
    __slots__ = ("ra_col", "fp_col", "cfa", "ra", "fp", "initial", "stack", "loc", "rows",
                 "last", "set_loc", "ops", "convert", "converted")

    def __init__(self, ra_col: int, fp_col: int, budget: _Budget) -> None:
        self.convert, self.converted = budget.convert, budget.converted
        self.ra_col, self.fp_col = ra_col, fp_col
        self.cfa: RawCfa = (-1, 0)
        self.ra: RawRule = None
        self.fp: RawRule = None
        self.initial: tuple[RawRule, RawRule] = (None, None)
        self.stack: list[tuple[RawCfa, RawRule, RawRule]] = []
        self.loc = 0
        self.rows: list[Row] = []
        self.last = -1  # the pc of the last row (pcs are offsets: never negative)
        self.set_loc = False
        self.ops = 0  # instructions run (set by _exec)

    def set(self, reg: int, rule: RawRule) -> None:
        if reg == self.ra_col:
            self.ra = rule
        if reg == self.fp_col:
            self.fp = rule

    def restore(self, reg: int) -> None:
        if reg == self.ra_col:
            self.ra = self.initial[0]
        if reg == self.fp_col:
            self.fp = self.initial[1]

    def emit(self) -> None:
        """The row at `loc` (replacing the last one when it is at `loc` too: an advance by
        zero)."""
        loc = self.loc
        row = Row(loc, self.cfa, self.ra, self.fp) if self.convert is None else self._interned(loc)
        if loc == self.last:
            self.rows[-1] = row
        else:
            self.rows.append(row)
            self.last = loc

    def _interned(self, loc: int) -> Row:
        # Rows are interned too: a (pc, rules) row recurs in program after program (a
        # million FDEs of a large library hold a few hundred distinct rows).
        key = (self.cfa, self.ra, self.fp)
        got = self.converted.get(key)
        if got is None:
            got = self.converted[key] = (self.convert(*key), {})
        row = got[1].get(loc)
        if row is None:
            rules = got[0]
            row = got[1][loc] = Row(loc, rules[0], rules[1], rules[2])
        return row

    def advance(self, to: int) -> None:
        """emit(), then move to `to`: written out once more, as it runs once per row."""
        loc = self.loc
        if self.convert is None:
            row = Row(loc, self.cfa, self.ra, self.fp)
        else:
            key = (self.cfa, self.ra, self.fp)
            got = self.converted.get(key)
            if got is None:
                got = self.converted[key] = (self.convert(*key), {})
            row = got[1].get(loc)
            if row is None:
                rules = got[0]
                row = got[1][loc] = Row(loc, rules[0], rules[1], rules[2])
        rows = self.rows
        if loc == self.last:
            rows[-1] = row
        else:
            rows.append(row)
            self.last = loc
            if len(rows) > MAX_FDE_ROWS:
                raise _Bound(f"more than {MAX_FDE_ROWS} CFI rows in one FDE")
        self.loc = to


def _exec(cie: _Cie, program: bytes, at: int, st: _State, fde_start: int | None, vma: int,
          address_size: int, big: bool) -> None:
    c = _Cursor(program, 0, len(program), big, at)
    caf, daf = cie.code_align, cie.data_align
    in_fde = fde_start is not None
    n = len(program)
    # Every instruction is at least one byte: past MAX_FDE_OPS bytes, count them.
    counted = n > MAX_FDE_OPS
    ops = 0
    ra_col, fp_col = st.ra_col, st.fp_col
    while c.pos < n:
        p = c.pos
        # Fast paths for what compilers write most, with the position in a local: advance_loc,
        # and def_cfa_offset / offset with a one-byte operand (an offset only builds its
        # rule for a register tracked).
        while p < n:
            op = program[p]
            if counted:
                ops += 1
                if ops > MAX_FDE_OPS:
                    raise _Bound(f"more than {MAX_FDE_OPS} CFI instructions in one FDE")
            if op & 0xC0 == 0x40:
                p += 1
                if in_fde:
                    st.advance(st.loc + (op & 0x3F) * caf)
                continue
            if p + 1 < n and program[p + 1] < 0x80:
                if op == 0x0E:
                    cfa = st.cfa
                    st.cfa = (cfa[0] if isinstance(cfa, tuple) else -1, program[p + 1])
                    p += 2
                    continue
                if op & 0xC0 == 0x80:
                    reg = op & 0x3F
                    if reg in (ra_col, fp_col):
                        st.set(reg, (OFFSET, program[p + 1] * daf))
                    p += 2
                    continue
            break  # (counted already) the general path below
        else:
            break  # the end of the program
        op_at = at + p
        c.pos = p + 1
        hi, lo = op & 0xC0, op & 0x3F
        if hi == 0x40:
            if in_fde:
                st.advance(st.loc + lo * caf)
            continue
        if hi == 0x80:
            st.set(lo, (OFFSET, c.uleb() * daf))
            continue
        if hi == 0xC0:
            st.restore(lo)
            continue
        if op == 0x00:  # nop
            continue
        if op in (0x02, 0x03, 0x04):  # advance_loc1/2/4
            delta = c.u8() if op == 0x02 else c.fixed("H" if op == 0x03 else "I",
                                                        2 if op == 0x03 else 4)
            if in_fde:
                st.advance(st.loc + delta * caf)
        elif op == 0x01:  # set_loc
            to = c.pointer(cie.fde_enc, vma, address_size)
            if in_fde:
                st.set_loc = True
                st.advance(to - fde_start)
        elif op in (0x05, 0x11, 0x14, 0x15, 0x2F):  # offset forms
            reg = c.uleb()
            raw = c.sleb() if op in (0x11, 0x15) else c.uleb()
            off = -raw * daf if op == 0x2F else raw * daf
            st.set(reg, (VAL_OFFSET if op in (0x14, 0x15) else OFFSET, off))
        elif op == 0x06:
            st.restore(c.uleb())
        elif op == 0x07:
            st.set(c.uleb(), (UNDEFINED, None))
        elif op == 0x08:
            st.set(c.uleb(), (SAME_VALUE, None))
        elif op == 0x09:
            reg = c.uleb()
            st.set(reg, (REGISTER, c.uleb()))
        elif op == 0x0A:
            if len(st.stack) > 4096:
                raise EhFrameError("remember_state nested too deep", op_at)
            st.stack.append((st.cfa, st.ra, st.fp))
        elif op == 0x0B:
            if not st.stack:
                raise EhFrameError("restore_state without remember_state", op_at)
            st.cfa, st.ra, st.fp = st.stack.pop()
        elif op == 0x0C:
            reg = c.uleb()
            st.cfa = (reg, c.uleb())
        elif op == 0x12:
            reg = c.uleb()
            st.cfa = (reg, c.sleb() * daf)
        elif op == 0x0D:
            reg = c.uleb()
            st.cfa = (reg, st.cfa[1] if isinstance(st.cfa, tuple) else 0)
        elif op in (0x0E, 0x13):
            off = c.uleb() if op == 0x0E else c.sleb() * daf
            st.cfa = (st.cfa[0] if isinstance(st.cfa, tuple) else -1, off)
        elif op == 0x0F:
            st.cfa = c.block()
        elif op in (0x10, 0x16):
            reg = c.uleb()
            st.set(reg, (EXPRESSION if op == 0x10 else VAL_EXPRESSION, c.block()))
        elif op == 0x2E:  # GNU_args_size
            c.uleb()
        elif op == 0x2D:  # GNU_window_save / AARCH64_negate_ra_state: not an SFrame rule
            pass
        else:
            raise EhFrameError(f"unknown call-frame instruction {op:#x}", op_at)
    st.ops = ops if counted else n  # an upper bound: what the file budget is charged
