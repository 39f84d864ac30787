"""Inputs: real .deb/.rpm/.a/tar files are read member by member; hostile ones are refused."""

from __future__ import annotations

import contextlib
import errno
import gzip
import io
import json
import lzma
import os
import shutil
import struct
import subprocess
import sys
import tarfile
import tempfile
import threading
import time
from pathlib import Path
from types import ModuleType

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sfcheck.checker import check_elf
from sfcheck.fileio import InputFileError
from sfcheck.inputs import ArchiveError, Limits, archive_members, classify, read_path_list, walk
from sfcheck.inputs.ar import ar_entries
from sfcheck.inputs.limits import Budget, PathGuard
from sfcheck.inputs.walk import MAX_TREE_DEPTH
from sfcheck.result import Skipped

from archives import (
    BAD,
    EXE_V2,
    LIB_V1,
    LIB_V3,
    ar_bytes,
    ar_header,
    deb_bytes,
    dpkg_deb,
    link,
    need,
    rpmbuild,
    sparse_tar,
    tar_bytes,
    zstd_tar,
)
from bounded import MiB, one_line_error, run_sfcheck

FILES = {"usr/lib/x86_64-linux-gnu/libcorpus.so.3": LIB_V3, "usr/bin/exe_pie": EXE_V2,
         "usr/share/doc/t/README": b"not an ELF file\n"}


def members(path: Path, limits: Limits | None = None) -> tuple[dict[str, bytes], Skipped]:
    skipped = Skipped()
    head = path.read_bytes()[:512]
    got = {m.member: m.data for m in archive_members(str(path), classify(head, str(path)),
                                                    limits or Limits(), skipped)}
    return got, skipped


def refused(path: Path, limits: Limits | None = None) -> str:
    with pytest.raises(ArchiveError) as exc:
        members(path, limits)
    return str(exc.value)


def write(tmp: Path, name: str, data: bytes) -> Path:
    path = tmp / name
    path.write_bytes(data)
    return path


# --- real packages --------------------------------------------------------------------

@pytest.mark.parametrize("compression", ["xz", "gzip", "zstd", "none"])
def test_dpkg_deb_members(tmp_path: Path, compression: str) -> None:
    deb = dpkg_deb(tmp_path, FILES, compression,
                   links={"usr/lib/x86_64-linux-gnu/libcorpus.so": "libcorpus.so.3"})
    got, skipped = members(deb)
    assert got == {"./usr/lib/x86_64-linux-gnu/libcorpus.so.3": LIB_V3.read_bytes(),
                   "./usr/bin/exe_pie": EXE_V2.read_bytes()}
    assert (skipped.non_elf, skipped.links) == (1, 1)
    assert classify(deb.read_bytes()[:512], str(deb)) == "deb"


def _rpmfile() -> ModuleType:
    """rpmfile (a test extra; not packaged in Debian), or skip the test with the reason."""
    return pytest.importorskip("rpmfile", reason="rpmfile not installed (pip install -e '.[test]')")


@pytest.mark.parametrize("payload,compressor", [("w19.zstdio", b"zstd"), ("w6.xzdio", b"xz"),
                                                ("w9.gzdio", b"gzip")])
def test_rpmbuild_members(tmp_path: Path, payload: str, compressor: bytes) -> None:
    rpm = rpmbuild(tmp_path, FILES, payload,
                   links={"usr/lib/x86_64-linux-gnu/libcorpus.so": "libcorpus.so.3"})
    rpmfile = _rpmfile()
    with rpmfile.open(str(rpm)) as r:  # the payload really is compressed as asked
        assert r.headers["archive_compression"] == compressor
    got, skipped = members(rpm)
    assert got == {"./usr/lib/x86_64-linux-gnu/libcorpus.so.3": LIB_V3.read_bytes(),
                   "./usr/bin/exe_pie": EXE_V2.read_bytes()}
    assert (skipped.non_elf, skipped.links) == (1, 1)


def test_binutils_ar_static_library_every_member(tmp_path: Path) -> None:
    ar = need("ar")
    objs = []
    for i, src in enumerate([LIB_V3, EXE_V2, BAD]):
        # A long name exercises the GNU `//` long-name table.
        obj = tmp_path / f"member_with_a_long_name_{i}.o"
        obj.write_bytes(src.read_bytes())
        objs.append(obj)
    (tmp_path / "notes.txt").write_text("text member\n")
    lib = tmp_path / "libx.a"
    subprocess.run([ar, "rcs", str(lib), *map(str, objs), str(tmp_path / "notes.txt")],
                   check=True)
    got, skipped = members(lib)
    assert list(got) == [o.name for o in objs]
    assert [got[o.name] for o in objs] == [o.read_bytes() for o in objs]
    assert skipped.non_elf == 1


