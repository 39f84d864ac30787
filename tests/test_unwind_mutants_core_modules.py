"""The modules a core maps, their bias, tables, errors and symbols, and where their paths are
read from (issue 29's unwind-core survivors): load_modules' list whole, the executable's bias
from AT_ENTRY, `name@plt` symbols where objdump puts them, and the sysroot's confinement.

Expected values come from the builders (tests/unwind_build.py), the corpus files' own headers,
and binutils' objdump (tests needing it or gcc skip without them)."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest
from elftools.elf.elffile import ELFFile

from sfcheck.elf.loader import load_elf
from sfcheck.errors import SfcheckError
from sfcheck.unwind import sysroot
from sfcheck.unwind.core import CoreFile
from sfcheck.unwind.modules import (
    Module,
    Symbols,
    _entry_bias,
    _plt_symbols,
    exe_mapping_path,
    load_modules,
)
from sfcheck.unwind.sysroot import PathResolver, Refused, confine

from unwind_build import auxv, core_bytes, nt_file, prstatus

ROOT = Path(__file__).resolve().parents[1]
PIE = ROOT / "corpus" / "v2" / "exe_pie"
LIB = ROOT / "corpus" / "v2" / "libcorpus.so"
BIAS = 0x555555554000
LIB_BIAS = 0x7F0000000000
STACK = 0x7FFF00000000


def _entry(path: Path) -> int:
    with open(path, "rb") as f:
        return ELFFile(f)["e_entry"]


def _maps(path: Path, bias: int) -> list[tuple[int, int, int, str]]:
    """The PT_LOADs of `path` mapped at `bias`, page-aligned, as the kernel maps them."""
    return [(bias + s.vaddr - s.vaddr % 4096, bias + (s.vaddr + s.memsz + 4095) // 4096 * 4096,
             s.offset - s.offset % 4096, str(path)) for s in load_elf(path).load_segments]


def _core(maps: list[tuple[int, int, int, str]], entry: int | None = BIAS,
          resolver: object = None) -> CoreFile:
    notes = prstatus(1, 0x1000, STACK) + (nt_file(maps) if maps else b"")
    if entry is not None:
        notes += auxv({9: entry + _entry(PIE)})
    return CoreFile.parse(core_bytes(notes, [(STACK, bytes(64))]), path_resolver=resolver)


def _objdump_plt(path: Path) -> list[tuple[int, str]]:
    objdump = shutil.which("objdump")
    if objdump is None:
        pytest.skip("objdump (binutils) is needed for the PLT names")
    out = subprocess.run([objdump, "-d", "-j", ".plt", "-j", ".plt.sec", str(path)],
                         capture_output=True, text=True, check=True).stdout
    return [(int(a, 16), n) for a, n in re.findall(r"^([0-9a-f]+) <(\S+@plt)>:", out, re.M)]


# -- symbols -------------------------------------------------------------------------------


@pytest.mark.parametrize("path", [PIE, LIB])
def test_plt_symbols_where_objdump_puts_them(path: Path) -> None:
    """Each .rela.plt entry's `name@plt` at its .plt entry after PLT0, the last one ending
    exactly at the section's end; .plt.got's entries are not from .rela.plt."""
    want = [(a, n) for a, n in _objdump_plt(path)]
    with open(path, "rb") as f:
        elf = ELFFile(f)
        plt = elf.get_section_by_name(".plt")
        got = _plt_symbols(elf)
    assert [(a, s, n) for a, s, n in got] == [(a, 16, n) for a, n in want]
    assert got[-1][0] + 16 == plt["sh_addr"] + plt["sh_size"]
    syms = Symbols.load(str(path))
    for addr, name in want:
        assert syms.find(addr + 15) == (name, 15)


def test_plt_shorter_than_its_relocations(tmp_path: Path) -> None:
    """A .plt one entry short of .rela.plt (a damaged file): the entries it holds are
    named, the relocation without one is not."""
    want = _objdump_plt(PIE)
    blob = bytearray(PIE.read_bytes())
    with open(PIE, "rb") as f:
        elf = ELFFile(f)
        index = next(i for i, sec in enumerate(elf.iter_sections()) if sec.name == ".plt")
        at = elf["e_shoff"] + index * elf["e_shentsize"] + 32  # sh_size
        size = elf.get_section(index)["sh_size"]
    blob[at:at + 8] = (size - 16).to_bytes(8, "little")
    short = tmp_path / "short"
    short.write_bytes(bytes(blob))
    with open(short, "rb") as f:
        got = _plt_symbols(ELFFile(f))
    assert [(a, n) for a, _s, n in got] == want[:-1]


def test_plt_sec_symbols(tmp_path: Path) -> None:
    """With IBT's .plt.sec, the entries are its own, from its first byte."""
    gcc = shutil.which("gcc")
    if gcc is None:
        pytest.skip("gcc is needed to link a program with .plt.sec")
    src = tmp_path / "p.c"
    src.write_text('int puts(const char *);\nint abs(int);\n'
                   'int main(void) { puts("x"); return abs(-1); }\n')
    exe = tmp_path / "p"
    res = subprocess.run([gcc, "-fcf-protection=full", "-Wl,-z,ibtplt", "-o", str(exe), str(src)],
                         capture_output=True, text=True)
    if res.returncode != 0:
        pytest.skip(f"gcc cannot link with -z ibtplt: {res.stderr[-200:]}")
    want = _objdump_plt(exe)
    with open(exe, "rb") as f:
        elf = ELFFile(f)
        if elf.get_section_by_name(".plt.sec") is None:
            pytest.skip("the linker made no .plt.sec")
        sec = elf.get_section_by_name(".plt.sec")
        got = _plt_symbols(elf)
    names = {n for _a, n in want if n != "__cxa_finalize@plt"}
    assert {n for _a, _s, n in got} == names and names
    assert [(a, n) for a, _s, n in got] == [(a, n) for a, n in want if n in names]
    assert min(a for a, _s, _n in got) == sec["sh_addr"]


