"""Opening input files safely: regular files only, never blocking, never read whole.

Every file sfcheck reads from a path goes through here. The type is checked with `fstat` on
the descriptor that was opened (a path checked first and opened later can be swapped for a FIFO
in between), and the open itself never blocks (`O_NONBLOCK`), so a FIFO, a device or a procfs
file named by a hostile tree or command line is refused in one line instead of hanging or
reading forever.
"""

from __future__ import annotations

import mmap
import os
import stat

from .errors import SfcheckError

_FLAGS = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0) \
    | getattr(os, "O_NOCTTY", 0)


class InputFileError(SfcheckError):
    """A path that cannot be read as an input file; `message` is one line for the user."""

    def __init__(self, message: str, path: str) -> None:
        self.message = message
        self.path = path
        super().__init__(f"{path}: {message}")


def _kind(mode: int) -> str:
    for test, name in ((stat.S_ISDIR, "a directory"), (stat.S_ISFIFO, "a FIFO"),
                       (stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device"),
                       (stat.S_ISSOCK, "a socket")):
        if test(mode):
            return name
    return "not a regular file"


def open_fd(path: str | os.PathLike[str]) -> tuple[int, os.stat_result]:
    """Open `path` read-only without blocking, whatever its type; the descriptor (the caller
    closes it) and its `fstat`, for callers that accept more than regular files (a path
    list may be a FIFO)."""
    label = os.fsdecode(path)
    try:
        fd = os.open(path, _FLAGS)
    except OSError as exc:
        raise InputFileError(f"cannot read file: {exc.strerror or exc}", label) from None
    try:
        st = os.fstat(fd)
    except OSError as exc:
        os.close(fd)
        raise InputFileError(f"cannot read file: {exc.strerror or exc}", label) from None
    return fd, st


def open_regular(path: str | os.PathLike[str]) -> tuple[int, os.stat_result]:
    """Open `path` read-only without blocking; refuse anything but a regular file.

    Returns the descriptor (the caller closes it) and its `fstat`.
    """
    fd, st = open_fd(path)
    if not stat.S_ISREG(st.st_mode):
        os.close(fd)
        raise InputFileError(f"{_kind(st.st_mode)}, not a regular file: refused",
                             os.fsdecode(path))
    return fd, st


def map_regular(path: str | os.PathLike[str]) -> bytes | mmap.mmap:
    """The bytes of a regular file as a read-only map (pages load when touched, so a file's
    size never decides memory); an empty file gives b""."""
    fd, st = open_regular(path)
    try:
        if st.st_size == 0:
            return b""
        try:
            return mmap.mmap(fd, 0, access=mmap.ACCESS_READ)
        except (OSError, ValueError) as exc:
            raise InputFileError(f"cannot map file: {exc}", os.fsdecode(path)) from None
    finally:
        os.close(fd)


def read_bounded(path: str | os.PathLike[str], limit: int) -> bytes:
    """The whole of a small regular file (waivers, path lists), refused above `limit` bytes."""
    fd, st = open_regular(path)
    try:
        if st.st_size > limit:
            raise InputFileError(f"larger than {limit} bytes: refused", os.fsdecode(path))
        with os.fdopen(fd, "rb", closefd=False) as f:
            data = f.read(limit + 1)
    except OSError as exc:
        raise InputFileError(f"cannot read file: {exc.strerror or exc}",
                             os.fsdecode(path)) from None
    finally:
        os.close(fd)
    if len(data) > limit:
        raise InputFileError(f"larger than {limit} bytes: refused", os.fsdecode(path))
    return data
