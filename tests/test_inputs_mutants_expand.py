"""What expand.py hands a scan: every member record whole (label, package, member path,
bytes or spill file, error), the skip counts, the spill threshold at its byte and one past,
the bytes held in memory before a member spills, nested layers spilled and removed, and the
one-line refusals of a corrupt stream. Written for the survivors of the inputs mutation group
(issue 29)."""

from __future__ import annotations

import errno
import gzip
import io
import os
import tarfile
from pathlib import Path
from typing import BinaryIO

import pytest

from sfcheck.inputs import ArchiveError, Limits, archive_members
from sfcheck.inputs.expand import _CHUNK, Member, _expand, _read, stream_members
from sfcheck.inputs.limits import Budget, Entry
from sfcheck.inputs.spill import SpillDir
from sfcheck.result import Skipped

from archives import ar_bytes, link, tar_bytes


def elf(n: int, fill: int = 0) -> bytes:
    """n bytes that classify as ELF (expand reads no further than the magic)."""
    return (b"\x7fELF" + bytes((fill + i) % 251 for i in range(n)))[:n]


def fifo(name: str) -> tarfile.TarInfo:
    info = tarfile.TarInfo(name)
    info.type = tarfile.FIFOTYPE
    return info


def directory(name: str) -> tarfile.TarInfo:
    info = tarfile.TarInfo(name)
    info.type = tarfile.DIRTYPE
    return info


class Recorder:
    """A spill directory that keeps what it was given, to check what was held in memory."""

    def __init__(self, tmp: Path) -> None:
        self.tmp = tmp
        self.firsts: list[int] = []
        self.removed: list[str] = []

    def write(self, first: list[bytes], rest: BinaryIO) -> str:
        self.firsts.append(sum(len(c) for c in first))
        path = self.tmp / f"m{len(self.firsts)}"
        path.write_bytes(b"".join(first) + rest.read())
        return str(path)

    def remove(self, path: str) -> None:
        self.removed.append(path)
        os.unlink(path)


# --- members of one and nested layers ---------------------------------------------------

def test_member_records_and_skip_counts(tmp_path: Path) -> None:
    lib = ar_bytes([("x.o", elf(100, 1)), ("x.o", elf(90, 2)), ("r.txt", b"text")])
    inner = tar_bytes([("in.so", elf(80, 3)), link("l3", "in.so")])
    outer = tar_bytes([link("l1", "a.so"), link("l2", "a.so"),
                       link("h1", "a.so", tarfile.LNKTYPE), directory("d"), fifo("d/p"),
                       ("a.so", elf(700, 4)), ("lib.a", lib), ("in.tar", inner),
                       ("notes", b"plain")])
    path = tmp_path / "pkg.tar"
    path.write_bytes(outer)
    skipped = Skipped()
    got = list(archive_members(str(path), "tar", Limits(), skipped))
    p = str(path)
    assert got == [
        Member(f"{p}:a.so", p, "a.so", elf(700, 4)),
        Member(f"{p}:lib.a:x.o", p, "lib.a:x.o", elf(100, 1)),
        Member(f"{p}:lib.a:x.o#2", p, "lib.a:x.o#2", elf(90, 2)),
        Member(f"{p}:in.tar:in.so", p, "in.tar:in.so", elf(80, 3))]
    assert (skipped.links, skipped.special, skipped.non_elf) == (4, 1, 2)


def test_ar_duplicates_named_in_a_nested_ar_only() -> None:
    """`#2` tells apart ar members of one name; a tar layer never renames."""
    lib = ar_bytes([("x.o", elf(64, 1)), ("x.o", elf(64, 2))])
    outer = tar_bytes([("lib.a", lib)])
    got = [(m.label, m.member, m.data) for m in
           stream_members(io.BytesIO(outer), "p.tar", "tar", Limits(), Skipped())]
    assert got == [("p.tar:lib.a:x.o", "lib.a:x.o", elf(64, 1)),
                   ("p.tar:lib.a:x.o#2", "lib.a:x.o#2", elf(64, 2))]


