"""Run survey tasks on a dask.distributed cluster (`sfcheck survey --scheduler ADDRESS`).

Workers read the packages at the same paths (shared storage) and return plain records;
the caller, the one database writer, stores them as they complete. A task whose worker
dies is rerun by the scheduler on another worker; each task's result is taken once.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

from .work import survey_package

_WINDOW_PER_THREAD = 4  # tasks submitted ahead per worker thread


class DaskUnavailable(Exception):
    pass


def run_on_dask(tasks: Sequence[tuple[Any, ...]], address: str
                ) -> Iterator[tuple[int, dict[str, Any]]]:
    try:
        from distributed import Client, as_completed
    except ImportError:
        raise DaskUnavailable("--scheduler needs dask.distributed: "
                              "pip install 'sfcheck[survey]'") from None
    try:
        client = Client(address, timeout="20s")
    except (OSError, TimeoutError) as exc:
        raise DaskUnavailable(f"cannot reach the Dask scheduler at {address}: {exc}") from None
    try:
        threads = max(1, sum(client.nthreads().values()))
        window = _WINDOW_PER_THREAD * threads
        index = {}
        pending = iter(enumerate(tasks))
        ac = as_completed()
        for _ in range(window):
            nxt = next(pending, None)
            if nxt is None:
                break
            fut = client.submit(survey_package, *nxt[1], pure=False)
            index[fut.key] = nxt[0]
            ac.add(fut)
        seen: set[int] = set()
        for fut in ac:
            k = index.pop(fut.key)
            rec = fut.result()
            fut.release()
            if k not in seen:  # a task reported twice would be stored twice
                seen.add(k)
                yield k, rec
            nxt = next(pending, None)
            if nxt is not None:
                new = client.submit(survey_package, *nxt[1], pure=False)
                index[new.key] = nxt[0]
                ac.add(new)
    finally:
        client.close()
