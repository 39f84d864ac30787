"""elf/headers.py reads its header tables with one struct call per table and section names
from the split name table: pinned to the entry-by-entry reading (the answers and the
errors), over corpus ELF files with header fields and name bytes changed."""

from __future__ import annotations

import struct

from hypothesis import given, settings
from hypothesis import strategies as st

from sfcheck.elf import headers
from sfcheck.elf.headers import ElfFile, Phdr, Shdr
from sfcheck.elf.symbols import string_at
from sfcheck.errors import ElfError

from helpers import CORPUS

FILES = [p.read_bytes() for p in sorted(CORPUS.glob("*/*"))
         if p.is_file() and p.read_bytes()[:4] == b"\x7fELF"][:40]


def _shdrs(elf: ElfFile) -> list[Shdr]:
    """section_headers, one entry at a time."""
    if elf.e_shoff == 0:
        return []
    minsize = 64 if elf.elfclass == 64 else 40
    fmt = elf.order + ("IIQQQQIIQQ" if elf.elfclass == 64 else "IIIIIIIIII")

    def one(i: int, table: bytes, off: int) -> Shdr:
        name_off, sh_type, flags, addr, offset, size, link, info, align, entsize = \
            struct.unpack_from(fmt, table, off)
        return Shdr(i, name_off, sh_type, flags, addr, offset, size, link, info, entsize,
                    align)

    elf._table_check("section header table", elf.e_shoff, 1, elf.e_shentsize, minsize)
    shnum = elf.e_shnum
    if shnum == 0:
        shnum = one(0, elf.read(elf.e_shoff, minsize, "section header 0"), 0).size
    elf._table_check("section header table", elf.e_shoff, shnum, elf.e_shentsize, minsize)
    table = elf.read(elf.e_shoff, shnum * elf.e_shentsize, "section header table")
    return [one(i, table, i * elf.e_shentsize) for i in range(shnum)]


def _names(elf: ElfFile, shdrs: list[Shdr]) -> list[str]:
    """section_names, one name at a time through string_at."""
    if not shdrs:
        return []
    k = elf.e_shstrndx if elf.e_shstrndx != 0xFFFF else shdrs[0].link
    if k == 0:
        return [""] * len(shdrs)
    if k >= len(shdrs):
        raise elf.fail(f"cannot parse ELF: e_shstrndx {k} out of range ({len(shdrs)} "
                       "sections)")
    if shdrs[k].type == 8:
        raise elf.fail("cannot parse ELF: section name table has no contents (SHT_NOBITS)")
    strtab = elf.section_bytes(shdrs[k], "name table", "cannot parse ELF: ")
    out = []
    for sh in shdrs:
        if sh.name_off == 0 and not strtab:
            out.append("")
            continue
        if sh.name_off >= len(strtab):
            raise elf.fail(f"cannot parse ELF: section [{sh.index}] name offset "
                           f"{sh.name_off:#x} outside section name table "
                           f"({len(strtab):#x} bytes)")
        out.append(string_at(strtab, sh.name_off))
    return out


def _phdrs(elf: ElfFile, shdrs: list[Shdr]) -> list[Phdr]:
    """program_headers, one entry at a time."""
    phnum = elf.e_phnum
    if phnum == 0xFFFF and shdrs:
        phnum = shdrs[0].info
    if phnum == 0:
        return []
    minsize = 56 if elf.elfclass == 64 else 32
    elf._table_check("program header table", elf.e_phoff, phnum, elf.e_phentsize, minsize)
    table = elf.read(elf.e_phoff, phnum * elf.e_phentsize, "program header table")
    out = []
    for i in range(phnum):
        off = i * elf.e_phentsize
        if elf.elfclass == 64:
            p_type, flags, offset, vaddr, _pa, filesz, memsz, _al = struct.unpack_from(
                elf.order + "IIQQQQQQ", table, off)
        else:
            p_type, offset, vaddr, _pa, filesz, memsz, flags, _al = struct.unpack_from(
                elf.order + "IIIIIIII", table, off)
        out.append(Phdr(i, p_type, flags, offset, vaddr, filesz, memsz))
    return out


def _outcome(f, *args):
    try:
        return f(*args)
    except ElfError as exc:
        return ("error", exc.message)
    except headers.PARSE_ERRORS as exc:
        return ("raised", type(exc))


def _same(image: bytes) -> None:
    try:
        elf = ElfFile(image, "x")
    except ElfError:
        return
    got = _outcome(elf.section_headers)
    assert got == _outcome(_shdrs, elf)
    shdrs = got if isinstance(got, list) else []
    assert _outcome(elf.section_names, shdrs) == _outcome(_names, elf, shdrs)
    assert _outcome(elf.program_headers, shdrs) == _outcome(_phdrs, elf, shdrs)


def test_corpus_files_alike() -> None:
    assert len(FILES) >= 10
    for image in FILES:
        _same(image)
        elf = ElfFile(image, "x")
        assert ".text" in elf.section_names(elf.section_headers())


def _header_at(image: bytes) -> tuple[int, str]:
    return (0x3A if image[4] == 2 else 0x2E), ("<" if image[5] == 1 else ">")


