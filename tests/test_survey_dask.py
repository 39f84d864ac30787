"""sfcheck survey --scheduler: a real `dask scheduler` and two `dask worker` processes on
127.0.0.1 (free ports, bounded waits, torn down). The result equals a local run's, and a
worker killed mid-run loses and duplicates nothing (the scheduler reruns its tasks)."""

from __future__ import annotations

import os
import shutil
import signal
import socket
import sqlite3
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from sfcheck.survey.data import report_data
from sfcheck.survey.db import SurveyDB
from sfcheck.survey.run import run_survey

from survey_repo import big_repo, comparable

pytest.importorskip("distributed", reason="dask.distributed not installed "
                    "(pip install 'sfcheck[survey]')")
DASK = shutil.which("dask", path=str(Path(sys.executable).parent)) or shutil.which("dask")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _wait_port(port: int, timeout: float = 300) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        with socket.socket() as s:
            if s.connect_ex(("127.0.0.1", port)) == 0:
                return
        time.sleep(0.1)
    raise TimeoutError(f"nothing listens on 127.0.0.1:{port}")


class Cluster:
    def __init__(self, tmp: Path) -> None:
        self.port = _free_port()
        self.address = f"tcp://127.0.0.1:{self.port}"
        self.tmp = tmp
        self.procs: list[subprocess.Popen[bytes]] = []
        self.workers: list[subprocess.Popen[bytes]] = []

    def start(self) -> None:
        self.procs.append(self._spawn("scheduler", "--host", "127.0.0.1", "--port",
                                      str(self.port), "--dashboard-address", ":0"))
        _wait_port(self.port)
        for k in range(2):
            w = self._spawn("worker", self.address, "--nthreads", "1", "--nworkers", "1",
                            "--memory-limit", "1GiB", "--no-nanny", "--name", f"w{k}",
                            "--local-directory", str(self.tmp / f"w{k}"),
                            "--dashboard-address", ":0")
            self.workers.append(w)
            self.procs.append(w)
        from distributed import Client

        # generous bounds, not timings: a loaded CI machine starts Python processes slowly
        with Client(self.address, timeout="300s") as c:
            c.wait_for_workers(2, timeout=300)

    def _spawn(self, *args: str) -> subprocess.Popen[bytes]:
        log = open(self.tmp / f"{args[0]}-{len(self.procs)}.log", "wb")  # noqa: SIM115
        return subprocess.Popen([DASK or "dask", *args], stdout=log, stderr=subprocess.STDOUT,
                                cwd=self.tmp, start_new_session=True)

    def stop(self) -> None:
        for p in reversed(self.procs):
            if p.poll() is None:
                os.killpg(p.pid, signal.SIGTERM)
        for p in self.procs:
            try:
                p.wait(15)
            except subprocess.TimeoutExpired:
                os.killpg(p.pid, signal.SIGKILL)
                p.wait(15)


@pytest.fixture
def cluster(tmp_path: Path) -> Iterator[Cluster]:
    if DASK is None:
        pytest.skip("the `dask` command is not installed")
    c = Cluster(tmp_path)
    try:
        c.start()
        yield c
    finally:
        c.stop()


@pytest.fixture(scope="module")
def repo_and_local(tmp_path_factory: pytest.TempPathFactory) -> tuple[str, dict]:
    base = tmp_path_factory.mktemp("dask")
    repo = big_repo(base / "repo", 40)
    db = SurveyDB(str(base / "local.db"))
    run_survey([repo], db, jobs=1)
    db.close()
    return repo, report_data(str(base / "local.db"))


def test_dask_run_equals_local_run(cluster: Cluster, repo_and_local: tuple[str, dict],
                                   tmp_path: Path) -> None:
    repo, local = repo_and_local
    path = str(tmp_path / "d.db")
    r = subprocess.run([sys.executable, "-m", "sfcheck", "survey", "--db", path,
                        "--scheduler", cluster.address, repo], capture_output=True, text=True,
                       timeout=300)
    assert r.returncode == 0, r.stderr
    assert "40 checked" in r.stdout
    assert comparable(report_data(path)) == comparable(local)


def test_killed_worker_loses_and_duplicates_nothing(cluster: Cluster,
                                                    repo_and_local: tuple[str, dict],
                                                    tmp_path: Path) -> None:
    repo, local = repo_and_local
    path = str(tmp_path / "d.db")
    db = SurveyDB(path)
    killed: list[int] = []

    def kill_one(n: int) -> None:
        if n == 5 and not killed:  # mid-run: one worker dies with tasks in hand
            victim = cluster.workers[0]
            os.killpg(victim.pid, signal.SIGKILL)
            killed.append(victim.pid)

    s = run_survey([repo], db, scheduler=cluster.address, on_result=kill_one)
    db.close()
    assert killed and cluster.workers[0].wait(120) is not None
    assert s.checked == 40
    con = sqlite3.connect(path)
    assert con.execute("SELECT count(*), count(DISTINCT digest) FROM results").fetchone() \
        == (40, 40)
    con.close()
    assert comparable(report_data(path)) == comparable(local)


def test_scheduler_unreachable_is_one_line(tmp_path: Path,
                                           repo_and_local: tuple[str, dict]) -> None:
    r = subprocess.run([sys.executable, "-m", "sfcheck", "survey", "--db",
                        str(tmp_path / "d.db"), "--scheduler",
                        f"tcp://127.0.0.1:{_free_port()}", repo_and_local[0]],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 2 and r.stderr.count("\n") == 1, r.stderr
    assert "cannot reach the Dask scheduler" in r.stderr
