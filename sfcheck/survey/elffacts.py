"""What the survey records of an ELF file beyond the checker's result: section sizes and
the producer (`.comment`, annobin notes). Reads headers only, every offset bounded by
the image, so a hostile file gives empty facts, never an exception."""

from __future__ import annotations

import struct

from ..record import Record

MAX_COMMENT = 4096  # bytes of .comment read (a producer string is short)
MAX_PRODUCERS = 4  # distinct producer strings kept per file
_SHT_NOTE, _SHT_NOBITS = 7, 8


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
    rows = [shdr.unpack_from(mv, shoff + i * shentsize) for i in range(shnum)]
    if shstrndx >= shnum:
        return ElfFacts(text_bytes=text)
    _, _, _, _, str_off, str_size, *_ = rows[shstrndx]
    names = bytes(mv[str_off:str_off + str_size])
    facts = ElfFacts(text_bytes=text)
    producers: list[str] = []
    for name_off, sh_type, _flags, _addr, off, size, *_ in rows:
        end = names.find(b"\0", name_off)
        name = names[name_off:end if end >= 0 else None].decode("latin-1")
        stored = sh_type != _SHT_NOBITS
        if name == ".eh_frame":
            facts.eh_frame_bytes += size
        elif name == ".comment" and stored:
            text = bytes(mv[off:off + min(size, MAX_COMMENT)])
            producers += [s.decode("utf-8", "replace").strip() for s in text.split(b"\0")]
        elif sh_type == _SHT_NOTE and stored and name.startswith(".gnu.build.attributes"):
            producers += _annobin_tools(bytes(mv[off:off + min(size, MAX_COMMENT)]), order)
    kept = [p for p in dict.fromkeys(producers) if p][:MAX_PRODUCERS]
    if kept:
        facts.producer = "; ".join(kept)
    return facts


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
