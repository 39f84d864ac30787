"""A scan under hostile or huge inputs: big members spill to disk, workers stop with the
scan (SIGINT, SIGTERM, SIGKILL), temporary files never outlive it, nothing blocks."""

from __future__ import annotations

import contextlib
import io
import json
import os
import resource
import signal
import subprocess
import sys
import tarfile
import time
from pathlib import Path
from typing import IO

import pytest
import zstandard

from sfcheck.cli import main
from sfcheck.inputs import Limits
from sfcheck.scan import ScanConfig, _head, scan

from archives import EXE_V2, LIB_V1, LIB_V3, OBJ_V3, ar_bytes, deb_bytes, tar_bytes
from bounded import MiB


class _Padded(io.RawIOBase):
    """`data` followed by zeros up to `size` bytes, produced on the fly."""

    def __init__(self, data: bytes, size: int) -> None:
        self.data, self.size, self.pos = data, size, 0

    def readable(self) -> bool:
        return True

    def readinto(self, buf) -> int:  # type: ignore[override]
        n = min(len(buf), self.size - self.pos)
        if n <= 0:
            return 0
        chunk = self.data[self.pos:self.pos + n]
        buf[:n] = chunk + bytes(n - len(chunk))
        self.pos += n
        return n


def big_member_tar(path: Path, size: int, src: Path = LIB_V3) -> Path:
    """A .tar.zst (a few KB) holding one ELF file padded with zeros to `size` bytes: how a
    1 GB debug file in a -dbgsym package looks to the scan."""
    with path.open("wb") as f, zstandard.ZstdCompressor(level=1).stream_writer(f) as z, \
            tarfile.open(fileobj=z, mode="w|") as tf:
        info = tarfile.TarInfo("./usr/lib/debug/big.so")
        info.size = size
        tf.addfile(info, io.BufferedReader(_Padded(src.read_bytes(), size), 1 << 20))
    return path


_MEASURE = """
import json, os, resource, sys
from sfcheck.scan import ScanConfig, scan
res = scan(sys.argv[2:], ScanConfig(jobs=int(sys.argv[1])))
print(json.dumps({"self": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024,
                  "workers": resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss * 1024,
                  "files": [[f.path, f.error, [x.rule for x in f.findings]]
                            for f in res.files],
                  "left": os.listdir(os.environ["TMPDIR"])}))
"""


