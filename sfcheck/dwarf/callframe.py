"""The call-frame program interpreter: a CIE's initial instructions and an FDE's program run
to rows of (CFA, RA rule, FP rule), the only registers the SFrame cross-check compares.

Work is bounded (hostile input: one FDE of six million advance_loc rows, or many big
ones): a program runs at most MAX_FDE_OPS instructions into MAX_FDE_ROWS rows, and a file
at most MAX_FILE_OPS instructions into MAX_FILE_ROWS rows (Budget); past a bound, run()
raises WorkBound and the FDE gets no rows. ehframe.py walks the entries that feed it.
"""

from __future__ import annotations

from collections.abc import Callable

from ..record import NamedTuple
from .cursor import Cursor, EhFrameError

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing at run time
if TYPE_CHECKING:
    from .ehframe import Cie

# Register rule kinds, spelled as pyelftools' RegisterRule constants.
UNDEFINED, SAME_VALUE, OFFSET, VAL_OFFSET = "UNDEFINED", "SAME_VALUE", "OFFSET", "VAL_OFFSET"
REGISTER, EXPRESSION, VAL_EXPRESSION = "REGISTER", "EXPRESSION", "VAL_EXPRESSION"

RawRule = tuple[str, object] | None  # (kind, int or expression bytes); None: no rule
RawCfa = tuple[int, int] | bytes  # (register, offset) or a DWARF expression


# Real compilers write a few rows per function; a huge function has thousands.
MAX_FDE_OPS = 1 << 18
MAX_FDE_ROWS = 1 << 16
MAX_FILE_OPS = 1 << 24
MAX_FILE_ROWS = 1 << 21


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


class WorkBound(Exception):
    """A work bound was reached: the message says which."""


class Budget:
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
            raise WorkBound(f"per-file CFI work bound reached ({MAX_FILE_OPS} instructions, "
                            f"{MAX_FILE_ROWS} rows)")


def run(cie: Cie, program: bytes, program_at: int, start: int, vma: int,
        address_size: int, big: bool, ra_col: int, fp_col: int, budget: Budget,
        ) -> tuple[tuple[Row, ...], bool]:
    """Run the CIE's initial instructions, then the FDE's, into rows at pcs relative to
    `start`; and whether those rows depend on nothing but the program (no DW_CFA_set_loc,
    whose operand is an address). WorkBound when a work bound stops it."""
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


def _charged(budget: Budget, state: _State, cie: Cie, program: bytes, at: int,
             fde_start: int | None, vma: int, address_size: int, big: bool) -> None:
    """_exec, charging the file's budget with what it spent, also when a bound stops it."""
    try:
        _exec(cie, program, at, state, fde_start, vma, address_size, big)
    except WorkBound:
        budget.charge(max(state.ops, MAX_FDE_OPS), len(state.rows))
        raise
    budget.charge(state.ops, len(state.rows))


class _State:
    __slots__ = ("ra_col", "fp_col", "cfa", "ra", "fp", "initial", "stack", "loc", "rows",
                 "last", "set_loc", "ops", "convert", "converted")

    def __init__(self, ra_col: int, fp_col: int, budget: Budget) -> None:
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
        """The program's last row, at `loc`: advance() without moving on. The row bound
        counts the rows a program advances past, so this one is always kept."""
        try:  # noqa: SIM105 — suppress() would make a context manager per program run
            self.advance(self.loc)
        except WorkBound:
            pass

    def advance(self, to: int) -> None:
        """The row at `loc` (replacing the last one when it is at `loc` too: an advance by
        zero), then move to `to`. Runs once per row: the row is built here, not by a call."""
        loc = self.loc
        if self.convert is None:
            row = Row(loc, self.cfa, self.ra, self.fp)
        else:
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
        rows = self.rows
        if loc == self.last:
            rows[-1] = row
        else:
            rows.append(row)
            self.last = loc
            if len(rows) > MAX_FDE_ROWS:
                raise WorkBound(f"more than {MAX_FDE_ROWS} CFI rows in one FDE")
        self.loc = to


