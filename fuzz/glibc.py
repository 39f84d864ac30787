"""Harness `glibc` (differential): the same bytes through sfcheck and glibc's own SFrame reader
(sysdeps/generic/sframe-read.c, glibc 2.42+, v2 only) and walker (sysdeps/generic/sframe.c,
`__stacktrace_sframe`, see glibc_walk.py), built at fuzz time by fuzz/get-glibc-sframe.sh and
run in a child process (glibc_worker.py) with the section ending at a guard page.

    sh fuzz/get-glibc-sframe.sh          # prints the library path
    python fuzz/glibc.py --glibc=PATH [libFuzzer flags] [corpus dirs]
    python fuzz/glibc.py --glibc=PATH --explain FILE   # keys, lookups and both walks of FILE
    python -m fuzz run --targets glibc --glibc PATH --duration 300

Keys recorded (smallest input per key, `#sfdiff` lines, as the libsframe harness does):
* crash:<signal>:<call>, hang:<call>: glibc's reader died (a read past the buffer, SIGFPE);
* accepts:<rule>: __sframe_decode accepts a section that breaks sfcheck error rule <rule>
  (glibc's only checks are magic, version 2, flags, fdeoff <= freoff, SORTED at lookup);
* rejects:v<N>: glibc refuses a v2 section sfcheck finds clean;
* find:<what>: both accept, and __sframe_find_fre answers a section-relative PC differently
  from sfcheck's reference table (another row, a row where there is none, none where there
  is one, other CFA/RA/FP offsets); find:offsets-ignored instead when sfh_fdeoff/sfh_freoff
  are not the canonical 0 and num_fdes * 20, which glibc ignores (its FDEs and FREs are then
  read from the wrong place: the cause of every find:different-row and find:cfa-offset of
  the 2026-11-23 campaign);
* crash:SIGSEGV:call_walk:<where>, hang:call_walk, walk:*: the walker (glibc_walk.py).
"""

from __future__ import annotations

import os
import re
import signal
import sys

