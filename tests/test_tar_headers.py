"""Tar headers that lie (issue 27.2-3): what GNU tar complains about is refused, before any
body is read, and a refused archive fails the gate instead of hiding its later members."""

from __future__ import annotations

import io
import subprocess
import tarfile
from pathlib import Path

import pytest
import zstandard
from test_inputs import members, refused, write

from sfcheck.inputs import Limits
from sfcheck.inputs.limits import Budget
from sfcheck.inputs.tar import MAX_HEADER_BODY, tar_entries

from archives import BAD, LIB_V3, need
from bounded import MiB, run_sfcheck

BLOCK = 512


def header(name: str, size: int, kind: bytes = tarfile.REGTYPE,
           fmt: int = tarfile.GNU_FORMAT, pax: dict[str, str] | None = None) -> bytes:
    info = tarfile.TarInfo(name)
    info.size, info.type = size, kind
    if pax is not None:
        info.pax_headers = pax
    return info.tobuf(format=fmt)


def body(data: bytes) -> bytes:
    return data + bytes(-len(data) % BLOCK)


def member(name: str, data: bytes) -> bytes:
    return header(name, len(data)) + body(data)


def patched(block: bytes, start: int, value: bytes, checksum: bool = True) -> bytes:
    """A header block with bytes [start, start+len(value)) replaced, checksum recomputed
    (so the header is otherwise valid) unless `checksum` is False."""
    out = bytearray(block[:BLOCK])
    out[start:start + len(value)] = value
    if checksum:
        out[148:156] = b" " * 8
        out[148:156] = b"%06o\0 " % sum(out)
    return bytes(out) + block[BLOCK:]


END = bytes(2 * BLOCK)
GOOD = member("./good.so", LIB_V3.read_bytes())
HIDDEN = member("./hidden.so", BAD.read_bytes())


def test_bad_checksum_mid_stream_refused_not_an_end(tmp_path: Path) -> None:
    """A good member, a header with a bad checksum, then an ELF with a broken .sframe:
    GNU tar skips to the hidden file and extracts it; sfcheck refuses the archive (exit 2)
    and keeps the good member's result, instead of "files checked 1" and exit 0."""
    junk = patched(header("./junk", 0), 148, b"0000000\0", checksum=False)
    tar = write(tmp_path, "hide.tar", GOOD + junk + HIDDEN + END)
    assert "invalid tar header at offset" in refused(tar)
    assert "bad checksum" in refused(tar)
    gnu = subprocess.run([need("tar"), "-tf", str(tar)], capture_output=True, text=True)
    assert gnu.returncode != 0 and "./hidden.so" in gnu.stdout  # what the check would miss
    run = run_sfcheck(["check", "--format", "json", str(tar)], cpu_seconds=20)
    assert run.status == 2, run.stderr
    assert "bad checksum" in run.stdout and "./good.so" in run.stdout
    assert "Traceback" not in run.stderr


@pytest.mark.parametrize("name,block", [
    ("base-256 size -1", patched(header("./neg.so", 0), 124, b"\xff" * 12)),
    ("base-256 size -2**80", patched(header("./neg.so", 0), 124, b"\xff" + b"\x00" * 11)),
])
def test_negative_base256_size_refused(tmp_path: Path, name: str, block: bytes) -> None:
    tar = write(tmp_path, "neg.tar", GOOD + block + HIDDEN + END)
    assert "negative size" in refused(tar), name


def test_impossible_size_refused(tmp_path: Path) -> None:
    huge = patched(header("./huge.so", 0), 124, b"\x80" + b"\xff" * 11)  # 2**88 - 1
    assert "impossible size" in refused(write(tmp_path, "huge.tar", GOOD + huge + END))


@pytest.mark.parametrize("value,words", [("-1", "is not a size"), ("1_0", "is not a size"),
                                         ("x", "is not a size")])
def test_pax_size_that_is_not_a_size_refused(tmp_path: Path, value: str, words: str) -> None:
    """tarfile takes `size=-1` as -1 (the stream then ends quietly) and `size=x` as 0."""
    lie = header("./lie.so", 0, fmt=tarfile.PAX_FORMAT, pax={"size": value})
    tar = write(tmp_path, "pax.tar", GOOD + lie + HIDDEN + END)
    assert words in refused(tar)


def test_truncated_header_mid_stream_refused(tmp_path: Path) -> None:
    tar = write(tmp_path, "cut.tar", GOOD + HIDDEN[:300])
    assert "truncated header" in refused(tar)
    # A clean end without the end-of-archive blocks is what GNU tar accepts too.
    got, _ = members(write(tmp_path, "noend.tar", GOOD))
    assert list(got) == ["./good.so"]