def test_too_deep_member_record() -> None:
    inner = tar_bytes([("in.so", elf(64))])
    got = list(stream_members(io.BytesIO(tar_bytes([("in.tar", inner)])), "p.tar", "tar",
                              Limits(max_depth=1), Skipped()))
    assert got == [Member("p.tar:in.tar", "p.tar", "in.tar", None, error=(
        "tar archive nested deeper than 1 archive layers: not opened, its members are not "
        "checked"))]


def test_special_entry_with_a_stream_is_skipped() -> None:
    """An entry of type 'other' is never read, whatever stream a reader gives it."""
    skipped = Skipped()
    entries = iter([Entry("dev", "other", io.BytesIO(elf(64))),
                    Entry("a.so", "file", io.BytesIO(elf(64)))])
    got = list(_expand(entries, "p", "", Budget(Limits()), skipped, 1, None, "tar"))
    assert [m.member for m in got] == ["a.so"]
    assert skipped.special == 1


def test_head_read_is_bounded(tmp_path: Path) -> None:
    """The kind of a member is told from its first 512 bytes; a spilled member's body is
    then read in chunks, never whole."""
    sizes: list[int] = []

    class Stream(io.BytesIO):
        def read(self, size: int | None = -1) -> bytes:
            sizes.append(-1 if size is None else size)
            return super().read(size)

    data = elf(3 * _CHUNK)
    rec = Recorder(tmp_path)
    entries = iter([Entry("big.so", "file", Stream(data))])
    got = list(_expand(entries, "p", "", Budget(Limits(spill_bytes=1000)), Skipped(), 1,
                       rec, "tar"))  # type: ignore[arg-type]
    assert [(m.data, Path(m.spill or "").read_bytes()) for m in got] == [(None, data)]
    assert sizes[:2] == [512, 1000 + 1 - 512]
    assert rec.firsts == [1001]


# --- the spill threshold ----------------------------------------------------------------

@pytest.mark.parametrize("size", [600, 1000, 1001, 1000 + _CHUNK + 7])
def test_read_spills_one_past_the_limit(tmp_path: Path, size: int) -> None:
    data = elf(size)
    rec = Recorder(tmp_path)
    stream = io.BytesIO(data)
    head = stream.read(512)
    got, path = _read(head, stream, 1000, rec)  # type: ignore[arg-type]
    if size <= 1000:
        assert (got, path, rec.firsts) == (data, None, [])
    else:
        assert got is None
        assert Path(path or "").read_bytes() == data
        assert rec.firsts == [1001]  # limit + 1 bytes held, the rest streamed


def test_read_large_limit_in_chunks(tmp_path: Path) -> None:
    """A limit above one chunk: read a chunk at a time up to limit + 1 bytes."""
    limit = 2 * _CHUNK + 100
    data = elf(limit + 5000)
    sizes: list[int] = []

    class Stream(io.BytesIO):
        def read(self, size: int | None = -1) -> bytes:
            sizes.append(-1 if size is None else size)
            return super().read(size)

    rec = Recorder(tmp_path)
    stream = Stream(data)
    head = stream.read(512)
    got, path = _read(head, stream, limit, rec)  # type: ignore[arg-type]
    assert got is None and Path(path or "").read_bytes() == data
    assert sizes[1:3] == [_CHUNK, limit + 1 - 512 - _CHUNK]
    assert rec.firsts == [limit + 1]


def test_read_without_spill_holds_all() -> None:
    data = elf(5000)
    stream = io.BytesIO(data)
    head = stream.read(512)
    assert _read(head, stream, 1000, None) == (data, None)


