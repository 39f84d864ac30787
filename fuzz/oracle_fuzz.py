"""Differential fuzzing of a real reader binary (issue 26 item 3): sections from the section
mutator (fuzz/mutator.py) wrapped in an ELF file, run through `llvm-readobj --sframe` or
`objdump --sframe` as a subprocess, compared with sfcheck's profile (fuzz/oracles.py).

Each crash (by its signal and message) and each unlisted verdict difference (by reader verdict,
prediction and the error rules behind it) is kept once, with its time to first find and a
reproducer (the ELF file). One subprocess per input: a few executions per second is expected.

    python -m fuzz.oracle_fuzz --reader llvm-readobj-22 --duration 120 --seed 1
"""

from __future__ import annotations

import argparse
import random
import re
import tempfile
import time
from dataclasses import dataclass
from datetime import date
from pathlib import Path

from . import oracles as O
from .common import ROOT
from .mutator import mutate
from .oracle_cases import hostile_sections, wrap

MAX_SIZE = 4096


def _bytes_mutate(rng: random.Random) -> object:
    """A byte-level fallback for the mutator without atheris: flip, set or cut."""
    def m(data: bytes, max_size: int) -> bytes:
        b = bytearray(data or b"\0")
        op = rng.randrange(3)
        if op == 0:
            b[rng.randrange(len(b))] ^= 1 << rng.randrange(8)
        elif op == 1:
            b[rng.randrange(len(b))] = rng.choice((0, 0xFF, 0x7F, 0x80, rng.randrange(256)))
        else:
            del b[rng.randrange(len(b)):]
        return bytes(b[:max_size])
    return m


def seeds() -> list[bytes]:
    return [s for n, s in hostile_sections() if n.endswith("-unmodified")]


@dataclass
class Find:
    key: str
    kind: str  # "crash", "crash, predicted accept" or "verdict"
    first: float  # seconds into the campaign
    count: int
    detail: str
    repro: bytes
    said: str = ""  # the profile's error rules on the first input


def signature(row: O.Row) -> tuple[str, str] | None:
    """(kind, key) of a finding, or None. Crash keys drop addresses and line-specific values."""
    if row.actual.verdict == O.CRASH:
        key = re.sub(r"0x[0-9a-f]+|\b\d+\b", "N", row.actual.detail)
        if row.predicted is not None and row.predicted.verdict == O.ACCEPT:
            # a crash no counted finding warns of: listed, or a profile error
            return ("crash, listed" if row.known else "crash, predicted accept"), key
        return "crash", key
    if not row.ok and not row.known and row.predicted is not None:
        return "verdict", (f"actual {row.actual.verdict}, predicted {row.predicted.verdict}: "
                           + ",".join(row.predicted.errors))
    return None


def campaign(reader: O.Reader, duration: float, seed: int) -> tuple[dict[str, Find], int, float]:
    rng = random.Random(seed)
    pool = seeds()
    finds: dict[str, Find] = {}
    execs = 0
    t0 = time.monotonic()
    with tempfile.TemporaryDirectory() as tmp:
        while time.monotonic() - t0 < duration:
            data = mutate(rng.choice(pool), MAX_SIZE, rng.randrange(1 << 30),
                          byte_mutate=_bytes_mutate(rng))  # type: ignore[arg-type]
            elf = wrap(data)
            row = next(O.compare([("fuzz", elf)], [reader], Path(tmp)))
            execs += 1
            sig = signature(row)
            if sig is None:
                if row.actual.verdict == O.ACCEPT and len(pool) < 200:
                    pool.append(data)  # taken sections breed further inputs
                continue
            kind, key = sig
            f = finds.get(key)
            if f is None:
                detail = row.actual.detail or ", ".join(row.predicted.errors
                                                        if row.predicted else [])
                said = ", ".join(row.predicted.errors) if row.predicted else "(no profile)"
                if row.known:
                    said += f" (listed: {row.known})"
                finds[key] = Find(key, kind, time.monotonic() - t0, 1, detail, elf, said)
            else:
                f.count += 1
                if len(elf) < len(f.repro):
                    f.repro = elf  # keep the smallest reproducer
    return finds, execs, time.monotonic() - t0


def report(reader: O.Reader, finds: dict[str, Find], execs: int, elapsed: float, seed: int,
           out_dir: Path, stamp: str, budget: float | None = None) -> Path:
    budget = elapsed if budget is None else budget
    tag = {"llvm-readobj-22": "llvm-readobj-22", "llvm-readobj-23": "llvm-readobj-23",
           "objdump-sid": "objdump-sid", "objdump-2.40": "objdump-2.40"}[reader.name]
    md = out_dir / f"fuzz-{tag}-{stamp}.md"
    repro = out_dir / f"fuzz-{tag}-{stamp}-repro"
    lines = [f"# Differential fuzzing of {reader.name} against --profile {reader.profile}", "",
             f"`python -m fuzz.oracle_fuzz --reader {reader.name} --duration {budget:.0f} "
             f"--seed {seed}`: ran {elapsed:.0f} s on a shared 2-core machine, one "
             f"subprocess per input; {execs} executions, {execs / elapsed:.1f} exec/s.", "",
             "Inputs: the v2 and v3 libcorpus.so sections through the section mutator "
             "(fuzz/mutator.py, structured moves or byte flips), each wrapped in a small x86-64 "
             "ELF file (bench/elfwrap.py). A *crash* is a signal, an assertion, a hang or "
             "xmalloc's failure; a *verdict* finding is a file the reader accepted while the "
             "profile predicted refusal or the reverse, not among the listed unpredictable "
             "classes (fuzz/oracles.py).", ""]
    if not finds:
        lines.append("No crash and no verdict difference.")
    else:
        lines += ["| kind | first found (s) | hits | what | the profile's errors (first input) "
                  "| reproducer |", "|---|---|---|---|---|---|"]
        repro.mkdir(parents=True, exist_ok=True)
        for i, f in enumerate(sorted(finds.values(), key=lambda f: f.first)):
            name = f"{f.kind.split(',')[0]}-{i}.elf"
            (repro / name).write_bytes(f.repro)
            lines.append(f"| {f.kind} | {f.first:.1f} | {f.count} | "
                         f"{f.key.replace('|', '/')[:200]} | {f.said or '-'} | "
                         f"{repro.name}/{name} |")
        lines += ["", f"Replay: `{O.readers_dir().name}/{reader.name} --sframe FILE`; "
                  f"`sfcheck --profile {reader.profile} FILE`."]
    md.write_text("\n".join(lines) + "\n")
    return md


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m fuzz.oracle_fuzz")
    ap.add_argument("--reader", required=True, choices=[r.name for r in O.READERS])
    ap.add_argument("--duration", type=float, default=120)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--out", type=Path, default=ROOT / "reports")
    ap.add_argument("--stamp", default=date.today().isoformat())
    args = ap.parse_args(argv)
    found = O.available([args.reader])
    if not found:
        print(f"{args.reader} not in {O.readers_dir()}: run bash fuzz/get-readers.sh")
        return 2
    finds, execs, elapsed = campaign(found[0], args.duration, args.seed)
    md = report(found[0], finds, execs, elapsed, args.seed, args.out, args.stamp, args.duration)
    print(f"{args.reader}: {execs} execs in {elapsed:.0f} s ({execs / elapsed:.1f}/s), "
          f"{sum(f.kind.startswith('crash') for f in finds.values())} crash kinds, "
          f"{sum(f.kind == 'verdict' for f in finds.values())} verdict differences -> {md}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
