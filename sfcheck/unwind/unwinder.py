"""Walk a stack with SFrame data alone.

The step rules follow the kernel's user-space SFrame unwinder
(kernel/unwind/user.c, V3 series): CFA from SP/FP (or, in v3 flex FREs, any
register, possibly dereferenced), RA and FP recovered relative to the CFA, and
the walk stops when the CFA does not move up, is misaligned, or memory cannot
be read. Two deliberate differences, both what a debugger does:

* caller frames are looked up at PC-1 (a return address can sit just past the
  end of a function that ends in a noreturn call); the reported PC is the
  return address itself;
* the caller's SP is the CFA, except on s390x, where the CFA is the SP at the
  call + 160 (SFRAME_S390X_SP_VAL_OFFSET, the kernel's SFRAME_SP_OFFSET);
* registers other than SP/FP/RA are only known in the innermost frame (and in
  a frame a signal interrupted), so a rule that needs one in an outer frame
  stops the walk ("register unavailable") instead of guessing;
* a signal trampoline (a v3 signal FDE, or the sigreturn code itself where
  there is no FDE; x86-64, aarch64 LE, s390x) is stepped through as gdb does:
  the interrupted frame's registers come from the kernel's signal frame
  (sigframe.py), and that frame's PC is exact (no PC-1 lookup).

Termination: every successful step strictly raises SP (the innermost frame may
keep it; a signal frame's interrupted SP must be above it too), SP is bounded
by 2**64, and the frame cap bounds the rest.
"""

from __future__ import annotations

import enum
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field

from ..format import constants
from ..format.fre_rules import RegRule, fre_rules
from ..format.model import Header
from . import sigframe
from .abi import ABIS, SP_VAL_OFFSET, Abi
from .memory import ADDR_MASK, Memory, read_word
from .table import Miss, Row, SFrameTable, TableSet

DEFAULT_MAX_FRAMES = 512


class StopReason(enum.Enum):
    """Why a walk ended. The values are stable strings (CLI and JSON output)."""

    OUTERMOST = "outermost frame"
    NO_FDE = "no FDE for PC"
    NO_FRE = "no FRE for PC"
    CFA_NOT_UP = "CFA not moving up"
    UNREADABLE = "unreadable memory"
    FRAME_CAP = "frame cap"
    MALFORMED = "malformed data"
    MISALIGNED_CFA = "misaligned CFA"
    REGISTER_UNAVAILABLE = "register unavailable"
    SIGNAL_FRAME = "signal frame"

    @property
    def is_error(self) -> bool:
        """False for the ways a sound walk ends: the outermost frame, code without
        SFrame (e.g. a libc built without it), a signal trampoline (v3 signal FDE:
        the interrupted registers are in the kernel's frame, which SFrame does not
        describe), and the caller's frame cap."""
        return self not in (StopReason.OUTERMOST, StopReason.NO_FDE, StopReason.FRAME_CAP,
                            StopReason.SIGNAL_FRAME)


@dataclass(frozen=True, slots=True)
class Registers:
    """The innermost frame's registers. `ra` is the link register where the ABI
    has one (aarch64 x30, s390x r14); `others` maps DWARF numbers to values for
    flex rules that name other registers."""

    pc: int
    sp: int
    fp: int
    ra: int | None = None
    others: Mapping[int, int] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class Frame:
    """One frame. `sp` is the frame's stack pointer (the callee's CFA for outer
    frames); `cfa`, `section`, `fde`, `fre` describe the row used to unwind out
    of this frame (None when the walk stopped before finding one)."""

    index: int
    pc: int
    sp: int
    fp: int | None  # None: saved in a register whose value is not known here
    cfa: int | None = None
    section: str | None = None
    fde: int | None = None
    fre: int | None = None
    func_start: int | None = None
    ra_mangled: bool = False
    signal: bool = False  # a signal trampoline: the next frame is the interrupted one


@dataclass(frozen=True, slots=True)
class Stop:
    reason: StopReason
    detail: str
    pc: int
    section: str | None = None
    offset: int | None = None  # section offset of the malformed data, when known

    def __str__(self) -> str:
        return f"{self.reason.value}: {self.detail}" if self.detail else self.reason.value


