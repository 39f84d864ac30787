"""Literals in the input readers, pinned by whole results: the `debian-binary` name test of
a .deb head, a compressed-stream check on a tar-named member, the root and `..` cases of a
member path, an absolute hard-link target, RPM header fields read as unsigned, NUL-only
stripping of a cpio name and CR-only stripping of a path-list line, and the 'other' type
of a tar FIFO. The mutants of these literals survived, and the old classifier had counted
them apart as message text; each test here fails on its mutant (applied by hand) through a
member list, a name or a one-line error, not through message text alone."""

from __future__ import annotations

import io
import struct
import tarfile
from pathlib import Path

import pytest
from test_inputs_mutants_packages import S_IFREG, TRAILER, cpio_entry
from test_inputs_mutants_rpm import STRING, header, package

from sfcheck.inputs import ArchiveError, Limits
from sfcheck.inputs.expand import Member, stream_members
from sfcheck.inputs.limits import Budget, PathGuard
from sfcheck.inputs.sniff import classify
from sfcheck.inputs.tar import tar_entries
from sfcheck.inputs.walk import read_path_list
from sfcheck.result import Skipped

from archives import ar_bytes, link, tar_bytes

ELF = b"\x7fELF" + bytes(60)


def _members(data: bytes, kind: str = "tar") -> tuple[list[Member], Skipped]:
    skipped = Skipped()
    got = list(stream_members(io.BytesIO(data), "p", kind, Limits(), skipped))
    return got, skipped


def _refused(data: bytes, kind: str = "tar") -> str:
    with pytest.raises(ArchiveError) as exc:
        _members(data, kind)
    return str(exc.value)


# --- sniff.is_deb_head: only spaces and '/' pad the first member's name -------------------

def test_ar_whose_first_member_is_not_exactly_debian_binary_is_a_static_library() -> None:
    lib = ar_bytes([("debian-binaryX", b"2.0\n"), ("x.o", ELF)])
    assert classify(lib[:512], "") == "ar"
    assert classify(ar_bytes([("debian-binary", b"2.0\n")])[:512], "") == "deb"
    got, skipped = _members(tar_bytes([("lib.a", lib)]))
    assert got == [Member("p:lib.a:x.o", "p", "lib.a:x.o", ELF)]
    assert (skipped.non_elf, skipped.special, skipped.links) == (1, 0, 0)


# --- expand._member_kind: a tar name alone does not make an uncompressed member a tar ------

def test_tar_named_member_that_is_neither_ustar_nor_compressed_is_not_opened() -> None:
    got, skipped = _members(tar_bytes([("notes.tar", b"plain text, not a tar"),
                                       ("a.so", ELF)]))
    assert got == [Member("p:a.so", "p", "a.so", ELF)]
    assert (skipped.non_elf, skipped.special, skipped.links) == (1, 0, 0)


# --- limits: the archive root is "", `..` alone climbs out, an absolute link target -------

def test_root_member_normalises_to_the_empty_path() -> None:
    guard = PathGuard()
    assert [guard.check(n) for n in (".", "./", "a/..", "./x/")] == ["", "", "", "x"]


def test_symlink_named_dot_hides_no_member() -> None:
    """A symlink member `.` is counted as a link; it is no parent of any member path."""
    got, skipped = _members(tar_bytes([link(".", "/etc"), ("XXXX/a.so", ELF)]))
    assert got == [Member("p:XXXX/a.so", "p", "XXXX/a.so", ELF)]
    assert (skipped.non_elf, skipped.special, skipped.links) == (0, 0, 1)


def test_member_named_dotdot_escapes_the_root() -> None:
    assert _refused(tar_bytes([("a.so", ELF), ("..", ELF)])) == \
        "member path escapes the archive root: .."
    assert _refused(tar_bytes([link("h", "..", tarfile.LNKTYPE)])) == \
        "hard link h points outside the archive: .."


def test_hard_link_to_an_absolute_path_refused() -> None:
    assert _refused(tar_bytes([link("h", "/etc/passwd", tarfile.LNKTYPE)])) == \
        "hard link h points outside the archive: /etc/passwd"


# --- rpm: header counts and index fields are unsigned ------------------------------------

MAIN = header([(1124, STRING, b"cpio\0"), (1125, STRING, b"none\0")])
CPIO = cpio_entry(b"./usr/bin/X", S_IFREG, ELF) + TRAILER


def _rpm_intro(nindex: int, hsize: int) -> bytes:
    return b"\x8e\xad\xe8\x01\0\0\0\0" + struct.pack(">II", nindex, hsize)


def test_rpm_reads_its_payload_names_whole() -> None:
    """The control case: `./usr/bin/X` keeps its trailing X (only NULs are stripped)."""
    got, _ = _members(package(MAIN, CPIO), "rpm")
    assert got == [Member("p:./usr/bin/X", "p", "./usr/bin/X", ELF)]


@pytest.mark.parametrize(("nindex", "hsize"), [(0, 0xFFFFFFFF), (0xFFFFFFFF, 16)])
def test_rpm_header_sizes_with_the_top_bit_set_refused(nindex: int, hsize: int) -> None:
    data = package(MAIN, CPIO, signature=_rpm_intro(nindex, hsize))
    assert _refused(data, "rpm") == (f"malformed or truncated RPM: header at 0x60 claims "
                                     f"{nindex} entries and {hsize} data bytes")


def test_rpm_index_type_and_offset_read_unsigned() -> None:
    wrong_type = header([(1124, 0xFFFFFFFF, b"cpio\0")])
    assert _refused(package(wrong_type, CPIO), "rpm") == \
        "malformed RPM header: tag 1124 has type 4294967295, not a string"
    far = header([(1125, STRING, b"none\0")], offsets={1125: 0xFFFFFFFF})
    assert _refused(package(far, CPIO), "rpm") == \
        "malformed RPM header: tag 1125 points past the header (offset 0xffffffff)"


# --- walk.read_path_list: only a CR ends a newline list's lines ---------------------------

def test_path_list_keeps_a_trailing_x(tmp_path: Path) -> None:
    lst = tmp_path / "list"
    lst.write_bytes(b"/usr/bin/X\r\n/usr/lib/libX\n")
    assert read_path_list(str(lst)) == ["/usr/bin/X", "/usr/lib/libX"]


# --- tar._type: devices and FIFOs are 'other' -----------------------------------------------

def test_tar_fifo_and_device_entries_are_other() -> None:
    fifo, dev = tarfile.TarInfo("p"), tarfile.TarInfo("dev/null")
    fifo.type, dev.type = tarfile.FIFOTYPE, tarfile.CHRTYPE
    got = [(e.name, e.type, e.stream, e.linkname) for e in
           tar_entries(io.BytesIO(tar_bytes([fifo, dev, ("f", b"")])), Budget(Limits()))]
    assert [g[:2] for g in got] == [("p", "other"), ("dev/null", "other"), ("f", "file")]
    assert [g[2] is None for g in got] == [True, True, False]
    assert [g[3] for g in got] == ["", "", ""]
