"""Big archive members go to a private temporary file, not into memory.

A member larger than `Limits.spill_bytes` is copied, in 1 MiB chunks, into a directory
made for this scan (mode 0700, under $TMPDIR) and checked from there through a map of
the file, so a 1 GB debug file costs page cache, not process memory. The directory is
removed when the scan ends, however it ends (the scan's `finally`, which SIGINT and
SIGTERM reach too), and only by the process that made it (forked workers inherit the
object, never the duty).

Nothing runs after a SIGKILL, so the directory's name carries the owner's PID
(`sfcheck-PID-XXXXXXXX`): the next scan that spills removes the directories of ours whose
process is gone. A `TMPDIR` that cannot be used is an error, never a silent fallback to
/tmp (tempfile's own choice), which may be the small disk TMPDIR was set to avoid.
"""

from __future__ import annotations

import contextlib
import os
import re
import stat

from .limits import ArchiveError

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing at run time
if TYPE_CHECKING:
    from typing import BinaryIO

_CHUNK = 1 << 20
_PREFIX = "sfcheck-"
_OURS = re.compile(r"sfcheck-([0-9]+)-[A-Za-z0-9_]+\Z")  # what mkdtemp makes of our prefix


def tmpdir_problem() -> str | None:
    """Why `$TMPDIR`, when set, cannot hold temporary copies (one line), or None."""
    path = os.environ.get("TMPDIR")
    if not path:
        return None
    try:
        st = os.stat(path)
    except OSError as exc:
        return f"TMPDIR={path}: {exc.strerror or exc}"
    if not stat.S_ISDIR(st.st_mode):
        return f"TMPDIR={path}: not a directory"
    if not os.access(path, os.W_OK | os.X_OK):
        return f"TMPDIR={path}: not writable"
    return None


def spill_root() -> str:
    """The directory the scan's own directory is made in: `$TMPDIR` when set (checked, see
    tmpdir_problem), else tempfile's choice."""
    import tempfile

    path = os.environ.get("TMPDIR")
    if path:
        problem = tmpdir_problem()
        if problem is not None:
            raise ArchiveError(f"cannot write a temporary copy of a large member: {problem}")
        return path
    return tempfile.gettempdir()


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:  # EPERM: someone else's process, alive
        return True
    except OverflowError:  # no PID this large: not a directory this code made, keep it
        return True
    return True


def reclaim_stale(root: str) -> list[str]:
    """Remove the spill directories under `root` left by sfcheck processes that died
    without cleaning up (SIGKILL, OOM killer); their paths. Only directories named as ours,
    owned by this user, never through a symlink (lstat; rmtree refuses links and works by
    descriptor), and only when the PID in the name is no running process."""
    import shutil

    removed = []
    try:
        names = os.listdir(root)
    except OSError:
        return removed
    me = os.getuid()
    for name in names:
        match = _OURS.match(name)
        if match is None or int(match.group(1)) == os.getpid():
            continue
        path = os.path.join(root, name)
        try:
            st = os.lstat(path)
        except OSError:
            continue
        if not stat.S_ISDIR(st.st_mode) or st.st_uid != me or _alive(int(match.group(1))):
            continue
        try:
            shutil.rmtree(path)
        except OSError:
            continue
        removed.append(path)
    return removed


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
                root = spill_root()
                reclaim_stale(root)
                # 0700: ours alone; the PID in the name lets a later scan reclaim it.
                self.path = tempfile.mkdtemp(prefix=f"{_PREFIX}{os.getpid()}-", dir=root)
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
    where = os.environ.get("TMPDIR") or "the temporary directory"
    return ArchiveError(f"cannot write a temporary copy of a large member under "
                        f"{where} (set TMPDIR): {exc.strerror or exc}")
