"""Harness `unwind`: a valid section plus fuzzed registers and stack memory.

The section is one of the real corpus sections, or one built from the input
with canonical layout (any version, ABI, FLEX/PCMASK/signal FDEs, any data
words). Properties (an AssertionError is a finding):
* termination: at most `max_frames` frames, a stop reason always set;
* progress: SP never moves down, and strictly up after the innermost frame;
* bounded reads: at most 3 word reads per frame (CFA dereference, RA, FP), each
  of the ABI's word size;
* a section the checker finds clean never makes the walk stop on malformed data.

    python fuzz/unwind.py [libFuzzer flags] [corpus dirs]
"""

from __future__ import annotations

import os
import sys
from functools import lru_cache

# Last, after site-packages: an installed sfcheck (the one CI tests) wins over the checkout.
sys.path.append(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from fuzz import common  # noqa: E402

with common.instrumented_imports(__name__ == "__main__"):
    from sfcheck.checker import check_section_bytes
    from sfcheck.errors import SfcheckError
    from sfcheck.format import constants as C
    from sfcheck.format.encode import encode
    from sfcheck.format.layout import build_section
    from sfcheck.format.model import FDE, FRE, fde_info, fre_info, smallest_size_code
    from sfcheck.result import Severity
    from sfcheck.unwind import Registers, SFrameTable, SparseMemory, StopReason, Unwinder

VMA = 0x10000
TEXT = 0x400000
STACK = 0x7FFE0000
STACK_WORDS = 128
MASK = (1 << 64) - 1


class Bytes:
    """Consume the input front to back; past its end every read is 0."""

    def __init__(self, data: bytes) -> None:
        self.data = data
        self.pos = 0

    def u(self, n: int) -> int:
        chunk = self.data[self.pos:self.pos + n]
        self.pos += n
        return int.from_bytes(chunk, "little")

    def s(self, n: int) -> int:
        v = self.u(n)
        return v - (1 << (8 * n)) if v >= 1 << (8 * n - 1) else v

    def rest(self, limit: int) -> bytes:
        out = self.data[self.pos:self.pos + limit]
        self.pos += len(out)
        return out


@lru_cache(maxsize=1)
def real_sections() -> tuple[tuple[bytes, int], ...]:
    """(bytes, vma) of every corpus seed section (all clean)."""
    return tuple((d, v) for _n, d, v in common.corpus_sections())


def generated(b: Bytes) -> tuple[bytes, int]:
    """A canonically laid-out section built from the input."""
    version = 1 + b.u(1) % 3
    abis = (C.ABI_AMD64_LE, C.ABI_AARCH64_LE, C.ABI_AARCH64_BE, C.ABI_S390X_BE)
    abi = abis[b.u(1) % (3 if version == C.VERSION_1 else 4)]
    pcrel = version >= C.VERSION_3 or (version == C.VERSION_2 and b.u(1) & 1)
    nfuncs = 1 + b.u(1) % 4
    fdes = []
    addr = TEXT
    for k in range(nfuncs):
        size = 1 + b.u(1)
        flags = b.u(1)
        flex = version >= C.VERSION_3 and bool(flags & 1)
        pcmask = bool(flags & 2) and not flex
        signal = version >= C.VERSION_3 and bool(flags & 4)
        start_off = 0
        fres = []
        for _ in range(1 + b.u(1) % 3):
            nwords = b.u(1) % (7 if flex else 4)
            words = tuple(b.s(1) * (1 if flex else 8) for _ in range(nwords))
            info = b.u(1)
            code = smallest_size_code(words)
            fres.append(FRE(start_off, fre_info(bool(info & 1), len(words), code,
                                                bool(info & 2)), words))
            start_off += 1 + b.u(1) % 16
            if start_off >= size:
                break
        field_pos = C.HEADER_SIZE + k * C.FDE_SIZE[version]
        start = addr - VMA - (field_pos if pcrel else 0)
        fre_type = 0 if size <= 0xFF else 1
        fdes.append(FDE(start=start, size=size, info=fde_info(fre_type, pcmask, 0, signal),
                        fres=tuple(fres), rep_size=16 if pcmask else 0,
                        info2=C.FDE_TYPE_FLEX if flex else C.FDE_TYPE_DEFAULT))
        addr += size + b.u(1) % 8
    flags = C.F_FDE_SORTED | (C.F_FDE_FUNC_START_PCREL if pcrel else 0)
    sec = build_section(version, abi, fdes, flags=flags)
    return encode(sec), VMA


@lru_cache(maxsize=4096)
def _clean(data: bytes, vma: int) -> bool:
    r = check_section_bytes(data, vma=vma)
    return r.error is None and not any(f.severity >= Severity.ERROR for f in r.findings)


class CountingMemory:
    def __init__(self, inner: SparseMemory) -> None:
        self.inner = inner
        self.reads = 0
        self.max_size = 0

    def read(self, addr: int, size: int) -> bytes | None:
        self.reads += 1
        self.max_size = max(self.max_size, size)
        return self.inner.read(addr, size)


def test_one_input(data: bytes) -> None:
    b = Bytes(data)
    sel = b.u(1)
    reals = real_sections()
    try:
        section, vma = generated(b) if sel & 0x80 or not reals else reals[sel % len(reals)]
    except SfcheckError:
        return  # a generated model that does not encode (a word too wide): no section
    table = SFrameTable(section, vma=vma)
    assert table.header is not None, "a valid section did not load"
    starts = [s for s, _e in table.text_ranges] or [vma]
    lo, hi = starts[0], table.text_ranges[-1][1] if table.text_ranges else vma + 1
    span = max(1, hi - lo)
    pc = lo + b.u(2) % span
    sp = STACK + 8 * (b.u(1) % 64) + (b.u(1) % 8 if b.u(1) == 0xFF else 0)
    fp = sp + 8 * b.s(1)
    ra = lo + b.u(2) % span
    others = {b.u(1) % 32: STACK + 8 * b.u(1)}
    max_frames = 1 + b.u(1) % 64
    big = table.header.big_endian
    order = "big" if big else "little"
    raw = b.rest(8 * STACK_WORDS)
    words = []
    for k in range(0, len(raw) - 7, 8):
        w = int.from_bytes(raw[k:k + 8], "little")
        kind = w & 3  # make plausible return and stack addresses easy to reach
        if kind == 1:
            w = lo + (w >> 2) % span
        elif kind == 2:
            w = STACK + ((w >> 2) % (8 * STACK_WORDS))
        words.append(w.to_bytes(8, order))
    mem = CountingMemory(SparseMemory({STACK: b"".join(words)} if words else {}))
    walk = Unwinder([table], mem, max_frames=max_frames).walk(
        Registers(pc, sp, fp & MASK, ra=ra, others=others)).run()
    stop = walk.stop
    assert stop is not None, "walk ended without a stop reason"
    assert 1 <= len(walk.frames) <= max_frames, "walk exceeded its frame cap"
    assert stop.reason is not StopReason.FRAME_CAP or len(walk.frames) == max_frames
    frames = walk.frames
    sps = [f.sp for f in frames]
    assert all(b2 >= a for a, b2 in zip(sps, sps[1:], strict=False)), "SP moved down"
    # Strictly up, except out of a frame whose registers are all known (the innermost, or
    # the one a signal interrupted: frame k+1 after a signal frame k), which may keep SP.
    assert all(sps[k + 1] > sps[k] for k in range(1, len(sps) - 1)
               if not frames[k - 1].signal), "SP did not move up"
    signals = sum(f.signal for f in frames)
    # Per frame: CFA, RA, FP; per signal frame and at the end: two probes of the trampoline
    # code and the saved registers (x86-64: 17 words, aarch64: 33).
    assert mem.reads <= 3 * len(frames) + 3 * signals + 2, \
        f"{mem.reads} reads for {len(frames)} frames"
    assert mem.max_size <= (33 * 8 if signals else 9), f"read of {mem.max_size} bytes"
    if stop.reason is StopReason.MALFORMED and _clean(section, vma):
        raise AssertionError(f"clean section, but the unwinder stops on malformed data: "
                             f"{stop.detail}")


if __name__ == "__main__":
    real_sections()  # load the corpus before fuzzing starts
    common.run("unwind", test_one_input)
