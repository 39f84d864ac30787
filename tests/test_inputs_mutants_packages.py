"""The .deb outer layer (member order, debian-binary) and the rpm payload's cpio reader
(every entry kind, field padding, bounds at the limit and one past, the offset in each
error), on bytes built here. Written for the survivors of the inputs mutation group
(issue 29)."""

from __future__ import annotations

import io

import pytest

from sfcheck.inputs import ArchiveError, Limits
from sfcheck.inputs.deb import deb_entries
from sfcheck.inputs.limits import Budget
from sfcheck.inputs.rpm import _cpio_entries

from archives import ar_bytes, tar_bytes
from helpers import Recorded

DATA = tar_bytes([("./usr/lib/x.so", b"\x7fELF member")])
CONTROL = tar_bytes([("./control", b"Package: t\n")])


def _deb(members: list[tuple[str, bytes]]) -> list[tuple[str, bytes | None]]:
    return [(e.name, e.stream.read() if e.stream else None)
            for e in deb_entries(io.BytesIO(ar_bytes(members)), Budget(Limits()))]


def _deb_refused(members: list[tuple[str, bytes]]) -> str:
    with pytest.raises(ArchiveError) as exc:
        _deb(members)
    return str(exc.value)


def test_deb_data_tar_found_wherever_it_is_after_debian_binary() -> None:
    want = [("./usr/lib/x.so", b"\x7fELF member")]
    assert _deb([("debian-binary", b"2.0\n"), ("data.tar", DATA),
                 ("control.tar", CONTROL)]) == want
    assert _deb([("debian-binary", b"2.0\n"), ("_gpgorigin", b"sig"),
                 ("control.tar", CONTROL), ("data.tar", DATA)]) == want


def test_deb_reads_the_first_data_tar_only() -> None:
    other = tar_bytes([("./second", b"x")])
    assert _deb([("debian-binary", b"2.0\n"), ("data.tar", DATA), ("data.tar", other)]) \
        == [("./usr/lib/x.so", b"\x7fELF member")]


@pytest.mark.parametrize("members", [[], [("control.tar", b"2.0\n"), ("data.tar", DATA)],
                                     [("data.tar", DATA), ("debian-binary", b"2.0\n")]],
                         ids=["empty", "no-debian-binary", "debian-binary-second"])
def test_deb_first_member_must_be_debian_binary(members: list[tuple[str, bytes]]) -> None:
    assert _deb_refused(members) == "not a Debian package: first member is not debian-binary"


def test_deb_version_message_shows_its_first_16_bytes() -> None:
    got = _deb_refused([("debian-binary", b"9.0 and some more words\n"), ("data.tar", DATA)])
    assert got == "unsupported .deb format version b'9.0 and some mor'"


def test_deb_without_data_tar_refused() -> None:
    assert _deb_refused([("debian-binary", b"2.0\n"), ("control.tar", CONTROL)]) == \
        "Debian package has no data.tar member (truncated?)"


# --- cpio (newc), as rpm writes its payload ----------------------------------------------

S_IFREG, S_IFDIR, S_IFLNK, S_IFIFO = 0o100000, 0o040000, 0o120000, 0o010000


def _field(value: int) -> bytes:
    return b"%08X" % value


def cpio_entry(name: bytes, mode: int, data: bytes = b"", magic: bytes = b"070701",
               namesize: int | None = None, filesize: int | None = None) -> bytes:
    size = len(name) + 1 if namesize is None else namesize
    head = (magic + _field(1) + _field(mode) + _field(0) * 4 + _field(
        len(data) if filesize is None else filesize) + _field(0) * 4 + _field(size)
        + _field(0))
    assert len(head) == 110
    out = head + name + b"\0"
    out += bytes(-len(out) % 4)
    return out + data + bytes(-len(data) % 4)


TRAILER = cpio_entry(b"TRAILER!!!", 0)


def _cpio(data: bytes, read: int | None = None) -> list[tuple[str, str, bytes | None, str]]:
    out = []
    for e in _cpio_entries(io.BytesIO(data), Budget(Limits())):
        got = None
        if e.stream is not None:
            got = e.stream.read() if read is None else e.stream.read(read)
        out.append((e.name, e.type, got, e.linkname))
    return out


def _cpio_refused(data: bytes) -> str:
    with pytest.raises(ArchiveError) as exc:
        _cpio(data)
    return str(exc.value)


def test_cpio_every_kind_and_padding_read() -> None:
    """File sizes 1-4 (each padding) and names of each length mod 4, a directory, a
    symlink (its target), a FIFO, in order, then the trailer."""
    entries = [cpio_entry(b"./d", S_IFDIR | 0o755)]
    want: list[tuple[str, str, bytes | None, str]] = [("./d", "dir", None, "")]
    for n in range(1, 6):
        name = b"./d/" + b"f" * n
        entries.append(cpio_entry(name, S_IFREG | 0o644, bytes(range(65, 65 + n))))
        want.append((name.decode(), "file", bytes(range(65, 65 + n)), ""))
    entries.append(cpio_entry(b"./l", S_IFLNK | 0o777, b"d/fff"))
    want.append(("./l", "symlink", None, "d/fff"))
    entries.append(cpio_entry(b"./p", S_IFIFO | 0o644))
    want.append(("./p", "other", None, ""))
    entries.append(cpio_entry(b"./\xff", S_IFLNK | 0o777, b"t\xfe"))
    want.append(("./\udcff", "symlink", None, "t\udcfe"))
    assert _cpio(b"".join(entries) + TRAILER) == want


