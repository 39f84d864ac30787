"""Top-level inputs at their edges: path lists (bounds at the limit and one past it, the
entry numbers and labels in their one-line errors, NUL and newline forms, descriptors
closed) and tree walks (depth bound, special files, symlinked arguments, unreadable
directories). Written for the survivors of the inputs mutation group (issue 29)."""

from __future__ import annotations

import errno
import importlib
import io
import json
import os
import shutil
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from sfcheck.fileio import InputFileError
from sfcheck.inputs.walk import MAX_LIST_LINE, Input, read_path_list, walk
from sfcheck.result import Skipped

from helpers import Recorded

# the module (the package's `walk` is the function)
walk_mod = importlib.import_module("sfcheck.inputs.walk")


def _error(source: str, stdin: object = None) -> InputFileError:
    with pytest.raises(InputFileError) as exc:
        read_path_list(source, stdin)  # type: ignore[arg-type]
    return exc.value


def _fds() -> int:
    return len(os.listdir("/proc/self/fd"))


# --- path lists --------------------------------------------------------------------------

def test_list_size_at_the_bound_read_one_past_refused(tmp_path: Path,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    """The bound counts every chunk (a list read in several 1 MiB chunks), in a file or on
    standard input, and names the list in its one-line error."""
    limit = (2 << 20) + 10
    monkeypatch.setattr(walk_mod, "MAX_LIST_BYTES", limit)
    line = b"p" * 1023 + b"\n"
    at = line * (limit // 1024) + b"x" * (limit % 1024)
    assert len(at) == limit
    lst = tmp_path / "list"
    lst.write_bytes(at)
    assert read_path_list(str(lst)) == ["p" * 1023] * (limit // 1024) + ["x" * 10]
    lst.write_bytes(at + b"y")
    err = _error(str(lst))
    assert (err.path, err.message) == (str(lst), f"path list larger than {limit} bytes: "
                                       "refused")
    err = _error("-", io.BytesIO(at + b"\n"))
    assert (err.path, err.message) == ("standard input", f"path list larger than {limit} "
                                       "bytes: refused")


def test_entry_length_at_the_bound_read_one_past_refused(tmp_path: Path) -> None:
    lst = tmp_path / "list"
    lst.write_text("a\n" + "b" * MAX_LIST_LINE + "\n")
    assert read_path_list(str(lst)) == ["a", "b" * MAX_LIST_LINE]
    lst.write_text("a\n\n" + "b" * (MAX_LIST_LINE + 1) + "\n")
    err = _error(str(lst))
    assert (err.path, err.message) == (
        str(lst), f"entry 3 is longer than {MAX_LIST_LINE} bytes (not a path list?)")
    err = _error("-", io.StringIO("x\0" + "b" * (MAX_LIST_LINE + 1)))
    assert (err.path, err.message) == (
        "standard input", f"entry 2 is longer than {MAX_LIST_LINE} bytes (not a path list?)")


def test_nul_lists_keep_carriage_returns_newline_lists_drop_them(tmp_path: Path) -> None:
    assert read_path_list("-", io.StringIO("a\r\0b\0")) == ["a\r", "b"]
    assert read_path_list("-", io.StringIO("a\r\nb\r\n\r\n")) == ["a", "b"]


def test_binary_list_undecodable_bytes_kept_as_surrogates(tmp_path: Path) -> None:
    lst = tmp_path / "list"
    lst.write_bytes(b"lib\xff.so\n\xc3\xa9.so\n")
    assert read_path_list(str(lst)) == ["lib\udcff.so", "\u00e9.so"]
    stdin = io.TextIOWrapper(io.BytesIO(b"x\xfe\0y\0"))  # read through .buffer, as bytes
    assert read_path_list("-", stdin) == ["x\udcfe", "y"]


def test_stdin_defaults_to_sys_stdin(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("sys.stdin", io.TextIOWrapper(io.BytesIO(b"from\nstdin\n")))
    assert read_path_list("-") == ["from", "stdin"]


class _Failing(io.RawIOBase):
    def readable(self) -> bool:
        return True

    def read(self, size: int = -1) -> bytes:
        raise OSError(errno.EIO, "Input/output error")


def test_read_error_is_one_line_with_its_label() -> None:
    err = _error("-", _Failing())
    assert (err.path, err.message) == ("standard input",
                                       "cannot read path list: Input/output error")


def test_missing_list_and_device_refused_with_the_path(tmp_path: Path) -> None:
    missing = str(tmp_path / "missing")
    err = _error(missing)
    assert (err.path, err.message) == (missing, "cannot read file: No such file or directory")
    before = _fds()
    err = _error("/dev/null")
    assert (err.path, err.message) == ("/dev/null",
                                       "not a regular file or a FIFO: refused as a path list")
    err = _error(str(tmp_path))
    assert err.message == "not a regular file or a FIFO: refused as a path list"
    assert _fds() == before  # the refused descriptors were closed


def test_fifo_list_read_and_its_descriptors_closed(tmp_path: Path,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    """The list is reopened blocking through /proc/self/fd (the writer is there: it holds
    the pipe until that reopen is done, a handshake, no sleep); every descriptor of the
    list's is closed after."""
    fifo = tmp_path / "list"
    os.mkfifo(fifo)
    reopened = threading.Event()
    real_open = os.open

    def spy(path: str, flags: int, *args: int) -> int:
        fd = real_open(path, flags, *args)
        if str(path).startswith("/proc/self/fd/"):
            reopened.set()
        return fd

    def writer() -> None:
        w = real_open(fifo, os.O_WRONLY)  # returns once the list is opened for reading
        try:
            os.write(w, b"a\nb\n")
            reopened.wait(60)
        finally:
            os.close(w)

    monkeypatch.setattr(walk_mod.os, "open", spy)
    t = threading.Thread(target=writer)
    before = _fds()
    t.start()
    try:
        assert read_path_list(str(fifo)) == ["a", "b"]
    finally:
        reopened.set()
        t.join()
    assert _fds() == before


def test_regular_list_file_descriptor_closed(tmp_path: Path) -> None:
    lst = tmp_path / "list"
    lst.write_text("a\n")
    before = _fds()
    assert read_path_list(str(lst)) == ["a"]
    assert _fds() == before


# --- trees -------------------------------------------------------------------------------

def _rel(root: Path, got: list[Input]) -> list[tuple[str, bool, str | None]]:
    return [(os.path.relpath(i.path, root), i.explicit, i.error) for i in got]


def test_depth_bound_at_the_limit_and_one_past(tmp_path: Path,
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    """Files at the deepest level walked are read; a directory there with subdirectories
    is one error naming how many were left; a directory there without any is no error."""
    monkeypatch.setattr(walk_mod, "MAX_TREE_DEPTH", 2)
    (tmp_path / "a" / "b" / "c1").mkdir(parents=True)
    (tmp_path / "a" / "b" / "c2").mkdir()
    (tmp_path / "a" / "b" / "c1" / "lost").write_bytes(b"x")
    (tmp_path / "a" / "b" / "at").write_bytes(b"x")
    (tmp_path / "a" / "k").mkdir()
    (tmp_path / "a" / "k" / "kept").write_bytes(b"x")
    got = list(walk([str(tmp_path)], Skipped()))
    assert _rel(tmp_path, got) == [
        ("a/b/at", False, None),
        ("a/b", True, "directory nested deeper than 2 levels: its 2 subdirectories were "
                      "not scanned"),
        ("a/k/kept", False, None)]


def test_special_files_and_links_counted_across_directories(tmp_path: Path) -> None:
    for d in ("x", "y"):
        (tmp_path / d).mkdir()
        (tmp_path / d / "f").write_bytes(b"x")
        (tmp_path / d / "link").symlink_to(tmp_path / d / "f")
        os.mkfifo(tmp_path / d / "fifo")
        os.mkfifo(tmp_path / d / "fifo2")
    skipped = Skipped()
    got = list(walk([str(tmp_path)], skipped))
    assert _rel(tmp_path, got) == [("x/f", False, None), ("y/f", False, None)]
    assert (skipped.links, skipped.special) == (2, 4)


def test_symlinked_argument_is_followed_inner_links_are_not(tmp_path: Path) -> None:
    (tmp_path / "real" / "sub").mkdir(parents=True)
    (tmp_path / "real" / "sub" / "f").write_bytes(b"x")
    (tmp_path / "real" / "sub" / "back").symlink_to(tmp_path / "real")
    (tmp_path / "arg").symlink_to(tmp_path / "real")
    skipped = Skipped()
    got = list(walk([str(tmp_path / "arg")], skipped))
    assert _rel(tmp_path, got) == [("arg/sub/f", False, None)]
    assert skipped.links == 1


def test_arguments_regular_special_missing(tmp_path: Path) -> None:
    f = tmp_path / "f"
    f.write_bytes(b"x")
    got = list(walk([str(tmp_path / "none"), str(f), "/dev/null"], Skipped()))
    assert [(i.path, i.explicit, i.error) for i in got] == [
        (str(tmp_path / "none"), True, "cannot read file: No such file or directory"),
        (str(f), True, None), ("/dev/null", True, "not a regular file")]


def test_unreadable_directory_is_an_error_on_it(tmp_path: Path,
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    """A directory that cannot be listed (EACCES; as root, made to fail by hand) is one
    explicit error; its siblings are still walked."""
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    (tmp_path / "b" / "f").write_bytes(b"x")
    real = os.scandir

    def scandir(path: str):  # type: ignore[no-untyped-def]
        if path.endswith("/a"):
            raise PermissionError(errno.EACCES, "Permission denied")
        return real(path)

    monkeypatch.setattr(walk_mod.os, "scandir", scandir)
    got = list(walk([str(tmp_path)], Skipped()))
    assert _rel(tmp_path, got) == [("a", True, "cannot read directory: Permission denied"),
                                   ("b/f", False, None)]


def test_entry_that_cannot_be_typed_is_an_error_on_it(tmp_path: Path,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    """An entry whose type lookup fails (lstat on a vanished or unreachable entry) is
    listed after the directory's files, as an error, not skipped."""
    (tmp_path / "a").write_bytes(b"x")
    (tmp_path / "z").write_bytes(b"x")
    (tmp_path / "m").write_bytes(b"x")
    real = os.scandir

    class _Entry:
        def __init__(self, entry: os.DirEntry[str]) -> None:
            self.entry, self.name = entry, entry.name

        def is_symlink(self) -> bool:
            if self.name == "m":
                raise OSError(errno.ENOENT, "gone")
            return self.entry.is_symlink()

        def is_dir(self, follow_symlinks: bool = True) -> bool:
            return self.entry.is_dir(follow_symlinks=follow_symlinks)

        def is_file(self, follow_symlinks: bool = True) -> bool:
            return self.entry.is_file(follow_symlinks=follow_symlinks)

    class _Scan:
        def __init__(self, path: str) -> None:
            self.it = real(path)

        def __enter__(self) -> _Scan:
            return self

        def __exit__(self, *exc: object) -> None:
            self.it.close()

        def __iter__(self):  # type: ignore[no-untyped-def]
            return (_Entry(e) for e in self.it)

    monkeypatch.setattr(walk_mod.os, "scandir", _Scan)
    got = list(walk([str(tmp_path)], Skipped()))
    assert _rel(tmp_path, got) == [("a", False, None), ("z", False, None),
                                   ("m", False, "cannot read file: lstat failed")]


_WALK = """import json, sys
from sfcheck.inputs import walk
from sfcheck.result import Skipped
print(json.dumps([[i.path, i.explicit, i.error] for i in walk(sys.argv[1:], Skipped())]))
"""


def test_bind_mount_loop_under_a_symlinked_argument(tmp_path: Path) -> None:
    """The argument is a symlink to a directory bind-mounted inside itself: the loop is
    found at its first repeat (the argument's own identity is its target's), and the walk
    goes on to the siblings after it. The mount lives in a private mount namespace."""
    unshare = shutil.which("unshare")
    if unshare is None or os.geteuid() != 0:
        pytest.skip("needs root and unshare(1) (util-linux) for a private bind mount")
    real = tmp_path / "real"
    (real / "a" / "b").mkdir(parents=True)
    (real / "x.so").write_bytes(b"x")
    (real / "z").mkdir()
    (real / "z" / "f.so").write_bytes(b"x")
    arg = tmp_path / "arg"
    arg.symlink_to(real)
    # the same walk here, before the mount (this also lets mutmut see that the test runs
    # _tree, which the child below runs with the same mutant)
    assert [i.path for i in walk([str(arg)], Skipped())] == [f"{arg}/x.so", f"{arg}/z/f.so"]
    script = f"mount --bind {real} {real}/a/b && exec {sys.executable} -c \"$0\" {arg}"
    proc = subprocess.run([unshare, "-m", "--propagation", "private", "sh", "-c", script,
                           _WALK], capture_output=True, text=True, timeout=60,
                          env=dict(os.environ))
    if "mount" in proc.stderr and proc.returncode != 0:
        pytest.skip(f"bind mounts not permitted here: {proc.stderr.strip()}")
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout) == [
        [f"{arg}/x.so", False, None],
        [f"{arg}/a/b", True, "directory loop (a bind mount of an ancestor): not entered again"],
        [f"{arg}/z/f.so", False, None]]


def test_list_read_in_bounded_chunks() -> None:
    """A list is read 1 MiB at a time, so one past the bound is refused having held at
    most a chunk more (never the whole stream at once)."""
    spy = Recorded(b"a\n" * (3 << 19))
    assert read_path_list("-", spy) == ["a"] * (3 << 19)  # type: ignore[arg-type]
    assert set(spy.sizes) == {1 << 20}


def _fifo_with_data(tmp_path: Path) -> tuple[Path, int, int]:
    """A FIFO holding "a\\nb\\n", its write end and a read end we hold (which keeps the
    data when the writer goes)."""
    fifo = tmp_path / "list"
    os.mkfifo(fifo)
    hold = os.open(fifo, os.O_RDONLY | os.O_NONBLOCK)
    w = os.open(fifo, os.O_WRONLY)
    os.write(w, b"a\nb\n")
    return fifo, hold, w


def test_fifo_list_without_proc_read_blocking(tmp_path: Path,
                                              monkeypatch: pytest.MonkeyPatch) -> None:
    """Where /proc/self/fd cannot be opened, the descriptor itself is made blocking."""
    fifo, hold, w = _fifo_with_data(tmp_path)
    os.close(w)
    real_open = os.open

    def no_proc(path: str, flags: int, *args: int) -> int:
        if str(path).startswith("/proc/"):
            raise FileNotFoundError(errno.ENOENT, "No such file or directory")
        return real_open(path, flags, *args)

    modes: list[bool] = []
    real_set = os.set_blocking

    def set_blocking(fd: int, blocking: bool) -> None:
        real_set(fd, blocking)
        modes.append(os.get_blocking(fd))

    monkeypatch.setattr(walk_mod.os, "open", no_proc)
    monkeypatch.setattr(walk_mod.os, "set_blocking", set_blocking)
    try:
        assert read_path_list(str(fifo)) == ["a", "b"]
    finally:
        os.close(hold)
    assert modes == [True]
