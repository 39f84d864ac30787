"""Tests for sfcheck.elf: finding SFrame data and its context in ELF files.

Expectations come from independent sources: the system toolchain builds the
files and ``readelf`` (``-S``, ``-l``, ``-h``, ``-r``, ``-x`` and the relocated
dump ``-R``) or ``nm`` says what is in them.  Synthetic files for machines and
byte orders the host toolchain cannot produce are also checked against
``readelf -R``, which applies relocations with its own implementation.
"""

from __future__ import annotations

import bz2
import os
import random
import re
import shutil
import struct
import subprocess
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sfcheck.elf.constants import SHT_GNU_SFRAME
from sfcheck.elf.loader import is_elf, load_elf
from sfcheck.elf.model import ElfSFrameInfo
from sfcheck.errors import ElfError

REPO = Path(__file__).resolve().parent.parent
UPSTREAM = REPO.parent / "shared" / "testdata" / "upstream" / "binutils"

READELF = "/usr/bin/readelf" if os.path.exists("/usr/bin/readelf") else shutil.which("readelf")
GCC = shutil.which("gcc")
NM = shutil.which("nm")
OBJCOPY = shutil.which("objcopy")

LIB_C = """\
int counter;
int add3(int x) { return x + 3 + counter; }
long scale(long a, long b) { counter++; return a * b + add3((int)a); }
void bump(int *p, int n) { for (int i = 0; i < n; i++) p[i] += counter; }
"""

MAIN_C = """\
extern long scale(long, long);
int main(int argc, char **argv) { (void)argv; return (int)scale(argc, 7); }
"""


# --------------------------------------------------------------------------
# tool wrappers and output parsers