def test_plt_symbols_only_on_x86_64() -> None:
    aarch64 = next((p for p in sorted((ROOT / "corpus" / "aarch64").rglob("*"))
                    if p.is_file() and p.read_bytes()[:4] == b"\x7fELF"
                    and p.read_bytes()[18] == 183), None)
    if aarch64 is None:
        pytest.skip("no aarch64 ELF file in corpus/aarch64")
    with open(aarch64, "rb") as f:
        assert _plt_symbols(ELFFile(f)) == []


def test_symbols_of_pie_from_symtab() -> None:
    with open(PIE, "rb") as f:
        symtab = ELFFile(f).get_section_by_name(".symtab")
        funcs = {s.name: (s["st_value"], s["st_size"]) for s in symtab.iter_symbols()
                 if s["st_info"]["type"] == "STT_FUNC" and s["st_value"] and s.name}
    syms = Symbols.load(str(PIE))
    assert syms.changed is None
    for start, size in funcs.values():
        got = syms.find(start)
        assert got is not None and got[1] == 0 and funcs[got[0]][0] == start
        if size:
            assert syms.find(start + size - 1)[1] == size - 1
    main = funcs["main"][0]
    assert syms.find(main) == ("main", 0)
    assert syms.find(0x10) is None  # undefined symbols (value 0) are not functions at 0
    with open(PIE, "rb") as f:
        objects = [(s.name, s["st_value"]) for s in ELFFile(f).get_section_by_name(".symtab")
                   .iter_symbols() if s["st_info"]["type"] == "STT_OBJECT" and s["st_value"]]
    assert objects
    for name, addr in objects:  # data, not functions: never a frame's name
        got = syms.find(addr)
        assert got is None or got[0] != name, (name, got)


