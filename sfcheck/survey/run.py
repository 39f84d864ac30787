"""Drive a survey: list the repositories, check what the database does not hold yet (on a
local process pool or a Dask cluster), store each package's result as it arrives.

Only this process writes the database; workers return plain records. A package whose
digest the database already holds (same sfcheck version and rule set) is not checked
again, only linked to the new snapshot.
"""

from __future__ import annotations

import os
import signal
import time
from collections.abc import Callable, Iterator, Sequence
from typing import Any

from .. import __version__
from ..fileio import InputFileError
from ..inputs.limits import Limits
from ..profiles import PROFILES
from ..record import Record
from .db import SurveyDB, now
from .repo import PackageRef, packages
from .work import CONSUMERS, file_digest, ruleset_digest, survey_package

Task = tuple[str, str | None, Limits, tuple[str, ...]]  # path, digest, limits, profiles
_LINK_BATCH = 500  # cached packages linked per transaction
_CHUNK = 8  # packages per pool task at most


class Summary(Record):
    __slots__ = ("snapshot", "packages", "checked", "reused", "seconds")

    def __init__(self, snapshot: int, packages: int, checked: int, reused: int,
                 seconds: float) -> None:
        self.snapshot = snapshot
        self.packages = packages
        self.checked = checked  # packages checked in this run
        self.reused = reused  # packages whose result the database already held
        self.seconds = seconds


def run_survey(repos: Sequence[str], db: SurveyDB, label: str | None = None, jobs: int = 1,
               scheduler: str | None = None, limits: Limits | None = None,
               on_result: Callable[[int], None] | None = None,
               profiles: Sequence[str] | None = None) -> Summary:
    """Survey `repos` into a new snapshot of `db`; RepoError before anything is written
    if an index is bad. `on_result(n)` is called after the n-th stored package;
    `profiles`: the consumer profiles asked about (default: all)."""
    start = time.monotonic()
    limits = limits or Limits()
    refs = [ref for repo in repos for ref in packages(repo)]
    named = None if profiles is None else {PROFILES[p].name for p in profiles}  # aliases too
    asked = CONSUMERS if named is None else tuple(p for p in CONSUMERS if p in named)
    version, ruleset = __version__, ruleset_digest(asked, limits)
    snapshot = db.new_snapshot(label or now(), repos, None if profiles is None else asked)
    todo: dict[str, list[PackageRef]] = {}  # digest (or path) -> its packages
    reused = 0
    pending_links: list[tuple[PackageRef, int]] = []
    for ref in refs:
        digest = ref.digest or _digest(ref.abspath)
        rid = db.lookup(digest, version, ruleset) if digest else None
        if rid is None:
            ref.digest = digest
            todo.setdefault(digest or ref.abspath, []).append(ref)
            continue
        reused += 1
        pending_links.append((ref, rid))
        if len(pending_links) >= _LINK_BATCH:
            _link(db, snapshot, pending_links)
    _link(db, snapshot, pending_links)
    tasks = [(refs_[0].abspath, refs_[0].digest, limits, asked) for refs_ in todo.values()]
    groups = list(todo.values())
    for done, (k, rec) in enumerate(_execute(tasks, jobs, scheduler), 1):
        for ref in groups[k]:
            db.store(snapshot, ref, rec, version, ruleset)
        if on_result is not None:
            on_result(done)
    db.finish_snapshot(snapshot)
    return Summary(snapshot, len(refs), len(tasks), reused, time.monotonic() - start)


def _digest(path: str) -> str | None:
    try:
        return file_digest(path)
    except (InputFileError, OSError):
        return None  # the worker reports why


def _link(db: SurveyDB, snapshot: int, pending: list[tuple[PackageRef, int]]) -> None:
    if pending:
        with db.tx():
            for ref, rid in pending:
                db.link(snapshot, ref, rid)
        pending.clear()


def _execute(tasks: list[Task], jobs: int, scheduler: str | None
             ) -> Iterator[tuple[int, dict[str, Any]]]:
    """(task index, record) as each finishes."""
    if scheduler is not None:
        from .dask_exec import run_on_dask

        yield from run_on_dask(tasks, scheduler)
    elif jobs <= 1 or len(tasks) <= 1:
        for k, task in enumerate(tasks):
            yield k, survey_package(*task)
    else:
        yield from _run_pool(tasks, jobs)


def _pool_init(parent: int) -> None:
    from ..scan_worker import die_with_parent

    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the main process handles Ctrl-C
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    die_with_parent(parent)


def survey_chunk(tasks: list[tuple[int, Task]]) -> list[tuple[int, dict[str, Any]]]:
    """A pool worker's unit: several packages per round trip (a package's check is a few
    milliseconds; one submit, pickle and wake-up per package cost the pool ~10 % more CPU
    than the same checks inline)."""
    return [(k, survey_package(*task)) for k, task in tasks]


def chunk_size(left: int, jobs: int) -> int:
    """Packages per pool task: up to _CHUNK, but small enough near the end that every
    worker still has ~4 tasks to take (no worker idles while another holds a long chunk)."""
    return max(1, min(_CHUNK, left // (4 * jobs)))


def _run_pool(tasks: list[Task], jobs: int) -> Iterator[tuple[int, dict[str, Any]]]:
    from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, wait

    from ..scan import stop_workers

    pool = ProcessPoolExecutor(jobs, initializer=_pool_init, initargs=(os.getpid(),))
    futures: set[Future[list[tuple[int, dict[str, Any]]]]] = set()
    at = 0
    clean = False
    try:
        while True:
            while len(futures) < 2 * jobs and at < len(tasks):  # bounded work in flight
                n = chunk_size(len(tasks) - at, jobs)
                futures.add(pool.submit(survey_chunk, list(enumerate(tasks[at:at + n], at))))
                at += n
            if not futures:
                break
            done, _ = wait(futures, return_when=FIRST_COMPLETED)
            for fut in done:
                futures.discard(fut)
                yield from fut.result()
        clean = True
    finally:
        if clean:
            pool.shutdown()
        else:
            stop_workers(pool)
