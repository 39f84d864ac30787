"""The sfcheck under test is the installed one, never the checkout's by path.

Tests import bench/ and fuzz/ from the checkout. Putting the checkout on sys.path for them
would put its sfcheck/ there too, and CI (SFCHECK_TEST_INSTALLED=1) tests the wheel it
installed. So bench/ and fuzz/ are linked from a directory of their own, on sys.path and in
PYTHONPATH for child processes; PYTHONSAFEPATH keeps children started with cwd=ROOT
(`python -m sfcheck`, `python -c`) from importing ROOT/sfcheck. The same holds for a
developer's editable install, so both runs see the same thing.
"""

from __future__ import annotations

import os
import shutil
import signal
import sys
import tempfile

import pytest
from hypothesis import HealthCheck, Phase, settings

from helpers import ROOT, in_checkout, installed_run

_IMPORT_DIR = tempfile.mkdtemp(prefix="sfcheck-tests-path-")
for _name in ("bench", "fuzz"):
    os.symlink(ROOT / _name, os.path.join(_IMPORT_DIR, _name))
sys.path.insert(0, _IMPORT_DIR)
os.environ["PYTHONPATH"] = os.pathsep.join(
    p for p in (_IMPORT_DIR, os.environ.get("PYTHONPATH")) if p)
os.environ["PYTHONSAFEPATH"] = "1"

# A suite started in the background of a non-interactive shell (`pytest &`, a CI step, nohup)
# inherits SIGINT ignored, and so would every child it starts: the tests that interrupt a
# `sfcheck` child (one-line message, exit 130, no worker left) would see it run on. A handler
# here is reset to the default in each exec'd child, as an interactive shell would leave it.
if signal.getsignal(signal.SIGINT) == signal.SIG_IGN:
    signal.signal(signal.SIGINT, signal.default_int_handler)


# No wall-clock limits in property tests: a loaded CI machine (two cores, a CPU hog beside
# the suite) makes a legitimate example slower than hypothesis' default 200 ms deadline.
# Tests that set their own @settings inherit these for what they leave out.
settings.register_profile("sfcheck", deadline=None,
                          suppress_health_check=[HealthCheck.too_slow])
settings.load_profile("sfcheck")

# tests/mutation.py runs the covering tests once per mutant; at each property test's own
# example count a surviving mutant costs minutes. SFCHECK_MUTATION_EXAMPLES caps the count
# there (the report says so); the suite itself always runs each test's own count.
_EXAMPLES_CAP = int(os.environ.get("SFCHECK_MUTATION_EXAMPLES") or 0)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    if not _EXAMPLES_CAP:
        return
    for item in items:
        test = getattr(item, "obj", None)
        # where @given keeps the settings it reads at each call (hypothesis >= 6.100)
        own = getattr(test, "_hypothesis_internal_use_settings", None)
        if own is not None:
            # no shrinking either: a failing example kills the mutant as it stands; the
            # same examples every run (derandomize), so a rerun of one mutant repeats the
            # verdict of the run that listed it
            test._hypothesis_internal_use_settings = settings(
                own, max_examples=min(own.max_examples, _EXAMPLES_CAP), derandomize=True,
                phases=[p for p in own.phases if p not in (Phase.shrink, Phase.explain)])

if installed_run():
    # Imported now, before any harness module appends the checkout to sys.path: every
    # sfcheck.* import later resolves through this package's own __path__.
    import sfcheck

    if in_checkout(sfcheck.__file__):
        raise pytest.UsageError(f"SFCHECK_TEST_INSTALLED=1 but sfcheck comes from the "
                                f"checkout: {sfcheck.__file__}")


def pytest_unconfigure(config: pytest.Config) -> None:
    shutil.rmtree(_IMPORT_DIR, ignore_errors=True)


@pytest.fixture(params=["c-walk", "regex-walk"])
def walk(request, monkeypatch) -> str:
    """The C FRE walk (when built) and the regex walk, which SFCHECK_PURE_PYTHON selects."""
    from sfcheck.walk import fast

    if request.param == "c-walk":
        if fast.FREWALK is None:
            pytest.skip("the C FRE walk is not built or SFCHECK_PURE_PYTHON is set")
    else:
        monkeypatch.setattr(fast, "FREWALK", None)
    return request.param
