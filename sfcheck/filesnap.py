"""A private, unchangeable copy of a file that another process may shrink, grow or rewrite.

A read-only map of a file that a live process shares is not safe to read: if that process
truncates the file, touching a mapped page past the new end kills sfcheck with SIGBUS, which
Python cannot catch. So the file is copied by the kernel (sendfile: no pass through user
space) into a memfd, the memfd is sealed against shrinking, growing and writing, and the
sealed copy is mapped. Its pages are touched only where read (the RSS follows what is read,
not the file's size) and nobody can change them any more. A file that changed size or
modification time while it was copied is refused with what changed.
"""

from __future__ import annotations

import fcntl
import mmap
import os
import stat

from .errors import SfcheckError

# The copy lives in memory (tmpfs) while the object is examined: a bound on that.
MAX_SNAPSHOT = 1 << 30
_SEALS = fcntl.F_SEAL_SHRINK | fcntl.F_SEAL_GROW | fcntl.F_SEAL_WRITE | fcntl.F_SEAL_SEAL
_CHUNK = 1 << 24


class SnapshotError(SfcheckError):
    """The file cannot be copied consistently; `message` is one line for the user."""

    def __init__(self, message: str) -> None:
        self.message = message
        super().__init__(message)


def _copy(src: int, dst: int, size: int) -> int:
    """Copy up to `size` bytes of `src` into `dst` (at its offset 0); how many were copied
    (fewer when the file shrank meanwhile)."""
    done = 0
    while done < size:
        try:
            n = os.sendfile(dst, src, done, min(size - done, _CHUNK))
        except OSError:  # a file system sendfile cannot read from: through user space
            chunk = os.pread(src, min(size - done, _CHUNK), done)
            n = os.write(dst, chunk) if chunk else 0
        if n == 0:
            break
        done += n
    return done


def snapshot_fd(fd: int, limit: int = MAX_SNAPSHOT) -> bytes | mmap.mmap:
    """A sealed copy of the regular file open as `fd` (the caller keeps and closes `fd`),
    mapped read-only; b"" for an empty file. Raises SnapshotError."""
    try:
        before = os.fstat(fd)
    except OSError as exc:
        raise SnapshotError(f"cannot read file: {exc.strerror}") from None
    if not stat.S_ISREG(before.st_mode):
        raise SnapshotError("not a regular file: refused")
    size = before.st_size
    if size > limit:
        raise SnapshotError(f"{size} bytes: larger than the {limit >> 20} MiB sfcheck copies "
                            "from a file another process may change")
    if size == 0:
        return b""
    mfd = os.memfd_create("sfcheck-snapshot", os.MFD_CLOEXEC | os.MFD_ALLOW_SEALING)
    try:
        try:
            copied = _copy(fd, mfd, size)
            after = os.fstat(fd)
        except OSError as exc:
            raise SnapshotError(f"cannot read file: {exc.strerror}") from None
        if copied < size or after.st_size != size:
            raise SnapshotError(f"changed size while being read ({size} bytes when opened, "
                                f"{after.st_size} after; {copied} read)")
        if after.st_mtime_ns != before.st_mtime_ns:
            raise SnapshotError("was written to while being read (its modification time "
                                "changed)")
        fcntl.fcntl(mfd, fcntl.F_ADD_SEALS, _SEALS)
        return mmap.mmap(mfd, size, access=mmap.ACCESS_READ)
    finally:
        os.close(mfd)
