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
from sfcheck.elf.constants import PT_GNU_SFRAME
from sfcheck.elf.loader import is_elf, load_elf
from sfcheck.profiles import LISTED
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
@pytest.mark.parametrize("profile", [p.name for p in LISTED])  # aliases once
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
    # Turn the PT_NOTE header into a second PT_GNU_SFRAME 8 bytes further on.
    note_at = next(p[0] for p in _phdrs(data) if p[1] == 4)
    data[note_at:note_at + 56] = data[sf_at:sf_at + 56]
    vaddr, = struct.unpack_from("<Q", data, sf_at + 16)
    struct.pack_into("<QQ", data, note_at + 8, offset + 8, vaddr + 8)  # p_offset, p_vaddr
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


# --------------------------------------------------------------------------
# how the bytes arrive: path (mapped), bytes, memoryview, mmap; never a non-regular file


def test_every_buffer_kind_gives_the_same_result(tmp_path: Path) -> None:
    import mmap

    want = check_elf(V3)
    data = V3.read_bytes()
    with open(V3, "rb") as f, mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as m:
        got = [check_elf(data, path=str(V3)), check_elf(memoryview(data), path=str(V3)),
               check_elf(bytearray(data), path=str(V3)), check_elf(m, path=str(V3))]
        assert not m.closed  # a caller's map stays the caller's
    for res in got:
        assert res.findings == want.findings and res.sections == want.sections


def test_a_big_buffer_is_not_copied() -> None:
    """An ELF at the start of a 64 MiB buffer: only its parts are copied out."""
    import tracemalloc

    big = bytearray(64 << 20)
    data = V3.read_bytes()
    big[:len(data)] = data
    view = memoryview(big)
    tracemalloc.start()
    try:
        res = check_elf(view)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert res.error is None and res.sections
    assert peak < 16 << 20, peak


def test_non_regular_files_are_refused(tmp_path: Path) -> None:
    import os

    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    for path in (fifo, Path("/dev/zero"), tmp_path):
        res = check_elf(path)
        assert res.error is not None and "not a regular file" in res.error
        assert "\n" not in res.error
    assert not is_elf(fifo) and not is_elf("/dev/zero")


@pytest.mark.parametrize("argv", [["dump"], ["dump", "--raw"], ["check", "--raw"], ["check"]])
def test_cli_refuses_devices_in_one_line(argv: list[str], tmp_path: Path) -> None:
    import os
    import sys

    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    for target in ("/dev/zero", str(fifo)):
        proc = subprocess.run([sys.executable, "-m", "sfcheck", *argv, target],
                              capture_output=True, text=True, timeout=60, cwd=ROOT,
                              env=dict(os.environ))
        assert proc.returncode == 2, proc.stderr
        out = (proc.stdout + proc.stderr).strip()
        assert "not a regular file" in out and "Traceback" not in out
        assert len([line for line in out.splitlines() if target in line]) == 1


def test_raw_empty_input_is_a_truncated_section(tmp_path: Path) -> None:
    from sfcheck.checker import check_section_bytes

    res = check_section_bytes(b"", raw=True)
    assert [(f.rule, f.severity) for f in res.findings] == [("header-too-short",
                                                              Severity.ERROR)]
    # Inside an object a zero-size .sframe is what some assemblers leave: a warning.
    assert [(f.rule, f.severity) for f in check_section_bytes(b"").findings] == [
        ("elf-empty-sframe", Severity.WARNING)]