def _run(*cmd: str | os.PathLike[str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [os.fspath(c) for c in cmd],
        capture_output=True,
        text=True,
        env={**os.environ, "LC_ALL": "C"},
        check=False,
    )


def readelf(*args: str | os.PathLike[str]) -> str:
    if READELF is None:
        pytest.skip("readelf not installed")
    proc = _run(READELF, *args)
    assert proc.returncode == 0, proc.stderr
    return proc.stdout


# readelf's names for the section types that occur here; anything else it
# prints as LOOS+0x... / LOPROC+0x... / a bare hex number.
_SHT_NAMES = {"NULL": 0, "PROGBITS": 1, "SYMTAB": 2, "STRTAB": 3, "RELA": 4, "HASH": 5,
              "DYNAMIC": 6, "NOTE": 7, "NOBITS": 8, "REL": 9, "DYNSYM": 11,
              "INIT_ARRAY": 14, "FINI_ARRAY": 15, "GROUP": 17, "GNU_HASH": 0x6FFFFFF6,
              "VERNEED": 0x6FFFFFFE, "VERSYM": 0x6FFFFFFF, "VERDEF": 0x6FFFFFFD,
              "X86_64_UNWIND": 0x70000001}


def _readelf_type(text: str) -> int | None:
    m = re.fullmatch(r"(LOOS|LOPROC|LOUSER)\+0x([0-9a-f]+)", text)
    if m:
        base = {"LOOS": 0x60000000, "LOPROC": 0x70000000, "LOUSER": 0x80000000}[m.group(1)]
        return base + int(m.group(2), 16)
    return _SHT_NAMES.get(text)


_SECTION_RE = re.compile(
    r"^\s*\[\s*(\d+)\]\s+(\S+)\s+(\S+)\s+([0-9a-f]+)\s+([0-9a-f]+)\s+([0-9a-f]+)\s+"
    r"([0-9a-f]+)\s+([A-Za-z]*)\s+(\d+)\s+(\d+)\s+(\d+)$"
)


def readelf_sections(path: Path) -> list[dict]:
    """Parse `readelf -S -W` (section 0 has no name and is skipped)."""
    out = []
    for line in readelf("-S", "-W", path).splitlines():
        m = _SECTION_RE.match(line)
        if m:
            out.append({
                "index": int(m.group(1)), "name": m.group(2), "type": m.group(3),
                "type_num": _readelf_type(m.group(3)), "addr": int(m.group(4), 16),
                "offset": int(m.group(5), 16), "size": int(m.group(6), 16),
                "flags": m.group(8), "link": int(m.group(9)), "info": int(m.group(10)),
            })
    return out


_SEGMENT_RE = re.compile(
    r"^\s+(\S+)\s+0x([0-9a-f]+)\s+0x([0-9a-f]+)\s+0x([0-9a-f]+)\s+0x([0-9a-f]+)\s+"
    r"0x([0-9a-f]+)\s+([RWE ]+?)\s+0x([0-9a-f]+)$"
)


def readelf_segments(path: Path) -> list[dict]:
    """Parse `readelf -l -W`; the list position is the program header index."""
    out = []
    for line in readelf("-l", "-W", path).splitlines():
        m = _SEGMENT_RE.match(line)
        if m:
            flags = m.group(7)
            out.append({
                "index": len(out), "type": m.group(1), "offset": int(m.group(2), 16),
                "vaddr": int(m.group(3), 16), "filesz": int(m.group(5), 16),
                "memsz": int(m.group(6), 16),
                "flags": (4 if "R" in flags else 0) | (2 if "W" in flags else 0)
                | (1 if "E" in flags else 0),
            })
    return out


def readelf_dump(path: Path, section: str, relocated: bool = False) -> bytes:
    """Bytes of a section from `readelf -x` (or `-R`, which applies relocations)."""
    out = bytearray()
    for line in readelf("-R" if relocated else "-x", section, path).splitlines():
        # "  0x00000010 09000000 00000000 33000000 e4ffffff ........3......."
        # The hex area is 16 * 2 digits + 4 separating spaces wide.
        m = re.match(r"^\s+0x[0-9a-f]+ (.{1,36})", line)
        if m:
            out += bytes.fromhex(m.group(1).replace(" ", ""))
    return bytes(out)


def readelf_reloc_count(path: Path, section: str) -> int:
    """Number of entries `readelf -r` reports for one relocation section."""
    m = re.search(rf"Relocation section '{re.escape(section)}' at offset 0x[0-9a-f]+ "
                  r"contains (\d+) entr", readelf("-r", "-W", path))
    return int(m.group(1)) if m else 0


def readelf_header(path: Path) -> dict[str, str]:
    fields = {}
    for line in readelf("-h", path).splitlines():
        key, sep, value = line.strip().partition(":")
        if sep:
            fields[key] = value.strip()
    return fields


def sframe_like(info: ElfSFrameInfo) -> list[tuple]:
    return [(s.index, s.name, s.sh_type, s.vma, s.offset, s.size) for s in info.sections]


def readelf_sframe_like(path: Path) -> list[tuple]:
    return [
        (s["index"], s["name"], s["type_num"], s["addr"], s["offset"], s["size"])
        for s in readelf_sections(path)
        if s["name"] == ".sframe" or s["type_num"] == SHT_GNU_SFRAME
    ]


# --------------------------------------------------------------------------
# fixtures: files built once per session


@pytest.fixture(scope="session")
def built(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """A .o, .so and PIE with SFrame v1 (binutils 2.40), plus variants."""
    if GCC is None:
        pytest.skip("gcc not installed")
    if READELF is None:
        pytest.skip("readelf not installed")
    d = tmp_path_factory.mktemp("elf")
    (d / "lib.c").write_text(LIB_C)
    (d / "main.c").write_text(MAIN_C)
    sf = ["-O2", "-Wa,--gsframe"]
    probe = _run(GCC, *sf, "-c", d / "lib.c", "-o", d / "lib.o")
    if probe.returncode != 0:
        pytest.skip(f"gcc/as cannot emit SFrame: {probe.stderr.strip()}")
    builds = {
        "so": [*sf, "-shared", "-fPIC", d / "lib.c", "-o", d / "lib.so"],
        "pie": [*sf, "-fPIE", "-pie", d / "main.c", d / "lib.c", "-o", d / "prog"],
        "nosf_o": [*sf, "-fno-asynchronous-unwind-tables", "-c", d / "lib.c",
                   "-o", d / "nosf.o"],
        "nosf_so": [*sf, "-fno-asynchronous-unwind-tables", "-shared", "-fPIC",
                    d / "lib.c", "-o", d / "nosf.so"],
    }
    for what, args in builds.items():
        proc = _run(GCC, *args)
        assert proc.returncode == 0, f"{what}: {proc.stderr}"
    files = {"o": d / "lib.o", "so": d / "lib.so", "pie": d / "prog",
             "nosf_o": d / "nosf.o", "nosf_so": d / "nosf.so"}
    if OBJCOPY is not None:
        # x32 (ELFCLASS32, EM_X86_64) copy of the object, relocations included.
        proc = _run(OBJCOPY, "-O", "elf32-x86-64", d / "lib.o", d / "lib32.o")
        if proc.returncode == 0:
            files["o32"] = d / "lib32.o"
    return files


@pytest.fixture(scope="session")
def obj_bytes(built: dict[str, Path]) -> bytes:
    return built["o"].read_bytes()


def _need(built: dict[str, Path], kind: str) -> Path:
    if kind not in built:
        pytest.skip(f"{kind} could not be built here (objcopy missing?)")
    return built[kind]


# --------------------------------------------------------------------------
# real files vs readelf


@pytest.mark.parametrize("kind", ["o", "so", "pie", "o32"])
def test_sframe_sections_match_readelf(built: dict[str, Path], kind: str) -> None:
    path = _need(built, kind)
    info = load_elf(path)
    expected = readelf_sframe_like(path)
    assert expected, "the toolchain should have produced a .sframe section"
    assert sframe_like(info) == expected
    for sec in info.sections:
        assert sec.raw_data == readelf_dump(path, sec.name)
        assert len(sec.raw_data) == sec.size
        row = next(s for s in readelf_sections(path) if s["index"] == sec.index)
        assert bool(sec.sh_flags & 0x2) == ("A" in row["flags"])


@pytest.mark.parametrize("kind", ["so", "pie"])
def test_linked_files_are_not_relocated(built: dict[str, Path], kind: str) -> None:
    info = load_elf(built[kind])
    assert len(info.sections) == 1
    assert info.sections[0].relocations == 0
    assert info.sections[0].data == info.sections[0].raw_data


@pytest.mark.parametrize("kind", ["o", "so", "pie", "o32", "nosf_o"])
def test_text_ranges_match_readelf(built: dict[str, Path], kind: str) -> None:
    path = _need(built, kind)
    expected = sorted(
        ((s["addr"], s["addr"] + s["size"], s["name"]) for s in readelf_sections(path)
         if "X" in s["flags"] and "A" in s["flags"] and s["size"] > 0),
    )
    got = [(r.start, r.end, r.name) for r in load_elf(path).text_ranges]
    assert got == expected
    assert any(name == ".text" for _, _, name in got)


@pytest.mark.parametrize("kind", ["o", "so", "pie"])
def test_segments_match_readelf(built: dict[str, Path], kind: str) -> None:
    path = built[kind]
    info = load_elf(path)
    segs = readelf_segments(path)
    keys = ("index", "offset", "vaddr", "filesz", "memsz", "flags")
    assert [tuple(getattr(s, k) for k in keys) for s in info.load_segments] == [
        tuple(s[k] for k in keys) for s in segs if s["type"] == "LOAD"
    ]
    assert [tuple(getattr(s, k) for k in keys) for s in info.sframe_segments] == [
        tuple(s[k] for k in keys) for s in segs if s["type"] == "GNU_SFRAME"
    ]
    if kind != "o":
        # Linked files: one PT_GNU_SFRAME starting where .sframe starts.
        assert len(info.sframe_segments) == 1
        assert info.sframe_segments[0].offset == info.sections[0].offset


@pytest.mark.parametrize("kind", ["o", "so", "pie", "o32"])
def test_header_fields_match_readelf(built: dict[str, Path], kind: str) -> None:
    path = _need(built, kind)
    info = load_elf(path)
    hdr = readelf_header(path)
    assert info.e_type == "ET_" + hdr["Type"].split()[0]
    assert info.elfclass == int(hdr["Class"].removeprefix("ELF"))
    assert info.little_endian == ("little endian" in hdr["Data"])
    assert "X86-64" in hdr["Machine"]
    assert info.e_machine == "EM_X86_64"
    from elftools.elf.enums import ENUM_E_MACHINE  # independent name -> number table

    assert info.machine == ENUM_E_MACHINE["EM_X86_64"]
    assert info.path == os.fspath(path)


def test_bytes_and_path_agree(built: dict[str, Path]) -> None:
    path = built["so"]
    from_path = load_elf(path)
    from_bytes = load_elf(path.read_bytes(), name="lib.so")
    assert from_bytes.path == "lib.so"
    assert load_elf(path.read_bytes()).path == "<bytes>"
    assert from_bytes.sections == from_path.sections
    assert from_bytes.load_segments == from_path.load_segments
    assert from_bytes.text_ranges == from_path.text_ranges


# --------------------------------------------------------------------------
# relocation in the .o


@pytest.mark.parametrize("kind", ["o", "o32"])
def test_relocated_data_matches_readelf_R(built: dict[str, Path], kind: str) -> None:
    path = _need(built, kind)
    (sec,) = load_elf(path).sections
    assert sec.relocations == readelf_reloc_count(path, ".rela.sframe")
    assert sec.relocations > 0
    assert sec.data == readelf_dump(path, ".sframe", relocated=True)
    assert sec.data != sec.raw_data


def test_fde_start_addresses_are_field_relative(built: dict[str, Path]) -> None:
    """After relocation, field + its own offset == the function's .text offset."""
    if NM is None:
        pytest.skip("nm not installed")
    path = built["o"]
    proc = _run(NM, "--defined-only", path)
    assert proc.returncode == 0, proc.stderr
    funcs = sorted(
        int(value, 16)
        for value, kind, _name in (line.split() for line in proc.stdout.splitlines())
        if kind == "T"
    )
    assert len(funcs) == 3  # add3, scale, bump: all in .text (no main here)
    text_funcs = [r for r in readelf("-s", "-W", path).splitlines() if " FUNC " in r]
    assert all(line.split()[6] == "1" for line in text_funcs), "functions not all in .text"
    assert [s["name"] for s in readelf_sections(path) if s["index"] == 1] == [".text"]

    (sec,) = load_elf(path).sections
    assert sec.data[2] == 1, "this check assumes SFrame v1 (binutils 2.40)"
    num_fdes = struct.unpack_from("<I", sec.data, 8)[0]
    assert num_fdes == len(funcs)
    for i, func_offset in enumerate(funcs):
        field = 28 + 17 * i
        (relocated,) = struct.unpack_from("<i", sec.data, field)
        (stored,) = struct.unpack_from("<i", sec.raw_data, field)
        assert relocated + field == func_offset
        assert stored == 0


def test_no_sframe_without_unwind_tables(built: dict[str, Path]) -> None:
    for kind in ("nosf_o", "nosf_so"):
        path = built[kind]
        assert readelf_sframe_like(path) == []
        info = load_elf(path)
        assert info.sections == ()
        assert info.sframe_segments == ()
        assert info.text_ranges  # still a normal file with code


# --------------------------------------------------------------------------
# upstream binutils test files (SFrame v2, SHT_GNU_SFRAME)


def _upstream(tmp_path: Path, kind: str) -> Path:
    src = UPSTREAM / f"x86-64-test-v2-{kind}.sframe.bz2"
    if not UPSTREAM.parent.parent.parent.is_dir():
        pytest.skip("../shared is absent")
    if not src.is_file():
        pytest.skip(f"{src} is absent")
    out = tmp_path / f"{kind}.elf"
    out.write_bytes(bz2.decompress(src.read_bytes()))
    return out


def test_upstream_et_exec(tmp_path: Path) -> None:
    path = _upstream(tmp_path, "ET_EXEC")
    info = load_elf(path)
    assert info.e_type == "ET_EXEC"
    assert len(info.sections) == 1
    sec = info.sections[0]
    assert sec.name == ".sframe" and sec.relocations == 0 and sec.size > 0
    if READELF is not None:
        assert sframe_like(info) == readelf_sframe_like(path)
        assert sec.sh_type == _readelf_type(
            next(s["type"] for s in readelf_sections(path) if s["name"] == ".sframe"))
        assert sec.data == readelf_dump(path, ".sframe")
        gnu = [s for s in readelf_segments(path) if s["type"] == "GNU_SFRAME"]
        assert [(s.offset, s.filesz) for s in info.sframe_segments] == [
            (s["offset"], s["filesz"]) for s in gnu]


def test_upstream_et_rel(tmp_path: Path) -> None:
    path = _upstream(tmp_path, "ET_REL")
    info = load_elf(path)
    assert info.e_type == "ET_REL"
    (sec,) = info.sections
    assert sec.relocations > 0
    assert sec.data != sec.raw_data
    if READELF is not None:
        assert sframe_like(info) == readelf_sframe_like(path)
        assert sec.relocations == readelf_reloc_count(path, ".rela.sframe")
        assert sec.data == readelf_dump(path, ".sframe", relocated=True)
        assert sec.raw_data == readelf_dump(path, ".sframe")


# --------------------------------------------------------------------------
# synthetic relocatable files: other machines, ELF32, big endian, REL


def build_rel_elf(
    *,
    elfclass: int,
    little: bool,
    machine: int,
    relocs: list[tuple[int, int, int, int]],
    rela: bool = True,
    sframe_type: int = SHT_GNU_SFRAME,
    sframe: bytes = bytes(range(0x40, 0x80)),
    text_addr: int = 0,
    sframe_addr: int = 0,
) -> bytes:
    """A minimal ET_REL file: .text, .data, .sframe, .rel[a].sframe, symtab.

    relocs are (r_offset, type, symbol index, addend); for REL the addend is
    stored in place (4 bytes for types marked 32-bit by the caller's width).
    Symbols: 1 = section .text, 2 = section .data, 3 = "fn" at .text+0x20,
    4 = "absv" = 0x1234 (SHN_ABS).
    """
    e = "<" if little else ">"
    is64 = elfclass == 64
    names = ["", ".text", ".data", ".sframe", ".rela.sframe" if rela else ".rel.sframe",
             ".symtab", ".strtab", ".shstrtab"]
    shstrtab = b"\0"
    name_off = []
    for n in names:
        if n:
            name_off.append(len(shstrtab))
            shstrtab += n.encode() + b"\0"
        else:
            name_off.append(0)
    strtab = b"\0fn\0absv\0"
    syms = [(0, 0, 0, 0, 0), (0, 0, 3, 1, 0), (0, 0, 3, 2, 0),
            (1, 0x20, 0x12, 1, 8), (4, 0x1234, 0x10, 0xFFF1, 0)]  # name, value, info, shndx, size
    symtab = b""
    for name, value, info, shndx, size in syms:
        if is64:
            symtab += struct.pack(e + "IBBHQQ", name, info, 0, shndx, value, size)
        else:
            symtab += struct.pack(e + "IIIBBH", name, value, size, info, 0, shndx)
    relsec = b""
    for r_offset, rtype, sym, addend in relocs:
        r_info = (sym << 32 | rtype) if is64 else (sym << 8 | rtype)
        if rela:
            relsec += struct.pack(e + ("QQq" if is64 else "IIi"), r_offset, r_info, addend)
        else:
            relsec += struct.pack(e + ("QQ" if is64 else "II"), r_offset, r_info)
    ent_rel = (24 if rela else 16) if is64 else (12 if rela else 8)
    ent_sym = 24 if is64 else 16
    contents = [b"", b"\x90" * 0x40, b"\0" * 0x10, sframe, relsec, symtab, strtab, shstrtab]
    # (type, flags, addr, link, info, entsize)
    meta = [(0, 0, 0, 0, 0, 0), (1, 6, text_addr, 0, 0, 0), (1, 3, 0, 0, 0, 0),
            (sframe_type, 2, sframe_addr, 0, 0, 0),
            (4 if rela else 9, 0x40, 0, 5, 3, ent_rel), (2, 0, 0, 6, 3, ent_sym),
            (3, 0, 0, 0, 0, 0), (3, 0, 0, 0, 0, 0)]
    ehsize = 64 if is64 else 52
    body = bytearray(b"\0" * ehsize)
    offsets = []
    for c in contents:
        while len(body) % 8:
            body += b"\0"
        offsets.append(len(body) if c else 0)
        body += c
    while len(body) % 8:
        body += b"\0"
    shoff = len(body)
    for i, (stype, flags, addr, link, info, entsize) in enumerate(meta):
        size = len(contents[i])
        fmt = "IIQQQQIIQQ" if is64 else "IIIIIIIIII"
        body += struct.pack(e + fmt, name_off[i], stype, flags, addr, offsets[i], size,
                            link, info, 8 if i else 0, entsize)
    ident = b"\x7fELF" + bytes([2 if is64 else 1, 1 if little else 2, 1]) + b"\0" * 9
    hfmt = "HHIQQQIHHHHHH" if is64 else "HHIIIIIHHHHHH"
    header = ident + struct.pack(e + hfmt, 1, machine, 1, 0, 0, shoff, 0, ehsize, 0, 0,
                                 64 if is64 else 40, len(meta), len(meta) - 1)
    body[:ehsize] = header
    return bytes(body)


EM_S390, EM_X86_64, EM_AARCH64 = 22, 62, 183

AARCH64_RELOCS = [(0x1C, 261, 1, 0x10), (0x20, 260, 3, 4), (0x08, 257, 4, 0), (0x30, 258, 1, 2)]

SYNTHETIC = {
    # name: (elfclass, little, machine, relocs as (offset, type, sym, addend))
    "x86_64-le64": (64, True, EM_X86_64,
                    [(0x1C, 2, 1, 0x10), (0x2D, 2, 3, -4), (0x08, 1, 4, 7), (0x30, 10, 1, 0x20)]),
    "aarch64-le64": (64, True, EM_AARCH64, AARCH64_RELOCS),
    "aarch64-be64": (64, False, EM_AARCH64, AARCH64_RELOCS),
    "s390x-be64": (64, False, EM_S390,
                   [(0x1C, 5, 1, 0x10), (0x20, 23, 3, -8), (0x08, 22, 4, 1), (0x30, 4, 1, 3)]),
    "s390-be32": (32, False, EM_S390, [(0x1C, 5, 1, 0x10), (0x21, 5, 3, 0), (0x30, 4, 4, 3)]),
}


@pytest.mark.parametrize("rela", [True, False], ids=["rela", "rel"])
@pytest.mark.parametrize("case", sorted(SYNTHETIC))
def test_synthetic_relocations_match_readelf(tmp_path: Path, case: str, rela: bool) -> None:
    elfclass, little, machine, relocs = SYNTHETIC[case]
    if not rela:
        relocs = [(o, t, s, 0) for o, t, s, _a in relocs]  # REL: addend is the stored bytes
    data = build_rel_elf(elfclass=elfclass, little=little, machine=machine, relocs=relocs,
                         rela=rela)
    path = tmp_path / f"{case}.o"
    path.write_bytes(data)
    hdr = readelf_header(path)
    info = load_elf(path)
    assert info.elfclass == int(hdr["Class"].removeprefix("ELF"))
    assert info.little_endian == ("little endian" in hdr["Data"])
    assert sframe_like(info) == readelf_sframe_like(path)
    (sec,) = info.sections
    assert sec.sh_type == SHT_GNU_SFRAME
    assert sec.raw_data == readelf_dump(path, ".sframe")
    rel_name = ".rela.sframe" if rela else ".rel.sframe"
    assert sec.relocations == readelf_reloc_count(path, rel_name) == len(relocs)
    proc = _run(READELF, "-R", ".sframe", path)
    assert "unsupported" not in proc.stderr and "unable" not in proc.stderr, proc.stderr
    assert sec.data == readelf_dump(path, ".sframe", relocated=True)
    assert sec.data != sec.raw_data


def test_relocation_uses_section_addresses() -> None:
    """S includes the symbol's section sh_addr and P the .sframe sh_addr.

    readelf -R ignores both (they are 0 in real .o files), so the expected
    values come from the ELF psABI formulas S + A - P and S + A directly.
    """
    text_addr, sframe_addr = 0x400000, 0x600000
    relocs = [(0x10, 2, 3, 5), (0x18, 1, 1, 9), (0x20, 24, 4, 0), (0x28, 0, 0, 0)]
    data = build_rel_elf(elfclass=64, little=True, machine=EM_X86_64, text_addr=text_addr,
                         sframe_addr=sframe_addr, relocs=relocs)
    (sec,) = load_elf(data).sections
    fn = text_addr + 0x20  # symbol 3: .text + 0x20
    assert struct.unpack_from("<i", sec.data, 0x10)[0] == fn + 5 - (sframe_addr + 0x10)
    assert struct.unpack_from("<Q", sec.data, 0x18)[0] == text_addr + 9
    assert struct.unpack_from("<q", sec.data, 0x20)[0] == 0x1234 - (sframe_addr + 0x20)
    assert sec.relocations == 3  # R_X86_64_NONE is not counted
    assert sec.data[0x28:0x30] == sec.raw_data[0x28:0x30]


def test_pcrel_truncates_to_width() -> None:
    """A negative 32-bit result is written as two's complement in 4 bytes."""
    data = build_rel_elf(elfclass=64, little=False, machine=EM_S390, relocs=[(0x30, 5, 0, 0)])
    (sec,) = load_elf(data).sections
    assert sec.data[0x30:0x34] == (-0x30 & 0xFFFFFFFF).to_bytes(4, "big")
    assert sec.data[0x34:] == sec.raw_data[0x34:]


def test_sframe_found_by_type_under_any_name() -> None:
    data = bytearray(build_rel_elf(elfclass=64, little=True, machine=EM_X86_64, relocs=[]))
    data = bytes(data).replace(b".sframe\0", b".sfxxxx\0", 1)
    (sec,) = load_elf(data).sections
    assert sec.name == ".sfxxxx" and sec.sh_type == SHT_GNU_SFRAME
    progbits = build_rel_elf(elfclass=64, little=True, machine=EM_X86_64, relocs=[],
                             sframe_type=1).replace(b".sframe\0", b".sfxxxx\0", 1)
    assert load_elf(progbits).sections == ()


def test_unknown_machine_relocation_is_an_error() -> None:
    data = build_rel_elf(elfclass=64, little=True, machine=243, relocs=[(0x1C, 2, 1, 0)])
    with pytest.raises(ElfError, match=r"relocation 0: unsupported relocation type 2"):
        load_elf(data)


# --------------------------------------------------------------------------
# special cases: zero size, NOBITS, no section headers


def _shdr_offset(data: bytes, index: int) -> int:
    """File offset of ELF64 LE section header `index` (from e_shoff/e_shentsize)."""
    shoff = struct.unpack_from("<Q", data, 0x28)[0]
    shentsize = struct.unpack_from("<H", data, 0x3A)[0]
    return shoff + index * shentsize


def _sframe_row(path: Path) -> dict:
    return next(s for s in readelf_sections(path) if s["name"] == ".sframe")


@pytest.mark.parametrize("kind", ["o", "so"])
def test_zero_size_sframe_via_objcopy(built: dict[str, Path], tmp_path: Path, kind: str) -> None:
    if OBJCOPY is None:
        pytest.skip("objcopy not installed")
    empty = tmp_path / "empty"
    empty.write_bytes(b"")
    out = tmp_path / f"zero.{kind}"
    proc = _run(OBJCOPY, f"--update-section=.sframe={empty}", built[kind], out)
    assert proc.returncode == 0, proc.stderr
    assert _sframe_row(out)["size"] == 0
    (sec,) = load_elf(out).sections
    assert sec.size == 0 and sec.data == b"" and sec.raw_data == b"" and sec.relocations == 0


def test_zero_size_sframe_via_patch(built: dict[str, Path], tmp_path: Path) -> None:
    """sh_size = 0 while .rela.sframe still has entries: still no error."""
    path = built["o"]
    row = _sframe_row(path)
    data = bytearray(path.read_bytes())
    struct.pack_into("<Q", data, _shdr_offset(data, row["index"]) + 0x20, 0)
    out = tmp_path / "zero.o"
    out.write_bytes(data)
    assert _sframe_row(out)["size"] == 0
    (sec,) = load_elf(out).sections
    assert sec.data == b"" and sec.size == 0 and sec.relocations == 0


def test_nobits_sframe_has_no_data(built: dict[str, Path], tmp_path: Path) -> None:
    path = built["so"]
    row = _sframe_row(path)
    data = bytearray(path.read_bytes())
    struct.pack_into("<I", data, _shdr_offset(data, row["index"]) + 4, 8)  # SHT_NOBITS
    out = tmp_path / "nobits.so"
    out.write_bytes(data)
    assert _sframe_row(out)["type"] == "NOBITS"
    info = load_elf(out)
    sec, seg = info.sections
    assert sec.size == row["size"] > 0 and sec.data == b"" and sec.nobits
    # The loader still maps PT_GNU_SFRAME's bytes: with no section holding them, the
    # segment itself is what gets checked.
    (phdr,) = info.sframe_segments
    assert seg.segment == phdr.index and seg.name == f"PT_GNU_SFRAME[{phdr.index}]"
    assert seg.data == data[phdr.offset : phdr.offset + phdr.filesz]
    assert not info.debug_only


def test_no_section_headers_falls_back_to_pt_load(built: dict[str, Path], tmp_path: Path) -> None:
    path = built["pie"]
    data = bytearray(path.read_bytes())
    struct.pack_into("<Q", data, 0x28, 0)  # e_shoff
    struct.pack_into("<HH", data, 0x3C, 0, 0)  # e_shnum, e_shstrndx
    out = tmp_path / "noshdr"
    out.write_bytes(data)
    assert "There are no sections" in readelf("-S", "-W", out)
    info = load_elf(out)
    # The segment's bytes stand in for the missing section header (what the kernel reads).
    (seg,) = info.sframe_segments
    (sec,) = info.sections
    assert (sec.segment, sec.offset, sec.vma, sec.size) == (seg.index, seg.offset, seg.vaddr,
                                                            seg.filesz)
    assert sec.data == data[seg.offset : seg.offset + seg.filesz]
    exec_loads = [s for s in readelf_segments(out) if s["type"] == "LOAD" and s["flags"] & 1]
    assert exec_loads
    assert [(r.name, r.start, r.end) for r in info.text_ranges] == [
        (f"PT_LOAD[{s['index']}]", s["vaddr"], s["vaddr"] + s["memsz"]) for s in exec_loads
    ]
    assert len(info.sframe_segments) == 1


# --------------------------------------------------------------------------
# hostile input: always ElfError


def _patched(data: bytes, offset: int, fmt: str, *values: int) -> bytes:
    out = bytearray(data)
    struct.pack_into(fmt, out, offset, *values)
    return bytes(out)


def test_is_elf(built: dict[str, Path], tmp_path: Path) -> None:
    assert is_elf(built["o"])
    assert is_elf(os.fspath(built["o"]))
    assert is_elf(built["o"].read_bytes())
    assert not is_elf(b"")
    assert not is_elf(b"\x7fEL")
    assert not is_elf(b"MZ\x90\x00")
    assert not is_elf(tmp_path / "missing")
    (tmp_path / "c.c").write_text(LIB_C)
    assert not is_elf(tmp_path / "c.c")


def test_not_elf(tmp_path: Path) -> None:
    with pytest.raises(ElfError, match="not an ELF file") as exc:
        load_elf(b"")
    assert exc.value.message == "not an ELF file"
    src = tmp_path / "x.c"
    src.write_text(LIB_C)
    with pytest.raises(ElfError, match="not an ELF file") as exc:
        load_elf(src)
    assert exc.value.path == os.fspath(src)
    with pytest.raises(ElfError):
        load_elf(tmp_path / "missing.o")


def test_random_bytes() -> None:
    rng = random.Random(1234)
    for n in (1, 4, 16, 63, 64, 65, 500, 4096):
        blob = rng.randbytes(n)
        with pytest.raises(ElfError):
            load_elf(blob)
        with pytest.raises(ElfError):
            load_elf(b"\x7fELF" + blob)  # magic, then garbage


@pytest.mark.parametrize("length", range(0, 65))
def test_truncated_header(obj_bytes: bytes, length: int) -> None:
    with pytest.raises(ElfError) as exc:
        load_elf(obj_bytes[:length])
    if length < 4:
        assert exc.value.message == "not an ELF file"
    elif 5 <= length < 64:
        assert exc.value.message.startswith("cannot parse ELF: file too short for the ELF header")
    else:
        assert exc.value.message.startswith("cannot parse ELF")


def test_bad_ei_class(obj_bytes: bytes) -> None:
    with pytest.raises(ElfError, match="cannot parse ELF: invalid EI_CLASS"):
        load_elf(obj_bytes[:4] + b"\x07" + obj_bytes[5:])


def test_bad_ei_data(obj_bytes: bytes) -> None:
    with pytest.raises(ElfError, match="cannot parse ELF: invalid EI_DATA"):
        load_elf(obj_bytes[:5] + b"\x03" + obj_bytes[6:])


def test_header_fields_match_pyelftools() -> None:
    """The ELF header is read by hand (no pyelftools import per run): same answers."""
    import io

    from elftools.elf.elffile import ELFFile

    files = [p for p in sorted((REPO / "corpus").rglob("*")) if p.is_file()
             and p.read_bytes()[:4] == b"\x7fELF"]
    assert len(files) > 50
    for p in files:
        data = p.read_bytes()
        ref = ELFFile(io.BytesIO(data))
        info = load_elf(data, str(p))
        assert (info.e_type, info.e_machine) == (ref["e_type"], ref["e_machine"]), p
        assert (info.elfclass, info.little_endian) == (ref.elfclass, ref.little_endian), p


def test_shoff_past_eof(obj_bytes: bytes) -> None:
    bad = _patched(obj_bytes, 0x28, "<Q", len(obj_bytes) + 0x1000)
    with pytest.raises(ElfError, match="cannot parse ELF: section header table"):
        load_elf(bad)
    with pytest.raises(ElfError, match="cannot parse ELF"):
        load_elf(_patched(obj_bytes, 0x28, "<Q", 2**64 - 1))


def test_shnum_huge(obj_bytes: bytes) -> None:
    with pytest.raises(ElfError, match=r"runs past end of file"):
        load_elf(_patched(obj_bytes, 0x3C, "<H", 0xFFF0))


def test_shentsize_too_small(obj_bytes: bytes) -> None:
    with pytest.raises(ElfError, match="cannot parse ELF"):
        load_elf(_patched(obj_bytes, 0x3A, "<H", 8))


def test_bad_shstrndx(obj_bytes: bytes) -> None:
    with pytest.raises(ElfError, match="cannot parse ELF: e_shstrndx"):
        load_elf(_patched(obj_bytes, 0x3E, "<H", 0xFEFF))


def test_section_name_table_past_eof(obj_bytes: bytes) -> None:
    shstrndx = struct.unpack_from("<H", obj_bytes, 0x3E)[0]
    bad = _patched(obj_bytes, _shdr_offset(obj_bytes, shstrndx) + 0x18, "<Q", len(obj_bytes))
    with pytest.raises(ElfError, match="cannot parse ELF: section name table .* past end of file"):
        load_elf(bad)


def test_section_name_outside_string_table(built: dict[str, Path]) -> None:
    data = built["o"].read_bytes()
    row = _sframe_row(built["o"])
    bad = _patched(data, _shdr_offset(data, row["index"]), "<I", 0xFFFFFF)
    with pytest.raises(ElfError, match="cannot parse ELF: section .* name offset"):
        load_elf(bad)


@pytest.mark.parametrize("kind", ["o", "so"])
def test_sframe_size_past_eof(built: dict[str, Path], kind: str) -> None:
    data = built[kind].read_bytes()
    row = _sframe_row(built[kind])
    size = len(data) - row["offset"] + 1
    bad = _patched(data, _shdr_offset(data, row["index"]) + 0x20, "<Q", size)
    with pytest.raises(ElfError) as exc:
        load_elf(bad, name="bad")
    msg = exc.value.message
    assert ".sframe" in msg and "past end of file" in msg
    assert f"{row['offset']:#x}" in msg and f"{size:#x}" in msg and f"{len(data):#x}" in msg
    assert str(exc.value).startswith("bad: ")
    huge = _patched(data, _shdr_offset(data, row["index"]) + 0x20, "<Q", 2**63)
    with pytest.raises(ElfError, match="past end of file"):
        load_elf(huge)


def _rela_entry0(built: dict[str, Path]) -> tuple[bytes, int]:
    """The .o's bytes and the file offset of the first .rela.sframe entry."""
    rel = next(s for s in readelf_sections(built["o"]) if s["name"] == ".rela.sframe")
    return built["o"].read_bytes(), rel["offset"]


def test_relocation_offset_outside_section(built: dict[str, Path]) -> None:
    data, off = _rela_entry0(built)
    bad = _patched(data, off, "<Q", _sframe_row(built["o"])["size"] - 2)
    with pytest.raises(ElfError, match=r"relocation 0 \(R_X86_64_PC32\).*outside section"):
        load_elf(bad)
    with pytest.raises(ElfError, match=r"relocation 0 \(R_X86_64_PC32\)"):
        load_elf(_patched(data, off, "<Q", 2**64 - 1))


def test_relocation_unknown_type(built: dict[str, Path]) -> None:
    data, off = _rela_entry0(built)
    sym = struct.unpack_from("<Q", data, off + 8)[0] >> 32
    bad = _patched(data, off + 8, "<Q", sym << 32 | 0x99)
    with pytest.raises(ElfError, match=r"relocation 0: unsupported relocation type 153"):
        load_elf(bad)


def test_relocation_bad_symbol(built: dict[str, Path]) -> None:
    data, off = _rela_entry0(built)
    bad = _patched(data, off + 8, "<Q", 0xFFFF << 32 | 2)
    with pytest.raises(ElfError, match=r"relocation 0 \(R_X86_64_PC32\): bad symbol index 65535"):
        load_elf(bad)


def test_relocation_section_past_eof(built: dict[str, Path]) -> None:
    data = built["o"].read_bytes()
    rel = next(s for s in readelf_sections(built["o"]) if s["name"] == ".rela.sframe")
    bad = _patched(data, _shdr_offset(data, rel["index"]) + 0x20, "<Q", 24 * 10**6)
    with pytest.raises(ElfError, match=r"\.rela\.sframe.*past end of file"):
        load_elf(bad)


def _mutation_targets(data: bytes) -> list[int]:
    """Byte offsets worth mutating: ELF header and the section header table."""
    shoff = struct.unpack_from("<Q", data, 0x28)[0]
    return list(range(64)) + list(range(shoff, len(data)))


@settings(deadline=None, max_examples=200, database=None,
          suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_mutated_elf_never_crashes(obj_bytes: bytes, data: st.DataObject) -> None:
    blob = bytearray(obj_bytes)
    hot = _mutation_targets(obj_bytes)
    position = st.one_of(st.sampled_from(hot), st.integers(0, len(blob) - 1))
    edits = data.draw(st.lists(st.tuples(position, st.integers(0, 255)), min_size=1,
                               max_size=12))
    for pos, value in edits:
        blob[pos] = value
    cut = data.draw(st.one_of(st.none(), st.integers(0, len(blob))))
    if cut is not None:
        del blob[cut:]
    try:
        info = load_elf(bytes(blob))
    except ElfError:
        return
    assert isinstance(info, ElfSFrameInfo)
    for sec in info.sections:
        assert len(sec.data) == len(sec.raw_data) <= len(blob)

