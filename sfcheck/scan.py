"""Scan many inputs, in parallel, with results in a fixed order.

The main process lists inputs (walk.py) and opens archives (expand.py); the ELF images
go to worker processes in batches, each tagged with a sequence number given in input
order, so the report is the same whatever `-j` is and whichever worker finishes first.
With `-j 1` everything runs in this process (no pool, no pickling). What a worker runs is
scan_worker.py.

Archive members above `Limits.spill_bytes` reach the checker as temporary files (at most
`jobs + 1` exist at once, each removed once checked); small ones travel in memory, with
the bytes in flight bounded. Workers ignore SIGINT and die with the main process
(PR_SET_PDEATHSIG); an interrupt or SIGTERM in the main process stops them and removes
the temporary files before the scan ends.
"""

from __future__ import annotations

import os
import signal
import sys
import time
from collections.abc import Iterable, Iterator
from itertools import count

from .checker import Options
from .fileio import InputFileError, open_regular
from .inputs.limits import Limits
from .inputs.sniff import HEAD_SIZE, classify
from .inputs.spill import SpillDir
from .inputs.walk import walk
from .record import Record
from .result import FileResult, Finding, Location, Result, Severity, Skipped
from .rules import elf as elf_rules
from .scan_worker import HELD, Job, init_pool_worker, init_worker, run_batch

# The pool, pyelftools (symbol names) and the archive readers load when first needed:
# a one-file check is mostly start-up, and these cost ~30 ms of imports together.
TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing at run time
if TYPE_CHECKING:
    from collections.abc import Sequence
    from concurrent.futures import Future, ProcessPoolExecutor
    from typing import TextIO

    from .waivers import Waiver

_BATCH_FILES = 16  # jobs per batch: amortises inter-process overhead (~1 ms per file)
_BATCH_BYTES = 8 << 20  # ... but never much memory in one message
_INFLIGHT_BYTES = 128 << 20  # member bytes submitted to workers and not yet checked


class ScanConfig(Record):
    __slots__ = ("options", "jobs", "limits", "raw", "vma", "progress", "waivers")

    def __init__(self, options: Options | None = None, jobs: int = 1,
                 limits: Limits | None = None, raw: bool = False, vma: int = 0,
                 progress: TextIO | None = None, waivers: Sequence[Waiver] = ()) -> None:
        self.options = Options() if options is None else options
        self.jobs = jobs
        self.limits = Limits() if limits is None else limits
        self.raw = raw  # inputs are bare SFrame sections (check --raw)
        self.vma = vma
        self.progress = progress  # a terminal to draw a progress line on
        # Applied in the checker, before its per-file cap (the CLI applies them again to
        # every result, for --raw and to list the unused ones).
        self.waivers = tuple(waivers)


class _forking:
    """Hold SIGINT and SIGTERM while the pool may fork. A fork runs at-fork callbacks
    (logging's lock release, ...) in the main thread, and an exception a signal handler
    raises inside one is printed and dropped by CPython: the scan then ran to its end and
    exited 0 after SIGTERM. Held, the signal is delivered when this block ends, in code
    that unwinds."""

    def __enter__(self) -> None:
        self.old = signal.pthread_sigmask(signal.SIG_BLOCK, HELD)

    def __exit__(self, *exc: object) -> None:
        signal.pthread_sigmask(signal.SIG_SETMASK, self.old)


class _Progress:
    """One self-rewriting status line on a terminal; silent for short scans."""

    def __init__(self, out: TextIO | None, total_inputs: int) -> None:
        self.out = out
        self.total = total_inputs
        self.start = time.monotonic()
        self.last = 0.0
        self.drawn = False

    def update(self, inputs_done: int, checked: int, force: bool = False) -> None:
        if self.out is None:
            return
        now = time.monotonic()
        if not force and (now - self.start < 0.5 or now - self.last < 0.1):
            return
        self.last = now
        width = 30
        frac = inputs_done / self.total if self.total else 1.0
        bar = "#" * int(frac * width) + "." * (width - int(frac * width))
        rate = checked / max(now - self.start, 1e-9)
        self.out.write(f"\r[{bar}] {inputs_done}/{self.total} inputs, {checked} ELF files "
                       f"checked, {rate:.0f} files/s ")
        self.out.flush()
        self.drawn = True

    def close(self) -> None:
        if self.out is not None and self.drawn:
            self.out.write("\r\033[K")
            self.out.flush()


