"""The tar reader's sparse map readers (old GNU headers with extension blocks, GNU sparse
1.0 maps in pax archives): many regions read back byte for byte, the member after a sparse
one found where it is, and each refusal (malformed, cut short, bounded) at its bound and
one past it. Written for the survivors of the inputs mutation group (issue 29)."""

from __future__ import annotations

import io
import subprocess
import tarfile
from pathlib import Path

import pytest

from sfcheck.inputs import ArchiveError, Limits
from sfcheck.inputs.limits import Budget
from sfcheck.inputs.tar import MAX_HEADER_BODY, _StrictInfo, tar_entries

from archives import need

BLOCK = 512
REGIONS = 50  # 4 in an old GNU header, the other 46 in three extension blocks of 21
STRIDE = 16384


def _sparse_file(path: Path) -> bytes:
    """A file of REGIONS data regions (distinct bytes, not block-aligned starts) between
    holes, ending in a hole; returns its whole content."""
    size = REGIONS * STRIDE + 8192
    content = bytearray(size)
    with path.open("wb") as f:
        for k in range(REGIONS):
            at = k * STRIDE + (k * 97) % 4096
            data = bytes([k + 1]) * 1000
            f.seek(at)
            f.write(data)
            content[at:at + 1000] = data
        f.truncate(size)
    return bytes(content)


def _gnu_tar(tmp: Path, fmt: str) -> tuple[bytes, bytes]:
    """GNU tar --sparse of the sparse file then a small regular file; the file's content."""
    tool = need("tar")
    src = tmp / f"src-{fmt}"
    src.mkdir()
    content = _sparse_file(src / "big.bin")
    (src / "after.txt").write_bytes(b"after the sparse member\n")
    out = tmp / f"{fmt}.tar"
    subprocess.run([tool, f"--format={fmt}", "--sparse", "-cf", str(out), "-C", str(src),
                    "big.bin", "after.txt"], check=True, capture_output=True)
    return out.read_bytes(), content


def _read(data: bytes, limits: Limits | None = None) -> list[tuple[str, str, bytes | None]]:
    return [(e.name, e.type, e.stream.read() if e.stream else None)
            for e in tar_entries(io.BytesIO(data), Budget(limits or Limits()))]


def _refused(data: bytes) -> str:
    with pytest.raises(ArchiveError) as exc:
        _read(data)
    return str(exc.value)


@pytest.mark.parametrize("fmt", ["gnu", "posix"])
def test_many_sparse_regions_read_back_and_the_next_member_found(tmp_path: Path,
                                                                 fmt: str) -> None:
    data, content = _gnu_tar(tmp_path, fmt)
    assert len(data) < len(content)  # the holes are not stored
    got = _read(data)
    assert got == [("big.bin", "file", content),
                   ("after.txt", "file", b"after the sparse member\n")]


@pytest.mark.parametrize("fmt", ["gnu", "posix"])
def test_sparse_member_charges_its_expanded_size(tmp_path: Path, fmt: str) -> None:
    """The holes count against the budget: the archive fits at the sum of its members'
    expanded sizes plus what the tar stream itself holds, and not below the expanded size."""
    data, content = _gnu_tar(tmp_path, fmt)
    assert _read(data, Limits(max_bytes=len(data) + len(content)))[0][2] == content
    with pytest.raises(ArchiveError, match="expands to more than"):
        _read(data, Limits(max_bytes=len(content) - 1))


# --- old GNU sparse headers, built by hand ----------------------------------------------

def _checksummed(block: bytearray) -> bytes:
    block[148:156] = b" " * 8
    block[148:156] = b"%06o\0 " % sum(block)
    return bytes(block)


def _old_sparse_header(name: str, stored: int, realsize: int,
                       regions: list[tuple[int, int]], extended: bool) -> bytes:
    info = tarfile.TarInfo(name)
    info.size, info.type = stored, tarfile.GNUTYPE_SPARSE
    block = bytearray(info.tobuf(format=tarfile.GNU_FORMAT)[:BLOCK])
    for i, (start, length) in enumerate(regions[:4]):
        block[386 + 24 * i:386 + 24 * i + 24] = tarfile.itn(start, 12, tarfile.GNU_FORMAT) + \
            tarfile.itn(length, 12, tarfile.GNU_FORMAT)
    block[482] = int(extended)
    block[483:495] = tarfile.itn(realsize, 12, tarfile.GNU_FORMAT)
    return _checksummed(block)