def test_static_library_inside_deb_is_opened(tmp_path: Path) -> None:
    lib = ar_bytes([("a.o", LIB_V3.read_bytes()), ("b.o", b"text")])
    deb = write(tmp_path, "dev.deb", deb_bytes(tar_bytes([("./usr/lib/libx.a", lib)])))
    got, skipped = members(deb)
    assert list(got) == ["./usr/lib/libx.a:a.o"]
    assert skipped.non_elf == 1
    # ... but not past max_depth: then the library is an error, never a quiet skip.
    skipped = Skipped()
    (m,) = archive_members(str(deb), "deb", Limits(max_depth=1), skipped)
    assert (m.member, m.data, skipped.non_elf) == ("./usr/lib/libx.a", None, 0)
    assert m.error is not None and "nested deeper than 1 archive layers" in m.error


def test_nesting_depth_and_tar_inside_packages(tmp_path: Path) -> None:
    """tar -> .deb -> data.tar -> .tar.gz -> .a -> member: each layer opened to max_depth."""
    lib = ar_bytes([("a.o", LIB_V3.read_bytes())])
    inner_tgz = tar_bytes([("./lib/libx.a", lib), ("./x.so", LIB_V1.read_bytes())], "w:gz")
    deb = deb_bytes(tar_bytes([("./usr/src/bundle.tar.gz", inner_tgz)]))
    outer = write(tmp_path, "outer.tar", tar_bytes([("pkgs/t.deb", deb)]))
    got, _ = members(outer)
    assert list(got) == ["pkgs/t.deb:./usr/src/bundle.tar.gz:./lib/libx.a:a.o",
                         "pkgs/t.deb:./usr/src/bundle.tar.gz:./x.so"]
    skipped = Skipped()
    ms = list(archive_members(str(outer), "tar", Limits(max_depth=3), skipped))
    assert [(m.member, m.error is not None) for m in ms] == [
        ("pkgs/t.deb:./usr/src/bundle.tar.gz:./lib/libx.a", True),
        ("pkgs/t.deb:./usr/src/bundle.tar.gz:./x.so", False)]
    # A gzip stream that is no tar but named like one is an error, not a pass.
    bad = write(tmp_path, "bad.tar", tar_bytes([("x.tar.gz", gzip.compress(b"x" * 600))]))
    assert "tar" in refused(bad)
    # A .gz that is not named as a tar (a man page) is data, skipped.
    _, skipped = members(write(tmp_path, "man.tar", tar_bytes([("x.1.gz", gzip.compress(
        b"x"))])))
    assert skipped.non_elf == 1


def test_duplicate_ar_member_names_told_apart(tmp_path: Path) -> None:
    lib = write(tmp_path, "libx.a", ar_bytes([("lib.o", LIB_V3.read_bytes()),
                                              ("lib.o", LIB_V1.read_bytes()),
                                              ("lib.o", EXE_V2.read_bytes())]))
    got, _ = members(lib)
    assert got == {"lib.o": LIB_V3.read_bytes(), "lib.o#2": LIB_V1.read_bytes(),
                   "lib.o#3": EXE_V2.read_bytes()}


@pytest.mark.parametrize("mode,name", [("w", "t.tar"), ("w:gz", "t.tar.gz"),
                                       ("w:xz", "t.tar.xz"), ("w:bz2", "t.tbz2")])
def test_tar_members(tmp_path: Path, mode: str, name: str) -> None:
    data = tar_bytes([("lib/a.so", LIB_V3.read_bytes()), ("README", b"x"),
                      link("lib/b.so", "a.so")], mode)
    got, skipped = members(write(tmp_path, name, data))
    assert got == {"lib/a.so": LIB_V3.read_bytes()}
    assert (skipped.non_elf, skipped.links) == (1, 1)


def test_tar_zst(tmp_path: Path) -> None:
    got, _ = members(write(tmp_path, "t.tar.zst", zstd_tar([("a.so", LIB_V1.read_bytes())])))
    assert got == {"a.so": LIB_V1.read_bytes()}