class _StepFail(Exception):
    def __init__(self, reason: StopReason, detail: str, offset: int | None = None) -> None:
        super().__init__(detail)
        self.reason = reason
        self.detail = detail
        self.offset = offset


class Walk:
    """Iterate over the frames of one walk; `stop` is set once iteration ends.

    >>> walk = unwinder.walk(regs)
    >>> for frame in walk: ...
    >>> walk.stop.reason
    """

    def __init__(self, unwinder: Unwinder, regs: Registers) -> None:
        self._it = unwinder._frames(regs, self)
        self.stop: Stop | None = None
        self.frames: list[Frame] = []

    def __iter__(self) -> Iterator[Frame]:
        return self

    def __next__(self) -> Frame:
        frame = next(self._it)
        self.frames.append(frame)
        return frame

    def run(self) -> Walk:
        for _ in self:
            pass
        return self


class Unwinder:
    """Unwind through `tables` (one per loaded SFrame section) over `memory`.

    `pac_mask`, when given, is cleared from return addresses whose FRE says the
    RA is mangled (aarch64 pointer authentication); otherwise mangled RAs are
    used as read and only flagged on the frame.
    """

    def __init__(self, tables: Sequence[SFrameTable] | TableSet, memory: Memory, *,
                 max_frames: int = DEFAULT_MAX_FRAMES, abi: int | None = None,
                 caller_pc_adjust: bool = True, pac_mask: int = 0) -> None:
        if max_frames < 1:
            raise ValueError("max_frames must be at least 1")
        self.tables = tables if isinstance(tables, TableSet) else TableSet(tables)
        self.memory = memory
        self.max_frames = max_frames
        self.caller_pc_adjust = caller_pc_adjust
        self.pac_mask = pac_mask
        if abi is None:
            abi = next((t.abi for t in self.tables.tables if t.abi in ABIS), constants.ABI_AMD64_LE)
        self.abi_id = abi if abi in ABIS else constants.ABI_AMD64_LE
        self.abi: Abi = ABIS[self.abi_id]
        self.sp_val_off = SP_VAL_OFFSET.get(self.abi_id, 0)
        # (table, FDE index, FRE index) -> the row's rules, or why the row is unusable.
        self._rules: dict[tuple[SFrameTable, int, int],
                          tuple[RegRule, RegRule | None, RegRule | None] | _StepFail] = {}

    def walk(self, regs: Registers) -> Walk:
        return Walk(self, regs)

    def unwind(self, regs: Registers) -> tuple[list[Frame], Stop]:
        walk = self.walk(regs).run()
        assert walk.stop is not None
        return walk.frames, walk.stop

    # -- the walk ----------------------------------------------------------

    def _frames(self, regs: Registers, walk: Walk) -> Iterator[Frame]:
        pc, sp = regs.pc & ADDR_MASK, regs.sp & ADDR_MASK
        fp: int | None = regs.fp & ADDR_MASK
        find = self.tables.find
        # `full`: every register is known (the innermost frame, or the frame a signal
        # interrupted); such a frame's PC is exact, not a return address.
        full: Registers | None = regs
        for index in range(self.max_frames):
            exact = full is not None or not self.caller_pc_adjust
            lookup_pc = pc if exact else (pc - 1) & ADDR_MASK
            table = find(lookup_pc)
            got = None if table is None else table.lookup(lookup_pc)
            if (table is None or isinstance(got, Miss)) and self._sigtramp(
                    pc, got, table is None):
                regs_after = sigframe.interrupted(self.memory, self.abi_id, sp, pc)
                if regs_after is None:
                    walk.stop = Stop(StopReason.UNREADABLE, f"signal frame at {pc:#x}: cannot "
                                     f"read the saved registers above SP {sp:#x}", pc,
                                     table.name if table else None)
                    yield Frame(index, pc, sp, fp, signal=True)
                    return
                new_sp = regs_after.sp & ADDR_MASK
                if new_sp <= sp:
                    walk.stop = Stop(StopReason.CFA_NOT_UP, f"signal frame at {pc:#x}: the "
                                     f"interrupted SP {new_sp:#x} is not above SP {sp:#x} "
                                     "(an alternate signal stack?)", pc,
                                     table.name if table else None)
                    yield Frame(index, pc, sp, fp, signal=True)
                    return
                yield Frame(index, pc, sp, fp, cfa=new_sp,
                            section=table.name if table else None, signal=True)
                full = Registers(regs_after.pc, new_sp, regs_after.fp, regs_after.ra,
                                 regs_after.others)
                pc, sp, fp = full.pc & ADDR_MASK, new_sp, full.fp & ADDR_MASK
                continue
            if table is None:
                walk.stop = Stop(StopReason.NO_FDE, f"{pc:#x} is in no SFrame section's text",
                                 pc)
                yield Frame(index, pc, sp, fp)
                return
            if isinstance(got, Miss):
                walk.stop = Stop(_MISS_REASON[got.kind], got.message, pc, table.name,
                                 got.offset)
                yield Frame(index, pc, sp, fp, section=table.name, fde=got.fde_index)
                return
            assert got is not None
            try:
                cfa, ra, new_fp = self._step(table, got, full, sp, fp)
            except _StepFail as exc:
                walk.stop = Stop(exc.reason, exc.detail, pc, table.name, exc.offset)
                yield Frame(index, pc, sp, fp, None, table.name, got.fde_index, got.fre_index,
                            got.func_start, got.fre.mangled_ra)
                return
            yield Frame(index, pc, sp, fp, cfa, table.name, got.fde_index, got.fre_index,
                        got.func_start, got.fre.mangled_ra)
            pc, sp, fp, full = ra, (cfa + self.sp_val_off) & ADDR_MASK, new_fp, None
        walk.stop = Stop(StopReason.FRAME_CAP, f"stopped after {self.max_frames} frames", pc)

    def _sigtramp(self, pc: int, miss: Row | Miss | None, no_table: bool) -> bool:
        """Whether the frame at `pc` is a signal trampoline we can step through: a v3
        signal FDE says so (looked up at PC itself too: a handler returns to the
        trampoline's first byte, and an FDE may start right there), or, in code without
        a usable FDE, its instruction bytes do."""
        if not sigframe.supported(self.abi_id):
            return False
        if isinstance(miss, Miss) and miss.kind == "signal":
            return True
        if not (no_table or (isinstance(miss, Miss) and miss.kind in ("no-fde", "no-fre"))):
            return False
        exact = self.tables.find(pc)
        if exact is not None:
            got = exact.lookup(pc)
            if isinstance(got, Miss) and got.kind == "signal":
                return True
        return sigframe.is_trampoline(self.memory, self.abi_id, pc)

    def _row_rules(self, table: SFrameTable, h: Header, row: Row, where: str
                   ) -> tuple[RegRule, RegRule | None, RegRule | None] | _StepFail:
        """What a row says about the caller, or why it cannot be used: the part of a step
        that does not depend on the registers, worked out once per row (walks revisit
        the same functions)."""
        fre = row.fre
        if fre.count == 0:
            if h.version == constants.VERSION_1:
                return _StepFail(StopReason.MALFORMED, f"{table.name}: {where} has no data "
                                 "words (no CFA rule)", fre.offset)
            return _StepFail(StopReason.OUTERMOST, f"{where}: RA undefined")
        flex = row.fde.flex(h.version)
        if h.version >= constants.VERSION_3 and row.fde.fde_type not in (constants.FDE_TYPE_DEFAULT,
                                                                  constants.FDE_TYPE_FLEX):
            return _StepFail(StopReason.MALFORMED, f"{table.name}: FDE[{row.fde_index}] has "
                             f"unknown FDE type {row.fde.fde_type}", row.fde.offset)
        try:
            return fre_rules(h, flex, fre, self.abi)
        except ValueError as exc:
            return _StepFail(StopReason.MALFORMED, f"{table.name}: {where}: {exc}", fre.offset)

    def _step(self, table: SFrameTable, row: Row, top: Registers | None, sp: int,
              fp: int | None) -> tuple[int, int, int | None]:
        """(CFA, RA, FP) of the caller; `top` is set only for the innermost frame."""
        h = table.header
        assert h is not None
        fre = row.fre
        where = f"FDE[{row.fde_index}].FRE[{row.fre_index}]"
        key = (table, row.fde_index, row.fre_index)
        rules = self._rules.get(key)
        if rules is None:
            rules = self._rules[key] = self._row_rules(table, h, row, where)
        if isinstance(rules, _StepFail):
            raise _StepFail(rules.reason, rules.detail, rules.offset)
        cfa_rule, ra_rule, fp_rule = rules

        ws, big = self.abi.word_size, h.big_endian

        def reg(num: int) -> int:
            if num == self.abi.sp:
                return sp
            if num == self.abi.fp:
                if fp is None:
                    raise _StepFail(StopReason.REGISTER_UNAVAILABLE,
                                    f"{where}: needs the FP, which the callee saved in a "
                                    "register whose value is unknown")
                return fp
            if top is not None:
                if num == self.abi.ra and top.ra is not None:
                    return top.ra & ADDR_MASK
                if num in top.others:
                    return top.others[num] & ADDR_MASK
            raise _StepFail(StopReason.REGISTER_UNAVAILABLE,
                            f"{where}: needs DWARF register {num}, unknown in this frame")

        def load(addr: int, what: str) -> int:
            value = read_word(self.memory, addr, ws, big)
            if value is None:
                raise _StepFail(StopReason.UNREADABLE,
                                f"{where}: cannot read {what} at {addr & ADDR_MASK:#x}")
            return value

        assert cfa_rule.reg is not None
        if cfa_rule.reg == self.abi.fp and fp is not None and fp < sp:
            # As the kernel: an FP below SP means the saved-FP chain leads back down
            # the stack (a cycle or garbage), even if FP + offset happened to clear SP.
            raise _StepFail(StopReason.CFA_NOT_UP,
                            f"{where}: CFA is FP-based but FP {fp:#x} is below SP {sp:#x}")
        cfa = (reg(cfa_rule.reg) + cfa_rule.offset) & ADDR_MASK
        if cfa_rule.deref:
            cfa = load(cfa, "the CFA")
        # Progress: the caller's SP (the CFA, or CFA - 160 on s390x) must be above SP (the
        # innermost frame may keep SP).
        caller_sp = cfa + self.sp_val_off
        if caller_sp < sp or (caller_sp == sp and top is None):
            what = f"CFA {cfa:#x}" if not self.sp_val_off else \
                f"the caller's SP (CFA {cfa:#x} {self.sp_val_off:+d})"
            raise _StepFail(StopReason.CFA_NOT_UP, f"{where}: {what} is not above SP {sp:#x}")
        if cfa % ws:
            raise _StepFail(StopReason.MISALIGNED_CFA,
                            f"{where}: CFA {cfa:#x} is not {ws}-byte aligned")

        def apply(rule: RegRule | None, current: int | None, what: str) -> int:
            if rule is None:  # not saved: still in its register
                if current is None:
                    raise _StepFail(StopReason.REGISTER_UNAVAILABLE,
                                    f"{where}: {what} was not saved and its register is "
                                    "unknown in this frame")
                return current
            base = cfa if rule.reg is None else reg(rule.reg)
            value = (base + rule.offset) & ADDR_MASK
            return load(value, f"the saved {what}") if rule.deref else value

        ra_now = None
        if top is not None and self.abi.ra is not None and top.ra is not None:
            ra_now = top.ra & ADDR_MASK
        ra = apply(ra_rule, ra_now, "RA")
        if fre.mangled_ra and self.pac_mask:
            ra &= ~self.pac_mask & ADDR_MASK
        try:
            new_fp: int | None = apply(fp_rule, fp, "FP") if fp_rule is not None else fp
        except _StepFail as exc:
            if exc.reason is not StopReason.REGISTER_UNAVAILABLE:
                raise
            # As gdb: the caller's FP is unknown (e.g. s390x saves it in a floating-point
            # register the core does not hold); the walk stops only if it is needed.
            new_fp = None
        return cfa, ra, new_fp


_MISS_REASON = {
    "no-fde": StopReason.NO_FDE,
    "no-fre": StopReason.NO_FRE,
    "outermost": StopReason.OUTERMOST,
    "signal": StopReason.SIGNAL_FRAME,
    "malformed": StopReason.MALFORMED,
}