@settings(max_examples=300, deadline=None)
@given(st.sampled_from(range(len(FILES))), st.data())
def test_changed_tables_alike(k: int, data) -> None:
    """Entry sizes, counts and the name table's index changed; bytes of the section
    header table and of the name table overwritten (NULs, long runs, cut names)."""
    image = bytearray(FILES[k])
    at, order = _header_at(bytes(image))
    elf = ElfFile(bytes(image), "x")
    shdrs = elf.section_headers()
    strtab = shdrs[elf.e_shstrndx]
    for _ in range(data.draw(st.integers(1, 4))):
        what = data.draw(st.sampled_from(["entsize", "count", "strndx", "phent", "names",
                                          "table"]))
        if what == "entsize":  # wider entries, as many as still fit
            entsize, shnum, _ = struct.unpack_from(order + "HHH", image, at)
            wide = entsize + data.draw(st.sampled_from([0, 1, 8, 64]))
            struct.pack_into(order + "HH", image, at, wide, shnum * entsize // wide)
        elif what == "count":
            struct.pack_into(order + "H", image, at + 2, data.draw(st.integers(0, 80)))
        elif what == "strndx":
            struct.pack_into(order + "H", image, at + 4,
                             data.draw(st.sampled_from([0, 1, 2, 0xFFFF, len(shdrs) + 1])))
        elif what == "phent":
            ph = at - 4  # e_phentsize, e_phnum
            struct.pack_into(order + "HH", image, ph, data.draw(st.sampled_from(
                [56, 32, 64, 60])), data.draw(st.integers(0, 20)))
        elif what == "names":
            pos = data.draw(st.integers(strtab.offset, strtab.offset + strtab.size))
            piece = data.draw(st.sampled_from([b"\0", b"\xff\xfe", b".sframe\0",
                                               b"A" * 300, b"x"]))
            image[pos:pos + len(piece)] = piece
        else:
            pos = data.draw(st.integers(elf.e_shoff, elf.e_shoff + len(shdrs) * 64))
            image[pos:pos + 1] = bytes([data.draw(st.integers(0, 255))])
    _same(bytes(image[:len(FILES[k])]))


def test_big_name_table_read_name_by_name(monkeypatch) -> None:
    """Above PIECES_MAX the table is not split: the names are string_at's all the same."""
    monkeypatch.setattr(headers, "PIECES_MAX", 0)
    for image in FILES[:10]:
        _same(image)


def _elf32(order: str, names: bytes = b"\0.text\0.sframe\0.shstrtab\0") -> bytes:
    """A 32-bit file: 3 program headers, 4 sections (null, .text, .sframe, .shstrtab)."""
    phoff, nph = 52, 3
    strtab_off = phoff + 32 * nph
    shoff = strtab_off + len(names) + (-len(names) % 4)
    out = bytearray(shoff + 40 * 4)
    struct.pack_into(order + "4sBBBB8xHHIIIIIHHHHHH", out, 0, b"\x7fELF", 1,
                     1 if order == "<" else 2, 1, 0, 3, 3, 1, 0, phoff, shoff, 0, 52, 32,
                     nph, 40, 4, 3)
    for i, (p_type, flags) in enumerate([(1, 5), (1, 6), (0x6474E554, 4)]):
        struct.pack_into(order + "IIIIIIII", out, phoff + 32 * i, p_type, 0x100 * i,
                         0x1000 * i, 0x1000 * i, 0x80 + i, 0x90 + i, flags, 4)
    out[strtab_off:strtab_off + len(names)] = names
    for i, (name, sh_type, off, size) in enumerate(
            [(0, 0, 0, 0), (1, 1, 0x40, 0x10), (7, 0x6FFFFFF4, 0x50, 0x20),
             (15, 3, strtab_off, len(names))]):
        struct.pack_into(order + "IIIIIIIIII", out, shoff + 40 * i, name, sh_type, 2, off,
                         off, size, 0, 0, 4, 0)
    return bytes(out)


@settings(max_examples=100, deadline=None)
@given(st.sampled_from("<>"), st.binary(max_size=40), st.integers(0, 3), st.integers(0, 40))
def test_elf32_either_order_alike(order: str, junk: bytes, k: int, name_off: int) -> None:
    """32-bit entries (another field order) in both byte orders, with a name offset and
    the name table's bytes changed."""
    image = bytearray(_elf32(order, b"\0.text\0.sframe\0.shstrtab\0" + junk))
    shoff = struct.unpack_from(order + "I", image, 0x20)[0]
    struct.pack_into(order + "I", image, shoff + 40 * k, name_off)
    _same(bytes(image))
    elf = ElfFile(bytes(_elf32(order)), "x")
    assert [p.flags for p in elf.program_headers([])] == [5, 6, 4]
    assert elf.section_names(elf.section_headers())[2] == ".sframe"


@given(st.integers(0, 6), st.integers(0, 30))
def test_empty_or_short_name_table_alike(size: int, name_off: int) -> None:
    """A name table cut to `size` bytes: offsets at and past its end are refused, offset 0
    of an empty one is no name, whichever section comes first."""
    image = bytearray(_elf32("<"))
    shoff = struct.unpack_from("<I", image, 0x20)[0]
    struct.pack_into("<I", image, shoff + 40 * 3 + 20, size)
    struct.pack_into("<I", image, shoff + 40 * 1, 0)
    struct.pack_into("<I", image, shoff + 40 * 2, name_off)
    _same(bytes(image))


@given(st.lists(st.sampled_from([b"\0", b"a", b"\xff", b"b" * 255, b"c" * 256, b"d" * 257]),
                max_size=12))
def test_pieces_are_string_at(parts: list[bytes]) -> None:
    table = b"".join(parts)
    whole = headers._pieces(table)
    for off in range(len(table)):
        got = whole.get(off)
        if got is not None:
            assert got == string_at(table, off)
