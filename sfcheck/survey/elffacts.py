"""What the survey records of an ELF file beyond the checker's result: section sizes and
the producer (`.comment`, annobin notes). Reads headers only, every offset bounded by
the image, so a hostile file gives empty facts, never an exception."""

from __future__ import annotations

import struct
from itertools import compress
from operator import itemgetter

from ..record import Record

MAX_COMMENT = 4096  # bytes of .comment read (a producer string is short)
MAX_PRODUCERS = 4  # distinct producer strings kept per file
_SHT_NOTE, _SHT_NOBITS = 7, 8
_EH_FRAME, _COMMENT, _ANNOBIN = b".eh_frame", b".comment", b".gnu.build.attributes"


class ElfFacts(Record):
    __slots__ = ("eh_frame_bytes", "producer", "text_bytes")

    def __init__(self, eh_frame_bytes: int = 0, producer: str = "unknown",
                 text_bytes: int = 0) -> None:
        self.eh_frame_bytes = eh_frame_bytes
        # Executable PT_LOAD bytes of a linked file (what elf-text-coverage measures).
        self.text_bytes = text_bytes
        self.producer = producer


def elf_facts(image: bytes | memoryview) -> ElfFacts:
    try:
        return _facts(memoryview(image))
    except (struct.error, IndexError, ValueError):
        return ElfFacts()


def _facts(mv: memoryview) -> ElfFacts:
    if bytes(mv[:4]) != b"\x7fELF" or len(mv) < 64:
        return ElfFacts()
    is64 = mv[4] == 2
    order = "<" if mv[5] == 1 else ">"
    e_type, = struct.unpack_from(order + "H", mv, 0x10)
    if is64:
        phoff, shoff = struct.unpack_from(order + "QQ", mv, 0x20)
        phentsize, phnum = struct.unpack_from(order + "HH", mv, 0x36)
        phdr = struct.Struct(order + "IIQQQQQQ")  # type, flags, offset, vaddr, paddr, filesz, memsz
        shoff, = struct.unpack_from(order + "Q", mv, 0x28)
        shentsize, shnum, shstrndx = struct.unpack_from(order + "HHH", mv, 0x3A)
        shdr = struct.Struct(order + "IIQQQQIIQQ")
    else:
        phoff, = struct.unpack_from(order + "I", mv, 0x1C)
        phentsize, phnum = struct.unpack_from(order + "HH", mv, 0x2A)
        phdr = struct.Struct(order + "IIIIIIII")  # type, offset, vaddr, paddr, filesz, memsz, flags
        shoff, = struct.unpack_from(order + "I", mv, 0x20)
        shentsize, shnum, shstrndx = struct.unpack_from(order + "HHH", mv, 0x2E)
        shdr = struct.Struct(order + "IIIIIIIIII")
    text = 0
    if e_type in (2, 3) and phoff and phentsize >= phdr.size \
            and phoff + phnum * phentsize <= len(mv):  # ET_EXEC, ET_DYN
        for i in range(phnum):
            row = phdr.unpack_from(mv, phoff + i * phentsize)
            p_type, flags, memsz = (row[0], row[1], row[6]) if is64 else \
                (row[0], row[6], row[5])
            if p_type == 1 and flags & 1:  # PT_LOAD, PF_X
                text += memsz
    if not shoff or shentsize < shdr.size or shoff + shnum * shentsize > len(mv):
        return ElfFacts(text_bytes=text)
    table = mv[shoff:shoff + shnum * shentsize]
    if shentsize == shdr.size:
        rows = list(shdr.iter_unpack(table))
    else:
        rows = [shdr.unpack_from(table, i * shentsize) for i in range(shnum)]
    if shstrndx >= shnum:
        return ElfFacts(text_bytes=text)
    _, _, _, _, str_off, str_size, *_ = rows[shstrndx]
    names = bytes(mv[str_off:str_off + str_size])
    facts = ElfFacts(text_bytes=text)
    producers: list[str] = []
    # Only sections whose name starts where one of the names looked for occurs: the rest
    # are passed over without reading their names.
    starts = _occurrences(names, (_EH_FRAME, _COMMENT, _ANNOBIN))
    for name_off, sh_type, _flags, _addr, off, size, *_ in compress(
            rows, map(starts.__contains__, map(itemgetter(0), rows))):
        stored = sh_type != _SHT_NOBITS
        if _named(names, name_off, _EH_FRAME):
            facts.eh_frame_bytes += size
        elif _named(names, name_off, _COMMENT) and stored:
            text = bytes(mv[off:off + min(size, MAX_COMMENT)])
            producers += [s.decode("utf-8", "replace").strip() for s in text.split(b"\0")]
        elif sh_type == _SHT_NOTE and stored and names.startswith(_ANNOBIN, name_off):
            producers += _annobin_tools(bytes(mv[off:off + min(size, MAX_COMMENT)]), order)
    kept = [p for p in dict.fromkeys(producers) if p][:MAX_PRODUCERS]
    if kept:
        facts.producer = "; ".join(kept)
    return facts


def _occurrences(names: bytes, needles: tuple[bytes, ...]) -> set[int]:
    """Every offset of `names` where one of `needles` begins."""
    out = set()
    for needle in needles:
        at = names.find(needle)
        while at >= 0:
            out.add(at)
            at = names.find(needle, at + 1)
    return out


def _named(names: bytes, off: int, name: bytes) -> bool:
    """Whether the NUL-terminated string at `off` (or running to the table's end) is `name`."""
    end = off + len(name)
    return names.startswith(name, off) and (end == len(names) or names[end] == 0)


def _annobin_tools(notes: bytes, order: str) -> list[str]:
    """The tool strings of annobin's build-attribute notes (owner "GA$<version>", the
    tool attribute: description "$\\x05" then text), e.g. "gcc 12.2.1"."""
    out, pos = [], 0
    while pos + 12 <= len(notes):
        namesz, descsz, _ = struct.unpack_from(order + "III", notes, pos)
        name = notes[pos + 12:pos + 12 + namesz]
        pos += 12 + (namesz + 3) // 4 * 4 + (descsz + 3) // 4 * 4
        if name.startswith(b"GA$\x05") or name.startswith(b"GA*\x05"):
            out.append(name[4:].split(b"\0")[0].decode("utf-8", "replace"))
    return out