def _extension(regions: list[tuple[int, int]], more: bool) -> bytes:
    block = bytearray(BLOCK)
    for i, (start, length) in enumerate(regions):
        block[24 * i:24 * i + 24] = tarfile.itn(start, 12, tarfile.GNU_FORMAT) + \
            tarfile.itn(length, 12, tarfile.GNU_FORMAT)
    block[504] = int(more)
    return bytes(block)


def _member(name: str, data: bytes) -> bytes:
    info = tarfile.TarInfo(name)
    info.size = len(data)
    return info.tobuf(format=tarfile.GNU_FORMAT) + data + bytes(-len(data) % BLOCK)


END = bytes(2 * BLOCK)
AFTER = _member("after", b"next member")


def _chain(blocks: int, regions_in_last: list[tuple[int, int]] | None = None) -> bytes:
    """A sparse member whose map runs through `blocks` extension blocks: realsize 64,
    one 4-byte region at 10 in the header, `regions_in_last` in the last block."""
    head = _old_sparse_header("s", 4, 64, [(10, 4)], extended=True)
    ext = b"".join(_extension([], True) for _ in range(blocks - 1))
    ext += _extension(regions_in_last or [], False)
    return head + ext + b"DATA" + bytes(BLOCK - 4) + AFTER + END


def test_old_sparse_map_at_the_bound_read_one_block_past_refused() -> None:
    at = MAX_HEADER_BODY // BLOCK
    got = _read(_chain(at))
    assert got == [("s", "file", bytes(10) + b"DATA" + bytes(50)), ("after", "file",
                                                                    b"next member")]
    msg = _refused(_chain(at + 1))
    assert msg == (f"tar sparse map of member 's' longer than {MAX_HEADER_BODY} bytes: "
                   "refused")


def test_old_sparse_regions_in_extension_blocks_are_read() -> None:
    """Regions from the header and from two extension blocks (the last one listed as the
    block's 21st), and the stored data split among them in order."""
    head = _old_sparse_header("s", 12, 200, [(10, 4)], extended=True)
    first = _extension([(50, 4)], True)
    last = _extension([(0, 0)] * 20 + [(150, 4)], False)
    data = head + first + last + b"AAAABBBBCCCC" + bytes(BLOCK - 12) + AFTER + END
    expect = bytearray(200)
    expect[10:14], expect[50:54], expect[150:154] = b"AAAA", b"BBBB", b"CCCC"
    assert _read(data) == [("s", "file", bytes(expect)), ("after", "file", b"next member")]


def test_old_sparse_zero_length_or_zero_start_slots_are_not_regions() -> None:
    """A slot with a start but no length, or a length at start 0, is an unused slot (as
    tarfile reads extension blocks): the stored data goes to the real regions only."""
    head = _old_sparse_header("s", 8, 100, [(10, 4)], extended=True)
    ext = _extension([(30, 0), (0, 3), (50, 4)], False)
    data = head + ext + b"WXYZBBBB" + bytes(BLOCK - 8) + AFTER + END
    assert _read(data)[0] == ("s", "file", bytes(10) + b"WXYZ" + bytes(36) + b"BBBB"
                              + bytes(46))


def test_old_sparse_map_cut_short_refused() -> None:
    head = _old_sparse_header("cut", 0, 10, [], extended=True)
    assert _refused(head + _extension([], True)[:300]) == \
        "tar sparse map of member 'cut' cut short"


def test_old_sparse_impossible_realsize_refused() -> None:
    head = _old_sparse_header("huge", 0, 0, [], extended=True)
    block = bytearray(head)
    block[483:495] = b"\x80" + (1 << 63).to_bytes(11, "big")  # base-256: 2**63
    data = _checksummed(block) + _extension([], False) + END
    assert _refused(data) == \
        f"tar header has an impossible size ({1 << 63}) for 'huge'"


# --- GNU sparse 1.0 maps (pax), built by hand -------------------------------------------

def _pax_sparse(mapping: bytes, stored: bytes, realsize: int, name: str = "m",
                end: bool = True) -> bytes:
    """A pax archive with one GNU sparse 1.0 member: `mapping` (padded to a block) then
    `stored`, then a regular member."""
    body = mapping + bytes(-len(mapping) % BLOCK) + stored
    info = tarfile.TarInfo("GNUSparseFile.0/" + name)
    info.size = len(body)
    info.pax_headers = {"GNU.sparse.major": "1", "GNU.sparse.minor": "0",
                        "GNU.sparse.name": name, "GNU.sparse.realsize": str(realsize)}
    out = io.BytesIO()
    with tarfile.open(fileobj=out, mode="w", format=tarfile.PAX_FORMAT) as tf:
        tf.addfile(info, io.BytesIO(body))
        after = tarfile.TarInfo("after")
        after.size = 11
        tf.addfile(after, io.BytesIO(b"next member"))
    data = out.getvalue()
    return data if end else data.rstrip(b"\0")