def _patched(tmp_path: Path, path: Path, section: str, field: int, value: bytes) -> Path:
    """A copy of `path` with `value` written over byte `field` of `section`'s header."""
    blob = bytearray(path.read_bytes())
    with open(path, "rb") as f:
        elf = ELFFile(f)
        index = next(i for i, sec in enumerate(elf.iter_sections()) if sec.name == section)
        at = elf["e_shoff"] + index * elf["e_shentsize"] + field
    blob[at:at + len(value)] = value
    out = tmp_path / f"{path.name}-{section}-{field}"
    out.write_bytes(bytes(blob))
    return out


def test_symtab_of_another_type_leaves_dynsym(tmp_path: Path) -> None:
    """A `.symtab` that is not a symbol table (sh_type PROGBITS): .dynsym and the PLT are
    still read."""
    lib = _patched(tmp_path, LIB, ".symtab", 4, (1).to_bytes(4, "little"))
    with open(lib, "rb") as f:
        dyn = {s.name: s["st_value"] for s in ELFFile(f).get_section_by_name(".dynsym")
               .iter_symbols() if s["st_info"]["type"] == "STT_FUNC" and s["st_value"]}
    syms = Symbols.load(str(lib))
    assert dyn and all(syms.find(a) == (n, 0) for n, a in dyn.items())
    plt = _objdump_plt(LIB)
    assert all(syms.find(a) == (n, 0) for a, n in plt)


@pytest.mark.parametrize("section, field, value", [
    (".rela.plt", 0, None),  # renamed away: no .rela.plt
    (".plt", 0, None),  # no .plt
    (".rela.plt", 4, (1).to_bytes(4, "little")),  # not a relocation section
])
def test_plt_symbols_need_every_part(tmp_path: Path, section: str, field: int,
                                     value: bytes | None) -> None:
    if value is None:  # point sh_name at another name: ".plt" -> "plt", ".rela.plt" -> "la.plt"
        with open(PIE, "rb") as f:
            elf = ELFFile(f)
            sec = elf.get_section_by_name(section)
            skip = 1 if section == ".plt" else 3
            value = (sec["sh_name"] + skip).to_bytes(4, "little")
    path = _patched(tmp_path, PIE, section, field, value)
    with open(path, "rb") as f:
        assert _plt_symbols(ELFFile(f)) == []


def test_symbols_of_a_stripped_library(tmp_path: Path) -> None:
    """No .symtab: the exported functions come from .dynsym."""
    objcopy = shutil.which("objcopy")
    if objcopy is None:
        pytest.skip("objcopy (binutils) is needed to strip a library")
    stripped = tmp_path / "lib.so"
    subprocess.run([objcopy, "--strip-all", str(LIB), str(stripped)], check=True)
    with open(stripped, "rb") as f:
        elf = ELFFile(f)
        assert elf.get_section_by_name(".symtab") is None
        dyn = {s.name: s["st_value"] for s in elf.get_section_by_name(".dynsym").iter_symbols()
               if s["st_info"]["type"] == "STT_FUNC" and s["st_value"]}
    assert "corpus_ping" in dyn
    syms = Symbols.load(str(stripped))
    for name, addr in dyn.items():
        assert syms.find(addr) == (name, 0)