def test_cpio_crc_magic_read_and_the_rest_of_a_file_skipped() -> None:
    data = (cpio_entry(b"a", S_IFREG, b"0123456789", magic=b"070702")
            + cpio_entry(b"b", S_IFREG, b"xyz") + TRAILER)
    assert _cpio(data, read=4) == [("a", "file", b"0123", ""), ("b", "file", b"xyz", "")]


def test_cpio_file_window_reads() -> None:
    """A member's stream: read(0) is empty, reads stop at its end, readinto fills a
    buffer, a buffered reader over it works."""
    data = cpio_entry(b"a", S_IFREG, b"0123456789") + TRAILER
    entry = next(_cpio_entries(io.BytesIO(data), Budget(Limits())))
    assert entry.stream is not None
    assert entry.stream.read(0) == b""
    buf = bytearray(4)
    assert entry.stream.readinto(buf) == 4 and buf == b"0123"
    assert io.BufferedReader(entry.stream).read() == b"456789"  # type: ignore[arg-type]
    assert entry.stream.read() == b""


def test_cpio_file_data_cut_short_refused() -> None:
    data = cpio_entry(b"a", S_IFREG, b"0123456789")[:-8]
    assert _cpio_refused(data) == "truncated cpio payload: file data cut short"


def test_cpio_padding_after_data_cut_short_refused() -> None:
    data = cpio_entry(b"a", S_IFREG, b"01234")
    assert _cpio_refused(data[:-2]) == "truncated cpio payload"


def test_cpio_bad_magic_names_its_offset() -> None:
    first = cpio_entry(b"./a", S_IFREG, b"12345")
    second = cpio_entry(b"./bb", S_IFDIR)
    data = first + second + b"0707ZZ" + TRAILER[6:]
    assert _cpio_refused(data) == \
        f"malformed cpio payload: bad magic b'0707ZZ' at {len(first) + len(second):#x}"
    assert _cpio_refused(b"0707ZZ" + TRAILER[6:]) == \
        "malformed cpio payload: bad magic b'0707ZZ' at 0x0"


def test_cpio_large_file_format_refused() -> None:
    assert _cpio_refused(b"07070X" + TRAILER[6:]) == \
        "cpio payload in rpm's large-file (07070X) format is not supported"


@pytest.mark.parametrize("at,what", [(14, "mode"), (54, "filesize"), (94, "namesize")])
def test_cpio_each_hex_field_checked_whole(at: int, what: str) -> None:
    entry = bytearray(cpio_entry(b"a", S_IFREG, b"x"))
    entry[at] = ord("g")
    field = bytes(entry[at:at + 8])
    assert _cpio_refused(bytes(entry) + TRAILER) == \
        f"malformed cpio payload: {what} field {field!r} is not hex"


def test_cpio_name_size_at_the_bounds() -> None:
    """A name size of 1 (an empty name) and of 4096 are read; 0 and 4097 are refused at
    the entry's offset."""
    assert _cpio(cpio_entry(b"", S_IFDIR) + TRAILER) == [("", "dir", None, "")]
    long = b"n" * 4095
    assert _cpio(cpio_entry(long, S_IFDIR) + TRAILER) == [(long.decode(), "dir", None, "")]
    first = cpio_entry(b"a", S_IFDIR)
    for size in (0, 4097):
        bad = cpio_entry(b"b", S_IFDIR, namesize=size)
        assert _cpio_refused(first + bad + TRAILER) == \
            f"malformed cpio payload: name size {size} at {len(first):#x}"


def test_cpio_name_cut_short_and_no_trailer_refused() -> None:
    entry = cpio_entry(b"abcdefgh", S_IFDIR)
    assert _cpio_refused(entry[:115]) == "truncated cpio payload"
    assert _cpio_refused(entry) == "truncated cpio payload (no TRAILER!!! entry)"


def test_cpio_symlink_target_at_the_bound_and_one_past() -> None:
    target = b"t" * 4096
    assert _cpio(cpio_entry(b"l", S_IFLNK, target) + TRAILER) == \
        [("l", "symlink", None, target.decode())]
    assert _cpio_refused(cpio_entry(b"l", S_IFLNK, target + b"t") + TRAILER) == \
        "cpio symlink l has a 4097-byte target"


def test_cpio_special_file_with_data_refused() -> None:
    assert _cpio_refused(cpio_entry(b"p", S_IFIFO, b"data") + TRAILER) == \
        "cpio entry p of type 10000 has data"




def test_cpio_unread_file_data_skipped_in_bounded_reads() -> None:
    """A 3 MiB member the caller does not read is skipped 1 MiB at a time, never whole."""
    big = bytes(3 << 20)
    spy = Recorded(cpio_entry(b"big", S_IFREG, big) + cpio_entry(b"next", S_IFDIR) + TRAILER)
    got = [e.name for e in _cpio_entries(spy, Budget(Limits()))]
    assert got == ["big", "next"]
    assert max(n for n in spy.sizes if n is not None) == 1 << 20
    assert None not in spy.sizes and -1 not in spy.sizes