def test_member_findings_equal_file_findings(tmp_path: Path) -> None:
    """Reading through an archive changes nothing but the label."""
    deb = dpkg_deb(tmp_path, {"usr/lib/bad.so": BAD})
    (data,) = members(deb)[0].values()
    direct = check_elf(BAD, path="X")
    via = check_elf(data, path="X")
    assert via.findings == direct.findings and direct.findings


# --- hostile archives -----------------------------------------------------------------

ELF = LIB_V3.read_bytes()


@pytest.mark.parametrize("entries,words", [
    ([("../../etc/evil.so", ELF)], "escapes the archive root"),
    ([("./usr/../../evil.so", ELF)], "escapes the archive root"),
    ([("/etc/evil.so", ELF)], "absolute path"),
    ([link("lib", "/etc"), ("lib/evil.so", ELF)], "symlink escape"),
    ([link("a", "../.."), ("a/b/evil.so", ELF)], "symlink escape"),
    ([link("x.so", "../../etc/shadow", tarfile.LNKTYPE)], "hard link"),
])
def test_hostile_tar_refused(tmp_path: Path, entries: list, words: str) -> None:
    assert words in refused(write(tmp_path, "evil.tar", tar_bytes(entries)))
    # The same payload as a package's data.tar.
    assert words in refused(write(tmp_path, "evil.deb", deb_bytes(tar_bytes(entries))))


def test_devices_are_skipped_never_read(tmp_path: Path) -> None:
    dev = tarfile.TarInfo("./dev/sda")
    dev.type, dev.devmajor, dev.devminor = tarfile.BLKTYPE, 8, 0
    fifo = tarfile.TarInfo("./run/fifo")
    fifo.type = tarfile.FIFOTYPE
    got, skipped = members(write(tmp_path, "d.tar", tar_bytes([dev, fifo, ("./a.so", ELF)])))
    assert list(got) == ["./a.so"] and skipped.special == 2


def test_symlink_members_are_not_followed(tmp_path: Path) -> None:
    # An absolute symlink is normal in packages (alternatives); it is skipped, not read.
    got, skipped = members(write(tmp_path, "l.tar", tar_bytes([link("./lib.so", "/etc/passwd")])))
    assert got == {} and skipped.links == 1


def test_decompression_bomb_refused(tmp_path: Path) -> None:
    big = tar_bytes([("zeros", bytes(32 << 20))])
    bomb = write(tmp_path, "bomb.tar.xz", lzma.compress(big))
    assert bomb.stat().st_size < 64 << 10
    msg = refused(bomb, Limits(max_bytes=4 << 20))
    assert "more than 4194304 bytes" in msg and "bomb" in msg
    assert members(bomb, Limits(max_bytes=64 << 20))[0] == {}  # a genuine big one is fine


def test_bomb_inside_deb_refused(tmp_path: Path) -> None:
    deb = write(tmp_path, "bomb.deb", deb_bytes(gzip.compress(tar_bytes(
        [("./zeros", bytes(16 << 20))])), "data.tar.gz"))
    assert "bomb" in refused(deb, Limits(max_bytes=1 << 20))


def test_member_count_limit(tmp_path: Path) -> None:
    many = write(tmp_path, "many.tar", tar_bytes([(f"f{i}", b"") for i in range(300)]))
    assert "more than 100 members" in refused(many, Limits(max_members=100))
    assert members(many, Limits(max_members=300))[1].non_elf == 300


def test_huge_pax_header_refused_before_allocation(tmp_path: Path) -> None:
    header = tarfile.TarInfo("././@PaxHeader")
    header.type = tarfile.XHDTYPE
    header.size = 8**11 - 1  # 8 GiB; tarfile reads a pax record in one call
    raw = lzma.compress(header.tobuf(format=tarfile.USTAR_FORMAT) + bytes(4 << 20))
    # Refused at the header (tar.MAX_HEADER_BODY), before the budget is even asked.
    assert "pax header of 8589934591 bytes" in refused(write(tmp_path, "pax.tar.xz", raw),
                                                       Limits(max_bytes=1 << 20))


@pytest.mark.parametrize("fraction", [0.3, 0.6, 0.95])
def test_truncated_deb_refused(tmp_path: Path, fraction: float) -> None:
    deb = dpkg_deb(tmp_path, FILES, "xz").read_bytes()
    cut = write(tmp_path, "cut.deb", deb[: int(len(deb) * fraction)])
    assert refused(cut)


