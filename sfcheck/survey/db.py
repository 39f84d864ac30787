"""The survey's results database: SQLite (WAL), one writer (the main process).

A checked package is stored once per (file digest, sfcheck version, rule-set digest) in
`results` with its files, findings and profile verdicts, all in one transaction: a run
killed at any point leaves whole results only, and the next run checks what is missing.
`snapshots` are runs over repositories; `packages` rows link a snapshot's packages (with
their index metadata) to results. The schema is versioned: MIGRATIONS[k] takes a
database from version k to k + 1, in order, each in its own transaction.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Callable, Iterable
from datetime import UTC, datetime
from typing import Any

from .repo import PackageRef
from .work import CONSUMERS


def _script(db: sqlite3.Connection, sql: str) -> None:
    """Statements one by one (executescript would COMMIT the migration's transaction)."""
    for stmt in sql.split(";"):
        if stmt.strip():
            db.execute(stmt)


def _v1(db: sqlite3.Connection) -> None:
    _script(db, """
    CREATE TABLE snapshots (id INTEGER PRIMARY KEY, label TEXT NOT NULL, taken TEXT NOT NULL,
        repositories TEXT NOT NULL, complete INTEGER NOT NULL DEFAULT 0);
    CREATE TABLE results (id INTEGER PRIMARY KEY, digest TEXT NOT NULL,
        sfcheck_version TEXT NOT NULL, ruleset TEXT NOT NULL, size INTEGER NOT NULL,
        error TEXT, UNIQUE (digest, sfcheck_version, ruleset));
    CREATE TABLE files (id INTEGER PRIMARY KEY, result_id INTEGER NOT NULL REFERENCES results,
        path TEXT NOT NULL, sframe INTEGER NOT NULL, version INTEGER, flags TEXT,
        fdes INTEGER NOT NULL, fres INTEGER NOT NULL, text_bytes INTEGER NOT NULL,
        text_bytes_covered INTEGER NOT NULL, sframe_bytes INTEGER NOT NULL,
        eh_frame_bytes INTEGER NOT NULL, producer TEXT NOT NULL, error TEXT);
    CREATE TABLE findings (file_id INTEGER NOT NULL REFERENCES files, rule TEXT NOT NULL,
        severity TEXT NOT NULL, count INTEGER NOT NULL);
    CREATE TABLE refusals (file_id INTEGER NOT NULL REFERENCES files, profile TEXT NOT NULL);
    CREATE TABLE packages (snapshot_id INTEGER NOT NULL REFERENCES snapshots,
        result_id INTEGER NOT NULL REFERENCES results, repo TEXT NOT NULL, path TEXT NOT NULL,
        name TEXT NOT NULL, version TEXT NOT NULL, source TEXT NOT NULL,
        architecture TEXT NOT NULL, suite TEXT NOT NULL,
        PRIMARY KEY (snapshot_id, repo, suite, path));
    """)


def _v2(db: sqlite3.Connection) -> None:
    # Version 2: the time each check took (the benchmark and `size` report it), and the
    # indexes the queries join on (version 1 scanned files and findings whole).
    _script(db, """
    ALTER TABLE results ADD COLUMN seconds REAL NOT NULL DEFAULT 0;
    CREATE INDEX files_result ON files (result_id);
    CREATE INDEX findings_file ON findings (file_id);
    CREATE INDEX refusals_file ON refusals (file_id);
    CREATE INDEX packages_result ON packages (result_id);
    """)


def _v3(db: sqlite3.Connection) -> None:
    # Version 3: the consumer profiles a snapshot asked about (`--profile`); NULL, as in
    # snapshots taken before, means every consumer profile.
    db.execute("ALTER TABLE snapshots ADD COLUMN profiles TEXT")


MIGRATIONS: list[Callable[[sqlite3.Connection], None]] = [_v1, _v2, _v3]
SCHEMA_VERSION = len(MIGRATIONS)


class DBError(Exception):
    """A database that cannot be used (newer schema, not a survey database, disk full)."""


def now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")


class SurveyDB:
    def __init__(self, path: str, upto: int = SCHEMA_VERSION,
                 max_pages: int | None = None) -> None:
        """Open (creating or migrating to version `upto`) the database at `path`.
        `max_pages` caps its size (PRAGMA max_page_count: tests simulate a full disk)."""
        try:
            self.db = sqlite3.connect(path, isolation_level=None, timeout=30)
            self.db.execute("PRAGMA journal_mode=WAL")
            self.db.execute("PRAGMA synchronous=NORMAL")
            self.db.execute("PRAGMA foreign_keys=ON")
            if max_pages is not None:
                self.db.execute(f"PRAGMA max_page_count={int(max_pages)}")
            self.migrate(upto)
        except sqlite3.DatabaseError as exc:
            raise DBError(f"{path}: {exc}") from None

    def version(self) -> int:
        has = self.db.execute("SELECT 1 FROM sqlite_master WHERE name='schema_version'"
                              ).fetchone()
        if not has:
            if self.db.execute("SELECT count(*) FROM sqlite_master").fetchone()[0]:
                raise DBError("not a survey database (tables without schema_version)")
            return 0
        return int(self.db.execute("SELECT version FROM schema_version").fetchone()[0])

    def migrate(self, upto: int = SCHEMA_VERSION) -> None:
        current = self.version()
        if current > SCHEMA_VERSION:
            raise DBError(f"schema version {current} is newer than this sfcheck's "
                          f"({SCHEMA_VERSION}): upgrade sfcheck")
        for k in range(current, upto):
            with self.tx():
                if k == 0:
                    self.db.execute("CREATE TABLE schema_version (version INTEGER NOT NULL)")
                    self.db.execute("INSERT INTO schema_version VALUES (0)")
                MIGRATIONS[k](self.db)
                self.db.execute("UPDATE schema_version SET version = ?", (k + 1,))

    def tx(self) -> _Tx:
        return _Tx(self.db)

    def close(self) -> None:
        self.db.close()

    # --- writing ------------------------------------------------------------------

    def new_snapshot(self, label: str, repos: Iterable[str],
                     profiles: Iterable[str] | None = None) -> int:
        with self.tx():
            cur = self.db.execute(
                "INSERT INTO snapshots (label, taken, repositories, profiles) "
                "VALUES (?, ?, ?, ?)", (label, now(), json.dumps(list(repos)),
                                        None if profiles is None else json.dumps(list(profiles))))
        return int(cur.lastrowid or 0)

    def finish_snapshot(self, snapshot: int) -> None:
        with self.tx():
            self.db.execute("UPDATE snapshots SET complete = 1 WHERE id = ?", (snapshot,))

    def lookup(self, digest: str, version: str, ruleset: str) -> int | None:
        row = self.db.execute("SELECT id FROM results WHERE digest=? AND sfcheck_version=? "
                              "AND ruleset=?", (digest, version, ruleset)).fetchone()
        return None if row is None else int(row[0])

    def link(self, snapshot: int, ref: PackageRef, result_id: int) -> None:
        """Record that `snapshot` holds package `ref`, checked as `result_id` (call inside
        a transaction)."""
        self.db.execute(
            "INSERT OR REPLACE INTO packages VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (snapshot, result_id, ref.repo, ref.path, ref.name, ref.version, ref.source,
             ref.architecture, ref.suite))

    def store(self, snapshot: int, ref: PackageRef, rec: dict[str, Any], version: str,
              ruleset: str) -> int:
        """One package's whole result and its snapshot link, in one transaction."""
        with self.tx():
            row = self.db.execute("SELECT id FROM results WHERE digest=? AND "
                                  "sfcheck_version=? AND ruleset=?",
                                  (rec["digest"], version, ruleset)).fetchone()
            if row is not None:  # the same bytes twice in one run (two suites)
                rid = int(row[0])
            else:
                rid = int(self.db.execute(
                    "INSERT INTO results (digest, sfcheck_version, ruleset, size, error, "
                    "seconds) VALUES (?, ?, ?, ?, ?, ?)",
                    (rec["digest"], version, ruleset, rec["size"], rec["error"],
                     rec.get("seconds", 0.0))).lastrowid or 0)
                for f in rec["files"]:
                    fid = self.db.execute(
                        "INSERT INTO files (result_id, path, sframe, version, flags, fdes, "
                        "fres, text_bytes, text_bytes_covered, sframe_bytes, eh_frame_bytes, "
                        "producer, error) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                        (rid, f["path"], int(f["sframe"]), f["version"], f["flags"], f["fdes"],
                         f["fres"], f["text_bytes"], f["text_bytes_covered"],
                         f["sframe_bytes"], f["eh_frame_bytes"], f["producer"], f["error"])
                    ).lastrowid
                    self.db.executemany("INSERT INTO findings VALUES (?, ?, ?, ?)",
                                        [(fid, r, s, n) for r, s, n in f["findings"]])
                    self.db.executemany("INSERT INTO refusals VALUES (?, ?)",
                                        [(fid, p) for p in f["refused_by"]])
            self.link(snapshot, ref, rid)
        return rid

    # --- reading ------------------------------------------------------------------

    def snapshot(self, which: str | int | None = None) -> dict[str, Any]:
        """A snapshot by id or label (the newest with that label), or the newest complete
        one; DBError if there is none."""
        q = "SELECT id, label, taken, repositories, complete, profiles FROM snapshots "
        if which is None:
            row = self.db.execute(q + "WHERE complete ORDER BY id DESC LIMIT 1").fetchone()
        elif isinstance(which, int) or str(which).isdigit():
            row = self.db.execute(q + "WHERE id = ?", (int(which),)).fetchone()
        else:
            row = self.db.execute(q + "WHERE label = ? ORDER BY id DESC LIMIT 1",
                                  (which,)).fetchone()
        if row is None:
            raise DBError("no complete survey in the database" if which is None
                          else f"no snapshot {which!r} in the database")
        return {"id": row[0], "label": row[1], "taken": row[2],
                "repositories": json.loads(row[3]), "complete": bool(row[4]),
                "profiles": tuple(json.loads(row[5])) if row[5] else CONSUMERS}

    def previous(self, snapshot: int) -> dict[str, Any] | None:
        row = self.db.execute("SELECT id FROM snapshots WHERE complete AND id < ? "
                              "ORDER BY id DESC LIMIT 1", (snapshot,)).fetchone()
        return None if row is None else self.snapshot(int(row[0]))


class _Tx:
    """BEGIN IMMEDIATE ... COMMIT, or ROLLBACK on any exception (nothing half-written)."""

    def __init__(self, db: sqlite3.Connection) -> None:
        self.db = db

    def __enter__(self) -> None:
        self.db.execute("BEGIN IMMEDIATE")

    def __exit__(self, exc_type: object, *rest: object) -> None:
        if exc_type is None:
            try:
                self.db.execute("COMMIT")
                return
            except sqlite3.DatabaseError:
                self.db.execute("ROLLBACK")
                raise
        if self.db.in_transaction:
            self.db.execute("ROLLBACK")
