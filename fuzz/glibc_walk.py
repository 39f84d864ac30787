"""The walk half of the `glibc` harness: glibc's `__stacktrace_sframe` (sysdeps/generic/sframe.c,
run by glibc_worker.py) against sfcheck's reference unwinder on the same section, registers
and stack.

The scenario is derived from the section bytes alone (a PRNG seeded with their CRC-32), so a
reproducer is just the section: the innermost PC is one of the probe PCs (function starts,
row starts, last bytes), SP and FP point into the one-page stack, and the stack words are
return-address candidates (probe PCs), stack addresses, zeros and random words, so that
walks go several frames, through and past the functions the section describes.

What glibc does, as read in sframe.c (glibc 2.43): per frame, find the object holding the
PC (none: return 0, i.e. fall back to the DWARF unwinder), decode its section, look the PC
itself up (not PC - 1), then CFA = SP or FP + CFA offset, RA = *(CFA + RA offset),
FP = *(CFA + FP offset) when tracked, SP = CFA; no FRE for the PC ends the walk with the
frames so far if FP is 0 (x86-64's outermost rule), else returns 0; any missing offset
returns 0; it stops after `count` frames. Nothing checks that the CFA moves up or is
aligned, nor that a stack slot is readable. The reference is run with the same exact-PC
lookups (caller_pc_adjust=False), so what differs is the walk, not the lookup convention.

Keys (the first applicable one; `glibc` status, as the reader keys):
* crash:SIGSEGV:call_walk:<where>: glibc's walker faulted reading `stack` (past the fake
  stack, into the guard pages around it), `section` (past the section) or `wild` memory;
  hang:call_walk: it ran past its CPU time;
* walk:past-<reason>: glibc returned frames beyond where the reference stops with an error
  (<reason>: cfa-not-up, misaligned-cfa, unreadable, malformed, register-unavailable), i.e.
  a backtrace() result made of frames that cannot be right;
* walk:ra-differs: both walked, but a return address differs within the frames both give;
* walk:stops-early / walk:more-frames: same prefix, glibc returns fewer / more frames than
  the reference's sound walk (to the frame cap, or to a PC without an FRE and FP 0);
* walk:gives-up-<reason>: glibc returns 0 (DWARF fallback) where the reference's walk ends
  soundly, <reason> being how the reference ended (e.g. outermost: the v2 errata-2 "RA
  undefined" FRE, which glibc cannot read a CFA offset from).
* walk:zero-offset-word: any of these through a row with an RA or FP word of 0 (compare);
* walk:lookup-at-ra: none of these, but glibc's frames differ from a walk that looks a
  caller's row up at RA - 1: a call that ends a function (noreturn: abort, __assert_fail,
  __stack_chk_fail) has its frame unwound with the next function's row (lookup-at-ra-row:
  the RA starts another row of the same function, which compiled code never has).
Disagreements other than crashes and hangs are recorded only for sections sfcheck finds clean
and laid out canonically (glibc ignores sfh_fdeoff/sfh_freoff: another layout makes its lookups
differ, which the find:offsets-ignored key already says).
"""

from __future__ import annotations

import random
import zlib
from collections.abc import Sequence
from dataclasses import dataclass

from fuzz.glibc_worker import (
    PAGE,
    REGION,
    RESERVE,
    SECTION_END,
    STACK,
    STACK_BYTES,
    STACK_WORDS,
    WALK,
)
from sfcheck.format import constants as C
from sfcheck.format.abi import ABIS
from sfcheck.format.fre_rules import fre_rules
from sfcheck.unwind import Registers, SFrameTable, StopReason, Unwinder

COUNT = 16  # frames asked of the walker (backtrace()'s size)
MASK = (1 << 64) - 1
# Reference stops that end a walk soundly (glibc, too, should return what it has or fall back).
SOUND = {StopReason.OUTERMOST, StopReason.NO_FDE, StopReason.NO_FRE, StopReason.FRAME_CAP}


class WalkMemory:
    """What the worker process can read: the stack page and the section region (zeros, the
    section at its end); everything else faults there and is unreadable here."""

    def __init__(self, stack: bytes, data: bytes) -> None:
        self.stack = stack
        self.data = data
        self.sec = SECTION_END - len(data)

    def read(self, addr: int, size: int) -> bytes | None:
        if addr >= STACK and addr + size <= STACK + STACK_BYTES:
            return self.stack[addr - STACK:addr - STACK + size]
        if addr >= SECTION_END - REGION and addr + size <= SECTION_END:
            if addr >= self.sec:
                return self.data[addr - self.sec:addr - self.sec + size]
            head = min(size, self.sec - addr)
            return bytes(head) + self.data[:size - head]
        return None


