"""survey/elffacts.py reads only the sections whose names it looks for: pinned to the plain
reading (every section's name decoded and compared), over corpus ELF files with bytes
changed anywhere and in the section name table in particular."""

from __future__ import annotations

import struct

from hypothesis import given, settings
from hypothesis import strategies as st

from sfcheck.survey import elffacts
from sfcheck.survey.elffacts import ElfFacts, elf_facts

from helpers import CORPUS

FILES = [p.read_bytes() for p in sorted(CORPUS.glob("*/*"))
         if p.is_file() and p.read_bytes()[:4] == b"\x7fELF"][:40]


def _reference(image: bytes) -> ElfFacts:
    """The facts with every section's name read: what elffacts._facts must equal."""
    try:
        return _reference_facts(memoryview(image))
    except (struct.error, IndexError, ValueError):
        return ElfFacts()


def _reference_facts(mv: memoryview) -> ElfFacts:
    if bytes(mv[:4]) != b"\x7fELF" or len(mv) < 64:
        return ElfFacts()
    is64 = mv[4] == 2
    order = "<" if mv[5] == 1 else ">"
    e_type, = struct.unpack_from(order + "H", mv, 0x10)
    if is64:
        phoff, = struct.unpack_from(order + "Q", mv, 0x20)
        phentsize, phnum = struct.unpack_from(order + "HH", mv, 0x36)
        phdr = struct.Struct(order + "IIQQQQQQ")
        shoff, = struct.unpack_from(order + "Q", mv, 0x28)
        shentsize, shnum, shstrndx = struct.unpack_from(order + "HHH", mv, 0x3A)
        shdr = struct.Struct(order + "IIQQQQIIQQ")
    else:
        phoff, = struct.unpack_from(order + "I", mv, 0x1C)
        phentsize, phnum = struct.unpack_from(order + "HH", mv, 0x2A)
        phdr = struct.Struct(order + "IIIIIIII")
        shoff, = struct.unpack_from(order + "I", mv, 0x20)
        shentsize, shnum, shstrndx = struct.unpack_from(order + "HHH", mv, 0x2E)
        shdr = struct.Struct(order + "IIIIIIIIII")
    text = 0
    if e_type in (2, 3) and phoff and phentsize >= phdr.size \
            and phoff + phnum * phentsize <= len(mv):
        for i in range(phnum):
            row = phdr.unpack_from(mv, phoff + i * phentsize)
            p_type, flags, memsz = (row[0], row[1], row[6]) if is64 else \
                (row[0], row[6], row[5])
            if p_type == 1 and flags & 1:
                text += memsz
    if not shoff or shentsize < shdr.size or shoff + shnum * shentsize > len(mv):
        return ElfFacts(text_bytes=text)
    rows = [shdr.unpack_from(mv, shoff + i * shentsize) for i in range(shnum)]
    if shstrndx >= shnum:
        return ElfFacts(text_bytes=text)
    str_off, str_size = rows[shstrndx][4], rows[shstrndx][5]
    names = bytes(mv[str_off:str_off + str_size])
    facts = ElfFacts(text_bytes=text)
    producers: list[str] = []
    for name_off, sh_type, _flags, _addr, off, size, *_ in rows:
        end = names.find(b"\0", name_off)
        name = names[name_off:end if end >= 0 else None].decode("latin-1")
        stored = sh_type != 8
        if name == ".eh_frame":
            facts.eh_frame_bytes += size
        elif name == ".comment" and stored:
            raw = bytes(mv[off:off + min(size, elffacts.MAX_COMMENT)])
            producers += [s.decode("utf-8", "replace").strip() for s in raw.split(b"\0")]
        elif sh_type == 7 and stored and name.startswith(".gnu.build.attributes"):
            producers += elffacts._annobin_tools(
                bytes(mv[off:off + min(size, elffacts.MAX_COMMENT)]), order)
    kept = [p for p in dict.fromkeys(producers) if p][:elffacts.MAX_PRODUCERS]
    if kept:
        facts.producer = "; ".join(kept)
    return facts


def _name_table(image: bytes) -> tuple[int, int]:
    """(offset, size) of the section name table of a well-formed little/big ELF file."""
    is64 = image[4] == 2
    order = "<" if image[5] == 1 else ">"
    if is64:
        shoff, = struct.unpack_from(order + "Q", image, 0x28)
        shentsize, _, shstrndx = struct.unpack_from(order + "HHH", image, 0x3A)
        off, size = struct.unpack_from(order + "QQ", image, shoff + shstrndx * shentsize + 24)
    else:
        shoff, = struct.unpack_from(order + "I", image, 0x20)
        shentsize, _, shstrndx = struct.unpack_from(order + "HHH", image, 0x2E)
        off, size = struct.unpack_from(order + "II", image, shoff + shstrndx * shentsize + 16)
    return off, size


def test_corpus_files_alike() -> None:
    assert len(FILES) >= 10
    for image in FILES:
        assert elf_facts(image) == _reference(image)
    assert any(elf_facts(image).eh_frame_bytes for image in FILES)
    assert any(elf_facts(image).producer != "unknown" for image in FILES)


@settings(max_examples=300, deadline=None)
@given(st.sampled_from(range(len(FILES))), st.data())
def test_changed_names_alike(k: int, data) -> None:
    """Bytes of the name table overwritten with pieces of the names looked for, NULs and
    dots: names that match, nearly match, run off the table's end or share a tail."""
    image = bytearray(FILES[k])
    off, size = _name_table(bytes(image))
    pieces = st.sampled_from([b".eh_frame", b".comment", b".gnu.build.attributes",
                              b"\0", b".", b"_hdr", b".eh_frame\0", b"x"])
    for _ in range(data.draw(st.integers(1, 6))):
        at = data.draw(st.integers(max(0, off - 4), off + size))
        piece = data.draw(pieces)
        image[at:at + len(piece)] = piece
    image = image[:len(FILES[k])]
    assert elf_facts(bytes(image)) == _reference(bytes(image))


@settings(max_examples=200, deadline=None)
@given(st.sampled_from(range(len(FILES))), st.integers(0, 1 << 20), st.integers(0, 255),
       st.integers(0, 1 << 20))
def test_changed_bytes_alike(k: int, at: int, byte: int, cut: int) -> None:
    image = bytearray(FILES[k])
    if image:
        image[at % len(image)] = byte
        if cut % 3 == 0:  # section header fields: offsets, sizes, entry size, count
            image[0x3A + cut % 6 if image[4] == 2 else 0x2E + cut % 6] = byte
    assert elf_facts(bytes(image)) == _reference(bytes(image))


@settings(max_examples=60, deadline=None)
@given(st.sampled_from(range(len(FILES))), st.integers(1, 3))
def test_wider_entries_alike(k: int, extra: int) -> None:
    """A section header entry size above the struct's (the table read with a stride)."""
    image = bytearray(FILES[k])
    is64 = image[4] == 2
    order = "<" if image[5] == 1 else ">"
    at = 0x3A if is64 else 0x2E
    entsize, shnum, strndx = struct.unpack_from(order + "HHH", image, at)
    wide = entsize + 8 * extra
    struct.pack_into(order + "HHH", image, at, wide, shnum * entsize // wide,
                     min(strndx, shnum * entsize // wide - 1))
    got = elf_facts(bytes(image))
    assert got == _reference(bytes(image))
