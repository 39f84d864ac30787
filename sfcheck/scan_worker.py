"""What a scan's worker runs: one batch of inputs checked with the scan's configuration, set
once per process (init_worker; a pool worker also leaves Ctrl-C to the main process and
dies with it). A bug on one input becomes that file's INTERNAL_ERROR, and the batch goes on.
With `-j 1` the main process runs the batches itself through the same functions.
"""

from __future__ import annotations

import os
import signal

from .checker import check_elf, check_section_bytes
from .elf.constants import MAX_SECTION_BYTES
from .fileio import InputFileError, read_bounded
from .result import FileResult

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing at run time
if TYPE_CHECKING:
    from .scan import ScanConfig

# One unit of work: (sequence number, label, path to read or None, bytes or None,
# package, member). A batch is a list of them.
Job = tuple[int, str, str | None, bytes | None, str | None, str | None]

INTERNAL_ERROR = "sfcheck internal error"  # a FileResult.error that is a bug, not bad input
# The signals the main process holds while the pool forks (scan._forking); a worker
# unblocks them first.
HELD = {signal.SIGINT, signal.SIGTERM}


_worker_config: ScanConfig | None = None


def init_worker(config: ScanConfig) -> None:
    global _worker_config
    _worker_config = config


def init_pool_worker(config: ScanConfig, parent: int) -> None:
    """A pool worker: Ctrl-C is the main process's to handle (it stops the pool), SIGTERM
    ends the worker at once, and the worker dies when the main process does."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    signal.pthread_sigmask(signal.SIG_UNBLOCK, HELD)  # forked with them held (_forking)
    die_with_parent(parent)
    init_worker(config)


def die_with_parent(parent: int) -> None:
    """PR_SET_PDEATHSIG (Linux): SIGKILL this process when its parent exits, however."""
    import ctypes

    try:
        prctl = ctypes.CDLL(None, use_errno=True).prctl
    except (OSError, AttributeError):  # not Linux: the parent's clean-up still stops us
        return
    pr_set_pdeathsig = 1
    if prctl(pr_set_pdeathsig, int(signal.SIGKILL), 0, 0, 0) == 0 and os.getppid() != parent:
        os._exit(1)  # the parent died before the request took effect


def _check_one(job: Job, config: ScanConfig) -> FileResult:
    """One input. Function names are filled by check_elf for every output format (one
    result model)."""
    _, label, path, data, package, member = job
    if config.raw:
        assert path is not None
        try:
            raw = read_bounded(path, MAX_SECTION_BYTES)
        except InputFileError as exc:
            return FileResult(label, error=exc.message)
        if raw.startswith(b"\x7fELF"):
            return FileResult(label, error="this is an ELF file; drop --raw")
        return check_section_bytes(raw, label, config.vma, options=config.options, raw=True)
    return check_elf(data if data is not None else path or label, path=label,
                     options=config.options, waivers=config.waivers, package=package,
                     member=member)


def run_batch(batch: list[Job]) -> list[tuple[int, FileResult]]:
    assert _worker_config is not None
    out = []
    for job in batch:
        try:
            res = _check_one(job, _worker_config)
        except Exception as exc:  # a bug in sfcheck: report it on this file, scan the rest
            res = FileResult(job[1], error=f"{INTERNAL_ERROR}: {type(exc).__name__}: "
                             f"{exc} (please report this file)", package=job[4], member=job[5])
        out.append((job[0], res))
    return out