def test_segment_bytes_are_read_where_the_loader_maps_them() -> None:
    """The kernel reads PT_GNU_SFRAME at p_vaddr in memory: a p_offset pointing elsewhere
    does not change what is checked (here: the real section, through its PT_LOAD)."""
    data = _sstrip(V3.read_bytes())
    sf_at, _t, offset, _filesz = _sframe_phdr(data)
    struct.pack_into("<Q", data, sf_at + 8, 0)  # p_offset 0: the ELF header
    (sec,) = load_elf(bytes(data)).sections
    real = load_elf(V3).sections[0].data
    assert sec.offset == offset and sec.data[:len(real)] == real
    # ... and when p_vaddr moves, the bytes there are what gets checked.
    vaddr, = struct.unpack_from("<Q", data, sf_at + 16)
    struct.pack_into("<Q", data, sf_at + 16, vaddr + 8)
    res = check_elf(bytes(data))
    assert "header-bad-magic" in {f.rule for f in res.findings}


# --------------------------------------------------------------------------
# defect-ld-stubs-only: SFrame for the linker's PLT stubs and nothing else

STUBS_ONLY = ["bad/ld240_v2obj_plt.so", "bad/ld244_v3obj_plt.so", "bad/ld247_v2obj_plt.so",
              "bad/ld247_llvmobj_plt.so"]


@pytest.mark.parametrize("name", STUBS_ONLY)
def test_linker_that_dropped_the_objects_sframe(name: str) -> None:
    """Each was linked by an ld of another SFrame version than its objects (corpus/bad
    BUILD.log): only ld's own .plt FDEs are left."""
    res = check_elf(CORPUS / name)
    (hit,) = [f for f in res.findings if f.rule == "defect-ld-stubs-only"]
    assert hit.severity == Severity.WARNING and ".text" in hit.message


def test_stubs_only_from_a_real_mixed_link(tmp_path: Path) -> None:
    """The system's ld 2.40 given a v3 object: 'no .sframe will be created', yet a v1
    section with the PLT FDEs (seen rebuilding libffi, whose libtool link drops -B)."""
    gcc = shutil.which("gcc")
    if gcc is None:
        pytest.skip("gcc not installed")
    out = tmp_path / "mix.so"
    proc = subprocess.run([gcc, "-shared", "-o", str(out), str(CORPUS / "v3" / "lib.o")],
                          capture_output=True, text=True)
    if proc.returncode or "no .sframe will be created" not in proc.stderr:
        pytest.skip(f"the system ld is not the 2.40 this case needs: {proc.stderr[:200]}")
    rules = {f.rule for f in check_elf(out).findings}
    assert "defect-ld-stubs-only" in rules


SANE_LINKS = sorted(
    p for d in ("v1", "v2", "v3", "llvm", "aarch64/v1", "aarch64/v3", "s390x/v3")
    for p in (CORPUS / d).glob("*")
    if p.is_file() and p.suffix in ("", ".so") and p.read_bytes()[:4] == b"\x7fELF")


@pytest.mark.parametrize("path", SANE_LINKS, ids=lambda p: str(p.relative_to(CORPUS)))
def test_stubs_only_silent_on_sane_links(path: Path) -> None:
    assert "defect-ld-stubs-only" not in {f.rule for f in check_elf(path).findings}


def test_file_level_findings_once_when_the_first_section_has_no_bytes(tmp_path: Path) -> None:
    """A NOBITS .sframe first, then the segment's bytes as a section of their own: the
    file-level rules (here: two PT_GNU_SFRAME) report once."""
    data = bytearray(V3.read_bytes())
    with open(V3, "rb") as f:
        from elftools.elf.elffile import ELFFile
        elf = ELFFile(f)
        index = next(i for i, s in enumerate(elf.iter_sections()) if s.name == ".sframe")
        at = elf["e_shoff"] + index * elf["e_shentsize"]
    struct.pack_into("<I", data, at + 4, 8)  # SHT_NOBITS
    sf_at, _t, _offset, _filesz = _sframe_phdr(data)
    note_at = next(p[0] for p in _phdrs(data) if p[1] == 4)
    data[note_at:note_at + 56] = data[sf_at:sf_at + 56]
    res = check_elf(bytes(data))
    assert [s.name.startswith("PT_GNU_SFRAME[") for s in res.sections] == [False, True, True]
    assert Counter(f.rule for f in res.findings)["elf-segment-multiple"] == 1