# Last, after site-packages: an installed sfcheck (the one CI tests) wins over the checkout.
sys.path.append(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from fuzz import common  # noqa: E402

with common.instrumented_imports(__name__ == "__main__"):
    from sfcheck.errors import DecodeError
    from sfcheck.format import constants as C
    from sfcheck.format.abi import ABIS
    from sfcheck.format.fre_rules import fre_rules
    from sfcheck.unwind.table import Row, SFrameTable

from fuzz import glibc_walk, mutator  # noqa: E402
from fuzz.differential import Recorder  # noqa: E402
from fuzz.libsframe import (  # noqa: E402
    Worker,
    lib_from_argv,
    probe_pcs,
    sfcheck_view,
    start_worker,
)


class GlibcWorker(Worker):
    script = "glibc_worker.py"

    def _died(self) -> tuple[str, str, str]:
        """(signal, call, where): `where` is the region of the address the shim reports
        for a fault (glibc_walk.fault_region), or ""."""
        assert self.proc is not None
        code = self.proc.wait()
        err = self.proc.stderr.read().decode(errors="replace") if self.proc.stderr else ""
        self.proc = None
        calls = re.findall(r"line \d+ in (call_\w+)", err)
        fault = re.search(r"shim: fault at (0x[0-9a-f]+)", err)
        where = glibc_walk.fault_region(int(fault.group(1), 16)) if fault else ""
        sig = signal.Signals(-code).name if code < 0 else f"exit{code}"
        if sig == "SIGVTALRM":  # the CPU alarm is armed around the walk only
            return sig, "call_walk", ""
        return sig, calls[0] if calls else "?", where


def canonical(h) -> bool:  # type: ignore[no-untyped-def]
    """Whether the FDEs and FREs are where glibc reads them, ignoring fdeoff and freoff."""
    return h.fdeoff == 0 and h.freoff == h.num_fdes * C.FDE_SIZE[C.VERSION_2]


def compare(data: bytes, reply: tuple, errors: list[str], h, fdes) -> list[str]:  # type: ignore[no-untyped-def]
    rc, lookups = reply[:2]
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
    if not canonical(h):
        keys = ["find:offsets-ignored" if k.startswith("find:") else k for k in keys]
    return sorted(set(keys), key=keys.index)


def walk_scenario(data: bytes, h, fdes) -> tuple[glibc_walk.Scenario | None, SFrameTable | None]:  # type: ignore[no-untyped-def]
    """The walk to ask for, with the table it was made from (None: no walk: not a v2 section
    glibc can decode, or no PC in its text)."""
    if h is None or h.version != C.VERSION_2 or h.big_endian or len(data) > glibc_walk.REGION:
        return None, None
    table = SFrameTable(data, vma=glibc_walk.SECTION_END - len(data))
    if table.error is not None or not table.text_ranges:
        return None, None
    scen = glibc_walk.Scenario.from_data(data, table, probe_pcs(h, fdes))
    return (scen, table) if scen is not None else (None, None)


def ask(data: bytes, scen: glibc_walk.Scenario | None = None
        ) -> tuple[list[str], tuple | None, glibc_walk.Reference | None]:
    """(keys, the worker's reply, the reference walk) for one input; the walk is the one its
    bytes seed unless `scen` is given (tests)."""
    errors, h, fdes = sfcheck_view(data)
    if WORKER is None:
        return [], None, None
    seeded, table = walk_scenario(data, h, fdes)
    scen = scen or seeded
    probes = probe_pcs(h, fdes)
    status, reply = WORKER.ask(data, probes + (scen.request() if scen else []))
    if status == "crash":
        sig, call, where = reply  # type: ignore[misc]
        if sig == "SIGVTALRM":
            return ["hang:call_walk"], None, None
        return [f"crash:{sig}:{call}" + (f":{where}" if call == "call_walk" else "")], None, None
    if status == "hang":
        return [f"hang:{reply}"], None, None
    assert isinstance(reply, tuple)
    keys = compare(data, reply, errors, h, fdes)
    walk = reply[2] if len(reply) > 2 else None
    ref = None
    # Walk disagreements only where glibc reads the section as sfcheck does (clean, canonical
    # layout, SORTED): elsewhere its lookups already differ (the find:* and accepts:* keys).
    if walk is not None and scen is not None and table is not None and not errors and \
            h.flags & C.F_FDE_SORTED and canonical(h):
        ref = scen.reference(data, table)
        walk_keys = glibc_walk.compare(walk, ref)
        if not walk_keys and walk[0] > 0:
            # The same walk with caller rows looked up at RA - 1: where it differs, the
            # frames glibc returned came from the wrong function's row.
            adjusted = scen.reference(data, table, ra_minus_1=True)
            if glibc_walk.compare(walk, adjusted):
                walk_keys = [glibc_walk.lookup_key(table, walk[1])]
        keys += walk_keys
    return keys, reply, ref


LIB: str | None = None
WORKER: Worker | None = None
RECORDER: Recorder | None = None


def setup(lib: str | None) -> None:
    global LIB, WORKER, RECORDER
    LIB = lib
    WORKER, RECORDER = start_worker(GlibcWorker, lib)


def outcome(data: bytes) -> list[str]:
    return ask(data)[0]


def explain(path: str) -> None:
    """Print what one input does on both sides (for a reproducer)."""
    data = open(path, "rb").read()  # noqa: SIM115
    keys, reply, ref = ask(data)
    print("keys:", keys)
    if reply is None:
        return
    print("decode:", reply[0])
    for row in reply[1]:
        print("  find_fre", row)
    _e, h, fdes = sfcheck_view(data)
    scen, _t = walk_scenario(data, h, fdes)
    if scen is not None:
        print(f"walk: text [{scen.lo:#x}, {scen.hi:#x}), section at {scen.sec:#x}, "
              f"pc {scen.pc:#x} sp {scen.sp:#x} fp {scen.fp:#x}")
    if len(reply) > 2 and reply[2] is not None:
        print("  glibc returns", reply[2][0], [hex(a) for a in reply[2][1]])
    if ref is not None:
        print("  reference", [hex(a) for a in ref.ras], ref.reason.value,
              "in text" if ref.in_text else "outside text", f"fp {ref.last_fp}")


def test_one_input(data: bytes) -> None:
    for k in outcome(data):
        if RECORDER is not None:
            RECORDER.note(k.split(":", 1)[0], k, data)


def custom_mutator(data: bytes, max_size: int, seed: int) -> bytes:
    return mutator.mutate(data, max_size, seed)


def process_findings(job, findings, budget: float) -> list[dict]:  # type: ignore[no-untyped-def]
    """Minimise each recorded key against the library, as the model harnesses do."""
    from .differential import keyed_rows
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
    if "--explain" in sys.argv:
        try:
            explain(sys.argv[sys.argv.index("--explain") + 1])
        finally:
            if WORKER is not None and WORKER.proc is not None:
                WORKER.proc.kill()
        sys.exit(0)
    common.run("glibc", test_one_input, custom_mutator)
else:
    setup(os.environ.get("SFCHECK_GLIBC"))
