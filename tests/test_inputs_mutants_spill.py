"""The spill directory's parts (TMPDIR checks, reclaiming dead scans' directories, writing
a member in bounded chunks, removal only by its owner, every write error one line) and the
small readers' edges (archive limits, empty ar members and their names, compressor names,
GNU long-name bodies). Written for the survivors of the inputs mutation group (issue 29)."""

from __future__ import annotations

import errno
import importlib
import io
import os
import stat
import subprocess
import sys
import tarfile
from pathlib import Path

import pytest

from sfcheck.inputs import ArchiveError, Limits
from sfcheck.inputs.ar import ar_entries
from sfcheck.inputs.compress import by_name
from sfcheck.inputs.limits import Budget
from sfcheck.inputs.spill import SpillDir, _alive, _put, reclaim_stale, tmpdir_problem
from sfcheck.inputs.tar import MAX_HEADER_BODY, tar_entries

from archives import ar_bytes, ar_header

spill_mod = importlib.import_module("sfcheck.inputs.spill")


# --- TMPDIR ------------------------------------------------------------------------------

def test_tmpdir_problems_named(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    missing = tmp_path / "missing"
    monkeypatch.setenv("TMPDIR", str(missing))
    assert tmpdir_problem() == f"TMPDIR={missing}: No such file or directory"
    # Root passes every permission check, so access(2) answers as for a user whose
    # directory lacks write, then search, permission: both are asked for.
    for missing_bit in (os.W_OK, os.X_OK):
        monkeypatch.setattr(spill_mod.os, "access",
                            lambda path, mode, bit=missing_bit: not mode & bit)
        monkeypatch.setenv("TMPDIR", str(tmp_path))
        assert tmpdir_problem() == f"TMPDIR={tmp_path}: not writable"
    monkeypatch.undo()
    monkeypatch.setenv("TMPDIR", str(tmp_path))
    assert tmpdir_problem() is None


# --- processes and reclaiming -----------------------------------------------------------

def test_alive_asks_without_signalling() -> None:
    """A live process is alive and is not signalled by the question; a reaped one is not."""
    # SIGHUP's default action restored: under nohup (as mutation runs are started) it is
    # inherited ignored, and a question sent as SIGHUP would go unseen
    child = subprocess.Popen([sys.executable, "-c", "import signal, sys; signal.signal("
                              "signal.SIGHUP, signal.SIG_DFL); print(flush=True); "
                              "sys.stdin.read()"], stdin=subprocess.PIPE,
                             stdout=subprocess.PIPE)
    try:
        assert child.stdout is not None and child.stdout.readline() == b"\n"  # handler set
        assert _alive(child.pid)
    finally:
        child.communicate(b"")
    assert child.returncode == 0
    assert not _alive(child.pid)


def test_alive_when_the_process_is_someone_elses(monkeypatch: pytest.MonkeyPatch) -> None:
    def kill(pid: int, sig: int) -> None:
        raise PermissionError(errno.EPERM, "Operation not permitted")

    monkeypatch.setattr(spill_mod.os, "kill", kill)
    assert _alive(12345)


def _dead_pid() -> int:
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()
    return child.pid


def test_reclaim_goes_on_past_every_kind_of_skipped_entry(tmp_path: Path,
                                                          monkeypatch: pytest.MonkeyPatch
                                                          ) -> None:
    """Entries listed in this order: a name not ours, our own process's, one that vanished
    before lstat, a plain file named as ours, one whose removal fails, then a stale
    directory: only the last is reclaimed (each skip goes on to the next entry), and its
    path is returned."""
    dead = _dead_pid()
    names = [f"sfcheck-{dead}-agone", f"sfcheck-{dead}-bfile", f"sfcheck-{dead}-cfails",
             f"sfcheck-{dead}-dstale"]
    (tmp_path / names[1]).write_text("x")
    (tmp_path / names[2]).mkdir()
    (tmp_path / names[3]).mkdir()
    (tmp_path / names[3] / "member").write_text("x")
    listed = ["not-ours", f"sfcheck-{os.getpid()}-mine", *names]
    monkeypatch.setattr(spill_mod.os, "listdir", lambda root: listed)
    import shutil

    real_rmtree = shutil.rmtree

    def rmtree(path: str, *args: object, **kw: object) -> None:
        if path.endswith("cfails"):
            raise OSError(errno.EBUSY, "busy")
        real_rmtree(path)

    monkeypatch.setattr(shutil, "rmtree", rmtree)
    assert reclaim_stale(str(tmp_path)) == [str(tmp_path / names[3])]
    monkeypatch.undo()  # Path.iterdir lists with os.listdir
    assert sorted(p.name for p in tmp_path.iterdir()) == names[1:3]


# --- writing and removing ----------------------------------------------------------------

class _Chunks(io.RawIOBase):
    """A stream of `n` chunks of 1 MiB that records the sizes asked for."""

    def __init__(self, n: int) -> None:
        self.left = n
        self.asked: list[int | None] = []

    def readable(self) -> bool:
        return True

    def read(self, size: int | None = -1) -> bytes:
        self.asked.append(size)
        if not self.left:
            return b""
        self.left -= 1
        return bytes([self.left]) * (1 << 20)


def test_spill_writes_first_chunks_then_the_rest_in_bounded_reads(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TMPDIR", str(tmp_path))
    rest = _Chunks(3)
    with SpillDir() as spill:
        path = spill.write([b"ab", b"cd"], rest)
        assert path.endswith(".member") and os.path.dirname(path) == spill.path
        assert stat.S_IMODE(os.stat(spill.path).st_mode) == 0o700
        data = Path(path).read_bytes()
        assert data == b"abcd" + bytes([2]) * (1 << 20) + bytes([1]) * (1 << 20) + \
            bytes([0]) * (1 << 20)
        assert set(rest.asked) == {1 << 20}  # never the whole rest at once
        second = spill.write([], io.BytesIO(b"xyz"))
        assert Path(second).read_bytes() == b"xyz"
        assert os.path.dirname(second) == spill.path and second != path
        made = spill.path
    assert spill.path is None and not os.path.exists(made)


def test_spill_close_tolerates_a_removed_directory_and_makes_a_new_one_after(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TMPDIR", str(tmp_path))
    spill = SpillDir()
    spill.close()  # never used: nothing to remove
    spill.write([b"x"], io.BytesIO(b""))
    first = spill.path
    assert first is not None
    import shutil

    shutil.rmtree(first)
    spill.close()
    assert spill.path is None
    spill.write([b"y"], io.BytesIO(b""))
    assert spill.path is not None and spill.path != first and os.path.isdir(spill.path)
    spill.close()


def test_spill_directory_removed_only_by_its_owner(tmp_path: Path,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    """A forked worker inherits the object; its close leaves the directory to the owner."""
    monkeypatch.setenv("TMPDIR", str(tmp_path))
    spill = SpillDir()
    spill.write([b"x"], io.BytesIO(b""))
    made = spill.path
    assert made is not None
    pid = os.fork()
    if pid == 0:  # the worker
        spill.close()
        os._exit(0)
    _, status = os.waitpid(pid, 0)
    assert status == 0
    assert os.path.isdir(made)
    spill.close()
    assert not os.path.exists(made)


class _BrokenRest(io.RawIOBase):
    def readable(self) -> bool:
        return True

    def read(self, size: int | None = -1) -> bytes:
        raise OSError(errno.EIO, "Input/output error")


def test_spill_read_error_propagates_and_the_partial_file_is_removed(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TMPDIR", str(tmp_path))
    with SpillDir() as spill:
        with pytest.raises(OSError, match="Input/output error"):
            spill.write([b"partial"], _BrokenRest())
        assert spill.path is not None and os.listdir(spill.path) == []


def test_spill_remove_of_a_file_already_gone(tmp_path: Path) -> None:
    f = tmp_path / "m"
    f.write_text("x")
    SpillDir.remove(str(f))
    assert not f.exists()
    SpillDir.remove(str(f))  # no error


def test_spill_cannot_make_its_file_one_line(tmp_path: Path,
                                             monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("TMPDIR", raising=False)
    spill = SpillDir()
    spill.path = str(tmp_path / "gone")  # its directory removed under it
    with pytest.raises(ArchiveError) as exc:
        spill.write([b"x"], io.BytesIO(b""))
    assert str(exc.value) == ("cannot write a temporary copy of a large member under the "
                              "temporary directory (set TMPDIR): No such file or directory")
    monkeypatch.setenv("TMPDIR", str(tmp_path))
    with pytest.raises(ArchiveError) as exc:
        spill.write([b"x"], io.BytesIO(b""))
    assert str(exc.value) == (f"cannot write a temporary copy of a large member under "
                              f"{tmp_path} (set TMPDIR): No such file or directory")


class _Out:
    """A raw file that takes at most 3 bytes a write, and now and then none (None)."""

    def __init__(self, fail: bool = False) -> None:
        self.data = bytearray()
        self.calls = 0
        self.fail = fail

    def write(self, view: memoryview) -> int | None:
        self.calls += 1
        if self.fail:
            raise OSError(errno.ENOSPC, "No space left on device")
        if self.calls % 4 == 2:
            return None
        self.data += bytes(view[:3])
        return min(3, len(view))


def test_put_finishes_partial_writes() -> None:
    out = _Out()
    _put(out, b"0123456789abcdef")  # type: ignore[arg-type]
    assert bytes(out.data) == b"0123456789abcdef"


def test_put_write_error_one_line(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("TMPDIR", raising=False)
    with pytest.raises(ArchiveError) as exc:
        _put(_Out(fail=True), b"x")  # type: ignore[arg-type]
    assert str(exc.value) == ("cannot write a temporary copy of a large member under the "
                              "temporary directory (set TMPDIR): No space left on device")


# --- limits, ar, compressors, GNU long names ---------------------------------------------

@pytest.mark.parametrize("field", ["max_bytes", "max_members", "max_depth", "spill_bytes"])
def test_each_limit_must_be_positive(field: str) -> None:
    assert getattr(Limits(**{field: 1}), field) == 1
    with pytest.raises(ValueError, match=r"^archive limits must be positive$"):
        Limits(**{field: 0})


def test_ar_empty_member_and_undecodable_name_read() -> None:
    data = ar_bytes([("empty", b"")]) + ar_header(b"x\xff/", 2) + b"ab"
    got = [(e.name, e.type, e.stream.read() if e.stream else None)
           for e in ar_entries(io.BytesIO(data), Budget(Limits()))]
    assert got == [("empty", "file", b""), ("x\udcff", "file", b"ab")]


def test_unknown_compressor_named() -> None:
    with pytest.raises(ArchiveError) as exc:
        by_name("lzip")
    assert str(exc.value) == "unsupported compression: lzip"


def test_gnu_long_name_body_over_the_bound_named() -> None:
    info = tarfile.TarInfo("././@LongLink")
    info.size, info.type = MAX_HEADER_BODY + 1, tarfile.GNUTYPE_LONGNAME
    data = info.tobuf(format=tarfile.GNU_FORMAT) + bytes(1024)
    with pytest.raises(ArchiveError) as exc:
        list(tar_entries(io.BytesIO(data), Budget(Limits())))
    assert str(exc.value) == (f"tar GNU long name or link of {MAX_HEADER_BODY + 1} bytes "
                              f"(more than {MAX_HEADER_BODY}): refused before reading it")
