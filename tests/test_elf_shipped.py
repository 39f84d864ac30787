"""What distros ship: separate debug files, stripped binaries, sstrip'd files, and the
PT_GNU_SFRAME segment the kernel reads (issue 13 item 1, issue 19 item 1).

The inputs are made here from corpus binaries with the system's objcopy/strip, the way
dh_strip and find-debuginfo do it.
"""

from __future__ import annotations

import shutil
import struct
import subprocess
from collections import Counter
from pathlib import Path

import pytest

from sfcheck.checker import Options, check_elf
from sfcheck.elf import PT_GNU_SFRAME, load_elf
from sfcheck.profiles import PROFILE_NAMES
from sfcheck.result import Severity

from helpers import CORPUS, ROOT

LINKED = [CORPUS / "v1" / "exe_pie", CORPUS / "v2" / "libcorpus.so", CORPUS / "v3" / "exe_pie",
          CORPUS / "v3" / "libcorpus.so", CORPUS / "aarch64" / "v3" / "exe_static"]
LINKED = [p for p in LINKED if p.exists()]
IDS = [f"{p.parent.name}/{p.name}" for p in LINKED]


def _tool(name: str, target: Path | None = None) -> str:
    """The binutils tool for the target's machine: the system's for x86-64, the cross
    binutils that corpus/get-toolchains.sh fetches for aarch64."""
    if target is not None and "aarch64" in target.parts:
        cross = ROOT / ".toolchains" / "bin-sid-aarch64" / name
        if not cross.exists():
            pytest.skip(f"no aarch64 {name}: run corpus/get-toolchains.sh")
        return str(cross)
    path = shutil.which(name)
    if path is None:
        pytest.skip(f"{name} not installed (binutils)")
    return path


def _run(*argv: str | Path) -> None:
    subprocess.run([str(a) for a in argv], check=True, capture_output=True)


def _rules(res) -> Counter:
    return Counter((f.rule, f.severity) for f in res.findings)


@pytest.mark.parametrize("path", LINKED, ids=IDS)
@pytest.mark.parametrize("profile", PROFILE_NAMES)
def test_debug_file_says_once_there_is_nothing_to_check(path: Path, profile: str,
                                                        tmp_path: Path) -> None:
    debug = tmp_path / "x.debug"
    _run(_tool("objcopy", path), "--only-keep-debug", path, debug)
    info = load_elf(debug)
    assert info.debug_only and [s.nobits for s in info.sections] == [True]
    res = check_elf(debug, options=Options(profile=profile))
    assert res.error is None
    assert [(f.rule, f.severity) for f in res.findings] == [("elf-no-sframe-data",
                                                              Severity.INFO)]
    assert "SHT_NOBITS" in res.findings[0].message


@pytest.mark.parametrize("path", LINKED, ids=IDS)
@pytest.mark.parametrize("how", ["--strip-debug", "--strip-all", "--strip-unneeded"])
def test_stripped_binary_gets_the_same_findings(path: Path, how: str, tmp_path: Path) -> None:
    out = tmp_path / "stripped"
    _run(_tool("strip", path), how, "-o", out, path)
    before, after = check_elf(path), check_elf(out)
    assert after.error is None
    # Only the names change (a stripped file names code by section): same rules, same
    # counts; strip also trims ld's zero padding off PT_GNU_SFRAME (p_filesz = sh_size).
    padded = ("elf-segment-padded", Severity.INFO)
    assert _rules(after) - Counter([padded]) == _rules(before) - Counter([padded])


def _sstrip(data: bytes) -> bytearray:
    out = bytearray(data)
    struct.pack_into("<Q", out, 0x28, 0)  # e_shoff
    struct.pack_into("<HHH", out, 0x3C, 0, 0, 0)  # e_shentsize, e_shnum, e_shstrndx
    return out


