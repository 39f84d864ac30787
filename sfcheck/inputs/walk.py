"""Top-level inputs: files, directory trees (sorted, iterative) and path lists.

A tree is walked with an explicit stack, not recursion, so its depth cannot raise
RecursionError; it stops at MAX_TREE_DEPTH levels with an error on the directory it
did not enter (files left unchecked fail the gate, they are not skipped quietly), and a
directory inside itself (a bind mount of an ancestor) is an error, not entered again.
"""

from __future__ import annotations

import os
import stat
import sys
from collections.abc import Iterable, Iterator

from ..fileio import InputFileError, open_fd
from ..record import Record
from ..result import Skipped

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing at run time
if TYPE_CHECKING:
    from typing import BinaryIO, TextIO

MAX_TREE_DEPTH = 256  # directory levels below an argument; distro trees use < 30
MAX_LIST_BYTES = 256 << 20  # a path list (--from-file): ~2 million typical paths
MAX_LIST_LINE = 4096  # one path in a list: Linux PATH_MAX


class Input(Record, frozen=True):
    __slots__ = ("path", "explicit", "error")

    def __init__(self, path: str, explicit: bool, error: str | None = None) -> None:
        self.path = path
        self.explicit = explicit  # named by the user: a non-ELF file is an error, not a skip
        self.error = error  # could not be listed or opened


def _read_capped(stream: BinaryIO | TextIO, label: str) -> str:
    """All of `stream`, refused past MAX_LIST_BYTES (read in chunks, never whole)."""
    chunks: list[str] = []
    total = 0
    while True:
        chunk = stream.read(1 << 20)
        if not chunk:
            break
        total += len(chunk)
        if total > MAX_LIST_BYTES:
            raise InputFileError(f"path list larger than {MAX_LIST_BYTES} bytes: refused", label)
        chunks.append(chunk if isinstance(chunk, str)
                      else chunk.decode("utf-8", "surrogateescape"))
    return "".join(chunks)


def _open_list(source: str) -> BinaryIO:
    """A path list file: a regular file or a FIFO (`<(find ...)`), never a device."""
    fd, st = open_fd(source)
    if stat.S_ISFIFO(st.st_mode):
        # Opened without blocking, so a writer may not be there yet (reads would give EOF):
        # reopen the same pipe through its descriptor, blocking until the writer comes.
        try:
            again = os.open(f"/proc/self/fd/{fd}", os.O_RDONLY | os.O_CLOEXEC)
        except OSError:
            os.set_blocking(fd, True)
        else:
            os.close(fd)
            fd = again
    elif not stat.S_ISREG(st.st_mode):
        os.close(fd)
        raise InputFileError("not a regular file or a FIFO: refused as a path list", source)
    return os.fdopen(fd, "rb")


def read_path_list(source: str, stdin: TextIO | None = None) -> list[str]:
    """Paths from a file (or `-` for stdin), one per line, or NUL-separated (`find -print0`).

    The list is bounded in total (MAX_LIST_BYTES) and per path (MAX_LIST_LINE); a longer
    one is an InputFileError, one line for the user.
    """
    label = "standard input" if source == "-" else source
    try:
        if source == "-":
            stream = stdin or sys.stdin
            text = _read_capped(getattr(stream, "buffer", stream), label)
        else:
            with _open_list(source) as f:
                text = _read_capped(f, label)
    except OSError as exc:
        raise InputFileError(f"cannot read path list: {exc.strerror or exc}", label) from None
    sep = "\0" if "\0" in text else "\n"
    out = []
    for number, line in enumerate(text.split(sep), 1):
        path = line.rstrip("\r") if sep == "\n" else line
        if len(path) > MAX_LIST_LINE:
            raise InputFileError(f"entry {number} is longer than {MAX_LIST_LINE} bytes "
                                 "(not a path list?)", label)
        if path:
            out.append(path)
    return out


def _listing(path: str) -> tuple[list[str], list[str], list[str], int, int]:
    """One directory's regular files, subdirectories and entries that could not be typed,
    each sorted by name, and its counts of symlinks (to files or directories) and of
    special files."""
    files: list[str] = []
    dirs: list[str] = []
    links = special = 0
    unreadable: list[str] = []
    with os.scandir(path) as it:
        for entry in it:
            try:
                if entry.is_symlink():
                    links += 1  # never followed; the target is scanned under its own name
                elif entry.is_dir(follow_symlinks=False):
                    dirs.append(entry.name)
                elif entry.is_file(follow_symlinks=False):
                    files.append(entry.name)
                else:
                    special += 1
            except OSError:
                unreadable.append(entry.name)
    return sorted(files), sorted(dirs), sorted(unreadable), links, special


def _tree(root: str, skipped: Skipped) -> Iterator[Input]:
    """The files under `root` in os.walk's top-down order (a directory's files, then each
    subdirectory in name order), with an explicit stack. Each entry carries the (device,
    inode) of its ancestors (shared by siblings, at most MAX_TREE_DEPTH long): a directory
    that is its own ancestor (a bind-mount loop) is not entered again."""
    stack: list[tuple[str, int, tuple[tuple[int, int], ...]]] = [(root, 0, ())]
    while stack:
        path, depth, ancestors = stack.pop()
        try:
            st = os.stat(path, follow_symlinks=depth == 0)  # an argument may be a link
            key = (st.st_dev, st.st_ino)
            if key in ancestors:
                yield Input(path, True, "directory loop (a bind mount of an ancestor): "
                            "not entered again")
                continue
            files, dirs, unreadable, links, special = _listing(path)
        except OSError as exc:
            yield Input(path, True, f"cannot read directory: {exc.strerror or exc}")
            continue
        skipped.links += links
        skipped.special += special
        for name in files:
            yield Input(os.path.join(path, name), False)
        for name in unreadable:
            yield Input(os.path.join(path, name), False, "cannot read file: lstat failed")
        if dirs and depth >= MAX_TREE_DEPTH:
            yield Input(path, True, f"directory nested deeper than {MAX_TREE_DEPTH} levels: "
                        f"its {len(dirs)} subdirectories were not scanned")
            continue
        inner = (*ancestors, key)
        stack.extend((os.path.join(path, d), depth + 1, inner) for d in reversed(dirs))


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
