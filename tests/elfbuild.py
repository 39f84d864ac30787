"""Build small ELF64 little-endian files from parts, for hostile-input tests.

Sections are laid out one after another; section headers come last. Each section is
(name, sh_type, sh_flags, sh_addr, data, sh_link, sh_info, sh_entsize) — or, for data, an
int: the size of a section whose bytes are a hole (the caller makes the file sparse).
"""

from __future__ import annotations

import struct
from dataclasses import dataclass, field

SHT_PROGBITS, SHT_SYMTAB, SHT_STRTAB, SHT_NOBITS = 1, 2, 3, 8
SHT_GNU_SFRAME = 0x6FFFFFF4
SHF_ALLOC, SHF_EXECINSTR = 0x2, 0x4


@dataclass
class Sec:
    name: str
    type: int
    data: bytes = b""
    flags: int = 0
    addr: int = 0
    link: int = 0
    info: int = 0
    entsize: int = 0
    offset: int | None = None  # forced sh_offset (else laid out)
    size: int | None = None  # forced sh_size (else len(data))


@dataclass
class Phdr:
    type: int
    offset: int
    vaddr: int
    filesz: int
    memsz: int
    flags: int = 4


@dataclass
class Elf:
    e_type: int = 3  # ET_DYN
    machine: int = 62  # EM_X86_64
    sections: list[Sec] = field(default_factory=list)
    phdrs: list[Phdr] = field(default_factory=list)
    extended: bool = False  # e_shnum = 0, count in section 0's sh_size

    def build(self) -> bytes:
        names = bytearray(b"\0")
        name_off = {}
        for s in [*self.sections, Sec(".shstrtab", SHT_STRTAB)]:
            if s.name not in name_off:
                name_off[s.name] = len(names)
                names += s.name.encode() + b"\0"
        secs = [Sec("", 0), *self.sections, Sec(".shstrtab", SHT_STRTAB, bytes(names))]
        phoff = 64
        body = bytearray(64 + 56 * len(self.phdrs))
        offsets = []
        for s in secs:
            if s.offset is not None:
                offsets.append(s.offset)
                continue
            while len(body) % 8:
                body.append(0)
            offsets.append(len(body))
            if s.type != SHT_NOBITS:
                body += s.data
        while len(body) % 8:
            body.append(0)
        shoff = len(body)
        shnum = len(secs)
        shstrndx = shnum - 1
        for i, (s, off) in enumerate(zip(secs, offsets, strict=True)):
            size = s.size if s.size is not None else len(s.data)
            link = s.link
            if i == 0 and self.extended:
                size, link = shnum, shstrndx
            body += struct.pack("<IIQQQQIIQQ", name_off.get(s.name, 0) if i else 0, s.type,
                                s.flags, s.addr, off, size, link, s.info, 8, s.entsize)
        struct.pack_into("<4sBBBBB7xHHIQQQIHHHHHH", body, 0, b"\x7fELF", 2, 1, 1, 0, 0,
                         self.e_type, self.machine, 1, 0, phoff if self.phdrs else 0, shoff,
                         0, 64, 56, len(self.phdrs), 64,
                         0 if self.extended else shnum,
                         0xFFFF if self.extended else shstrndx)
        for i, p in enumerate(self.phdrs):
            struct.pack_into("<IIQQQQQQ", body, phoff + 56 * i, p.type, p.flags, p.offset,
                             p.vaddr, p.vaddr, p.filesz, p.memsz, 8)
        return bytes(body)


def symbol(name_off: int, value: int, size: int, shndx: int, info: int = 0x12) -> bytes:
    """An Elf64_Sym (default: STB_GLOBAL STT_FUNC)."""
    return struct.pack("<IBBHQQ", name_off, info, 0, shndx, value, size)
