"""Where a survey's CPU goes by execution mode: `-j 1` inline, one pool worker, two workers.

    python bench/survey_modes.py REPO [MODE...]     (modes: inline pool1 pool2; default all)

Each mode surveys REPO into a fresh database in this process (run_survey) and prints the
CPU seconds of this process (index, database writes, results; and the checks when inline)
and of its workers. Inline and one pool worker do the same checks: their totals differ by
what running a package inline costs beyond a worker's run. Run it on an idle machine:
CPU seconds move with the load.
"""

from __future__ import annotations

import os
import resource
import sys
import tempfile
import time

from sfcheck.survey import run
from sfcheck.survey.db import SurveyDB


def _cpu(who: int) -> float:
    r = resource.getrusage(who)
    return r.ru_utime + r.ru_stime


def survey(repo: str, mode: str) -> str:
    with tempfile.TemporaryDirectory() as tmp:
        db = SurveyDB(os.path.join(tmp, "survey.db"))
        main, kids = _cpu(resource.RUSAGE_SELF), _cpu(resource.RUSAGE_CHILDREN)
        t = time.perf_counter()
        execute = run._execute
        if mode == "pool1":  # one pool worker where -j 1 would run inline
            run._execute = lambda tasks, jobs, scheduler: run._run_pool(tasks, 1)
        try:
            run.run_survey([repo], db, jobs=2 if mode == "pool2" else 1)
        finally:
            run._execute = execute
            db.close()
        main, kids = _cpu(resource.RUSAGE_SELF) - main, _cpu(resource.RUSAGE_CHILDREN) - kids
    return (f"{mode}: this process {main:.2f} s, workers {kids:.2f} s, total {main + kids:.2f} s "
            f"CPU, wall {time.perf_counter() - t:.1f} s, load {os.getloadavg()[0]:.1f}")


def main(argv: list[str]) -> int:
    if not argv or argv[0].startswith("-"):
        print(__doc__)
        return 0 if argv else 2
    for mode in argv[1:] or ["inline", "pool1", "pool2"]:
        print(survey(argv[0], mode), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