@pytest.mark.parametrize("fraction", [0.05, 0.3, 0.6, 0.95])
def test_truncated_rpm_refused(tmp_path: Path, fraction: float) -> None:
    rpm = rpmbuild(tmp_path, FILES, "w19.zstdio").read_bytes()
    cut = write(tmp_path, "cut.rpm", rpm[: int(len(rpm) * fraction)])
    assert refused(cut)


def test_truncated_ar_and_tar_refused(tmp_path: Path) -> None:
    lib = ar_bytes([("a.o", ELF), ("b.o", ELF)])
    assert "truncated" in refused(write(tmp_path, "cut.a", lib[: len(lib) - 100]))
    tgz = tar_bytes([("a.so", ELF), ("b.so", ELF)], "w:gz")
    assert refused(write(tmp_path, "cut.tar.gz", tgz[: len(tgz) // 2]))


def test_hostile_ar_headers(tmp_path: Path) -> None:
    negative = b"!<arch>\n" + ar_header(b"a.o/", b"-100") + ELF
    assert "negative size" in refused(write(tmp_path, "neg.a", negative))
    garbage = b"!<arch>\n" + ar_header(b"a.o/", b"12x") + ELF
    assert "malformed" in refused(write(tmp_path, "bad.a", garbage))
    thin = b"!<thin>\n" + ar_header(b"/etc/passwd/", 10)
    with pytest.raises(ArchiveError, match="thin archive"):
        list(ar_entries(io.BytesIO(thin), Budget(Limits())))
    assert classify(thin, "thin.a") == "thin"  # the scan skips or refuses it, never opens it
    traversal = ar_bytes([("../x.o", ELF)])
    assert "escapes" in refused(write(tmp_path, "trav.a", traversal))


@pytest.mark.parametrize("fmt", ["gnu", "posix"])
def test_sparse_tar_members_count_their_expanded_size(tmp_path: Path, fmt: str) -> None:
    """Issue 19.2: a few-KB tar with a 4 GiB sparse member, alone or as a .deb's data.tar,
    is refused by --max-archive-bytes before the holes are read (they never pass through
    the bounded stream, so they are charged up front)."""
    tar = sparse_tar(tmp_path, 4 << 30, fmt)
    assert len(tar) < 64 << 10
    assert "expands to more than" in refused(write(tmp_path, "s.tar", tar),
                                             Limits(max_bytes=1_000_000))
    deb = write(tmp_path, "s.deb", deb_bytes(tar))
    run = run_sfcheck(["check", "--max-archive-bytes", "1000000", str(deb)], cpu_seconds=20,
                      address_space=1024 * MiB)
    assert run.status == 2 and "expands to more than 1000000 bytes" in run.stdout + run.stderr
    assert "Traceback" not in run.stderr


def test_long_member_paths_linear_and_capped(tmp_path: Path) -> None:
    """Issue 19.4: path checks are linear in the path (a trie of symlink members), and a
    path longer than 4096 bytes is refused."""
    guard = PathGuard()
    for i in range(2000):
        guard.symlink(f"l{i}/" + "a/" * 10 + "link")
    deep = "/".join(["a"] * 2047)  # 4093 bytes, 2047 components
    for _ in range(2000):  # quadratic before: ~2000 * 2047 prefix joins of ~2 KB each
        assert guard.check(deep) == deep
    with pytest.raises(ArchiveError, match="longer than 4096 bytes"):
        guard.check("a/" * 3000)
    tar = tar_bytes([("x/" * 100_000 + "f.so", b"x")], "w:gz")  # one pax path of 200 KB
    run = run_sfcheck(["check", str(write(tmp_path, "long.tar.gz", tar))], cpu_seconds=10,
                      address_space=1024 * MiB)
    assert run.status == 2 and "longer than 4096 bytes" in run.stdout


def test_rpm_header_reader_agrees_with_rpmfile(tmp_path: Path) -> None:
    from sfcheck.inputs.rpm import _payload

    rpmfile = _rpmfile()
    for payload in ("w9.gzdio", "w19.zstdio", "w2.xzdio"):
        path = rpmbuild(tmp_path, FILES, payload, name=f"p{payload[1]}")
        with rpmfile.open(str(path)) as r:
            tags = r.headers
        with path.open("rb") as f:
            offset, fmt, comp = _payload(f, Budget(Limits()))
        assert (fmt, comp) == (tags["archive_format"].decode(),
                               tags["archive_compression"].decode())
        assert offset == r.data_offset


def test_hostile_rpm_headers(tmp_path: Path) -> None:
    rpm = bytearray(rpmbuild(tmp_path, FILES, "w9.gzdio").read_bytes())
    sig_n, sig_size = int.from_bytes(rpm[104:108], "big"), int.from_bytes(rpm[108:112], "big")
    main = 96 + 16 + 16 * sig_n + sig_size
    main += -main % 8
    nindex = int.from_bytes(rpm[main + 8:main + 12], "big")
    entries = [(main + 16 + 16 * i, int.from_bytes(rpm[main + 16 + 16 * i:main + 20 + 16 * i],
                                                    "big")) for i in range(nindex)]
    (comp_at,) = [at for at, tag in entries if tag == 1125]  # PAYLOADCOMPRESSOR
    past = bytearray(rpm)
    past[comp_at + 8:comp_at + 12] = (0x7FFFFFF0).to_bytes(4, "big")  # offset past the store
    assert "points past the header" in refused(write(tmp_path, "past.rpm", bytes(past)))
    typed = bytearray(rpm)
    typed[comp_at + 4:comp_at + 8] = (4).to_bytes(4, "big")  # INT32, not a string
    assert "not a string" in refused(write(tmp_path, "typed.rpm", bytes(typed)))
    count = bytearray(rpm)  # a lying count is never used: only the string is read
    for at, _ in entries:
        count[at + 12:at + 16] = (0xFFFFFFFF).to_bytes(4, "big")
    got, _ = members(write(tmp_path, "count.rpm", bytes(count)))
    assert set(got) == {"./usr/lib/x86_64-linux-gnu/libcorpus.so.3", "./usr/bin/exe_pie"}
    huge = bytearray(rpm)
    huge[96 + 8:96 + 12] = (0x7FFFFFFF).to_bytes(4, "big")  # signature index count
    assert "claims" in refused(write(tmp_path, "huge.rpm", bytes(huge)))
    nomagic = bytearray(rpm)
    nomagic[96:99] = b"XXX"
    assert "no header structure" in refused(write(tmp_path, "nomagic.rpm", bytes(nomagic)))


def test_hostile_cpio(tmp_path: Path) -> None:
    from sfcheck.inputs.rpm import _cpio_entries

    def entries(raw: bytes) -> list:
        return list(_cpio_entries(io.BytesIO(raw), Budget(Limits())))

    def newc(name: bytes, data: bytes, mode: int = 0o100644, namesize: int | None = None) -> bytes:
        ns = len(name) + 1 if namesize is None else namesize
        fields = [0, mode, 0, 0, 1, 0, len(data), 0, 0, 0, 0, ns, 0]
        head = b"070701" + b"".join(b"%08X" % f for f in fields)
        body = head + name + b"\0"
        body += bytes(-len(body) % 4) + data
        return body + bytes(-len(body) % 4)

    trailer = newc(b"TRAILER!!!", b"")
    assert [e.name for e in entries(newc(b"./a", b"xy") + trailer)] == ["./a"]
    with pytest.raises(ArchiveError, match="name size"):
        entries(newc(b"./a", b"", namesize=1 << 30) + trailer)
    with pytest.raises(ArchiveError, match="not hex"):
        entries(b"070701" + b"ZZZZZZZZ" * 13 + trailer)
    with pytest.raises(ArchiveError, match="TRAILER"):
        entries(newc(b"./a", b"xy"))
    with pytest.raises(ArchiveError, match="bad magic"):
        entries(b"070707" + bytes(200))


def test_path_guard_unit() -> None:
    g = PathGuard()
    assert g.check("./usr/lib/x.so") == "usr/lib/x.so"
    assert g.check("a/../b") == "b"
    g.symlink("./usr/lib64")
    with pytest.raises(ArchiveError, match="symlink escape"):
        g.check("usr/lib64/x.so")
    assert g.check("usr/lib64x/y") == "usr/lib64x/y"
    with pytest.raises(ArchiveError, match="NUL"):
        g.check("a\0b")


# Property: whatever bytes replace part of a real archive, reading it either works or
# raises ArchiveError (a clean refusal), never another exception, and always ends.

def _mutants() -> st.SearchStrategy[tuple[int, int, bytes]]:
    return st.tuples(st.integers(0, 1 << 16), st.integers(0, 64), st.binary(max_size=16))


@pytest.fixture(scope="module")
def sample_archives(tmp_path_factory: pytest.TempPathFactory) -> dict[str, bytes]:
    tmp = tmp_path_factory.mktemp("arch")
    out = {"a": ar_bytes([("a.o", ELF[:4096]), ("b.o", b"xyz")]),
           "tar.gz": tar_bytes([("a.so", ELF[:4096]), link("l", "a.so")], "w:gz"),
           "deb": deb_bytes(lzma.compress(tar_bytes([("./a.so", ELF[:4096])])), "data.tar.xz")}
    with contextlib.suppress(pytest.skip.Exception):  # no rpmbuild: the rpm case skips
        out["rpm"] = rpmbuild(tmp, {"usr/lib/a.so": ELF[:4096]}, "w19.zstdio").read_bytes()
    return out


@settings(max_examples=150, deadline=None, suppress_health_check=[
    HealthCheck.function_scoped_fixture])
@given(kind=st.sampled_from(["a", "tar.gz", "deb", "rpm"]), mutation=_mutants(),
       cut=st.integers(0, 1 << 16))
def test_mutated_archives_refused_cleanly(sample_archives: dict[str, bytes], tmp_path: Path,
                                          kind: str, mutation: tuple[int, int, bytes],
                                          cut: int) -> None:
    if kind not in sample_archives:
        pytest.skip("rpmbuild not installed")
    data = sample_archives[kind]
    at, length, repl = mutation
    at %= len(data)
    data = (data[:at] + repl + data[at + length:])[: max(cut, 8)]
    path = tmp_path / f"m.{kind}"
    path.write_bytes(data)
    kind_now = classify(data[:512], str(path))
    if kind_now not in ("deb", "rpm", "ar", "tar"):
        return
    try:
        list(archive_members(str(path), kind_now, Limits(max_bytes=1 << 22), Skipped()))
    except ArchiveError as exc:
        assert str(exc)


# --- walking trees and path lists -----------------------------------------------------

def test_walk_sorted_skips_links_and_reports_missing(tmp_path: Path) -> None:
    (tmp_path / "b").mkdir()
    (tmp_path / "b" / "z.so").write_bytes(ELF)
    (tmp_path / "b" / "a.so").write_bytes(ELF)
    (tmp_path / "a.txt").write_text("x")
    (tmp_path / "link.so").symlink_to(tmp_path / "b" / "a.so")
    skipped = Skipped()
    got = list(walk([str(tmp_path), str(tmp_path / "missing")], skipped))
    assert [Path(i.path).relative_to(tmp_path).as_posix() for i in got] == [
        "a.txt", "b/a.so", "b/z.so", "missing"]
    assert [i.explicit for i in got] == [False, False, False, True]
    assert got[-1].error and "No such file" in got[-1].error
    assert skipped.links == 1


def test_read_path_list(tmp_path: Path) -> None:
    lst = tmp_path / "list"
    lst.write_text("a\n\nb c\r\n")
    assert read_path_list(str(lst)) == ["a", "b c"]
    assert read_path_list("-", io.StringIO("x\0y\nz\0")) == ["x", "y\nz"]


def test_ar_reader_rejects_non_ar() -> None:
    with pytest.raises(ArchiveError, match="not an ar archive"):
        list(ar_entries(io.BytesIO(b"hello world"), Budget(Limits())))


def test_path_list_refuses_devices_and_bounds_entries(tmp_path: Path) -> None:
    with pytest.raises(InputFileError, match="not a regular file or a FIFO"):
        read_path_list("/dev/zero")
    long = tmp_path / "long"
    long.write_bytes(b"a\n" + b"x" * 5000 + b"\n")
    with pytest.raises(InputFileError, match="entry 2 is longer than 4096"):
        read_path_list(str(long))
    with pytest.raises(InputFileError, match="No such file"):
        read_path_list(str(tmp_path / "missing"))


def test_path_list_from_a_fifo_waits_for_its_writer(tmp_path: Path) -> None:
    fifo = tmp_path / "list"
    os.mkfifo(fifo)

    def writer() -> None:
        # Write only once the reader holds the FIFO open and waits (a non-blocking read
        # would then see EOF): a non-blocking open for writing fails with ENXIO until then.
        while True:
            try:
                fd = os.open(fifo, os.O_WRONLY | os.O_NONBLOCK)
                break
            except OSError as e:
                assert e.errno == errno.ENXIO, e
                time.sleep(0.001)  # a poll for that event, not a guess at its timing
        os.set_blocking(fd, True)
        with os.fdopen(fd, "w") as fh:
            fh.write("a\nb\n")

    t = threading.Thread(target=writer)
    t.start()
    try:
        assert read_path_list(str(fifo)) == ["a", "b"]
    finally:
        t.join()


def test_cli_from_file_dev_zero_is_one_line() -> None:
    run = run_sfcheck(["check", "--from-file", "/dev/zero"], cpu_seconds=20,
                      address_space=1024 * MiB)
    assert run.status == 2
    line = one_line_error(run)
    assert "/dev/zero" in line and "FIFO" in line


def _os_walk_order(root: Path) -> list[str]:
    out = []
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames.sort()
        out += [os.path.join(dirpath, f) for f in sorted(filenames)
                if not os.path.islink(os.path.join(dirpath, f))]
    return out


@settings(max_examples=25, suppress_health_check=[HealthCheck.function_scoped_fixture],
          deadline=None)
@given(st.lists(st.lists(st.sampled_from("abAB_1"), min_size=1, max_size=3), min_size=1,
                max_size=12))
def test_walk_order_is_os_walk_order(tmp_path: Path, shapes: list[list[str]]) -> None:
    """The iterative walk lists the files os.walk (sorted) would, in the same order."""
    root = Path(tempfile.mkdtemp(dir=tmp_path))
    for parts in shapes:
        d = root.joinpath(*parts[:-1])
        with contextlib.suppress(FileExistsError, NotADirectoryError):  # a file is there
            d.mkdir(parents=True, exist_ok=True)
            if not (d / parts[-1]).exists():
                (d / parts[-1]).write_bytes(b"x")
    got = [i.path for i in walk([str(root)], Skipped())]
    assert got == _os_walk_order(root)


def test_walk_counts_links_to_directories(tmp_path: Path) -> None:
    (tmp_path / "d").mkdir()
    (tmp_path / "d" / "f").write_bytes(b"x")
    (tmp_path / "to-dir").symlink_to(tmp_path / "d")
    (tmp_path / "to-file").symlink_to(tmp_path / "d" / "f")
    (tmp_path / "dangling").symlink_to(tmp_path / "nowhere")
    skipped = Skipped()
    assert [i.path for i in walk([str(tmp_path)], skipped)] == [str(tmp_path / "d" / "f")]
    assert skipped.links == 3


def _remove_chain(top: Path) -> None:
    """Remove a deep tree of single-child directories without recursion."""
    chain = [top]
    while subdirs := [p for p in chain[-1].iterdir() if p.is_dir()]:
        chain.append(subdirs[0])
    for d in reversed(chain):
        for p in d.iterdir():
            p.unlink()
        d.rmdir()


def test_walk_depth_bound_is_an_error_not_a_recursion(tmp_path: Path) -> None:
    deep = tmp_path
    for _ in range(MAX_TREE_DEPTH + 5):
        deep = deep / "d"
    deep.mkdir(parents=True)
    (deep / "lost.so").write_bytes(b"x")
    try:
        got = list(walk([str(tmp_path)], Skipped()))
    finally:
        _remove_chain(tmp_path / "d")
    assert len(got) == 1 and got[0].explicit and got[0].error is not None
    assert f"nested deeper than {MAX_TREE_DEPTH} levels" in got[0].error
    assert got[0].path.count("/d") == MAX_TREE_DEPTH


def test_cli_tree_1000_deep(tmp_path: Path) -> None:
    """The issue's row: 1,000 nested directories (RecursionError in os.walk before)."""
    deep = tmp_path / "t"
    for i in range(1000):
        deep = deep / "d"
        if i == 100:
            deep.mkdir(parents=True)
            shutil.copy(LIB_V3, deep / "lib.so")
    deep.mkdir(parents=True)
    shutil.copy(LIB_V3, deep / "lost.so")
    try:
        run = run_sfcheck(["check", "-j", "1", "--format", "json", str(tmp_path / "t")],
                          cpu_seconds=30, address_space=1024 * MiB)
    finally:
        _remove_chain(tmp_path / "t")  # shutil.rmtree (pytest's clean-up) recurses
    assert run.status == 2 and "Traceback" not in run.stderr
    files = json.loads(run.stdout)["files"]
    assert [f["path"].endswith("/lib.so") for f in files] == [True, False]
    assert f"nested deeper than {MAX_TREE_DEPTH} levels" in files[1]["error"]


def test_bind_mount_loop_is_an_error_not_a_hang(tmp_path: Path) -> None:
    """A directory bind-mounted inside itself: found by (device, inode), reported, never
    entered again. The mount lives in a private mount namespace (unshare -m) that ends
    with the command."""
    unshare = shutil.which("unshare")
    if unshare is None or os.geteuid() != 0:
        pytest.skip("needs root and unshare(1) (util-linux) for a private bind mount")
    root = tmp_path / "t"
    (root / "a" / "b").mkdir(parents=True)
    shutil.copy(LIB_V3, root / "x.so")
    script = (f"mount --bind {root} {root}/a/b && exec {sys.executable} -m sfcheck -j 1 "
              f"--format json {root}")
    proc = subprocess.run([unshare, "-m", "--propagation", "private", "sh", "-c", script],
                          capture_output=True, text=True, timeout=60,
                          env=dict(os.environ))
    if "mount" in proc.stderr and proc.returncode != 2:
        pytest.skip(f"bind mounts not permitted here: {proc.stderr.strip()}")
    assert proc.returncode == 2, proc.stderr
    files = json.loads(proc.stdout)["files"]
    assert [(f["path"], f["error"]) for f in files] == [
        (str(root / "x.so"), None),
        (str(root / "a" / "b"), "directory loop (a bind mount of an ancestor): not entered again")]


def test_lying_rpm_header_bounded(tmp_path: Path) -> None:
    """Issue 19.3: a 5 MB RPM whose 300,000 index entries claim 2^32-element string arrays
    (what drove a general header parser past 14 GB) costs its own bytes: only the two
    payload tags are looked up, their strings bounded. An input error, exit 2."""
    n = 300_000
    index = b"".join(struct.pack(">IIII", 1000 + i % 97, 8, 0, 0xFFFFFFFF) for i in range(n))
    header = b"\x8e\xad\xe8\x01\0\0\0\0" + struct.pack(">II", n, 16) + index + b"\0" * 16
    lead = b"\xed\xab\xee\xdb" + b"\0" * 92
    signature = b"\x8e\xad\xe8\x01\0\0\0\0" + struct.pack(">II", 0, 0)
    rpm = write(tmp_path, "lying.rpm", lead + signature + header + b"\x1f\x8b")
    assert len(rpm.read_bytes()) > 4 << 20
    run = run_sfcheck(["check", str(rpm)], cpu_seconds=20, address_space=1024 * MiB)
    assert run.status == 2 and "Traceback" not in run.stderr
    assert "rpm archive refused: malformed" in run.stdout


_COMPONENT = st.sampled_from(["a", "b", "lib", ".", "..", "x.so"])


@given(st.lists(st.lists(_COMPONENT, min_size=1, max_size=5), max_size=6),
       st.lists(_COMPONENT, min_size=1, max_size=6))
def test_path_guard_trie_equals_prefix_definition(links: list[list[str]],
                                                  name_parts: list[str]) -> None:
    """The trie check says exactly what the definition says: a member is refused when a
    proper prefix of its normalised path is a symlink member (or when it escapes)."""
    guard = PathGuard()
    kept: set[str] = set()
    for parts in links:
        try:
            guard.symlink("/".join(parts))
        except ArchiveError:
            continue
        norm = os.path.normpath("/".join(parts))
        kept.add("" if norm == "." else norm)
    name = "/".join(name_parts)
    norm = os.path.normpath(name)
    escapes = norm == ".." or norm.startswith("../")
    comps = [] if norm == "." else norm.split("/")
    under = any("/".join(comps[:i]) in kept for i in range(1, len(comps)))
    if escapes or under:
        with pytest.raises(ArchiveError):
            guard.check(name)
    else:
        assert guard.check(name) == ("" if norm == "." else norm)


@given(st.lists(st.text(st.characters(blacklist_characters="\0\n\r"), min_size=1,
                        max_size=30), max_size=20), st.booleans())
def test_path_list_round_trip(paths: list[str], nul: bool) -> None:
    text = ("\0".join(paths) + "\0") if nul else "".join(p + "\n" for p in paths)
    assert read_path_list("-", io.StringIO(text)) == paths