def _exec(cie: Cie, program: bytes, at: int, state: _State, fde_start: int | None, vma: int,
          address_size: int, big: bool) -> None:
    c = Cursor(program, 0, len(program), big, at)
    caf, daf = cie.code_align, cie.data_align
    in_fde = fde_start is not None
    n = len(program)
    # Every instruction is at least one byte: past MAX_FDE_OPS bytes, count them.
    counted = n > MAX_FDE_OPS
    ops = 0
    ra_col, fp_col = state.ra_col, state.fp_col
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
                    raise WorkBound(f"more than {MAX_FDE_OPS} CFI instructions in one FDE")
            if op & 0xC0 == 0x40:
                p += 1
                if in_fde:
                    state.advance(state.loc + (op & 0x3F) * caf)
                continue
            if p + 1 < n and program[p + 1] < 0x80:
                if op == 0x0E:
                    cfa = state.cfa
                    state.cfa = (cfa[0] if isinstance(cfa, tuple) else -1, program[p + 1])
                    p += 2
                    continue
                if op & 0xC0 == 0x80:
                    reg = op & 0x3F
                    if reg in (ra_col, fp_col):
                        state.set(reg, (OFFSET, program[p + 1] * daf))
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
                state.advance(state.loc + lo * caf)
            continue
        if hi == 0x80:
            state.set(lo, (OFFSET, c.uleb() * daf))
            continue
        if hi == 0xC0:
            state.restore(lo)
            continue
        if op == 0x00:  # nop
            continue
        if op in (0x02, 0x03, 0x04):  # advance_loc1/2/4
            delta = c.u8() if op == 0x02 else c.fixed("H" if op == 0x03 else "I",
                                                        2 if op == 0x03 else 4)
            if in_fde:
                state.advance(state.loc + delta * caf)
        elif op == 0x01:  # set_loc
            to = c.pointer(cie.fde_enc, vma, address_size)
            if in_fde:
                state.set_loc = True
                state.advance(to - fde_start)
        elif op in (0x05, 0x11, 0x14, 0x15, 0x2F):  # offset forms
            reg = c.uleb()
            raw = c.sleb() if op in (0x11, 0x15) else c.uleb()
            off = -raw * daf if op == 0x2F else raw * daf
            state.set(reg, (VAL_OFFSET if op in (0x14, 0x15) else OFFSET, off))
        elif op == 0x06:
            state.restore(c.uleb())
        elif op == 0x07:
            state.set(c.uleb(), (UNDEFINED, None))
        elif op == 0x08:
            state.set(c.uleb(), (SAME_VALUE, None))
        elif op == 0x09:
            reg = c.uleb()
            state.set(reg, (REGISTER, c.uleb()))
        elif op == 0x0A:
            if len(state.stack) > 4096:
                raise EhFrameError("remember_state nested too deep", op_at)
            state.stack.append((state.cfa, state.ra, state.fp))
        elif op == 0x0B:
            if not state.stack:
                raise EhFrameError("restore_state without remember_state", op_at)
            state.cfa, state.ra, state.fp = state.stack.pop()
        elif op == 0x0C:
            reg = c.uleb()
            state.cfa = (reg, c.uleb())
        elif op == 0x12:
            reg = c.uleb()
            state.cfa = (reg, c.sleb() * daf)
        elif op == 0x0D:
            reg = c.uleb()
            state.cfa = (reg, state.cfa[1] if isinstance(state.cfa, tuple) else 0)
        elif op in (0x0E, 0x13):
            off = c.uleb() if op == 0x0E else c.sleb() * daf
            state.cfa = (state.cfa[0] if isinstance(state.cfa, tuple) else -1, off)
        elif op == 0x0F:
            state.cfa = c.block()
        elif op in (0x10, 0x16):
            reg = c.uleb()
            state.set(reg, (EXPRESSION if op == 0x10 else VAL_EXPRESSION, c.block()))
        elif op == 0x2E:  # GNU_args_size
            c.uleb()
        elif op == 0x2D:  # GNU_window_save / AARCH64_negate_ra_state: not an SFrame rule
            pass
        else:
            raise EhFrameError(f"unknown call-frame instruction {op:#x}", op_at)
    state.ops = ops if counted else n  # an upper bound: what the file budget is charged
