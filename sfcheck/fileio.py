"""Opening input files safely: regular files only, never blocking, never read whole.

Every file sfcheck reads from a path goes through here. The type is checked with `fstat` on
the descriptor that was opened (a path checked first and opened later can be swapped for a FIFO
in between), and the open itself never blocks (`O_NONBLOCK`), so a FIFO, a device or a procfs
file named by a hostile tree or command line is refused in one line instead of hanging or
reading forever.
"""

from __future__ import annotations

import io
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


class FileChangedError(InputFileError):
    """A file that became shorter while it was being read (truncated or replaced in place):
    one file's error, never the scan's."""


class FileView:
    """A regular file read at offsets (`pread`), sliced like bytes, without mapping it.

    A mapped file that another process truncates kills the reader with SIGBUS when it
    touches a page past the new end (Python cannot catch that: the fault repeats), so an
    input that can change under the scan is read instead: the size is taken once, at open,
    and a read that comes back short raises FileChangedError. Only the bytes asked for are
    copied, as slicing a map copies them, so the cost is the same.
    """

    __slots__ = ("fd", "size", "label")

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.label = os.fsdecode(path)
        self.fd, st = open_regular(path)
        self.size = st.st_size

    def __len__(self) -> int:
        return self.size

    def read(self, off: int, n: int) -> bytes:
        """Exactly `n` bytes at `off` (inside the size seen at open)."""
        if n <= 0:
            return b""
        try:
            data = os.pread(self.fd, n, off)
            while len(data) < n:  # Linux returns at most ~2 GiB per call
                more = os.pread(self.fd, n - len(data), off + len(data))
                if not more:
                    raise self._changed(off + len(data))
                data += more
        except OSError as exc:
            raise InputFileError(f"cannot read file: {exc.strerror or exc}",
                                 self.label) from None
        return data

    def _changed(self, where: int) -> FileChangedError:
        try:
            now = f"{os.fstat(self.fd).st_size} bytes"
        except OSError:
            now = "unknown size"
        return FileChangedError(f"changed while read: {self.size} bytes when opened, "
                                f"{now} when byte {where} was read (truncated while checked?)",
                                self.label)

    def __getitem__(self, key: int | slice) -> bytes | int:
        if isinstance(key, slice):
            start, stop, step = key.indices(self.size)
            if step != 1:
                raise ValueError("FileView slices take no step")
            return self.read(start, stop - start)
        index = key + self.size if key < 0 else key
        if not 0 <= index < self.size:
            raise IndexError("FileView index out of range")
        return self.read(index, 1)[0]

    def close(self) -> None:
        if self.fd >= 0:
            os.close(self.fd)
            self.fd = -1

    def __enter__(self) -> FileView:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class ViewStream(io.RawIOBase):
    """A FileView as a read-only binary stream, for parsers that want a file object
    (pyelftools' ELFFile): the file ends where it ended when the view was opened (growth is
    not seen), and a read that comes back short because the file shrank raises
    FileChangedError instead of a short read the parser would misread. Wrap it in
    `io.BufferedReader` for small reads. The view stays the caller's to close."""

    def __init__(self, view: FileView) -> None:
        super().__init__()
        self.view = view
        self.pos = 0

    def readable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return True

    def tell(self) -> int:
        return self.pos

    def seek(self, offset: int, whence: int = io.SEEK_SET) -> int:
        base = {io.SEEK_SET: 0, io.SEEK_CUR: self.pos, io.SEEK_END: self.view.size}[whence]
        if base + offset < 0:
            raise ValueError("negative seek position")
        self.pos = base + offset
        return self.pos

    def readinto(self, buffer: bytearray | memoryview) -> int:  # type: ignore[override]
        n = max(0, min(len(buffer), self.view.size - self.pos))
        data = self.view.read(self.pos, n)
        buffer[:n] = data
        self.pos += n
        return n


def map_regular(path: str | os.PathLike[str]) -> bytes | mmap.mmap:
    """The bytes of a regular file as a read-only map (pages load when touched, so a file's
    size never decides memory); an empty file gives b"". A file truncated while mapped
    raises SIGBUS in the reader: inputs that other processes may change are read through
    FileView instead."""
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