def _huge_header(kind: bytes, size: int) -> bytes:
    """A header claiming a body of `size` bytes of '1' (a pax record never ends; a long
    name never does), then nothing: compressed, a few KB per GiB."""
    head = header("././@LongLink" if kind != tarfile.XHDTYPE else "././@PaxHeader", size,
                  kind, fmt=tarfile.USTAR_FORMAT if kind == tarfile.XHDTYPE
                  else tarfile.GNU_FORMAT)
    cctx = zstandard.ZstdCompressor(level=19)
    chunk = b"1" * (1 << 20)
    with cctx.stream_writer(out := _Sink(), closefd=False) as w:
        w.write(GOOD + head)
        for _ in range(size >> 20):
            w.write(chunk)
    return out.data()


class _Sink:
    def __init__(self) -> None:
        self.parts: list[bytes] = []

    def write(self, b: bytes) -> int:
        self.parts.append(bytes(b))
        return len(b)

    def data(self) -> bytes:
        return b"".join(self.parts)


@pytest.mark.parametrize("kind,words", [(tarfile.XHDTYPE, "pax header"),
                                        (tarfile.GNUTYPE_LONGNAME, "GNU long name")])
def test_huge_header_bodies_bounded_before_reading(tmp_path: Path, kind: bytes,
                                                   words: str) -> None:
    """Issue 27.3: a small .tar.zst holding a 1 GiB pax header or GNU long name cost 3.2 GB
    (the pax one then accepted): refused at the header, under 300 MB."""
    data = _huge_header(kind, 1 << 30)
    assert len(data) < 256 << 10
    tar = write(tmp_path, "huge.tar.zst", data)
    run = run_sfcheck(["check", str(tar)], cpu_seconds=30, address_space=1024 * MiB)
    assert run.status == 2, run.stderr
    assert words in run.stdout and f"more than {MAX_HEADER_BODY}" in run.stdout
    assert run.peak_rss < 300 * MiB, run.peak_rss
    assert "Traceback" not in run.stderr


def test_header_bodies_up_to_the_bound_accepted(tmp_path: Path) -> None:
    """A long name and a pax header of legitimate size still read (the path guard then
    judges the name); a body one byte over the bound is refused."""
    name = "./" + "d/" * 1000 + "x.so"
    tar = write(tmp_path, "long.tar", tarfile.TarInfo(name).tobuf(tarfile.GNU_FORMAT)
                + END)
    got, skipped = members(tar)
    assert got == {} and skipped.non_elf == 1
    over = header("././@PaxHeader", MAX_HEADER_BODY + 1, tarfile.XHDTYPE,
                  fmt=tarfile.USTAR_FORMAT)
    assert "pax header" in refused(write(tmp_path, "over.tar", GOOD + over + END))
    at = header("././@LongLink", MAX_HEADER_BODY, tarfile.GNUTYPE_LONGNAME)
    msg = refused(write(tmp_path, "at.tar", GOOD + at + body(b"a" * MAX_HEADER_BODY)
                        + member("x", b"") + END))
    assert "longer than 4096 bytes" in msg  # read, then judged by the path guard


def test_old_gnu_sparse_extension_blocks_bounded(tmp_path: Path) -> None:
    """Old GNU sparse headers chain extension blocks while byte 482 (then 504) is set: an
    endless chain is refused after MAX_HEADER_BODY bytes, not collected into memory."""
    sparse = patched(header("./s.so", 0, tarfile.GNUTYPE_SPARSE), 482, b"\x01")
    ext = bytearray(BLOCK)
    ext[504] = 1
    limit = Limits(max_bytes=64 << 20)
    data = GOOD + sparse + bytes(ext) * ((MAX_HEADER_BODY >> 9) + 8) + END
    assert "sparse map" in refused(write(tmp_path, "sparse.tar", data), limit)


def test_real_sparse_archives_still_read(tmp_path: Path) -> None:
    """GNU tar's own sparse formats (old GNU, pax 1.0) go through the rewritten map
    readers and read back byte for byte."""
    from archives import sparse_tar

    for fmt in ("gnu", "posix"):
        tar = sparse_tar(tmp_path, 3 << 20, fmt)
        entry = next(tar_entries(io.BytesIO(tar), Budget(Limits())))
        assert entry.stream is not None
        data = entry.stream.read()
        assert len(data) == 3 << 20 and data[:4] == b"data" and not data[4:].strip(b"\0"), fmt