class _Runner:
    """Collects results by sequence number; runs batches inline or on a process pool."""

    def __init__(self, config: ScanConfig, progress: _Progress) -> None:
        self.config = config
        self.progress = progress
        self.results: dict[int, FileResult] = {}
        self.batch: list[Job] = []
        self.batch_bytes = 0
        self.pool: ProcessPoolExecutor | None = None
        self.futures: set[Future[list[tuple[int, FileResult]]]] = set()
        self.owner: dict[int, int] = {}  # job sequence number -> input index
        self.pending: dict[int, int] = {}  # input index -> jobs not finished
        self.expanded: set[int] = set()  # inputs whose jobs are all submitted
        self.inputs_done = 0
        self.images = 0  # ELF images queued (files and members)
        self.spill = SpillDir()
        self.spilled: dict[int, str] = {}  # job sequence number -> temporary file
        self.inflight: dict[Future[list[tuple[int, FileResult]]], int] = {}  # -> bytes
        init_worker(config)  # for batches run here: -j 1, or a scan too small for a pool

    def add(self, job: Job, input_index: int, spilled: str | None = None) -> None:
        """Queue a job; `spilled` is a temporary file the job reads, removed once checked."""
        self.owner[job[0]] = input_index
        self.pending[input_index] = self.pending.get(input_index, 0) + 1
        self.images += 1
        self.batch.append(job)
        self.batch_bytes += len(job[3] or b"")
        if spilled is not None:
            self.spilled[job[0]] = spilled
            self.flush()
            # Disk: the file being written next, plus at most one per worker.
            while self.futures and len(self.spilled) > max(1, self.config.jobs):
                self._wait()
        elif len(self.batch) >= _BATCH_FILES or self.batch_bytes >= _BATCH_BYTES:
            self.flush()

    def record(self, seq: int, res: FileResult) -> None:
        self.results[seq] = res

    def input_expanded(self, input_index: int) -> None:
        self.expanded.add(input_index)
        if not self.pending.get(input_index):
            self.inputs_done += 1

    def flush(self, last: bool = False) -> None:
        if not self.batch:
            return
        batch, self.batch, self.batch_bytes = self.batch, [], 0
        if self.pool is None and self.config.jobs > 1 and not last:
            # Started on the first full batch: a scan of one batch or less (`sfcheck FILE`)
            # never pays for worker processes.
            # Workers get the config without the terminal stream: under the spawn and
            # forkserver start methods initargs are pickled.
            from concurrent.futures import ProcessPoolExecutor

            c = self.config
            worker_config = ScanConfig(c.options, c.jobs, c.limits, c.raw, c.vma, progress=None,
                                       waivers=c.waivers)
            self.pool = ProcessPoolExecutor(self.config.jobs, initializer=init_pool_worker,
                                            initargs=(worker_config, os.getpid()))
        if self.pool is None:
            self._harvest(run_batch(batch))
            return
        size = sum(len(job[3] or b"") for job in batch)
        with _forking():  # submit starts the workers (forks) as they are needed
            fut = self.pool.submit(run_batch, batch)
        self.futures.add(fut)
        self.inflight[fut] = size
        # Bound the work (and member bytes) in flight.
        while self.futures and (len(self.futures) > 2 * self.config.jobs
                                or sum(self.inflight.values()) > _INFLIGHT_BYTES):
            self._wait()

    def _wait(self) -> None:
        from concurrent.futures import FIRST_COMPLETED, wait

        done, self.futures = wait(self.futures, return_when=FIRST_COMPLETED)
        for fut in done:
            self.inflight.pop(fut, None)
            self._harvest(fut.result())

    def _harvest(self, got: list[tuple[int, FileResult]]) -> None:
        for seq, res in got:
            self.results[seq] = res
            if seq in self.spilled:
                self.spill.remove(self.spilled.pop(seq))
            idx = self.owner.pop(seq)
            self.pending[idx] -= 1
            if not self.pending[idx] and idx in self.expanded:
                self.inputs_done += 1
        self.progress.update(self.inputs_done, len(self.results))

    def finish(self) -> list[FileResult]:
        self.flush(last=True)
        while self.futures:
            self._wait()
        return [self.results[k] for k in sorted(self.results)]

    def close(self, abort: bool) -> None:
        """Stop the pool (at once when `abort`: an interrupt or an error) and remove the
        temporary files."""
        try:
            if self.pool is not None:
                if abort:
                    stop_workers(self.pool)
                else:
                    self.pool.shutdown(cancel_futures=True)
        finally:
            self.spill.close()


def stop_workers(pool: ProcessPoolExecutor) -> None:
    """Terminate the pool's workers now instead of waiting for their batches."""
    # ProcessPoolExecutor has no public way before Python 3.14 (terminate_workers).
    workers = list((getattr(pool, "_processes", None) or {}).values())
    for proc in workers:
        proc.terminate()
    pool.shutdown(wait=False, cancel_futures=True)
    for proc in workers:
        proc.join(5)
        if proc.is_alive():
            proc.kill()
            proc.join(5)


