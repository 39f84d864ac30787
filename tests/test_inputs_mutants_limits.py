"""The bounds every archive reader shares: BoundedStream's reads at the byte limit and one
past (what it asks of the decompressor, so a refused read is never allocated), whole reads
and empty ones, member-path length at 4096 and one past, the symlink named in a symlink
escape, the default limits, the decompressors (multi-frame zstd, an unknown method, the
64 KiB read-ahead) and the ustar magic. Written for the survivors of the inputs mutation
group (issue 29)."""

from __future__ import annotations

import io
import tarfile

import pytest
import zstandard

from sfcheck.inputs import ArchiveError, Limits
from sfcheck.inputs.compress import decompressed
from sfcheck.inputs.limits import MAX_MEMBER_PATH, BoundedStream, Budget, PathGuard
from sfcheck.inputs.sniff import classify, is_tar_head
from sfcheck.inputs.tar import tar_entries

from archives import tar_bytes
from helpers import Recorded

LIMIT_MESSAGE = ("archive expands to more than {} bytes (decompression bomb?); "
                 "raise --max-archive-bytes if it is genuine")




def bounded(data: bytes, max_bytes: int = 1 << 40, used: int = 0
            ) -> tuple[BoundedStream, Recorded, Budget]:
    budget = Budget(Limits(max_bytes=max_bytes))
    budget.take_bytes(used)
    inner = Recorded(data)
    return BoundedStream(inner, budget), inner, budget


# --- BoundedStream ----------------------------------------------------------------------

@pytest.mark.parametrize("whole", [-1, None])
def test_read_whole_in_megabyte_reads(whole: int | None) -> None:
    data = bytes(range(256)) * (10 * 1024 + 3)  # a little over 2.5 MiB
    stream, inner, budget = bounded(data)
    assert stream.read(whole) == data  # type: ignore[arg-type]
    assert inner.sizes == [1 << 20] * 4
    assert budget.bytes == len(data)


def test_read_nothing_reads_nothing() -> None:
    stream, inner, budget = bounded(b"abcdef")
    assert stream.read(0) == b""
    assert (inner.tell(), budget.bytes) == (0, 0)
    assert stream.read(4) == b"abcd"


def test_read_whole_at_the_limit_asks_one_past() -> None:
    """A whole read asks for the room left plus one byte, so one past the limit is refused
    without reading the rest."""
    stream, inner, budget = bounded(b"x" * 1000, max_bytes=100)
    with pytest.raises(ArchiveError) as exc:
        stream.read()
    assert str(exc.value) == LIMIT_MESSAGE.format(100)
    assert inner.sizes == [101]


def test_read_charges_against_what_is_used() -> None:
    stream, inner, budget = bounded(b"x" * 40, max_bytes=100, used=60)
    assert stream.read(1000) == b"x" * 40  # exactly at the limit: accepted
    assert inner.sizes == [41]
    assert stream.read(1000) == b""
    assert inner.sizes == [41, 1]
    assert budget.bytes == 100


def test_one_past_the_limit_refused() -> None:
    stream, inner, _ = bounded(b"x" * 41, max_bytes=100, used=60)
    with pytest.raises(ArchiveError) as exc:
        stream.read(1000)
    assert str(exc.value) == LIMIT_MESSAGE.format(100)
    assert inner.sizes == [41]


# --- PathGuard --------------------------------------------------------------------------

def test_member_path_length_bound() -> None:
    guard = PathGuard()
    name = "d/" + "a" * (MAX_MEMBER_PATH - 2)
    assert guard.check(name) == name  # 4096 bytes: accepted
    long = name + "b"
    with pytest.raises(ArchiveError) as exc:
        guard.check(long)
    assert str(exc.value) == f"member path is longer than 4096 bytes: d/{'a' * 78}..."


def test_symlink_escape_names_the_link() -> None:
    guard = PathGuard()
    guard.symlink("a/b")
    with pytest.raises(ArchiveError) as exc:
        guard.check("a/b/c/d/f")
    assert str(exc.value) == "member a/b/c/d/f lies under symlink member a/b (symlink escape)"


def test_default_limits() -> None:
    """The documented defaults: 8 GiB, a million members, 4 layers, 64 MiB."""
    limits = Limits()
    assert (limits.max_bytes, limits.max_members, limits.max_depth, limits.spill_bytes) == (
        8 << 30, 1_000_000, 4, 64 << 20)


# --- decompressors ----------------------------------------------------------------------

def test_zstd_frames_read_across() -> None:
    """zstd(1) and rpm may write several frames: members in the second are found."""
    data = tar_bytes([("a", b"A" * 3000), ("b", b"B" * 3000)])
    cut = 512 + 3072  # after the first member
    comp = zstandard.ZstdCompressor()
    raw = io.BytesIO(comp.compress(data[:cut]) + comp.compress(data[cut:]))
    got = [(e.name, e.stream.read() if e.stream else None)
           for e in tar_entries(raw, Budget(Limits()))]
    assert got == [("a", b"A" * 3000), ("b", b"B" * 3000)]


def test_unknown_method_refused() -> None:
    with pytest.raises(ArchiveError) as exc:
        decompressed(io.BytesIO(b""), "lz4", Budget(Limits()))
    assert str(exc.value) == "unsupported compression: lz4"


def test_read_ahead_is_64k() -> None:
    """A small read fills a 64 KiB buffer: the decompressor is asked for no more."""
    raw = Recorded(b"y" * (1 << 20))
    budget = Budget(Limits())
    reader = decompressed(raw, "none", budget)
    assert reader.read(1) == b"y"
    assert raw.sizes == [1 << 16]
    assert budget.bytes == 1 << 16


# --- sniffing ---------------------------------------------------------------------------

@pytest.mark.parametrize("fmt", [tarfile.USTAR_FORMAT, tarfile.GNU_FORMAT, tarfile.PAX_FORMAT])
def test_tar_recognised_by_magic_alone(fmt: int) -> None:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w", format=fmt) as tf:
        info = tarfile.TarInfo("a")
        tf.addfile(info, io.BytesIO(b""))
    head = buf.getvalue()[:512]
    assert is_tar_head(head)
    assert classify(head, "no-suffix") == "tar"
    assert not is_tar_head(head[:257] + b"ustax" + head[262:])