def _phdrs(data: bytes | bytearray) -> list[tuple[int, int, int, int]]:
    """(file offset of the header, p_type, p_offset, p_filesz) of each program header."""
    phoff, = struct.unpack_from("<Q", data, 0x20)
    phentsize, phnum = struct.unpack_from("<HH", data, 0x36)
    out = []
    for i in range(phnum):
        at = phoff + i * phentsize
        p_type, = struct.unpack_from("<I", data, at)
        p_offset, = struct.unpack_from("<Q", data, at + 8)
        p_filesz, = struct.unpack_from("<Q", data, at + 32)
        out.append((at, p_type, p_offset, p_filesz))
    return out


def _sframe_phdr(data: bytes | bytearray) -> tuple[int, int, int, int]:
    return next(p for p in _phdrs(data) if p[1] == PT_GNU_SFRAME)


V3 = CORPUS / "v3" / "libcorpus.so"


def test_sstrip_checks_the_segment_bytes() -> None:
    data = _sstrip(V3.read_bytes())
    res = check_elf(bytes(data))
    assert res.error is None
    (summary,) = res.sections
    _at, _t, offset, filesz = _sframe_phdr(data)
    assert summary.name.startswith("PT_GNU_SFRAME[") and summary.version == 3
    assert summary.num_fdes == check_elf(V3).sections[0].num_fdes
    got = {f.rule: f.severity for f in res.findings}
    assert got["elf-segment-unlisted"] == Severity.INFO
    assert not any(s >= Severity.ERROR for s in got.values())


def test_sstrip_with_garbage_segment_is_an_error() -> None:
    """The issue's case: 'no SFrame section', exit 0, for bytes the kernel would read."""
    data = _sstrip(V3.read_bytes())
    _at, _t, offset, _filesz = _sframe_phdr(data)
    data[offset:offset + 4] = b"\xff\xff\xff\xff"
    res = check_elf(bytes(data))
    assert res.worst() == Severity.ERROR
    assert "header-bad-magic" in {f.rule for f in res.findings}
    assert "elf-no-sframe" not in {f.rule for f in res.findings}


def test_every_pt_gnu_sframe_is_examined(tmp_path: Path) -> None:
    data = bytearray(V3.read_bytes())
    sf_at, _t, offset, filesz = _sframe_phdr(data)
    # Turn the PT_NOTE header into a second PT_GNU_SFRAME pointing 8 bytes further on.
    note_at = next(p[0] for p in _phdrs(data) if p[1] == 4)
    data[note_at:note_at + 56] = data[sf_at:sf_at + 56]
    struct.pack_into("<QQ", data, note_at + 8, offset + 8, 0)  # p_offset, p_vaddr
    res = check_elf(bytes(data))
    got = Counter(f.rule for f in res.findings)
    assert got["elf-segment-multiple"] == 1
    # The second segment matches no section: its bytes are checked on their own.
    assert [s.name.startswith("PT_GNU_SFRAME[") for s in res.sections] == [False, True]
    assert got["header-bad-magic"] == 1
    assert res.worst() == Severity.ERROR


def test_nonzero_tail_in_the_segment_is_a_warning() -> None:
    data = bytearray(V3.read_bytes())
    _at, _t, offset, filesz = _sframe_phdr(data)
    size = load_elf(V3).sections[0].size
    assert filesz > size  # ld pads: the corpus file has a tail
    clean = {f.rule: f.severity for f in check_elf(bytes(data)).findings}
    assert clean["elf-segment-padded"] == Severity.INFO and "elf-segment-tail" not in clean
    data[offset + filesz - 1] = 0x5A
    got = {f.rule: f for f in check_elf(bytes(data)).findings}
    assert got["elf-segment-tail"].severity == Severity.WARNING
    assert "elf-segment-padded" not in got
    assert got["elf-segment-tail"].location.offset == filesz - 1


def test_debug_file_segment_is_not_read_as_data(tmp_path: Path) -> None:
    """--only-keep-debug keeps PT_GNU_SFRAME with p_filesz 0: no segment is checked."""
    debug = tmp_path / "x.debug"
    _run(_tool("objcopy"), "--only-keep-debug", V3, debug)
    _at, _t, _offset, filesz = _sframe_phdr(debug.read_bytes())
    assert filesz == 0
    assert [s.segment for s in load_elf(debug).sections] == [None]
