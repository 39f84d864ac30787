"""What the CI formats (sarif, github, gitlab) share: which findings they list, the path a
CI service knows a file by, and a finding's stable fingerprint.

Each listed finding becomes an alert, annotation or merge-request issue, so they list
what text lists at `--show` (default warning for them): no entry per file without SFrame.
A finding in an archive member is placed on the archive (the file in the repository or
build tree) and names the member in its text: a member path alone (`usr/lib/libz.so.1`)
names no file a CI service can show.
"""

from __future__ import annotations

import hashlib
import os
from collections import Counter

from ..result import FileResult, Finding, Result, Severity
from . import ReportOptions


def listed(result: Result, opts: ReportOptions) -> list[tuple[FileResult, Finding]]:
    """(file, finding) for every finding at or above --show, in the result's order (that
    of JSON); in a scan, never an `elf-no-sframe` info (as in text: such files are only
    counted)."""
    return [(res, f) for res in result.files if not res.error for f in res.findings
            if f.severity >= opts.show and (opts.single or f.rule != "elf-no-sframe"
                                             or f.severity > Severity.INFO)]


def scan_listed(result: Result, opts: ReportOptions) -> list[Finding]:
    """The findings about the scan as a whole at or above --show (Result.findings), waived
    ones included (as `listed`: SARIF shows them suppressed, annotations leave them out)."""
    return [f for f in result.findings if f.severity >= opts.show]


def scan_fingerprint(f: Finding) -> str:
    """A scan-level finding's fingerprint: its rule (one per rule and scan)."""
    return hashlib.sha256(f"{f.rule}\0<scan>".encode()).hexdigest()


def repo_path(path: str) -> str:
    """`path` as a CI service names a repository file: relative to the working directory
    (the checkout) when inside it, `/` separated, without a leading `./`."""
    if os.path.isabs(path):
        cwd = os.getcwd()
        if os.path.commonpath([cwd, path]) == cwd:
            path = os.path.relpath(path, cwd)
    path = path.replace(os.sep, "/")
    while path.startswith("./"):
        path = path[2:]
    return path


def artifact(res: FileResult) -> tuple[str, str | None]:
    """(file in the repository, archive member or None) where a finding is."""
    if res.package is not None and res.member is not None:
        return repo_path(res.package), res.member
    return repo_path(res.path), None


def _place(f: Finding) -> tuple[str, ...]:
    """Where in the file, by what survives a rebuild best: the function's name when known
    (addresses and FDE numbers shift when code is added), else FDE and pc, else the
    section offset. Never the message, whose figures change with the data."""
    loc = f.location
    if loc.function:
        where: tuple[str, ...] = ("function", loc.function)
    elif loc.fde is not None:
        where = ("fde", str(loc.fde), "pc", str(loc.pc))
    else:
        where = ("offset", str(loc.offset))
    return (loc.section or "", *where, "fre", str(loc.fre))


class Fingerprints:
    """Stable, unique fingerprints: a hash of rule, file, member and place; a second
    finding with the same key in one report gets its ordinal hashed in, so none collide."""

    def __init__(self) -> None:
        self.seen: Counter[tuple[str, ...]] = Counter()

    def of(self, res: FileResult, f: Finding) -> str:
        path, member = artifact(res)
        key = (f.rule, path, member or "", *_place(f))
        self.seen[key] += 1
        text = "\0".join((*key, str(self.seen[key])))
        return hashlib.sha256(text.encode("utf-8", "surrogateescape")).hexdigest()
