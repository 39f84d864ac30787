"""What every harness shares: paths, seeds, the exec counter and the atheris entry point.

A harness module defines `test_one_input(data)` (pure Python, importable by the
regression replay and the smoke tests without atheris) and calls `run()` under
`if __name__ == "__main__"`. `run()` instruments sfcheck, wires the custom
mutator when the harness asks for one, and prints a `#sfstat` line every couple
of seconds (time, executions) that the campaign runner turns into exec/s plots.
"""

from __future__ import annotations

import contextlib
import importlib
import importlib.util
import os
import re
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from types import ModuleType

ROOT = Path(__file__).resolve().parent.parent
CORPUS = ROOT / "corpus"
REGRESSIONS = CORPUS / "regressions"
UPSTREAM = ROOT.parent / "shared" / "testdata" / "upstream"
FUZZ_DIR = Path(__file__).resolve().parent
DICT = FUZZ_DIR / "sfcheck.dict"

# Small linked ELF files of every toolchain, version and ABI in corpus/ (all < 20 KB).
SEED_ELVES = [
    "v1/exe_static", "v1/exe_pie", "v2/exe_static", "v2/exe_pie", "v3/exe_static",
    "v3/exe_pie", "llvm/exe_static", "llvm/exe_pie", "aarch64/v1/exe_static",
    "aarch64/v3/exe_static", "s390x/v3/exe_static", "bad/lld_5obj_exe",
    "bad/ld240_v2obj_exe",
]

STAT_PERIOD = 2.0  # seconds between #sfstat lines


def load_extension(env: str, name: str) -> ModuleType | None:
    """The C module `name` (e.g. sfcheck.dwarf._cfirun) built where the environment variable
    `env` points (fuzz/build-asan.sh's instrumented build), else None: the caller then takes
    the installed one."""
    path = os.environ.get(env)
    if not path:
        return None
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def sfcheck_errors() -> tuple[type[BaseException], ...]:
    from sfcheck.errors import SfcheckError
    return (SfcheckError,)


def corpus_elves() -> list[Path]:
    return [CORPUS / p for p in SEED_ELVES if (CORPUS / p).is_file()]


def upstream_sections() -> Iterator[tuple[str, bytes, int]]:
    """(name, bytes, vma) of the upstream sections in ../shared, when present."""
    import bz2
    import json
    sfrs = UPSTREAM / "simple-frame-rs"
    if sfrs.is_dir():
        for p in sorted(sfrs.glob("*.json")):
            try:
                obj = json.loads(p.read_text())
                yield p.stem, bytes(obj["content"]), int(obj.get("section_base", 0))
            except (ValueError, KeyError, TypeError):
                continue
    bu = UPSTREAM / "binutils"
    if bu.is_dir():
        for p in sorted(bu.glob("*.sframe.bz2")):
            yield p.name.removesuffix(".sframe.bz2"), bz2.decompress(p.read_bytes()), 0
        for p in sorted(bu.glob("DATA*")):
            yield p.name, p.read_bytes(), 0


def corpus_sections() -> Iterator[tuple[str, bytes, int]]:
    """(name, bytes, vma) of every .sframe in the seed ELF files."""
    from sfcheck.elf.loader import load_elf
    from sfcheck.errors import SfcheckError
    for p in corpus_elves():
        try:
            info = load_elf(str(p))
        except SfcheckError:
            continue
        for s in info.sections:
            if s.data:
                yield str(p.relative_to(CORPUS)).replace("/", "_"), s.data, s.vma


def archive_seeds() -> list[tuple[str, bytes]]:
    """The archive target's seeds: archives of the first seed ELF files."""
    from .seed_archives import build
    return build([p.read_bytes() for p in corpus_elves()[:3]])


