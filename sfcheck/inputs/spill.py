"""Big archive members go to a private temporary file, not into memory.

A member larger than `Limits.spill_bytes` is copied, in 1 MiB chunks, into a directory
made for this scan (mode 0700, under $TMPDIR) and checked from there through a map of
the file, so a 1 GB debug file costs page cache, not process memory. The directory is
removed when the scan ends, however it ends (the scan's `finally`, which SIGINT and
SIGTERM reach too), and only by the process that made it (forked workers inherit the
object, never the duty).
"""

from __future__ import annotations

import contextlib
import os

from .limits import ArchiveError

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing at run time
if TYPE_CHECKING:
    from typing import BinaryIO

_CHUNK = 1 << 20


class SpillDir:
    """The scan's temporary directory, made on first use."""

    def __init__(self) -> None:
        self.path: str | None = None
        self._owner = os.getpid()

    def write(self, first: list[bytes], rest: BinaryIO) -> str:
        """A new file holding the chunks `first` then the rest of `rest`; its path. Errors
        reading `rest` propagate as they are; errors writing are an ArchiveError."""
        import tempfile  # here, not at import: a scan of plain files never spills

        try:
            if self.path is None:
                self.path = tempfile.mkdtemp(prefix="sfcheck-")  # 0700: ours alone
            fd, path = tempfile.mkstemp(dir=self.path, suffix=".member")
        except OSError as exc:
            raise _write_error(exc) from None
        try:
            with os.fdopen(fd, "wb", buffering=0) as out:
                while first:
                    _put(out, first.pop(0))  # each chunk freed once written
                while chunk := rest.read(_CHUNK):
                    _put(out, chunk)
        except BaseException:
            self.remove(path)
            raise
        return path

    @staticmethod
    def remove(path: str) -> None:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(path)

    def close(self) -> None:
        if self.path is not None and os.getpid() == self._owner:
            import shutil

            shutil.rmtree(self.path, ignore_errors=True)
            self.path = None

    def __enter__(self) -> SpillDir:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _put(out: BinaryIO, chunk: bytes) -> None:
    view = memoryview(chunk)
    try:
        while view:  # an unbuffered write may be partial
            view = view[out.write(view) or 0:]
    except OSError as exc:
        raise _write_error(exc) from None


def _write_error(exc: OSError) -> ArchiveError:
    import tempfile

    return ArchiveError(f"cannot write a temporary copy of a large member under "
                        f"{tempfile.gettempdir()} (set TMPDIR): {exc.strerror or exc}")
