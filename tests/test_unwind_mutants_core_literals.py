"""The literals of the unwind-core code that an older mutant classifier hid as message text:
path components the sysroot skips ("" and "." only; any other name, "XX.XX" or "XXXX"
included, is a name, and an empty component of a symlink target is no directory), the
unsigned struct codes of the core's header and notes (e_machine >= 0x8000, note fields,
auxv values and NT_FILE addresses >= 2**63 read as the positive numbers they are), the
symbol types that name functions (STT_GNU_IFUNC as STT_FUNC; pyelftools names type 10
STT_LOOS, and the unwinder left every IFUNC symbol unnamed until this test), a PLT
relocation without a symbol naming nothing, and the default name of a core in its one-line
errors ("<core>").

Cores and notes are built by tests/unwind_build.py; the ELF file whose symbols are read is a
copy of corpus/v2/exe_pie with one symbol or relocation patched. Every expected value comes
from what was built."""

from __future__ import annotations

import os
import struct
from collections.abc import Callable
from pathlib import Path

import pytest
from elftools.elf.elffile import ELFFile

from sfcheck.errors import ElfError
from sfcheck.unwind.core import CoreFile
from sfcheck.unwind.modules import Symbols, _plt_symbols
from sfcheck.unwind.notes import FileMapping, iter_notes, nt_file
from sfcheck.unwind.sysroot import PathResolver, confine

from unwind_build import auxv, core_bytes, note, prstatus

ROOT = Path(__file__).resolve().parents[1]
PIE = ROOT / "corpus" / "v2" / "exe_pie"
TOP = 1 << 63  # the top bit of a 64-bit field
VSYSCALL = 0xFFFFFFFFFF600000  # a kernel address, as the vsyscall page's


def _reader(blob: bytes) -> Callable[[int, int], bytes]:
    def read(off: int, n: int) -> bytes:
        return blob[off:off + n]
    return read


def _notes(blob: bytes) -> list[tuple[bytes, int, bytes]]:
    return [(n, t, bytes(d)) for n, t, d in iter_notes(_reader(blob), 0, len(blob), "<")]


# -- the core's default name ---------------------------------------------------------------


def test_core_without_a_label_is_named_core_in_its_error() -> None:
    with pytest.raises(ElfError) as info:
        CoreFile.parse(b"\x7fELG" + bytes(60))
    assert (info.value.message, info.value.path) == ("not an ELF file", "<core>")
    assert str(info.value) == "<core>: not an ELF file"
    assert CoreFile.parse(core_bytes(prstatus(7, 1, 2), [])).path == "<core>"


# -- unsigned fields -----------------------------------------------------------------------


@pytest.mark.parametrize("order", ["little", "big"])
def test_machine_with_the_top_bit_set(order: str) -> None:
    """EM_ALPHA (0x9026) is an e_machine >= 0x8000: read as that number, no ABI, no threads
    (its registers are not known)."""
    core = CoreFile.parse(core_bytes(prstatus(7, 1, 2), [], machine=0x9026, order=order))
    assert (core.machine, core.big_endian, core.abi, core.threads) == (
        0x9026, order == "big", None, [])


def test_auxv_values_and_keys_with_the_top_bit_set() -> None:
    entries = {33: VSYSCALL, 9: 0x401000, 2**64 - 1: TOP, 7: 2**64 - 1}
    core = CoreFile.parse(core_bytes(prstatus(7, 1, 2) + auxv(entries), []))
    assert core.auxv == {**entries, 0: 0}


