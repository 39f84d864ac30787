"""Harness `glibc` (differential): the same bytes through sfcheck and glibc's own SFrame reader
(sysdeps/generic/sframe-read.c, glibc 2.42+, v2 only), built at fuzz time by
fuzz/get-glibc-sframe.sh and run in a child process (glibc_worker.py) with the section ending
at a guard page.

    sh fuzz/get-glibc-sframe.sh          # prints the library path
    python fuzz/glibc.py --glibc=PATH [libFuzzer flags] [corpus dirs]
    python -m fuzz run --targets glibc --glibc PATH --duration 300

Keys recorded (smallest input per key, `#sfdiff` lines, as the libsframe harness does):
* crash:<signal>:<call>, hang:<call>: glibc's reader died (a read past the buffer, SIGFPE);
* accepts:<rule>: __sframe_decode accepts a section that breaks sfcheck error rule <rule>
  (glibc's only checks are magic, version 2, flags, fdeoff <= freoff, SORTED at lookup);
* rejects:v<N>: glibc refuses a v2 section sfcheck finds clean;
* find:<what>: both accept, and __sframe_find_fre answers a section-relative PC differently
  from sfcheck's reference table (another row, a row where there is none, none where there
  is one, other CFA/RA/FP offsets).
"""

from __future__ import annotations

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from fuzz import common  # noqa: E402

with common.instrumented_imports(__name__ == "__main__"):
    from sfcheck.errors import DecodeError
    from sfcheck.format import constants as C
    from sfcheck.format.abi import ABIS
    from sfcheck.format.fre_rules import fre_rules
    from sfcheck.unwind.table import Row, SFrameTable

from fuzz import mutator  # noqa: E402
from fuzz.libsframe import Recorder, Worker, ask_keys, lib_from_argv, start_worker  # noqa: E402


class GlibcWorker(Worker):
    script = "glibc_worker.py"


def compare(data: bytes, reply: tuple, errors: list[str], h, fdes) -> list[str]:  # type: ignore[no-untyped-def]
    rc, lookups = reply
    accepted = rc == 0
    version = data[2] if len(data) > 2 else 0
    keys: list[str] = []
    if accepted and errors:
        keys += [f"accepts:{r}" for r in errors]
    if not accepted and not errors and len(data) >= C.HEADER_SIZE and version == 2:
        keys.append(f"rejects:v{version}")
    if not accepted or errors or h is None:
        return keys
    table = SFrameTable(data, vma=0)
    abi = ABIS.get(h.abi, ABIS[C.ABI_AMD64_LE])
    for pc, frc, start, info, _base, cfa, cfa_err, ra, ra_err, fp, fp_err in lookups:
        ref = table.lookup(pc)
        if not isinstance(ref, Row):
            if frc == 0:
                keys.append(f"find:glibc-row-sfcheck-{ref.kind}")
            continue
        if frc != 0:
            keys.append("find:sfcheck-row-glibc-none")
            continue
        if (start, info) != (ref.fre.start, ref.fre.info):
            keys.append("find:different-row")
            continue
        try:
            want = fre_rules(h, False, ref.fre, abi)
        except (ValueError, DecodeError):
            continue
        if cfa_err or cfa != want[0].offset:
            keys.append("find:cfa-offset")
        if want[1] is not None and want[1].deref and want[1].reg is None and (
                ra_err or ra != want[1].offset):
            keys.append("find:ra-offset")
        if want[2] is not None and want[2].deref and want[2].reg is None and (
                fp_err or fp != want[2].offset):
            keys.append("find:fp-offset")
    return keys


LIB: str | None = None
WORKER: Worker | None = None
RECORDER: Recorder | None = None


def setup(lib: str | None) -> None:
    global LIB, WORKER, RECORDER
    LIB = lib
    WORKER, RECORDER = start_worker(GlibcWorker, lib)


def outcome(data: bytes) -> list[str]:
    return ask_keys(WORKER, data, compare, crash_msg=False)


def test_one_input(data: bytes) -> None:
    for k in outcome(data):
        if RECORDER is not None:
            RECORDER.note(k.split(":", 1)[0], k, data)


def custom_mutator(data: bytes, max_size: int, seed: int) -> bytes:
    return mutator.mutate(data, max_size, seed)


def process_findings(job, findings, budget: float) -> list[dict]:  # type: ignore[no-untyped-def]
    """Minimise each recorded key against the library, as the model harnesses do."""
    from .reader_models import keyed_rows
    lib = next((a.split("=", 1)[1] for a in job.argv if a.startswith("--glibc=")), None)
    if lib is None:
        return []
    setup(lib)
    try:
        return keyed_rows(job, findings, budget, outcome, lambda key: {"status": "glibc"})
    finally:
        if WORKER is not None and WORKER.proc is not None:
            WORKER.proc.kill()


if __name__ == "__main__":
    lib_path = lib_from_argv("--glibc", "SFCHECK_GLIBC")
    if not lib_path:
        sys.exit("give --glibc=PATH (a library built by fuzz/get-glibc-sframe.sh)")
    setup(lib_path)
    common.run("glibc", test_one_input, custom_mutator)
else:
    setup(os.environ.get("SFCHECK_GLIBC"))