def write_seeds(target: str, dest: Path, versions: set[int] | None = None) -> int:
    """Write `target`'s seed inputs into `dest`; returns how many."""
    dest.mkdir(parents=True, exist_ok=True)
    n = 0

    def put(name: str, data: bytes) -> None:
        nonlocal n
        (dest / f"seed-{name}").write_bytes(data)
        n += 1

    if target == "archive":
        for name, data in archive_seeds():
            put(name, data)
        return n
    if target == "elf":
        for i, p in enumerate(corpus_elves()):
            data = p.read_bytes()
            # Input = selector byte, mode byte, then the replacement .sframe / header XOR.
            sec = next(corpus_sections_of(p), None)
            if sec is not None:
                put(f"{i}-sframe", bytes([i, 0]) + sec)
            put(f"{i}-hdr", bytes([i, 1]) + bytes(min(len(data), 256)))
            # Modes 2 and 3 (fuzz/elf.py): one header edit, one symbol/.eh_frame edit.
            put(f"{i}-edit", bytes([i, 2, 2, 0, 0, 4, 5]) + bytes(7))
            put(f"{i}-symeh", bytes([i, 3, 1, 0, 1, 2, 5]) + bytes(7))
        return n
    if target == "unwind":
        # selector, registers, then stack words alternating "return address" (kind 1)
        # and "stack address" (kind 2): see unwind.py.
        stack = b"".join(((k * 4 + (1 if k % 2 else 2)) | (k << 8)).to_bytes(8, "little")
                         for k in range(64))
        for i in range(len(list(corpus_sections()))):
            put(f"real{i}", bytes([i, 0x10, 0, 4, 0, 2, 0x20, 0, 0x30, 3, 5, 16]) + stack)
        for i in range(16):
            put(f"gen{i}", bytes([0x80 | i]) + bytes((i * 37 + k * 11) & 0xFF
                                                     for k in range(40)) + stack)
        return n
    sections = list(corpus_sections()) + list(upstream_sections())
    if versions is not None:
        sections = [s for s in sections if len(s[1]) > 2 and s[1][2] in versions]
    for name, data, _vma in sections:
        put(name, data)
    return n


def corpus_sections_of(path: Path) -> Iterator[bytes]:
    from sfcheck.elf.loader import load_elf
    info = load_elf(str(path))
    for s in info.sections:
        yield s.data


def signature(exc: BaseException) -> str:
    """What identifies a bug: the exception type, where it was raised (innermost frame in
    sfcheck or fuzz/), and for property failures the message up to its first colon."""
    import traceback
    where = "?"
    for fs in traceback.extract_tb(exc.__traceback__):
        fn = fs.filename.replace("\\", "/")
        if "/sfcheck/" in fn or "/fuzz/" in fn:
            where = f"{fn.rsplit('/', 1)[-1]}:{fs.name}"
    what = type(exc).__name__
    if isinstance(exc, AssertionError):
        # The message with numbers taken out: one signature per kind of failure.
        text = re.sub(r"0x[0-9a-fA-F]+|\d+", "N", str(exc))
        what += ":" + re.sub(r"\([^)]*\)", "", text)[:120]
    return f"{what}@{where}"


def slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9]+", "-", text).strip("-")[:90]


class Counter:
    """Counts executions and prints `#sfstat t=<s> execs=<n>` every STAT_PERIOD seconds.

    With SFCHECK_FUZZ_FINDINGS=DIR (campaign mode) an exception that is not one of
    sfcheck's own does not stop the fuzzer: the input is kept as DIR/<signature>.bin
    (the smallest seen per signature) and a `#sffinding` line is printed, so one
    shallow bug cannot end a 30-minute campaign. Without it, libFuzzer's usual crash
    handling applies.
    """

    def __init__(self, fn: Callable[[bytes], None]) -> None:
        self.fn = fn
        self.execs = 0
        self.t0 = time.monotonic()
        self.next = self.t0 + STAT_PERIOD
        found = os.environ.get("SFCHECK_FUZZ_FINDINGS")
        self.findings = Path(found) if found else None
        self.seen: dict[str, int] = {}

    def __call__(self, data: bytes) -> None:
        self.execs += 1
        if not self.execs & 63:
            now = time.monotonic()
            if now >= self.next:
                self.next = now + STAT_PERIOD
                print(f"#sfstat t={now - self.t0:.2f} execs={self.execs}", file=sys.stderr,
                      flush=True)
        if self.findings is None:
            self.fn(data)
            return
        try:
            self.fn(data)
        except Exception as exc:  # noqa: BLE001 - every escape is a finding to keep
            self.keep(exc, data)

    def keep(self, exc: BaseException, data: bytes) -> None:
        assert self.findings is not None
        sig = signature(exc)
        old = self.seen.get(sig)
        if old is not None and old <= len(data):
            return
        self.seen[sig] = len(data)
        self.findings.mkdir(parents=True, exist_ok=True)
        name = slug(sig)
        (self.findings / f"{name}.bin").write_bytes(data)
        (self.findings / f"{name}.txt").write_text(f"{sig}\n{type(exc).__name__}: {exc}\n")
        print(f"#sffinding sig={sig} len={len(data)} t={time.monotonic() - self.t0:.2f}",
              file=sys.stderr, flush=True)


