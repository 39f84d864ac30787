"""TMPDIR (issue 27.5): an unusable TMPDIR is an error (one line, exit 2), not a silent
fallback to /tmp; spill directories of sfcheck processes killed with SIGKILL are reclaimed
by the next scan that spills, and nothing else is touched."""

from __future__ import annotations

import io
import os
import shutil
import signal
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from sfcheck.inputs.limits import ArchiveError
from sfcheck.inputs.spill import SpillDir, reclaim_stale

from archives import LIB_V3


def _sfcheck_with_tmpdir(tmpdir: str, *args: str) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, TMPDIR=tmpdir)
    return subprocess.run([sys.executable, "-m", "sfcheck", "check", *args],
                          capture_output=True, text=True, env=env, timeout=120)


@pytest.mark.parametrize("kind,words", [("missing", "No such file or directory"),
                                        ("file", "not a directory")])
def test_unusable_tmpdir_is_one_line_exit_2(tmp_path: Path, kind: str, words: str) -> None:
    bad = tmp_path / "tmp"
    if kind == "file":
        bad.write_text("")
    proc = _sfcheck_with_tmpdir(str(bad), str(LIB_V3))
    assert proc.returncode == 2, proc.stderr
    line = proc.stderr.strip()
    assert "\n" not in line and f"TMPDIR={bad}: {words}" in line, line
    assert "Traceback" not in proc.stderr


def test_read_only_tmpdir_refused() -> None:
    """A directory the user cannot write. Root is not stopped by permission bits, so as
    root the check runs in a forked child that became `nobody` (the interpreter itself
    may not be readable by nobody, so nothing is executed)."""
    from sfcheck.cli import main

    base = Path(tempfile.mkdtemp(prefix="tmpdir-test-ro."))  # traversable by nobody
    try:
        base.chmod(0o755)
        ro = base / "ro"
        ro.mkdir(mode=0o555)
        ro.chmod(0o555)
        r, w = os.pipe()
        pid = os.fork()
        if pid == 0:  # the child: never returns into pytest
            try:
                os.close(r)
                sys.stderr = os.fdopen(w, "w")
                if os.geteuid() == 0:
                    os.setgid(65534)
                    os.setuid(65534)
                os.environ["TMPDIR"] = str(ro)
                status = main(["check", str(LIB_V3)])
                sys.stderr.flush()
            except BaseException:
                status = 99
            os._exit(status)
        os.close(w)
        with os.fdopen(r) as err:
            stderr = err.read()
        _, wait = os.waitpid(pid, 0)
        assert os.waitstatus_to_exitcode(wait) == 2, stderr
        assert f"TMPDIR={ro}: not writable" in stderr and len(stderr.splitlines()) == 1
    finally:
        shutil.rmtree(base)


def test_spill_never_falls_back(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """In-process (the API, no CLI check first): a spill under a missing TMPDIR is an
    ArchiveError naming it; nothing is written to /tmp."""
    monkeypatch.setenv("TMPDIR", str(tmp_path / "gone"))
    with SpillDir() as spill, pytest.raises(ArchiveError, match="TMPDIR=.*gone"):
        spill.write([b"x"], io.BytesIO(b""))
    assert spill.path is None


def _killed_spiller(tmp: Path) -> Path:
    """A process that spills a member and dies by SIGKILL: its directory stays."""
    code = ("import io, os, signal\nfrom sfcheck.inputs.spill import SpillDir\n"
            "s = SpillDir(); p = s.write([b'x' * 100], io.BytesIO(b''))\n"
            "print(s.path, flush=True); os.kill(os.getpid(), signal.SIGKILL)\n")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          env=dict(os.environ, TMPDIR=str(tmp)))
    assert proc.returncode == -signal.SIGKILL
    left = Path(proc.stdout.strip())
    assert left.parent == tmp and left.is_dir() and list(left.iterdir())
    return left


def test_stale_directories_of_killed_scans_reclaimed(tmp_path: Path,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    dead = _killed_spiller(tmp)
    dead_pid = dead.name.split("-")[1]
    # What must stay: a live process's directory, a symlink named like ours (its target
    # is not ours to empty), a plain file, another user's directory, other names.
    live = tmp / f"sfcheck-{os.getppid()}-abcdefgh"
    live.mkdir()
    target = tmp_path / "precious"
    target.mkdir()
    (target / "keep").write_text("x")
    (tmp / f"sfcheck-{dead_pid}-symlink1").symlink_to(target)
    (tmp / f"sfcheck-{dead_pid}-plainfil").write_text("x")
    (tmp / f"sfcheck-{dead_pid}").mkdir()  # not a name mkdtemp gives us
    (tmp / "other-dir").mkdir()
    others = tmp / f"sfcheck-{dead_pid}-otheruser"
    others.mkdir()
    if os.geteuid() == 0:
        os.chown(others, 65534, 65534)
    keep = {p.name for p in tmp.iterdir()} - {dead.name}
    if os.geteuid() != 0:
        keep.discard(others.name)  # ours after all: a non-root user cannot give it away
    monkeypatch.setenv("TMPDIR", str(tmp))
    with SpillDir() as spill:
        spill.write([b"y"], io.BytesIO(b""))
        mine = Path(spill.path or "")
        assert mine.name.startswith(f"sfcheck-{os.getpid()}-")
        assert {p.name for p in tmp.iterdir()} == keep | {mine.name}
    assert (target / "keep").exists()
    assert not dead.exists()
    assert reclaim_stale(str(tmp)) == []  # nothing else is reclaimable


def test_cli_scan_that_spills_reclaims(tmp_path: Path) -> None:
    """End to end: after a killed run, the next `sfcheck` that spills (a member above
    64 MiB) removes the stale directory and leaves its own none."""
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    dead = _killed_spiller(tmp)
    import tarfile

    tar = tmp_path / "big.tar"
    with tarfile.open(tar, "w") as tf:
        data = LIB_V3.read_bytes()
        info = tarfile.TarInfo("./big.so")
        info.size = (64 << 20) + 1
        tf.addfile(info, io.BytesIO(data + bytes(info.size - len(data))))
    env_run = _sfcheck_with_tmpdir(str(tmp), str(tar))
    assert env_run.returncode in (0, 1), env_run.stderr
    assert not dead.exists() and list(tmp.iterdir()) == []


def test_reclaim_keeps_a_directory_whose_pid_no_process_can_have(tmp_path: Path) -> None:
    """`sfcheck-<20 digits>-x` owned by us: os.kill raised OverflowError (an internal error
    at the next spill); it is not a directory sfcheck made, so it stays."""
    from sfcheck.inputs.spill import reclaim_stale

    odd = tmp_path / ("sfcheck-" + "9" * 20 + "-abc")
    odd.mkdir()
    assert reclaim_stale(str(tmp_path)) == [] and odd.is_dir()
