"""sfcheck.filesnap: a sealed private copy of a file another process may change. The
hostile step (the file shrinking or being written while it is copied) is made to happen
at a chosen point by wrapping the copy's system call."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from sfcheck import filesnap


def _fd(path: Path) -> int:
    return os.open(path, os.O_RDONLY)


def test_copy_is_private_and_sealed(tmp_path: Path) -> None:
    path = tmp_path / "f"
    path.write_bytes(b"B" * 100_000)
    fd = _fd(path)
    try:
        snap = filesnap.snapshot_fd(fd)
    finally:
        os.close(fd)
    os.truncate(path, 0)  # a map of the file itself would now SIGBUS on any page
    assert len(snap) == 100_000 and snap[99_999:] == b"B" and snap[:1] == b"B"


def test_shrinking_while_copied_is_refused(tmp_path: Path,
                                           monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "f"
    path.write_bytes(b"A" * 100_000)
    real = os.sendfile

    def shrinking(out: int, src: int, offset: int, count: int) -> int:
        os.truncate(path, 10_000)
        return real(out, src, offset, count)

    monkeypatch.setattr(filesnap.os, "sendfile", shrinking)
    fd = _fd(path)
    try:
        with pytest.raises(filesnap.SnapshotError, match=r"^changed size while being read "
                           r"\(100000 bytes when opened, 10000 after; 10000 read\)$"):
            filesnap.snapshot_fd(fd)
    finally:
        os.close(fd)


def test_written_while_copied_is_refused(tmp_path: Path,
                                         monkeypatch: pytest.MonkeyPatch) -> None:
    """Same size, other bytes: the modification time tells."""
    path = tmp_path / "f"
    path.write_bytes(b"A" * 4096)
    os.utime(path, ns=(0, 0))
    real = os.sendfile

    def rewriting(out: int, src: int, offset: int, count: int) -> int:
        path.write_bytes(b"Z" * 4096)
        return real(out, src, offset, count)

    monkeypatch.setattr(filesnap.os, "sendfile", rewriting)
    fd = _fd(path)
    try:
        with pytest.raises(filesnap.SnapshotError, match="was written to while being read"):
            filesnap.snapshot_fd(fd)
    finally:
        os.close(fd)


def test_empty_large_and_non_regular(tmp_path: Path) -> None:
    empty = tmp_path / "e"
    empty.write_bytes(b"")
    fd = _fd(empty)
    try:
        assert filesnap.snapshot_fd(fd) == b""
    finally:
        os.close(fd)
    big = tmp_path / "big"
    with open(big, "wb") as f:
        f.truncate(3 << 20)
    fd = _fd(big)
    try:
        with pytest.raises(filesnap.SnapshotError, match="larger than the 2 MiB"):
            filesnap.snapshot_fd(fd, limit=2 << 20)
    finally:
        os.close(fd)
    fd = os.open(tmp_path, os.O_RDONLY)
    try:
        with pytest.raises(filesnap.SnapshotError, match="not a regular file"):
            filesnap.snapshot_fd(fd)
    finally:
        os.close(fd)