def test_symbols_of_a_file_that_changed_while_read(tmp_path: Path,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    """The file shrank while its symbols were read: no symbols, the reason kept, and the
    module notes the file as unreadable (once)."""
    from sfcheck import fileio
    from sfcheck.unwind import modules

    def changed(_stream: object) -> None:
        raise fileio.FileChangedError("changed while read: 10 bytes when first read", "x")

    monkeypatch.setattr(modules, "ELFFile", changed)
    syms = Symbols.load(str(PIE))
    assert syms.changed == "changed while read: 10 bytes when first read"
    assert syms.find(0x2000) is None
    unreadable: dict[str, str] = {"/other": "why"}
    mod = Module("/p", str(PIE), BIAS, BIAS + 0x5000, bias=BIAS, unreadable=unreadable)
    assert mod.symbolize(BIAS + 0x1200) is None
    assert unreadable == {"/other": "why",
                          "/p": "changed while read: 10 bytes when first read"}
    assert Module("/q", str(PIE), 0, 0, bias=0).symbolize(0x1200) is None  # nowhere to note


def test_symbols_of_unreadable_or_broken_files(tmp_path: Path) -> None:
    junk = tmp_path / "junk"
    junk.write_bytes(b"\x7fELF" + bytes(60))
    for path in (tmp_path / "missing", tmp_path, junk):
        syms = Symbols.load(str(path))
        assert syms.find(0x1000) is None and syms.changed is None


def test_symbols_find_sized_aliases_and_nearest() -> None:
    syms = Symbols([(0x200, 0x10, "b"), (0x100, 0x20, "a"), (0x300, 0, "c"),
                    (0x100, 0, "a_alias")])
    assert syms.find(0x100) == ("a", 0) and syms.find(0x11F) == ("a", 0x1F)
    assert syms.find(0x120) is None  # past a's end, below b
    assert syms.find(0x20F) == ("b", 0xF) and syms.find(0x210) is None
    assert syms.find(0x300) == ("c", 0) and syms.find(0x5000) == ("c", 0x4D00)
    assert syms.find(0xFF) is None
    # a sized symbol is looked for up to 7 entries back (small ones inside it, not
    # covering the address); 8 back it is not
    many = [(0x1000, 0x100, "f")] + [(0x1000 + k, 1, f"z{k}") for k in range(1, 8)]
    assert Symbols(list(many)).find(0x1050) == ("f", 0x50)
    more = many + [(0x1008, 1, "z8")]
    assert Symbols(more).find(0x1050) is None  # eight back: no longer looked at
    assert Symbols([]).find(0) is None


def test_module_symbolize_at_its_bias(tmp_path: Path) -> None:
    mod = Module("/p", str(PIE), BIAS, BIAS + 0x5000, bias=BIAS)
    with open(PIE, "rb") as f:
        main = next(s["st_value"] for s in ELFFile(f).get_section_by_name(".symtab")
                    .iter_symbols() if s.name == "main")
    assert mod.symbolize(BIAS + main + 3) == ("main", 3)
    assert Module("/p", str(PIE), 0, 0).symbolize(main) is None  # no bias: no name
    assert Module("/p", None, 0, 0, bias=0).symbolize(main) is None


# -- the executable's bias -----------------------------------------------------------------


def _head(tmp_path: Path, entry: int, cls: int = 2, data: int = 1, magic: bytes = b"\x7fELF",
          size: int = 32) -> str:
    order = "little" if data == 1 else "big"
    head = magic + bytes([cls, data]) + bytes(18) + entry.to_bytes(8, order)
    p = tmp_path / f"h{cls}{data}{size}"
    p.write_bytes(head[:size])
    return str(p)


def test_entry_bias_from_the_header(tmp_path: Path) -> None:
    core = _core([], entry=None)
    core.auxv[9] = 0x555000
    assert _entry_bias(core, _head(tmp_path, 0x1000)) == 0x554000
    assert _entry_bias(core, _head(tmp_path, 0x1000, data=2)) == 0x554000
    assert _entry_bias(core, _head(tmp_path, 0xFFF)) == 0x554001
    assert _entry_bias(core, _head(tmp_path, 0x556000)) == 2**64 - 0x1000  # wraps
    assert _entry_bias(core, _head(tmp_path, 0x1000, cls=1)) is None
    assert _entry_bias(core, _head(tmp_path, 0x1000, magic=b"\x7fELG")) is None
    assert _entry_bias(core, _head(tmp_path, 0x1000, size=31)) is None
    assert _entry_bias(core, str(tmp_path / "missing")) is None
    assert _entry_bias(core, str(tmp_path)) is None
    del core.auxv[9]
    assert _entry_bias(core, _head(tmp_path, 0x1000)) is None


def test_exe_mapping_path_at_the_bounds() -> None:
    maps = [(0x1000, 0x2000, 0, "/a"), (0x2000, 0x3000, 0, "/b")]
    core = _core(maps, entry=None)
    for entry, want in ((0x1000, "/a"), (0x1FFF, "/a"), (0x2000, "/b"), (0x3000, None),
                        (0xFFF, None)):
        core.auxv[9] = entry
        assert exe_mapping_path(core) == want, hex(entry)
    del core.auxv[9]
    assert exe_mapping_path(core) is None


# -- load_modules --------------------------------------------------------------------------


def _summary(m: Module) -> tuple:
    return (m.path, m.local, m.start, m.end, m.bias, m.error, m.is_exe, m.not_elf,
            len(m.tables))


def test_modules_whole(tmp_path: Path) -> None:
    data = tmp_path / "locale"
    data.write_bytes(b"not an object" * 10)
    (tmp_path / "dir").mkdir()
    other = _maps(LIB, LIB_BIAS)
    extra = [(0x10000, 0x11000, 0, str(data)), (0x20000, 0x21000, 0, "/nonexistent/x.so"),
             (0x30000, 0x31000, 0, "[vdso]"), (0x40000, 0x41000, 0, str(tmp_path / "dir"))]
    pie = _maps(PIE, BIAS)
    core = _core(pie + other + extra, resolver=PathResolver(None))
    mods = load_modules(core)
    assert [_summary(m) for m in mods] == [
        (str(data), str(data), 0x10000, 0x11000, None, "not an ELF file", False, True, 0),
        ("/nonexistent/x.so", None, 0x20000, 0x21000, None, "file not found", False, False, 0),
        ("[vdso]", None, 0x30000, 0x31000, None, "not a file", False, False, 0),
        (str(tmp_path / "dir"), str(tmp_path / "dir"), 0x40000, 0x41000, None,
         "a directory, not a regular file: refused", False, False, 0),
        (str(PIE), str(PIE), pie[0][0], pie[-1][1], BIAS, None, True, False, 1),
        (str(LIB), str(LIB), other[0][0], other[-1][1], LIB_BIAS, None, False, False, 1),
    ]
    exe = mods[4]
    assert exe.ranges == tuple((s, e) for s, e, _o, _p in pie)
    assert exe.unreadable is core.unreadable
    assert exe.tables[0].name == f"{PIE}:.sframe"
    info = load_elf(PIE)
    sec = info.sections[0]
    tab = exe.tables[0]
    assert (tab.vma, tab.bias) == (sec.vma, BIAS)
    assert tab.text_ranges == sorted((r.start + BIAS, r.end + BIAS) for r in info.text_ranges
                                     if r.end > r.start)


def test_module_whose_file_does_not_match(tmp_path: Path) -> None:
    """The core maps the library at offsets none of its PT_LOADs has: no bias, one line."""
    maps = [(0x7F0000000000, 0x7F0000001000, 0x100000, str(LIB))]
    (mod,) = load_modules(_core(maps, entry=None))
    assert mod.bias is None and mod.tables == [] and mod.info is not None
    assert mod.error == "no PT_LOAD matches its mappings (a different file than the core's?)"


def test_module_elf_that_cannot_be_read(tmp_path: Path) -> None:
    bad = tmp_path / "bad.so"
    bad.write_bytes(b"\x7fELF" + b"\xff" * 60)
    (mod,) = load_modules(_core([(0x10000, 0x11000, 0, str(bad))], entry=None))
    assert mod.error and "\n" not in mod.error and mod.info is None and not mod.not_elf


def test_refused_paths_are_not_read(tmp_path: Path) -> None:
    root = tmp_path / "root"
    root.mkdir()
    resolver = PathResolver(str(root))
    (mod,) = load_modules(_core([(0x10000, 0x11000, 0, "/lib/../../etc/x")], entry=None,
                                resolver=resolver))
    assert (mod.local, mod.error) == (None, "refused: '..' in a path from the core")


def test_exe_bias_prefers_at_entry(tmp_path: Path) -> None:
    """Two candidate biases: the executable's comes from AT_ENTRY, a library's from its
    first PT_LOAD's mapping."""
    pie = _maps(PIE, BIAS)
    stray = [(BIAS - 0x100000, BIAS - 0xFF000, 0, str(PIE))]
    for entry in (BIAS, None):
        core = _core(stray + pie, entry=entry)
        (exe,) = load_modules(core)
        assert exe.bias == BIAS and exe.start == BIAS - 0x100000 and exe.is_exe == (
            entry is not None)


def test_exe_mapped_twice_takes_at_entrys_bias() -> None:
    """The executable mapped whole at two addresses: AT_ENTRY decides; without it (not
    known as the executable) the lower wins."""
    low = BIAS - 0x10000000
    maps = _maps(PIE, low) + _maps(PIE, BIAS)
    (exe,) = load_modules(_core(maps, entry=BIAS))
    assert (exe.bias, exe.is_exe, exe.start) == (BIAS, True, low)
    assert exe.tables[0].bias == BIAS
    (exe,) = load_modules(_core(maps, entry=low))
    assert exe.bias == low
    (mod,) = load_modules(_core(maps, entry=None))
    assert (mod.bias, mod.is_exe) == (low, False)


def test_exe_alone_without_nt_file(tmp_path: Path) -> None:
    info = load_elf(PIE)
    core = _core([], entry=BIAS)
    (mod,) = load_modules(core, str(PIE))
    assert mod.unreadable is core.unreadable and mod.ranges == ()
    segs = info.load_segments
    assert _summary(mod) == (str(PIE), str(PIE), BIAS + min(s.vaddr for s in segs),
                             BIAS + max(s.vaddr + s.memsz for s in segs), BIAS, None, True,
                             False, 1)
    (mod,) = load_modules(_core([], entry=None), str(PIE))
    assert (mod.bias, mod.start, mod.end, mod.tables) == (None, 0, 0, [])
    assert load_modules(_core([], entry=None)) == []
    junk = tmp_path / "junk"
    junk.write_bytes(b"plain text")
    (mod,) = load_modules(core, str(junk))
    assert (mod.error, mod.not_elf, mod.bias) == ("not an ELF file", True, None)


class _FailingOs:
    """os, with pread failing as on an I/O error."""

    def __getattr__(self, name: str) -> object:
        return getattr(os, name)

    @staticmethod
    def pread(fd: int, n: int, off: int) -> bytes:
        raise OSError(5, "Input/output error")


def test_read_errors_of_the_executable(monkeypatch: pytest.MonkeyPatch) -> None:
    from sfcheck import fileio
    from sfcheck.unwind import modules

    core = _core([], entry=BIAS)
    monkeypatch.setattr(modules, "os", _FailingOs())
    (mod,) = load_modules(core, str(PIE))
    assert mod.error == "cannot read file: Input/output error" and mod.info is None
    monkeypatch.undo()

    def refused(path: object) -> None:
        raise fileio.InputFileError("cannot read file: gone", str(path))

    monkeypatch.setattr(modules, "FileView", refused)
    (mod,) = load_modules(core, str(PIE))
    assert (mod.error, mod.bias, mod.tables) == ("cannot read e_entry: cannot read file: gone",
                                                 None, [])
    monkeypatch.undo()

    def broken(_stream: object) -> None:
        raise ValueError("bad header")

    monkeypatch.setattr(modules, "ELFFile", broken)
    (mod,) = load_modules(core, str(PIE))
    assert (mod.error, mod.tables) == ("cannot read e_entry: bad header", [])


def test_empty_sframe_section_is_skipped_not_the_end() -> None:
    from types import SimpleNamespace

    from sfcheck.unwind.modules import _add_tables

    info = load_elf(PIE)
    sec = info.sections[0]
    empty = SimpleNamespace(data=b"", vma=0x100, name=".sframe.empty")
    fake = SimpleNamespace(sections=[empty, sec], text_ranges=info.text_ranges)
    mod = Module("/p", str(PIE), 0, 0, bias=BIAS, info=fake)  # type: ignore[arg-type]
    _add_tables(mod)
    assert [t.name for t in mod.tables] == ["/p:.sframe"]


def test_exe_given_is_ignored_when_the_core_maps_files() -> None:
    mods = load_modules(_core(_maps(LIB, LIB_BIAS), entry=None), str(PIE))
    assert [m.path for m in mods] == [str(LIB)] and not mods[0].is_exe


# -- the sysroot ---------------------------------------------------------------------------


def test_refused_carries_its_reason() -> None:
    exc = Refused("why")
    assert isinstance(exc, SfcheckError) and exc.reason == "why" and exc.args == ("why",)
    assert str(exc) == "why"


def test_resolver_without_sysroot(tmp_path: Path) -> None:
    f = tmp_path / "f"
    f.write_bytes(b"x")
    r = PathResolver(None, {"/over": "/local/over"})
    assert r.sysroot is None
    assert r(str(f)) == str(f) and r(str(tmp_path / "missing")) is None
    assert r("/over") == "/local/over" and r("[vdso]") is None and r("rel/x") is None
    assert r("/a\0b") is None and r.refused == {"/a\0b": "NUL byte in the path"}
    assert PathResolver(None).overrides == {}


def test_resolver_inside_a_sysroot(tmp_path: Path) -> None:
    root = tmp_path / "root"
    (root / "lib").mkdir(parents=True)
    (root / "lib" / "a.so").write_bytes(b"x")
    (root / "usr").mkdir()
    os.symlink("/lib", root / "usr" / "lib")  # absolute: taken inside the root
    os.symlink("../../../../lib/a.so", root / "lib" / "up.so")  # `..` stops at the root
    os.symlink("a.so", root / "lib" / "rel.so")
    os.symlink("./././a.so", root / "lib" / "dots.so")
    os.symlink("/nowhere", root / "lib" / "dangling.so")
    os.symlink("loop", root / "lib" / "loop")
    link = tmp_path / "rootlink"
    os.symlink(root, link)
    r = PathResolver(str(link))
    assert r.sysroot == str(root)  # the real directory
    real = str(root / "lib" / "a.so")
    assert r("/usr/lib/a.so") == real and r("/lib/up.so") == real
    assert r("/lib/rel.so") == real and r("/lib/./dots.so") == real and r("//lib//a.so") == real
    assert r("/lib/dangling.so") is None and r("/lib/missing.so") is None
    assert r.refused == {}
    assert r("/lib/loop") is None
    assert r.refused == {"/lib/loop": "too many levels of symbolic links"}
    assert r("/lib/../lib/a.so") is None
    assert r.refused["/lib/../lib/a.so"] == "'..' in a path from the core"


def test_confine_symlink_limit_at_the_boundary(tmp_path: Path) -> None:
    """A chain of MAX_LINKS symlinks resolves; one more is refused."""
    root = tmp_path
    (root / "end").write_bytes(b"x")
    n = sysroot.MAX_LINKS
    for k in range(n + 1):
        os.symlink("end" if k == 0 else f"l{k - 1}", root / f"l{k}")
    assert confine(str(root), f"/l{n - 1}") == str(root / "end")
    with pytest.raises(Refused) as info:
        confine(str(root), f"/l{n}")
    assert info.value.reason == "too many levels of symbolic links"


def test_confine_root_and_unreadable_link(tmp_path: Path) -> None:
    assert confine(str(tmp_path), "/") == str(tmp_path)
    assert confine(str(tmp_path), "/.") == str(tmp_path)
    (tmp_path / "d").mkdir()
    os.symlink("..", tmp_path / "d" / "up")
    os.symlink("../..", tmp_path / "d" / "up2")
    assert confine(str(tmp_path), "/d/up") == str(tmp_path)
    assert confine(str(tmp_path), "/d/up2/d") == str(tmp_path / "d")