class Scenario:
    """Registers, stack words and the object's text range for one section."""

    def __init__(self, data: bytes, table: SFrameTable, pc: int, sp: int, fp: int,
                 words: Sequence[int]) -> None:
        self.sec = SECTION_END - len(data)
        self.lo, self.hi = table.text_ranges[0]
        self.pc, self.sp, self.fp = pc & MASK, sp & MASK, fp & MASK
        self.words = [w & MASK for w in words] + [0] * (STACK_WORDS - len(words))
        self.stack = b"".join(w.to_bytes(8, "little") for w in self.words)

    @classmethod
    def from_data(cls, data: bytes, table: SFrameTable, probes: Sequence[int]
                  ) -> Scenario | None:
        """The scenario the section's bytes seed (None: no probe PC in its text)."""
        sec = SECTION_END - len(data)
        lo, hi = table.text_ranges[0]
        pcs = [p for p in ((sec + q) & MASK for q in probes) if lo <= p < hi]
        if not pcs:
            return None
        rng = random.Random(zlib.crc32(data))

        def stack_addr(lo_word: int = 0) -> int:
            return STACK + 8 * rng.randrange(lo_word, STACK_WORDS)

        def word() -> int:
            r = rng.random()
            if r < 0.4:
                return (rng.choice(pcs) + rng.choice((0, 0, 1))) & MASK
            if r < 0.75:
                return stack_addr()
            return 0 if r < 0.9 else rng.getrandbits(64)

        pc = rng.choice(pcs)
        sp = stack_addr() if rng.random() < 0.2 else STACK + 8 * rng.randrange(64)
        fp = rng.choice((0, stack_addr(64), stack_addr(), rng.getrandbits(64)))
        scen = cls(data, table, pc, sp, fp, [word() for _ in range(STACK_WORDS)])
        if rng.random() < 0.6:
            scen.extend(data, table, pcs, rng)
        return scen

    def extend(self, data: bytes, table: SFrameTable, pcs: Sequence[int],
               rng: random.Random) -> None:
        """Make the reference walk longer: while it ends because a return address leads
        nowhere, put a probe PC in that frame's RA slot (and a stack address, or 0 for an
        outermost frame, in its FP slot) and walk again. Random words alone rarely make
        more than one or two frames."""
        h = table.header
        assert h is not None
        abi = ABIS.get(h.abi, ABIS[C.ABI_AMD64_LE])
        fixed: set[int] = set()
        for _ in range(COUNT):
            unw = Unwinder([table], WalkMemory(self.stack, data), max_frames=COUNT + 1,
                           caller_pc_adjust=False)
            frames, stop = unw.unwind(Registers(self.pc, self.sp, self.fp))
            if stop.reason not in (StopReason.NO_FDE, StopReason.NO_FRE, StopReason.OUTERMOST) \
                    or len(frames) < 2 or frames[-2].cfa is None:
                return
            f = frames[-2]
            row = table.lookup(f.pc)
            try:
                _cfa, ra, fp = fre_rules(h, False, row.fre, abi)  # type: ignore[union-attr]
            except (AttributeError, ValueError):
                return
            slots = []
            for rule, value in ((ra, rng.choice(pcs)),
                                (fp, rng.choice((0, STACK + 8 * rng.randrange(STACK_WORDS))))):
                if rule is None or not rule.deref or rule.reg is not None:
                    if not slots:  # the RA is not in a stack slot: nothing to put there
                        return
                    continue
                addr = (f.cfa + rule.offset) & MASK  # type: ignore[operator]
                if not (STACK <= addr < STACK + STACK_BYTES) or addr % 8 or addr in fixed:
                    return
                slots.append((addr, value))
            for addr, value in slots:
                fixed.add(addr)
                self.words[(addr - STACK) // 8] = value
            self.stack = b"".join(w.to_bytes(8, "little") for w in self.words)

    def request(self) -> list[int]:
        """The worker's walk request, appended to the probe PCs (signed 64-bit values)."""
        vals = [self.lo, self.hi, self.pc, self.sp, self.fp, COUNT, *self.words]
        return [WALK] + [v - (1 << 64) if v >= 1 << 63 else v for v in vals]

    def reference(self, data: bytes, table: SFrameTable, ra_minus_1: bool = False
                  ) -> Reference:
        """The reference walk: glibc's exact-PC lookups, or with `ra_minus_1` a caller
        frame's row looked up at its return address - 1, as debuggers and the DWARF
        unwinder do (and sfcheck unwind by default)."""
        unw = Unwinder([table], WalkMemory(self.stack, data), max_frames=COUNT + 1,
                       caller_pc_adjust=ra_minus_1)
        frames, stop = unw.unwind(Registers(self.pc, self.sp, self.fp))
        last = frames[-1]
        in_text = self.lo <= last.pc < self.hi
        # Does a 0 RA/FP word matter here? An RA word always does; an FP word only if the
        # FP is used afterwards (an FP-based CFA, or the FP == 0 test at the walk's end).
        zero = fp_zero = False
        fixed_ra = table.header is not None and table.header.fixed_ra != 0
        for f in frames:
            if f.fre is None or f.fde is None:
                continue
            fre = table.fde(f.fde).fres[f.fre]
            ra_word = None if fixed_ra else fre.words[1:2]
            fp_word = fre.words[1:2] if fixed_ra else fre.words[2:3]
            zero = zero or ra_word == (0,) or (fp_zero and not fre.base_sp)
            fp_zero = fp_zero or fp_word == (0,)
        zero = zero or (fp_zero and in_text and
                        stop.reason in (StopReason.NO_FRE, StopReason.NO_FDE))
        return Reference([f.pc for f in frames[1:]], stop.reason, in_text, last.fp, zero)


@dataclass(frozen=True, slots=True)
class Reference:
    """The reference walk: its return addresses, why it stopped, whether its last PC is in
    the object's text (glibc's _dl_find_object finds it) and the FP there."""

    ras: list[int]
    reason: StopReason
    in_text: bool
    last_fp: int | None
    zero_word: bool = False  # a row it used has an RA or FP word of 0 (see compare)


def fault_region(addr: int) -> str:
    if STACK - RESERVE <= addr < STACK + STACK_BYTES + RESERVE:
        return "stack"
    if SECTION_END <= addr < SECTION_END + PAGE:
        return "section"
    return "wild"


def compare(walk: tuple[int, list[int]], ref: Reference) -> list[str]:
    """The key for one walk both sides finished (none when glibc does what it should).

    An RA or FP data word of 0 is "not saved" to the reference (SFRAME_FRE_RA_OFFSET_INVALID,
    s390x's padding, applied to every ABI) and a slot at CFA + 0 to glibc; gas never writes
    0 for AMD64 or AArch64 (CFA + 0 is in the caller's frame), so a walk through such a
    row is keyed walk:zero-offset-word, whatever else differs."""
    keys = _compare(walk, ref)
    return ["walk:zero-offset-word"] if keys and ref.zero_word else keys


def _compare(walk: tuple[int, list[int]], ref: Reference) -> list[str]:
    n, got = walk
    want, reason = ref.ras, ref.reason
    slug = reason.name.lower().replace("_", "-")
    k = min(n, len(want))
    if got[:k] != want[:k]:
        return ["walk:ra-differs"]
    if n == COUNT and len(want) >= COUNT:  # both went to the cap (the reference's frame
        return []  # COUNT + 1 is never looked up by glibc)
    if reason not in SOUND:
        # The reference refuses the frame after `want`: glibc may only have given up.
        return [f"walk:past-{slug}"] if n > len(want) else []
    # A sound end: glibc should return every frame. By its design it does so at the cap and
    # at a PC of the object without an FRE when FP is 0 (x86-64's outermost rule), and falls
    # back to DWARF (returns 0) at a PC outside the object (in a process, another object's)
    # or without an FRE while FP is not 0. The reference's outermost frame (an FRE saying
    # "RA undefined") is a complete walk glibc discards: walk:gives-up-outermost.
    if reason is StopReason.FRAME_CAP:
        expect = COUNT
    elif reason is StopReason.OUTERMOST:
        expect = len(want)
    elif ref.in_text and reason in (StopReason.NO_FRE, StopReason.NO_FDE):
        expect = len(want) if ref.last_fp == 0 else 0
    else:
        expect = 0
    if n == expect:
        return []
    if n == 0:
        return [f"walk:gives-up-{slug}"]
    return ["walk:stops-early" if n < expect else "walk:more-frames"]


def lookup_key(table: SFrameTable, ras: Sequence[int]) -> str:
    """walk:lookup-at-ra when the first return address whose row is not the row of the byte
    before it is in another function (or none), as after a noreturn call that ends a
    function; else walk:lookup-at-ra-row: a row starting right at a return address with
    another CFA rule, which a call never makes in compiled code (only hostile data has it)."""
    def row(pc: int) -> tuple[int | None, int | None]:
        got = table.lookup(pc & MASK)
        return getattr(got, "fde_index", None), getattr(got, "fre_index", None)
    for ra in ras:
        at, before = row(ra), row(ra - 1)
        if at != before:
            return "walk:lookup-at-ra" if at[0] != before[0] else "walk:lookup-at-ra-row"
    return "walk:lookup-at-ra-row"