def test_nt_file_addresses_and_offsets_with_the_top_bit_set() -> None:
    page = 4096
    maps = [(0x400000, 0x401000, 0, "/bin/p"),
            (VSYSCALL, VSYSCALL + 0x1000, 0, "/k"),
            (0x600000, 0x601000, (TOP + 1) * page, "/big")]
    head = struct.pack("<QQ", len(maps), page)
    table = b"".join(struct.pack("<QQQ", s, e, off // page) for s, e, off, _ in maps)
    desc = head + table + b"".join(p.encode() + b"\0" for *_, p in maps)
    want = [FileMapping(s, e, off, p) for s, e, off, p in maps]
    assert nt_file(memoryview(desc), "<", 10) == (want, 0)
    core = CoreFile.parse(core_bytes(prstatus(7, 1, 2) + note(0x46494C45, desc), []))
    assert core.mappings == sorted(want, key=lambda m: m.start)


def test_note_type_with_the_top_bit_set() -> None:
    blob = note(0x80000001, b"abcd") + note(0xFFFFFFFF, b"", name=b"LINUX\0")
    assert _notes(blob) == [(b"CORE", 0x80000001, b"abcd"), (b"LINUX", 0xFFFFFFFF, b"")]


@pytest.mark.parametrize("head", [
    struct.pack("<III", 0xFFFFFFFF, 0, 1),  # a name of 4 GiB - 1
    struct.pack("<III", 0x80000000, 0, 1),
    struct.pack("<III", 4, 0xFFFFFFFC, 1) + b"CORE",  # a desc of 4 GiB - 4
])
def test_note_sizes_with_the_top_bit_set_run_past_the_end(head: bytes) -> None:
    """A name or desc size >= 2**31 runs past the segment: the list stops there, quietly,
    and the notes after it are not read."""
    tail = note(1, b"ab")
    assert _notes(note(6, b"x" * 8) + head + tail) == [(b"CORE", 6, b"x" * 8)]


# -- symbols -------------------------------------------------------------------------------


def _copy_with(tmp_path: Path, section: str, entry: int, field: int, value: bytes) -> Path:
    """A copy of exe_pie with `value` written at byte `field` of entry `entry` of
    `section`'s contents."""
    blob = bytearray(PIE.read_bytes())
    with open(PIE, "rb") as f:
        sec = ELFFile(f).get_section_by_name(section)
        at = sec["sh_offset"] + entry * sec["sh_entsize"] + field
    blob[at:at + len(value)] = value
    out = tmp_path / "patched"
    out.write_bytes(bytes(blob))
    return out


def test_ifunc_symbol_names_its_function_as_a_func_does(tmp_path: Path) -> None:
    """`main` made an STT_GNU_IFUNC (10) global: the symbols are the same, `main` among
    them at its address (as sfcheck/elf/symbols.py counts type 10 a function)."""
    with open(PIE, "rb") as f:
        symtab = ELFFile(f).get_section_by_name(".symtab")
        index, main = next((i, s) for i, s in enumerate(symtab.iter_symbols())
                           if s.name == "main")
        assert main["st_info"]["type"] == "STT_FUNC"
        at = symtab["sh_offset"] + index * symtab["sh_entsize"] + 4  # st_info
    patched = _copy_with(tmp_path, ".symtab", index, 4, bytes([(1 << 4) | 10]))
    assert patched.read_bytes()[at] == 0x1A
    want = Symbols.load(str(PIE))
    got = Symbols.load(str(patched))
    assert got._syms == want._syms and got.changed is None
    assert (main["st_value"], main["st_size"], "main") in got._syms
    assert got.find(main["st_value"] + 1) == ("main", 1)


def test_plt_relocation_without_a_symbol_names_nothing(tmp_path: Path) -> None:
    """The first .rela.plt entry made an R_X86_64_IRELATIVE (37) without a symbol, as a
    local ifunc's is: its PLT entry gets no name, the others keep theirs."""
    with open(PIE, "rb") as f:
        want = _plt_symbols(ELFFile(f))
    assert want[0][2] == "raise@plt" and len(want) == 14
    patched = _copy_with(tmp_path, ".rela.plt", 0, 8, struct.pack("<Q", 37))  # r_info
    with open(patched, "rb") as f:
        assert _plt_symbols(ELFFile(f)) == want[1:]
    assert Symbols.load(str(patched)).find(want[0][0] + 3) != ("raise@plt", 3)


# -- the sysroot ---------------------------------------------------------------------------


def _odd_root(tmp_path: Path) -> Path:
    root = tmp_path / "root"
    for d in ("XX.XX", "XXXX", "sub", "..."):
        (root / d).mkdir(parents=True)
    for f in ("f", "XX.XX/f", "XXXX/f", ".../f"):
        (root / f).write_bytes(f.encode())
    return root


@pytest.mark.parametrize("path, want", [
    ("/XX.XX/f", "XX.XX/f"),
    ("/./XX.XX/./f", "XX.XX/f"),
    ("/XXXX/f", "XXXX/f"),
    ("//XXXX//f", "XXXX/f"),
    ("/.../f", ".../f"),
])
def test_odd_names_in_a_core_path_are_names(tmp_path: Path, path: str, want: str) -> None:
    """Only "" and "." components are skipped: "XX.XX", "XXXX", "..." name directories
    (a /f beside them is not what is found)."""
    root = _odd_root(tmp_path)
    assert confine(str(root), path) == os.path.join(root, want)


@pytest.mark.parametrize("target, want", [
    ("XX.XX/f", "XX.XX/f"),
    ("./XX.XX/./f", "XX.XX/f"),
    ("/XX.XX/f", "XX.XX/f"),
    ("XXXX/f", "XXXX/f"),
    ("XXXX//f", "XXXX/f"),
    ("/XXXX/f", "XXXX/f"),
    (".../f", ".../f"),
    # an empty component is no directory: "sub//.." is "sub/..", the root
    ("sub//../f", "f"),
    ("sub/.//../f", "f"),
    # a trailing slash adds nothing to the path found
    ("XX.XX/", "XX.XX"),
    ("/XXXX//", "XXXX"),
])
def test_odd_names_in_a_symlink_target_are_names(tmp_path: Path, target: str,
                                                 want: str) -> None:
    root = _odd_root(tmp_path)
    os.symlink(target, root / "link")
    expect = os.path.join(root, want)
    assert confine(str(root), "/link") == expect
    assert PathResolver(str(root))("/link") == expect