def _head(path: str) -> bytes | str:
    """The first bytes of a regular file, or the reason it cannot be read (opened without
    blocking and typed with fstat: a file swapped for a FIFO after listing is refused)."""
    try:
        fd, _ = open_regular(path)
    except InputFileError as exc:
        return exc.message
    try:
        return os.read(fd, HEAD_SIZE)
    except OSError as exc:
        return f"cannot read file: {exc.strerror or exc}"
    finally:
        os.close(fd)


def _terminated(signum: int, frame: object) -> None:
    raise SystemExit(128 + signum)  # unwinds through the scan's clean-up


def scan(paths: Iterable[str], config: ScanConfig | None = None) -> Result:
    """Check every ELF image in `paths` (files, trees, archives); deterministic order."""
    config = config or ScanConfig()
    paths = list(paths)
    skipped = Skipped()
    inputs = list(walk(paths, skipped))
    progress = _Progress(config.progress, len(inputs))
    runner = _Runner(config, progress)
    seq = count()
    # SIGTERM's default ends the process without clean-up: workers (until the kernel's
    # PDEATHSIG) and temporary files would outlive it. Only the main thread may set it
    # (elsewhere signal.signal raises ValueError; asking threading costs its import).
    try:
        old_term = signal.signal(signal.SIGTERM, _terminated)
        main_thread = True
    except ValueError:
        main_thread = False
    done = False
    try:
        for index, inp in enumerate(inputs):
            if inp.error is not None:
                runner.record(next(seq), FileResult(inp.path, error=inp.error))
            elif config.raw:
                runner.add((next(seq), inp.path, inp.path, None, None, None), index)
            else:
                _dispatch(inp.path, inp.explicit, index, seq, config, runner, skipped)
            runner.input_expanded(index)
            progress.update(runner.inputs_done, len(runner.results))
        if config.options.require_sframe and not runner.images:
            runner.record(next(seq), _nothing_to_check(paths))
        files = runner.finish()
        progress.update(runner.inputs_done, len(runner.results), force=progress.drawn)
        done = True
    finally:
        progress.close()
        runner.close(abort=not done)
        if main_thread:  # None: a handler set outside Python, which cannot be restored
            signal.signal(signal.SIGTERM, signal.SIG_DFL if old_term is None else old_term)
    options = config.options
    profile = options.profile.name
    return Result(files, skipped, findings=elf_rules.check_scan(files, options.enabled,
                                                                options.severity_for),
                  profile=None if profile == "strict" else profile)


def _nothing_to_check(paths: list[str]) -> FileResult:
    """--require-sframe and not one ELF file in the inputs: a failure, not a pass (an
    empty or wrong build directory must not satisfy a gate that requires SFrame)."""
    label = paths[0] if len(paths) == 1 else f"{len(paths)} inputs"
    rule = elf_rules.NO_SFRAME
    return FileResult(label, findings=[Finding(
        rule.id, Severity.ERROR, "no ELF file found in the inputs: nothing to check, and "
        "--require-sframe asks for SFrame", Location(label))])


def _dispatch(path: str, explicit: bool, index: int, seq: Iterator[int], config: ScanConfig,
              runner: _Runner, skipped: Skipped) -> None:
    """Queue the ELF images of one input (or record why it cannot be read)."""
    head = _head(path)
    if isinstance(head, str):
        runner.record(next(seq), FileResult(path, error=head))
        return
    kind = classify(head, path)
    if kind == "elf" or (kind == "other" and explicit):
        # A named non-ELF file gets check_elf's "not an ELF file" error, as before.
        runner.add((next(seq), path, path, None, None, None), index)
    elif kind == "thin" and explicit:
        runner.record(next(seq), FileResult(path, error="thin archive: its members are files "
                                            "outside the archive; scan those files instead"))
    elif kind in ("other", "thin"):
        skipped.non_elf += 1
    else:
        from .inputs.expand import archive_members
        from .inputs.limits import ArchiveError

        try:
            for m in archive_members(path, kind, config.limits, skipped, runner.spill):
                if m.error is not None:
                    runner.record(next(seq), FileResult(m.label, error=m.error,
                                                        package=m.package, member=m.member))
                else:
                    # A spilled member is read by the checker from its temporary file.
                    runner.add((next(seq), m.label, m.spill, m.data, m.package, m.member),
                               index, spilled=m.spill)
        except ArchiveError as exc:
            # Members read before the problem keep their results; the archive gets an error.
            runner.record(next(seq), FileResult(path, error=f"{kind} archive refused: {exc}",
                                                package=path))


def default_jobs() -> int:
    """Worker processes for `-j` by default: the CPUs this process may run on."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):
        return max(1, os.cpu_count() or 1)


def progress_stream(quiet: bool) -> TextIO | None:
    """stderr when it is a terminal and the user did not ask for quiet."""
    return sys.stderr if not quiet and sys.stderr.isatty() else None