def test_members_spilled_through_archive_members(tmp_path: Path) -> None:
    """Above spill_bytes, ELF members (outer and nested) come as files; a nested archive
    above it is spilled too, read from its file and removed once its members are listed."""
    small, big, nested_big = elf(300, 1), elf(3000, 2), elf(2500, 3)
    inner = tar_bytes([("n.so", nested_big), ("m.so", elf(200, 5))])
    assert len(inner) > 2048
    path = tmp_path / "pkg.tar"
    path.write_bytes(tar_bytes([("s.so", small), ("b.so", big), ("in.tar", inner)]))
    p = str(path)
    with SpillDir() as spill:
        got = []
        files_seen = []
        for m in archive_members(p, "tar", Limits(spill_bytes=2048), Skipped(), spill):
            files_seen.append(os.listdir(spill.path) if spill.path else [])
            got.append((m.label, m.package, m.member, m.data,
                        None if m.spill is None else Path(m.spill).read_bytes()))
            if m.spill is not None:
                spill.remove(m.spill)
        assert got == [(f"{p}:s.so", p, "s.so", small, None),
                       (f"{p}:b.so", p, "b.so", None, big),
                       (f"{p}:in.tar:n.so", p, "in.tar:n.so", None, nested_big),
                       (f"{p}:in.tar:m.so", p, "in.tar:m.so", elf(200, 5), None)]
        # while the nested members are listed, the spilled in.tar is there beside them
        assert [len(f) for f in files_seen] == [0, 1, 2, 1]
        assert spill.path is not None and os.listdir(spill.path) == []


def test_spilled_nested_archive_removed_by_its_spill_dir(tmp_path: Path) -> None:
    inner = tar_bytes([("n.so", elf(100, 3))])
    rec = Recorder(tmp_path)
    got = list(stream_members(io.BytesIO(tar_bytes([("in.tar", inner)])), "p.tar", "tar",
                              Limits(spill_bytes=600), Skipped(), rec))  # type: ignore[arg-type]
    assert [(m.label, m.data) for m in got] == [("p.tar:in.tar:n.so", elf(100, 3))]
    assert rec.removed == [str(tmp_path / "m1")]
    assert not (tmp_path / "m1").exists()


# --- refusals ---------------------------------------------------------------------------

def test_unopenable_archive_refused_in_one_line(tmp_path: Path) -> None:
    with pytest.raises(ArchiveError) as exc:
        list(archive_members(str(tmp_path / "gone.tar"), "tar", Limits(), Skipped()))
    assert str(exc.value) == "cannot read file: No such file or directory"


def test_truncated_compressed_stream_refused() -> None:
    data = gzip.compress(tar_bytes([("a.so", elf(3000))]))[:200]
    with pytest.raises(ArchiveError) as exc:
        list(stream_members(io.BytesIO(data), "p.tar", "tar", Limits(), Skipped()))
    assert str(exc.value) == ("malformed or truncated tar: EOFError: Compressed file ended "
                              "before the end-of-stream marker was reached")


def test_truncated_tar_refused() -> None:
    data = tar_bytes([("a.so", elf(3000))])[:600]
    with pytest.raises(ArchiveError) as exc:
        list(stream_members(io.BytesIO(data), "p.tar", "tar", Limits(), Skipped()))
    assert str(exc.value) == "malformed or truncated tar data: unexpected end of data"


def test_read_error_refused_with_its_strerror() -> None:
    """An OSError with an errno is told by its strerror, not its `[Errno 5]` form."""

    class Failing(io.BytesIO):
        def read(self, size: int | None = -1) -> bytes:
            if self.tell() >= 1 << 16:
                raise OSError(errno.EIO, "Input/output error")
            return super().read(size)

    data = tar_bytes([("a.so", elf(1 << 18))])
    with pytest.raises(ArchiveError) as exc:
        list(stream_members(Failing(data), "p.tar", "tar", Limits(), Skipped()))
    assert str(exc.value) == "malformed or truncated tar: OSError: Input/output error"
