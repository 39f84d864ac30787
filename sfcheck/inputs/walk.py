"""Top-level inputs: files, directory trees (sorted, recursive) and path lists."""

from __future__ import annotations

import os
import stat
import sys
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import TextIO

from ..result import Skipped


@dataclass(frozen=True, slots=True)
class Input:
    path: str
    explicit: bool  # named by the user: a non-ELF file is an error, not a quiet skip
    error: str | None = None  # could not be listed or opened


def read_path_list(source: str, stdin: TextIO | None = None) -> list[str]:
    """Paths from a file (or `-` for stdin), one per line, or NUL-separated (`find -print0`)."""
    if source == "-":
        text = (stdin or sys.stdin).read()
    else:
        with open(source, encoding="utf-8", errors="surrogateescape") as f:
            text = f.read()
    sep = "\0" if "\0" in text else "\n"
    return [p for p in (line.rstrip("\r") if sep == "\n" else line for line in text.split(sep))
            if p]


def _tree(root: str, skipped: Skipped) -> Iterator[Input]:
    errors: list[OSError] = []
    for dirpath, dirnames, filenames in os.walk(root, onerror=errors.append):
        dirnames.sort()  # os.walk recurses in this order: the scan order is deterministic
        for name in sorted(filenames):
            path = os.path.join(dirpath, name)
            try:
                mode = os.lstat(path).st_mode
            except OSError as exc:
                yield Input(path, False, f"cannot read file: {exc.strerror or exc}")
                continue
            if stat.S_ISLNK(mode):
                skipped.links += 1  # the target is scanned under its own name, if in the tree
            elif stat.S_ISREG(mode):
                yield Input(path, False)
            else:
                skipped.special += 1
        while errors:
            exc = errors.pop(0)
            yield Input(exc.filename or root, True,
                        f"cannot read directory: {exc.strerror or exc}")


def walk(paths: Iterable[str], skipped: Skipped) -> Iterator[Input]:
    """Every file to look at, in a deterministic order: arguments in the order given,
    directory contents sorted by name. Symlinks inside trees are not followed."""
    for path in paths:
        try:
            mode = os.stat(path).st_mode
        except OSError as exc:
            yield Input(path, True, f"cannot read file: {exc.strerror or exc}")
            continue
        if stat.S_ISDIR(mode):
            yield from _tree(path, skipped)
        elif stat.S_ISREG(mode):
            yield Input(path, True)
        else:
            yield Input(path, True, "not a regular file")
