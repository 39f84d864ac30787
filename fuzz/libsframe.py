"""Harness `libsframe` (differential): the same bytes through sfcheck and binutils' libsframe.

    python fuzz/libsframe.py --libsframe=/usr/lib/x86_64-linux-gnu/libsframe.so.0 [libFuzzer flags]

libsframe runs in a child process (libsframe_worker.py) with the section
ending at a guard page, so its crashes and reads past the end of the buffer
are caught and restarted from. What is recorded (as SFCHECK_FUZZ_FINDINGS/<key>.bin,
the smallest input per key, and a `#sfdiff` line):
* crash:<signal>:<call>[:<message>] and hang:<call>: libsframe died or hung;
* accepts:<rule>: libsframe decodes a section that breaks sfcheck error rule <rule>;
* rejects:v<N>:<error>: libsframe refuses a section sfcheck finds clean;
* funcdesc:<field>, fre:<field>, find_fre:<what>: both accept the section, but
  libsframe reads an FDE or FRE differently, or sframe_find_fre answers a PC
  differently from sfcheck's unwinder table.
Exceptions from sfcheck itself are findings as in every harness (common.Counter).
Without --libsframe only the sfcheck side runs (regression replay).
"""

from __future__ import annotations

import os
import re
import select
import signal
import struct
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

