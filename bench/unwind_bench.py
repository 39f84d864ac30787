"""Frames per second on a deep synthetic stack: `python bench/unwind_bench.py`.

The stack is `depth` amd64 `push %rbp` frames cycling through `funcs`
functions of one v3 section; the innermost frame's caller chain ends at an
RA-undefined FRE. Walks are repeated on one Unwinder, so FDE decoding is
cached after the first walk (as it would be for repeated samples of one
process); the first walk is timed separately.
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Sequence

from sfcheck.format import FDE, build_section, encode, fde_info, make_fre
from sfcheck.format import constants as C
from sfcheck.unwind.memory import SparseMemory
from sfcheck.unwind.table import SFrameTable
from sfcheck.unwind.unwinder import Registers, StopReason, Unwinder

TEXT, VMA, STACK_TOP = 0x400000, 0x10000, 0x7FFF00000000
FUNC_SIZE = 0x80


def synthetic(depth: int, funcs: int) -> tuple[SFrameTable, SparseMemory, Registers]:
    fdes = []
    for k in range(funcs + 1):
        fres = (make_fre(0, (8,)), make_fre(1, (16, -16))) if k < funcs else (make_fre(0, ()),)
        field = C.HEADER_SIZE + k * C.FDE_SIZE[3]
        fdes.append(FDE(start=TEXT + k * FUNC_SIZE - VMA - field, size=FUNC_SIZE,
                        info=fde_info(0), fres=fres))
    table = SFrameTable(encode(build_section(3, C.ABI_AMD64_LE, fdes)), vma=VMA)
    mem = SparseMemory()
    sp = STACK_TOP - 16 * (depth + 1)
    regs = Registers(TEXT + 5, sp, 0)
    stack = bytearray()
    fp = 0
    for i in range(depth):
        last = i == depth - 1
        func = funcs if last else (i + 1) % funcs
        stack += fp.to_bytes(8, "little") + (TEXT + func * FUNC_SIZE + 9).to_bytes(8, "little")
        fp = sp + 16 * i
    mem.add(sp, bytes(stack))
    return table, mem, regs


def run(depth: int = 500, runs: int = 200, funcs: int = 64) -> dict[str, float]:
    table, mem, regs = synthetic(depth, funcs)
    uw = Unwinder([table], mem, max_frames=depth + 10)
    t0 = time.perf_counter()
    frames, stop = uw.unwind(regs)
    cold = time.perf_counter() - t0
    if len(frames) != depth + 1 or stop.reason is not StopReason.OUTERMOST:
        raise AssertionError(f"synthetic stack walked wrong: {len(frames)} frames, {stop}")
    t0 = time.perf_counter()
    total = 0
    for _ in range(runs):
        total += len(uw.unwind(regs)[0])
    warm = time.perf_counter() - t0
    return {"frames_per_walk": len(frames), "runs": runs, "cold_walk_s": cold,
            "frames_per_s": total / warm if warm else float("inf")}


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python bench/unwind_bench.py", description=__doc__)
    p.add_argument("--depth", type=int, default=500)
    p.add_argument("--runs", type=int, default=200)
    p.add_argument("--funcs", type=int, default=64)
    a = p.parse_args(argv)
    r = run(a.depth, a.runs, a.funcs)
    print(f"{r['frames_per_walk']} frames x {r['runs']} walks: {r['frames_per_s']:,.0f} "
          f"frames/s (first walk, decoding {a.funcs} FDEs: {r['cold_walk_s'] * 1e3:.1f} ms)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
