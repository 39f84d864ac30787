"""Tar and RPM header edges: the largest size a tar header may give and one past (from the
header's own field and from a pax record), the refusals naming the member and the offset of
a bad header, an old-GNU sparse length past 1 GiB, a sparse member without holes charged
exactly its bytes, and the few bytes read to sniff a stream or an RPM header's intro.
Written for the survivors of the inputs mutation group (issue 29)."""

from __future__ import annotations

import gzip
import io
import tarfile

import pytest
from test_inputs_mutants_rpm import CPIO, _tags, header, package
from test_inputs_mutants_tar import (
    AFTER,
    BLOCK,
    END,
    _extension,
    _member,
    _old_sparse_header,
    _read,
    _refused,
)

from sfcheck.inputs import ArchiveError, Limits
from sfcheck.inputs.limits import Budget
from sfcheck.inputs.rpm import rpm_entries
from sfcheck.inputs.tar import MAX_SIZE, _StrictInfo, tar_entries

from helpers import Recorded


def _pax(size: str, name: str = "a") -> bytes:
    info = tarfile.TarInfo(name)
    info.size = 4
    info.pax_headers = {"size": size}
    return info.tobuf(format=tarfile.PAX_FORMAT) + b"DATA" + bytes(BLOCK - 4) + END


def _gnu(size: int, name: str = "big") -> bytes:
    info = tarfile.TarInfo(name)
    info.size = size  # base-256 past 11 octal digits
    return info.tobuf(format=tarfile.GNU_FORMAT) + END


def test_largest_header_size_accepted_one_past_refused() -> None:
    """2**63 - 1 is what GNU tar can represent: a member claiming it is read (and found cut
    short); one more is refused as impossible, naming the member."""
    assert MAX_SIZE == (1 << 63) - 1
    with pytest.raises(tarfile.ReadError, match="unexpected end of data"):
        _read(_gnu(MAX_SIZE))
    assert _refused(_gnu(MAX_SIZE + 1)) == (
        "tar header has an impossible size (9223372036854775808) for 'big'")


def test_pax_size_bounds_name_the_member() -> None:
    with pytest.raises(tarfile.ReadError, match="unexpected end of data"):
        _read(_pax(str(MAX_SIZE)))
    assert _refused(_pax(str(MAX_SIZE + 1))) == (
        "tar header has an impossible size (9223372036854775808) for 'a'")
    assert _refused(_pax("1" * 30 + "x" * 30)) == (
        f"tar member 'a': pax size='{'1' * 30 + 'x' * 10}' is not a size")


def test_bad_header_named_by_its_offset() -> None:
    data = bytearray(_member("a", b"x" * 600) + _member("b", b"y") + END)
    data[3 * BLOCK + 148] ^= 1  # b's checksum
    assert _refused(bytes(data)) == "invalid tar header at offset 1536: bad checksum"


def test_old_sparse_length_past_1_gib_read_whole() -> None:
    """A region length of 11 octal digits with the first one set is read from its whole
    12-byte field (the map as read)."""
    big = (1 << 30) + 3
    head = _old_sparse_header("far", 8, 10 + big, [(0, 4)], extended=True)
    data = head + _extension([(10, big)], False) + b"HEADFAR!" + bytes(BLOCK - 8) + AFTER + END
    with tarfile.open(fileobj=io.BytesIO(data), mode="r:", tarinfo=_StrictInfo) as tf:
        first = tf.getmembers()[0]
    assert first.sparse == [(0, 4), (0, 0), (0, 0), (0, 0), (10, big)]


def test_sparse_member_without_holes_charged_its_bytes() -> None:
    """A sparse member with no holes costs its stored bytes, nothing more: the archive fits a
    budget of exactly its length, and not one byte less."""
    head = _old_sparse_header("s", 4, 4, [(0, 4)], extended=False)
    data = head + b"DATA" + bytes(BLOCK - 4) + AFTER + END
    assert _read(data, Limits(max_bytes=len(data))) == [
        ("s", "file", b"DATA"), ("after", "file", b"next member")]
    with pytest.raises(ArchiveError, match=f"more than {len(data) - 1} bytes"):
        _read(data, Limits(max_bytes=len(data) - 1))




def test_tar_sniff_reads_a_few_bytes() -> None:
    """The compression is sniffed from the first bytes, not from the whole stream."""
    raw = Recorded(gzip.compress(b"".join([_member("a", b"x" * 100), END])) + bytes(1 << 20))
    got = [e.name for e in tar_entries(raw, Budget(Limits()))]
    assert got == ["a"]
    assert raw.sizes[0] == 8


def test_rpm_header_intro_read_in_16_bytes() -> None:
    """Each header structure's 16-byte intro is read alone: its counts are checked against
    the file before more is read."""
    data = package(header(_tags()), gzip.compress(CPIO))
    raw = Recorded(data)
    assert [e.name for e in rpm_entries(raw, Budget(Limits()))] == ["./usr/lib/x.so"]
    assert raw.sizes[:2] == [4, 16]  # the lead's magic, then the signature's intro
    assert all(size is not None and size >= 0 for size in raw.sizes)