# Last, after site-packages: an installed sfcheck (the one CI tests) wins over the checkout.
sys.path.append(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from fuzz import common  # noqa: E402

with common.instrumented_imports(__name__ == "__main__"):
    from sfcheck.checker import check_section_bytes
    from sfcheck.errors import DecodeError
    from sfcheck.format import constants as C
    from sfcheck.format.decode import Decoder
    from sfcheck.format.model import FDE, Header
    from sfcheck.result import Severity
    from sfcheck.unwind import SFrameTable
    from sfcheck.unwind.table import Row

from fuzz import mutator  # noqa: E402
from fuzz.differential import Recorder, keyed_rows  # noqa: E402

ERRNAMES = {2000: "VERSION_INVAL", 2001: "NOMEM", 2002: "INVAL", 2003: "BUF_INVAL",
            2004: "DCTX_INVAL", 2005: "ECTX_INVAL", 2006: "FDE_INVAL", 2007: "FRE_INVAL",
            2008: "FDE_NOTFOUND", 2009: "FDE_NOTSORTED", 2010: "FRE_NOTFOUND",
            2011: "FREOFFSET_NOPRESENT", -1: "ERR"}
PROBE_FDES = 16
HANG_S = 5.0


def errname(code: int) -> str:
    return ERRNAMES.get(code, str(code))


def lib_label(path: str) -> str:
    """The binutils version a libsframe comes from (Debian changelog next to it)."""
    import gzip
    p = Path(path).resolve()
    roots = [q for q in p.parents if q.name == "usr"]
    root = roots[0].parent if roots else Path("/")
    for doc in sorted(root.glob("usr/share/doc/libsframe*/changelog.Debian.gz")) + sorted(
            root.glob("usr/share/doc/libbinutils/changelog.Debian.gz")):
        try:
            with gzip.open(doc, "rt") as fh:
                first = fh.readline()
        except OSError:
            continue
        m = re.search(r"\(([^)]+)\)", first)
        if m:
            return m.group(1)
    return p.name.replace("libsframe.so.", "so")


def seed_versions(path: str) -> set[int]:
    """The SFrame versions a libsframe reads: 2.40 v1; 2.44 v2; 2.46+ v2 and v3."""
    import ctypes
    lib = ctypes.CDLL(path)
    if hasattr(lib, "sframe_decoder_get_funcdesc_v3"):
        return {2, 3}
    if hasattr(lib, "sframe_decoder_get_funcdesc_v2"):
        return {2}
    return {1}


class Worker:
    """The child process; restarted after every crash or hang."""

    script = "libsframe_worker.py"  # the glibc harness runs glibc_worker.py the same way

    def __init__(self, lib: str) -> None:
        self.lib = lib
        self.proc: subprocess.Popen[bytes] | None = None

    def start(self) -> subprocess.Popen[bytes]:
        if self.proc is None or self.proc.poll() is not None:
            # -S: the worker needs only the standard library; a restart after each
            # crash is then ~30 ms.
            # SFCHECK_EFENCE=<libefence.so>: every malloc of libsframe's own copies ends at a
            # guard page too (Debian electric-fence), so heap over-reads fault as well.
            env = dict(os.environ)
            efence = os.environ.get("SFCHECK_EFENCE")
            if efence:
                env |= {"LD_PRELOAD": efence, "EF_ALLOW_MALLOC_0": "1"}
            self.proc = subprocess.Popen(
                [sys.executable, "-S", str(common.FUZZ_DIR / self.script), self.lib],
                stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env)
        return self.proc

    def ask(self, data: bytes, pcs: list[int]) -> tuple[str, object]:
        """("ok", reply) | ("crash", (signal, call, message)) | ("hang", call)."""
        import marshal
        proc = self.start()
        assert proc.stdin is not None and proc.stdout is not None
        try:
            proc.stdin.write(struct.pack("<II", len(data), len(pcs)) + data
                             + struct.pack(f"<{len(pcs)}q", *pcs))
            proc.stdin.flush()
            ready, _, _ = select.select([proc.stdout], [], [], HANG_S)
            if not ready:
                proc.kill()
                return "hang", self._died()[1]
            head = proc.stdout.read(4)
            if len(head) == 4:
                return "ok", marshal.loads(proc.stdout.read(struct.unpack("<I", head)[0]))
        except (BrokenPipeError, OSError):
            pass
        return "crash", self._died()

    def _died(self) -> tuple[str, str, str]:
        assert self.proc is not None
        code = self.proc.wait()
        err = self.proc.stderr.read().decode(errors="replace") if self.proc.stderr else ""
        self.proc = None
        calls = re.findall(r"line \d+ in (call_\w+)", err)
        call = calls[0] if calls else "?"
        msg = ""
        for line in err.splitlines():
            if "sframe" in line.lower() and ("assert" in line.lower() or "Assertion" in line):
                msg = re.sub(r"\s+", " ", line.strip())[:100]
                break
        sig = signal.Signals(-code).name if code < 0 else f"exit{code}"
        return sig, call, msg


# -- the sfcheck side ---------------------------------------------------------------


def sfcheck_view(data: bytes) -> tuple[list[str], Header | None, list[tuple[int, FDE]]]:
    """(error rule IDs, header, the first FDEs with their FREs) as sfcheck sees them."""
    result = check_section_bytes(data, vma=0)
    errors = sorted({f.rule for f in result.findings if f.severity >= Severity.ERROR})
    fdes: list[tuple[int, FDE]] = []
    header = None
    try:
        dec = Decoder(data)
        header = dec.header
        for i in range(min(PROBE_FDES, header.num_fdes)):
            try:
                fdes.append((i, dec.fde(i)))
            except DecodeError:
                continue
    except DecodeError:
        pass
    return errors, header, fdes


def probe_pcs(h: Header | None, fdes: list[tuple[int, FDE]]) -> list[int]:
    """Section-relative PCs: every function's start, row starts, last byte and end, with
    the start computed both with fdeoff (sfcheck) and without it (libsframe)."""
    if h is None:
        return []
    pcs: set[int] = set()
    for i, f in fdes:
        for honour in (True, False):
            s = h.func_start(i, f.start, 0, honour_fdeoff=honour)
            pcs.update((s, s + max(f.size, 1) - 1, s + f.size))
            pcs.update(s + fre.start for fre in f.fres[:8])
    lim = 1 << 63
    return sorted(p for p in pcs if -lim <= p < lim)[:64]


def _raw_words(fre_words: tuple[int, ...], width: int) -> bytes:
    code = {1: "b", 2: "h", 4: "i"}[width]
    return struct.pack(f"<{len(fre_words)}{code}", *fre_words) if fre_words else b""


def compare(data: bytes, reply: tuple, errors: list[str], h: Header | None,
            fdes: list[tuple[int, FDE]]) -> list[str]:
    """The disagreement keys for one input both sides have read."""
    lib_err, _nf, lib_fdes, lib_fres, lookups = reply
    accepted = lib_err == 0
    keys = []
    version = data[2] if len(data) > 2 else 0
    if accepted and errors:
        keys += [f"accepts:{r}" for r in errors]
    if not accepted and not errors and len(data) >= C.HEADER_SIZE:
        keys.append(f"rejects:v{version}:{errname(lib_err)}")
    if not accepted or errors or h is None:
        return keys
    mine = dict(fdes)
    for i, err, num_fres, size, start, info, _info2, rep in lib_fdes:
        f = mine.get(i)
        if f is None:
            continue
        if err:
            keys.append(f"funcdesc:error:{errname(err)}")
            continue
        if num_fres != len(f.fres):
            keys.append("funcdesc:num_fres")
        if size != f.size:
            keys.append("funcdesc:size")
        if start not in (f.start, h.func_start(i, f.start, 0)):
            keys.append("funcdesc:start")
        if info != f.info:
            keys.append("funcdesc:info")
        if version >= 2 and rep != f.rep_size:
            keys.append("funcdesc:rep_size")
    for i, j, err, start, info, words in lib_fres:
        f = mine.get(i)
        if f is None or j >= len(f.fres):
            continue
        fre = f.fres[j]
        if err:
            keys.append(f"fre:error:{errname(err)}")
            continue
        if start != fre.start:
            keys.append("fre:start")
        if info != fre.info:
            keys.append("fre:info")
        raw = _raw_words(fre.words, fre.word_size)
        if words[:len(raw)] != raw:
            keys.append("fre:words")
    table = SFrameTable(data, vma=0)
    for pc, err, start, info, words in lookups:
        got = table.lookup(pc)
        if isinstance(got, Row):
            if err:
                keys.append(f"find_fre:sfcheck-row-libsframe-{errname(err)}")
            elif (start, info) != (got.fre.start, got.fre.info) or words[:len(
                    raw := _raw_words(got.fre.words, got.fre.word_size))] != raw:
                keys.append("find_fre:different-row")
        elif not err:
            keys.append(f"find_fre:libsframe-row-sfcheck-{got.kind}")
    return keys


def start_worker(worker_cls: Callable[[str], Worker], lib: str | None
          ) -> tuple[Worker | None, Recorder]:
    """The worker for `lib` (none without one) and the recorder of its findings."""
    return (worker_cls(lib) if lib else None,
            Recorder(os.environ.get("SFCHECK_FUZZ_FINDINGS"), lib or ""))


def ask_keys(worker: Worker | None, data: bytes, compare: Callable[..., list[str]],
             crash_msg: bool = True) -> list[str]:
    """Every key one input produces against a library worker: its crash or hang, else what
    `compare` finds between the worker's reply and sfcheck's reading."""
    errors, h, fdes = sfcheck_view(data)
    if worker is None:
        return []
    status, reply = worker.ask(data, probe_pcs(h, fdes))
    if status == "crash":
        sig, call, msg = reply  # type: ignore[misc]
        return [f"crash:{sig}:{call}" + (f":{msg}" if msg and crash_msg else "")]
    if status == "hang":
        return [f"hang:{reply}"]
    return compare(data, reply, errors, h, fdes)


LIB: str | None = None
WORKER: Worker | None = None
RECORDER: Recorder | None = None


def setup(lib: str | None) -> None:
    global LIB, WORKER, RECORDER
    LIB = lib
    WORKER, RECORDER = start_worker(Worker, lib)


def outcome(data: bytes) -> list[str]:
    """Every key this input produces against the current library (for minimising too)."""
    return ask_keys(WORKER, data, compare)


def test_one_input(data: bytes) -> None:
    keys = outcome(data)
    _feedback(keys)
    if RECORDER is not None:
        score = sum(1 for k in keys if k.startswith("accepts:"))
        for k in keys:
            RECORDER.note(k.split(":", 1)[0], k, data, score if k.startswith("accepts:") else 0)


FEEDBACK = [0] * 8


def _feedback(keys: list[str]) -> None:
    """Branch on the outcome so new libsframe behaviour is new coverage (instrumented)."""
    for k in keys:
        kind = k.split(":", 1)[0]
        if kind == "crash":
            FEEDBACK[0] += 1
        elif kind == "hang":
            FEEDBACK[1] += 1
        elif kind == "accepts":
            FEEDBACK[2] += 1
        elif kind == "rejects":
            FEEDBACK[3] += 1
        elif kind == "find_fre":
            FEEDBACK[4] += 1
        elif kind == "fre":
            FEEDBACK[5] += 1
        elif kind == "funcdesc":
            FEEDBACK[6] += 1
        else:
            FEEDBACK[7] += 1


def custom_mutator(data: bytes, max_size: int, seed: int) -> bytes:
    return mutator.mutate(data, max_size, seed)


def process_findings(job, findings: Path, budget: float) -> list[dict]:  # type: ignore[no-untyped-def]
    """Minimise each recorded key against the library; rows for the report."""
    lib = next((a.split("=", 1)[1] for a in job.argv if a.startswith("--libsframe=")), None)
    if lib is None:
        return []
    setup(lib)
    known = _known()

    def describe(key: str) -> dict:
        status = "known" if f"{job.label} {key}" in known else "libsframe"
        if key.startswith(("crash:", "hang:")) and status != "known":
            status = "new"
        return {"status": status}

    try:
        return keyed_rows(job, findings, budget, outcome, describe)
    finally:
        if WORKER is not None and WORKER.proc is not None:
            WORKER.proc.kill()


def _known() -> set[str]:
    """`<label> <key>` lines of libsframe findings already written up (fuzz/libsframe-known.txt)."""
    p = common.FUZZ_DIR / "libsframe-known.txt"
    if not p.is_file():
        return set()
    return {ln.strip() for ln in p.read_text().splitlines() if ln.strip() and ln[0] != "#"}


def lib_from_argv(option: str, env: str) -> str | None:
    """The library given as `option`=PATH (taken out of sys.argv, which atheris reads) or
    in the environment variable `env`, made absolute."""
    lib = None
    for a in list(sys.argv):
        if a.startswith(option + "="):
            lib = a.split("=", 1)[1]
            sys.argv.remove(a)
    lib = lib or os.environ.get(env)
    return os.path.abspath(lib) if lib else None


if __name__ == "__main__":
    lib_path = lib_from_argv("--libsframe", "SFCHECK_LIBSFRAME")
    if not lib_path:
        sys.exit("give --libsframe=PATH (a libsframe.so to compare with)")
    setup(lib_path)
    import atheris
    _feedback = atheris.instrument_func(_feedback)
    common.run("libsframe", test_one_input, custom_mutator)
else:
    setup(os.environ.get("SFCHECK_LIBSFRAME"))