@pytest.fixture(scope="module")
def big_tar(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return big_member_tar(tmp_path_factory.mktemp("big") / "dbgsym.tar.zst", 512 * MiB)


@pytest.mark.parametrize("jobs", [1, 2])
def test_512_mb_member_bounded_memory(big_tar: Path, tmp_path: Path, jobs: int) -> None:
    """Issue 18's row: a 512 MB member was read whole into memory per worker (2.1/2.6 GB).
    It now goes to a temporary file; the scan's own memory stays < 300 MB and the file is
    gone afterwards. Limits, not timing: RLIMIT_CPU 60 s, RLIMIT_AS 2 GiB."""

    def limit() -> None:
        resource.setrlimit(resource.RLIMIT_CPU, (60, 60))
        resource.setrlimit(resource.RLIMIT_AS, (2048 * MiB, 2048 * MiB))

    proc = subprocess.run([sys.executable, "-c", _MEASURE, str(jobs), str(big_tar)],
                          capture_output=True, text=True, preexec_fn=limit,
                          env=dict(os.environ, TMPDIR=str(tmp_path)))
    assert proc.returncode == 0, proc.stderr
    got = json.loads(proc.stdout)
    assert got["left"] == []  # the private directory is removed
    ((path, error, rules),) = got["files"]
    assert path.endswith(":./usr/lib/debug/big.so") and error is None
    reference = scan([str(LIB_V3)], ScanConfig(jobs=1)).files[0]
    assert rules == [f.rule for f in reference.findings]  # checked like the file itself
    checker = got["self"] if jobs == 1 else max(got["self"], got["workers"])
    if jobs > 1:  # the main process only streams the member to disk
        assert got["self"] < 300 * MiB, got
    assert checker < 300 * MiB, f"the checker used {checker >> 20} MB on the 512 MB member"


@pytest.mark.parametrize("jobs", [1, 2])
def test_spilled_members_checked_like_in_memory(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                jobs: int) -> None:
    """With a tiny spill threshold every member goes through a temporary file: the results
    are those of in-memory members, and the directory is gone afterwards."""
    monkeypatch.setenv("TMPDIR", str(tmp_path / "tmp"))
    (tmp_path / "tmp").mkdir()
    import tempfile
    monkeypatch.setattr(tempfile, "tempdir", None)  # re-read TMPDIR
    members = [(f"./usr/lib/m{i}.so", src.read_bytes())
               for i, src in enumerate([LIB_V3, LIB_V1, EXE_V2, OBJ_V3] * 5)]
    lib = ar_bytes([("a.o", OBJ_V3.read_bytes()), ("a.o", LIB_V3.read_bytes())])
    deb = tmp_path / "p.deb"
    deb.write_bytes(deb_bytes(tar_bytes([*members, ("./usr/lib/libx.a", lib)])))
    small = Limits(spill_bytes=4096)
    got = scan([str(deb)], ScanConfig(jobs=jobs, limits=small))
    want = scan([str(deb)], ScanConfig(jobs=1))
    assert [(f.path, f.error, f.findings) for f in got.files] == [
        (f.path, f.error, f.findings) for f in want.files]
    assert [f.member for f in got.files][-2:] == ["./usr/lib/libx.a:a.o",
                                                  "./usr/lib/libx.a:a.o#2"]
    assert os.listdir(tmp_path / "tmp") == []


def test_require_sframe_with_nothing_to_check(tmp_path: Path,
                                              capsys: pytest.CaptureFixture[str]) -> None:
    empty = tmp_path / "empty"
    empty.mkdir()
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "README").write_text("x")
    assert main(["check", str(empty)]) == 0
    assert main(["check", "--require-sframe", str(empty)]) == 1
    assert "nothing to check" in capsys.readouterr().out
    assert main(["check", "--require-sframe", str(tmp_path / "docs")]) == 1
    capsys.readouterr()
    # An ELF file anywhere in the inputs: judged on its own SFrame, as before.
    assert main(["check", "--require-sframe", "--fail-on", "none", str(empty),
                 str(LIB_V3)]) == 0
    out = capsys.readouterr().out
    assert "nothing to check" not in out


def test_head_refuses_a_fifo_without_blocking(tmp_path: Path) -> None:
    """Issue 19.8: a file swapped for a FIFO after the tree was listed is refused by the
    fstat of the opened descriptor; the non-blocking open never waits for a writer."""
    fifo = tmp_path / "x.so"
    os.mkfifo(fifo)
    assert _head(str(fifo)) == "a FIFO, not a regular file: refused"


def _children(pid: int) -> set[int]:
    out: set[int] = set()
    for task in Path(f"/proc/{pid}/task").iterdir():
        with open(task / "children") as f:
            out |= {int(x) for x in f.read().split()}
    return out


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().split(") ")[-1][0] != "Z"
    except FileNotFoundError:
        return False


@pytest.fixture(scope="module")
def slow_inputs(tmp_path_factory: pytest.TempPathFactory) -> list[str]:
    """A big member (spilled) first, then a tree long enough to interrupt mid-way."""
    root = tmp_path_factory.mktemp("slow")
    big = big_member_tar(root / "big.tar.zst", 80 * MiB)
    tree = root / "tree"
    tree.mkdir()
    for i in range(3000):
        os.link(LIB_V3 if i % 2 else LIB_V1, tree / f"f{i:04d}.so")
    return [str(big), str(tree)]


