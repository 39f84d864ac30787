"""`sfcheck survey`: survey repositories into a results database, and ask it questions.

`sfcheck survey [--db FILE] [-j N] [--scheduler ADDRESS] [--label L] REPO...` runs a
survey; `sfcheck survey QUERY [...]` (top-rules, worst-packages, coverage, size, diff,
report) reads the database. One parser: the first word tells the two apart."""

from __future__ import annotations

import argparse
import json
import os
import sys
from typing import Any

QUERIES = ("top-rules", "worst-packages", "coverage", "size", "diff", "report")
DEFAULT_DB = "sfcheck-survey.db"


def add_parser(subparsers: Any) -> argparse.ArgumentParser:
    from ..profiles import PROFILE_NAMES
    from .args import positive

    CONSUMER_NAMES = [p for p in PROFILE_NAMES if p != "strict"]  # noqa: N806

    p = subparsers.add_parser(
        "survey", help="survey the SFrame data of a whole package repository",
        description="Check every package of Debian repositories (dists/*/*/binary-*/"
                    "Packages), RPM repositories (repodata/repomd.xml) or directories of "
                    "packages into a results database (SQLite); a rerun checks only packages "
                    "the database does not hold. With a query word first instead of "
                    "repositories: top-rules, worst-packages, coverage [--by source], size, "
                    "diff OLD NEW (snapshot ids or labels), report -o PAGE.html [--json FILE].",
        epilog="Exit status: 0 done, 2 usage error or unreadable repository or database, "
               "130 interrupted (committed results are kept).")
    p.add_argument("items", nargs="+", metavar="ARG",
                   help="repository roots to survey (REPO...), or a query word and its "
                        "arguments (QUERY [ARG...])")
    p.add_argument("--db", default=DEFAULT_DB, metavar="FILE",
                   help=f"the results database (default: {DEFAULT_DB})")
    p.add_argument("-j", "--jobs", type=positive, default=None, metavar="N",
                   help="worker processes (default: the CPUs available)")
    p.add_argument("--scheduler", metavar="ADDRESS",
                   help="run the checks on this dask.distributed scheduler "
                        "(tcp://HOST:PORT); workers must see the repositories at the same paths")
    p.add_argument("--label", help="the snapshot's label (default: the time it was taken)")
    p.add_argument("--profile", action="append", choices=CONSUMER_NAMES, metavar="NAME",
                   dest="profiles", help="ask only this consumer profile whether it takes "
                   "each file (repeatable; default: every one of " + ", ".join(CONSUMER_NAMES)
                   + "); the kernel-rfc-2023 reader model costs the most")
    p.add_argument("--max-archive-bytes", type=positive, default=8 << 30, metavar="N",
                   help="refuse a package that expands to more than N bytes (default 8 GiB; "
                        "as `sfcheck check`: the memory and disk one worker may use)")
    p.add_argument("--max-archive-members", type=positive, default=1_000_000, metavar="N",
                   help="refuse a package with more than N members (default 1000000)")
    p.add_argument("--snapshot", help="query this snapshot (id or label; default: the newest)")
    p.add_argument("--by", choices=("package", "source"), default="package",
                   help="coverage: per binary package or per source package")
    p.add_argument("--limit", type=positive, default=20, help="rows a query prints")
    p.add_argument("-o", "--output", metavar="PAGE.html", help="report: the HTML page")
    p.add_argument("--json", metavar="FILE", help="report: the report's data as JSON")
    p.set_defaults(func=run)
    return p


def _err(msg: str) -> int:
    from ..report.escape import escape

    print(escape(f"sfcheck survey: error: {msg}"), file=sys.stderr)
    return 2


def run(args: argparse.Namespace) -> int:
    from ..survey.db import DBError
    from ..survey.repo import RepoError

    try:
        if args.items[0] in QUERIES and not os.path.isdir(args.items[0]):
            return _query(args.items[0], args.items[1:], args)
        return _survey(args)
    except (RepoError, DBError) as exc:
        return _err(str(exc))


def _survey(args: argparse.Namespace) -> int:
    import sqlite3

    from ..inputs.limits import Limits
    from ..scan import default_jobs
    from ..survey.dask_exec import DaskUnavailable
    from ..survey.db import SurveyDB
    from ..survey.run import run_survey

    if args.scheduler is not None:
        try:
            import distributed  # noqa: F401
        except ImportError:
            return _err("--scheduler needs dask.distributed: pip install 'sfcheck[survey]'")
    db = SurveyDB(args.db)
    try:
        s = run_survey(args.items, db, label=args.label, jobs=args.jobs or default_jobs(),
                       scheduler=args.scheduler, profiles=args.profiles,
                       limits=Limits(args.max_archive_bytes, args.max_archive_members))
    except DaskUnavailable as exc:
        return _err(str(exc))
    except sqlite3.DatabaseError as exc:  # a full disk: committed results are kept
        return _err(f"{args.db}: {exc} (results committed so far are kept; rerun to go on)")
    finally:
        db.close()
    print(f"snapshot {s.snapshot}: {s.packages} packages, {s.checked} checked, "
          f"{s.reused} already in {args.db} ({s.seconds:.1f} s)")
    return 0


def _query(name: str, rest: list[str], args: argparse.Namespace) -> int:
    from ..survey import queries
    from ..survey.db import SurveyDB

    if not os.path.exists(args.db):
        return _err(f"{args.db}: no such database (run `sfcheck survey REPO...` first)")
    if name == "report":
        return _report(args)
    if name == "diff" and len(rest) != 2:
        return _err("diff takes two snapshots: diff OLD NEW")
    if name != "diff" and rest:
        return _err(f"{name} takes no arguments (got {' '.join(rest)})")
    db = SurveyDB(args.db)
    try:
        if name == "diff":
            _print(queries.table(queries.diff_rows(queries.snapshot_diff(db, rest[0], rest[1]))))
            return 0
        snap = db.snapshot(args.snapshot)["id"]
        rows = {"top-rules": lambda: queries.top_rules(db, snap, args.limit),
                "worst-packages": lambda: queries.worst_packages(db, snap, args.limit),
                "coverage": lambda: queries.coverage(db, snap, args.by),
                "size": lambda: queries.size(db, snap, args.limit)}[name]()
    finally:
        db.close()
    _print(queries.table(rows))
    return 0


def _print(text: str) -> None:
    """Names come from the index (hostile input): escaped line by line."""
    from ..report.escape import escape

    for line in text.splitlines():
        print(escape(line))


def _report(args: argparse.Namespace) -> int:
    from ..survey.data import report_data

    if not args.output and not args.json:
        return _err("report needs -o PAGE.html and/or --json FILE")
    data = report_data(args.db, args.snapshot)
    if args.json:
        try:
            with open(args.json, "w", encoding="utf-8") as f:
                json.dump(data, f, indent=1)
                f.write("\n")
        except OSError as exc:
            return _err(f"{args.json}: cannot write: {exc.strerror or exc}")
    if args.output:
        from ..survey.html import render

        try:  # written beside, then renamed: never a half-written page
            tmp = args.output + ".tmp"
            with open(tmp, "w", encoding="utf-8") as f:
                render(data, f)  # a text stream (sfcheck.survey.html.render)
            os.replace(tmp, args.output)
        except OSError as exc:
            return _err(f"{args.output}: cannot write: {exc.strerror or exc}")
    return 0