def test_sparse_10_map_over_blocks_read() -> None:
    """A map of 100 pairs (over a block of decimals) places each stored region."""
    pairs = [(1000 + 37 * k, 3) for k in range(100)]
    mapping = f"{len(pairs)}\n".encode() + b"".join(b"%d\n%d\n" % p for p in pairs)
    assert len(mapping) > BLOCK
    stored = b"".join(b"%03d" % k for k in range(100))
    expect = bytearray(5000)
    for k, (at, n) in enumerate(pairs):
        expect[at:at + n] = b"%03d" % k
    assert _read(_pax_sparse(mapping, stored, 5000)) == [
        ("m", "file", bytes(expect)), ("after", "file", b"next member")]


@pytest.mark.parametrize("mapping", [b"x\n0\n0\n", b"\n", b"1\n5\nfive\n", b"1\n-5\n5\n"],
                         ids=["count", "empty-count", "number", "negative"])
def test_sparse_10_malformed_map_refused(mapping: bytes) -> None:
    assert _refused(_pax_sparse(mapping, b"", 10)) == \
        "tar sparse map of member 'GNUSparseFile.0/m' is malformed"


def test_sparse_10_map_cut_short_refused() -> None:
    """The map claims more pairs than the archive holds: the end of the stream (no end
    blocks) stops it."""
    mapping = b"3\n1\n1\n"
    data = _pax_sparse(mapping, b"", 10, end=False)
    cut = data[:data.index(b"3\n1\n1\n") + BLOCK]  # nothing after the map's block
    assert _refused(cut) == "tar sparse map of member 'GNUSparseFile.0/m' cut short"


def _long_map(length: int) -> bytes:
    """A map of zero-length pairs, `length` bytes long: its last newline at length - 1.
    Each number is thousands of zeros (under int()'s 4300-digit limit): few lines to parse."""
    for pairs in range(length // 4002 - 2, length // 4002 + 2):
        head = b"%d\n" % pairs
        last = length - len(head) - 2001 * (2 * pairs - 1) - 1
        if 0 < last < 4300:
            numbers = [b"0" * 2000] * (2 * pairs - 1) + [b"0" * last]
            return head + b"".join(n + b"\n" for n in numbers)
    raise AssertionError(length)


def test_sparse_10_map_at_the_bound_read_one_block_past_refused() -> None:
    """The map is read block by block while it lacks a line: one ending in the block
    after MAX_HEADER_BODY bytes is read, one ending a block later is refused."""
    ok = _long_map(MAX_HEADER_BODY + 100)
    got = _read(_pax_sparse(ok, b"", 16))
    assert got == [("m", "file", bytes(16)), ("after", "file", b"next member")]
    over = _long_map(MAX_HEADER_BODY + BLOCK + 100)
    assert _refused(_pax_sparse(over, b"", 16)) == (
        f"tar sparse map of member 'GNUSparseFile.0/m' longer than {MAX_HEADER_BODY} "
        "bytes: refused")


def test_old_sparse_regions_past_1_and_8_gib_read_whole() -> None:
    """Region starts of 11 octal digits with the first one set (past 1 GiB) and in base-256
    (past 8 GiB) are read from their whole 12-byte fields (the map as read; reading the
    member through 8 GiB of holes would take minutes)."""
    far, farther = (1 << 30) + 5, (1 << 33) + 5
    head = _old_sparse_header("far", 8, farther + 100, [(10, 4)], extended=True)
    ext = _extension([(far, 2), (farther, 2)], False)
    data = head + ext + b"HEADFAR!" + bytes(BLOCK - 8) + AFTER + END
    with tarfile.open(fileobj=io.BytesIO(data), mode="r:", tarinfo=_StrictInfo) as tf:
        first, after = tf.getmembers()
        member = tf.extractfile(after)
        assert member is not None and member.read() == b"next member"
    # tarfile keeps the header's four slots as they are, unused ones as (0, 0)
    assert (first.name, first.size, first.sparse) == (
        "far", farther + 100, [(10, 4), (0, 0), (0, 0), (0, 0), (far, 2), (farther, 2)])