def run(module_name: str, test_one_input: Callable[[bytes], None],
        mutator: Callable[[bytes, int, int], bytes] | None = None) -> None:
    """atheris entry: `python fuzz/NAME.py [libFuzzer flags] [corpus dirs]`.

    SFCHECK_FUZZ_MUTATOR=0 turns the structure-aware mutator off (plain libFuzzer
    byte mutation), which is how the runner measures what the mutator adds.
    """
    import atheris
    argv = list(sys.argv)
    if DICT.is_file() and not any(a.startswith("-dict=") for a in argv):
        argv.append(f"-dict={DICT}")
    use_mutator = mutator is not None and os.environ.get("SFCHECK_FUZZ_MUTATOR", "1") != "0"
    counted = Counter(test_one_input)
    if use_mutator:
        atheris.Setup(argv, counted, custom_mutator=mutator)
    else:
        atheris.Setup(argv, counted)
    atheris.Fuzz()


def instrumented_imports(active: bool, exclude: tuple[str, ...] = (), dataflow: bool = True
                         ) -> contextlib.AbstractContextManager[object]:
    """atheris instrumentation of sfcheck while a harness runs as a fuzzer; a no-op
    when the harness is imported (regression replay, smoke tests) or atheris is absent.
    `exclude` names modules (exactly) a harness leaves uninstrumented: every branch of an
    instrumented module costs a call on every execution, worth it only where coverage
    feedback can steer the fuzzer. `dataflow` False: branches only, no comparison tracing
    (the operands libFuzzer's own byte mutations draw values from); SFCHECK_FUZZ_DATAFLOW=0
    or 1 overrides it."""
    if not active or os.environ.get("SFCHECK_FUZZ_NO_INSTRUMENT") == "1":
        return contextlib.nullcontext()
    try:
        import atheris
    except ImportError:
        return contextlib.nullcontext()
    dataflow = os.environ.get("SFCHECK_FUZZ_DATAFLOW", "1" if dataflow else "0") != "0"
    if not dataflow:
        # atheris.instrument_imports always traces comparisons; its HookManager can not.
        from atheris.import_hook import HookManager
        return HookManager({"sfcheck"}, set(exclude), True, trace_dataflow=False)
    return atheris.instrument_imports(include=["sfcheck"], exclude=list(exclude))


def _sfcheck_modules() -> dict[str, ModuleType]:
    return {k: m for k, m in sys.modules.items() if k == "sfcheck" or k.startswith("sfcheck.")}


def plain_import(name: str, active: bool) -> ModuleType:
    """Import module `name` on a private, uninstrumented copy of sfcheck when `active`
    (a harness running as a fuzzer): the sfcheck modules it loads are taken out of
    sys.modules again and the harness's own put back. For the custom mutator, which
    decodes and re-encodes on every execution: its coverage is reset before the input
    runs anyway, so instrumenting it only costs callbacks. Only bytes may cross between
    the copies (each has its own classes and error types)."""
    if not active or name in sys.modules:
        return importlib.import_module(name)
    own = _sfcheck_modules()
    for k in own:
        del sys.modules[k]
    try:
        return importlib.import_module(name)
    finally:
        for k in _sfcheck_modules():
            del sys.modules[k]
        sys.modules.update(own)
