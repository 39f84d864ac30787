"""The survey database: migrations from version 1, and interruptions (SIGKILL, a full
database) that lose no committed result and leave no half-written one."""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from sfcheck.survey.data import report_data
from sfcheck.survey.db import MIGRATIONS, SCHEMA_VERSION, DBError, SurveyDB
from sfcheck.survey.run import run_survey
from sfcheck.survey.work import CONSUMERS

from survey_repo import big_repo, comparable


def test_migrations_from_v1_keep_data(tmp_path: Path) -> None:
    path = str(tmp_path / "s.db")
    db = SurveyDB(path, upto=1)
    assert db.version() == 1
    snap = db.db.execute("INSERT INTO snapshots (label, taken, repositories) "
                         "VALUES ('old', 't', '[\"/r\"]')").lastrowid
    db.db.execute("INSERT INTO results (digest, sfcheck_version, ruleset, size) "
                  "VALUES ('d', 'v', 'r', 3)")
    db.close()
    db = SurveyDB(path)
    assert db.version() == SCHEMA_VERSION == len(MIGRATIONS)
    assert db.snapshot(snap)["label"] == "old"
    assert db.snapshot(snap)["profiles"] == CONSUMERS  # v3: NULL means every profile
    assert db.db.execute("SELECT seconds FROM results").fetchall() == [(0.0,)]
    names = {r[0] for r in db.db.execute("SELECT name FROM sqlite_master")}
    assert {"files_result", "packages_result"} <= names
    assert db.db.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    db.close()


def test_newer_or_foreign_database_is_refused(tmp_path: Path) -> None:
    path = str(tmp_path / "s.db")
    SurveyDB(path).db.execute(f"UPDATE schema_version SET version = {SCHEMA_VERSION + 1}")
    with pytest.raises(DBError, match="newer"):
        SurveyDB(path)
    other = tmp_path / "o.db"
    sqlite3.connect(other).execute("CREATE TABLE t (x)").connection.commit()
    with pytest.raises(DBError, match="not a survey database"):
        SurveyDB(str(other))


@pytest.fixture(scope="module")
def repo(tmp_path_factory: pytest.TempPathFactory) -> str:
    return big_repo(tmp_path_factory.mktemp("big") / "repo", 48)


@pytest.fixture(scope="module")
def clean(repo: str, tmp_path_factory: pytest.TempPathFactory) -> dict:
    path = str(tmp_path_factory.mktemp("clean") / "s.db")
    db = SurveyDB(path)
    run_survey([repo], db, jobs=1)
    db.close()
    return report_data(path)


def _results(path: str) -> int:
    con = sqlite3.connect(path, timeout=30)
    try:
        return con.execute("SELECT count(*) FROM results").fetchone()[0]
    except sqlite3.OperationalError:
        return 0
    finally:
        con.close()


def _whole(path: str) -> None:
    """Every stored result has its one file (each test package holds one ELF file)."""
    con = sqlite3.connect(path)
    assert con.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    bad = con.execute("SELECT count(*) FROM results r WHERE (SELECT count(*) FROM files f "
                      "WHERE f.result_id = r.id) != 1").fetchone()[0]
    orphans = con.execute("SELECT count(*) FROM packages p WHERE NOT EXISTS (SELECT 1 FROM "
                          "results r WHERE r.id = p.result_id)").fetchone()[0]
    assert (bad, orphans) == (0, 0)
    con.close()


@pytest.mark.parametrize("sig", [signal.SIGKILL, signal.SIGINT])
def test_killed_run_keeps_whole_results(repo: str, clean: dict, tmp_path: Path,
                                        sig: int) -> None:
    path = str(tmp_path / "s.db")
    proc = subprocess.Popen([sys.executable, "-m", "sfcheck", "survey", "--db", path,
                             "-j", "2", repo], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    deadline = time.monotonic() + 600  # a bound on a loaded machine, not a timing
    while _results(path) < 8 and time.monotonic() < deadline and proc.poll() is None:
        time.sleep(0.02)
    os.kill(proc.pid, sig)
    _, err = proc.communicate(timeout=300)
    got = _results(path)
    assert 8 <= got < 48, "the run was not stopped midway"
    if sig == signal.SIGINT:
        assert proc.returncode == 130 and b"Traceback" not in err
    _whole(path)
    db = SurveyDB(path)
    s = run_survey([repo], db, jobs=1)
    db.close()
    assert s.reused == got and s.checked == 48 - got  # nothing lost, nothing redone
    assert comparable(report_data(path)) == comparable(clean)


def test_full_database_keeps_whole_results(repo: str, clean: dict, tmp_path: Path) -> None:
    path = str(tmp_path / "s.db")
    db = SurveyDB(path)
    pages = db.db.execute("PRAGMA page_count").fetchone()[0]
    db.close()
    db = SurveyDB(path, max_pages=pages + 4)  # room for part of the 10 pages needed
    with pytest.raises(sqlite3.OperationalError, match="full"):
        run_survey([repo], db, jobs=1)
    db.close()
    got = _results(path)
    assert 0 < got < 48
    _whole(path)
    db = SurveyDB(path)
    s = run_survey([repo], db, jobs=1)
    db.close()
    assert s.reused == got
    assert comparable(report_data(path)) == comparable(clean)


@pytest.fixture
def small_tmpfs(tmp_path: Path) -> Iterator[Path]:
    """A 256 KiB tmpfs (root only: skips elsewhere), unmounted afterwards."""
    mnt = tmp_path / "small"
    mnt.mkdir()
    r = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=256k", "tmpfs", str(mnt)],
                       capture_output=True, text=True)
    if r.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here (needs root): {r.stderr.strip()}")
    try:
        yield mnt
    finally:
        subprocess.run(["umount", "-l", str(mnt)], check=False)


def test_full_disk_keeps_whole_results(repo: str, clean: dict, small_tmpfs: Path) -> None:
    """A real full file system (tmpfs) under the database: a one-line error, the
    committed packages intact; with room again, the rerun completes them."""
    path = str(small_tmpfs / "s.db")
    r = subprocess.run([sys.executable, "-m", "sfcheck", "survey", "--db", path, "-j", "1",
                        repo], capture_output=True, text=True, timeout=300)
    assert r.returncode == 2 and r.stderr.count("\n") == 1, r.stderr
    assert "full" in r.stderr and "Traceback" not in r.stderr
    got = _results(path)
    assert 0 < got < 48
    subprocess.run(["mount", "-o", "remount,size=64m", str(small_tmpfs)], check=True)
    _whole(path)
    db = SurveyDB(path)
    s = run_survey([repo], db, jobs=1)
    db.close()
    assert s.reused == got
    assert comparable(report_data(path)) == comparable(clean)