def _start(args: list[str], tmp: Path, err: IO[bytes]) -> subprocess.Popen[bytes]:
    # stderr to a file, not a pipe: an orphaned worker holding a pipe would hang the test
    # (the CI symptom of the issue) instead of failing it.
    env = dict(os.environ, TMPDIR=str(tmp))
    return subprocess.Popen([sys.executable, "-m", "sfcheck", *args], env=env,
                            stdout=subprocess.DEVNULL, stderr=err, start_new_session=True)


def _workers_started(proc: subprocess.Popen[bytes], n: int) -> set[int]:
    for _ in range(600):
        kids = _children(proc.pid)
        if len(kids) >= n:
            time.sleep(0.3)  # past the big member: its temporary file exists or existed
            return _children(proc.pid)
        assert proc.poll() is None, "the scan ended before its workers were seen"
        time.sleep(0.05)
    raise AssertionError("no worker processes appeared")


@pytest.mark.parametrize("how", ["SIGTERM", "SIGINT", "SIGKILL"])
def test_signals_leave_no_worker_and_no_temporary_file(slow_inputs: list[str], tmp_path: Path,
                                                       how: str) -> None:
    """Issue 19.7: SIGTERM to the main process (or Ctrl-C to the process group, or SIGKILL
    of the main process alone) ends every worker; the temporary directory is removed
    (not after SIGKILL: nothing runs then)."""
    spill_dir = tmp_path / "tmp"
    spill_dir.mkdir()
    err_file = (tmp_path / "stderr").open("w+b")
    proc = _start(["-j", "2", "-q", *slow_inputs], spill_dir, err_file)
    workers: set[int] = set()
    try:
        workers = _workers_started(proc, 2)
        sig = getattr(signal, how)
        if how == "SIGINT":
            os.killpg(proc.pid, sig)  # what a terminal's Ctrl-C does
        else:
            os.kill(proc.pid, sig)
        status = proc.wait(30)
        deadline = time.monotonic() + 10
        while any(_alive(w) for w in workers) and time.monotonic() < deadline:
            time.sleep(0.05)
        left = [w for w in workers if _alive(w)]
    finally:
        for pid in [proc.pid, *workers]:  # never leave a process behind, even on failure
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        proc.wait()
        err_file.seek(0)
        err = err_file.read().decode()
        err_file.close()
    assert not left, f"workers left behind after {how}"
    if how == "SIGTERM":
        assert status == 128 + signal.SIGTERM and "Traceback" not in err
    elif how == "SIGINT":
        assert status in (130, -signal.SIGINT)
        assert err.count("Traceback") <= 1  # the workers print nothing (one line: cli's)
    if how != "SIGKILL":
        assert os.listdir(spill_dir) == []


def test_spill_dir_cleans_up_on_errors(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import errno
    import tempfile

    from sfcheck.inputs import ArchiveError
    from sfcheck.inputs.spill import SpillDir

    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))

    class Broken(io.RawIOBase):
        def readable(self) -> bool:
            return True

        def readinto(self, buf) -> int:  # type: ignore[override]
            raise OSError(errno.EIO, "archive read failed")

    with SpillDir() as spill:
        path = spill.write([b"x" * 10], io.BytesIO(b"y" * 5))
        assert Path(path).read_bytes() == b"x" * 10 + b"y" * 5
        with pytest.raises(OSError, match="archive read failed"):  # the reader's error
            spill.write([b"x"], io.BufferedReader(Broken()))
        assert os.listdir(spill.path or "") == [os.path.basename(path)]  # half file gone
        spill.remove(path)

        class Full(io.FileIO):
            def write(self, b) -> int:  # type: ignore[override]
                raise OSError(errno.ENOSPC, "No space left on device")

        monkeypatch.setattr(os, "fdopen", lambda fd, *a, **k: Full(fd, "wb"))
        with pytest.raises(ArchiveError, match="set TMPDIR.*No space left on device"):
            spill.write([b"x"], io.BytesIO(b""))
        monkeypatch.undo()
        assert os.listdir(spill.path or "") == []
    assert os.listdir(tmp_path) == []  # the directory itself is gone
