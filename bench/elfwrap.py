"""Wrap a bare SFrame section in the smallest linked x86-64 ELF file readelf and sfcheck accept.

Layout: ELF header, three program headers (PT_LOAD R+X over the text addresses
the FDEs describe, PT_LOAD R over .sframe, PT_GNU_SFRAME), the section bytes
at a page-aligned offset, the section-name table and the section headers
(null, .text as NOBITS, .sframe, .shstrtab). The text has no bytes: only its
addresses matter to the checker's function-range rule.
"""

from __future__ import annotations

import struct

PT_LOAD, PT_GNU_SFRAME = 1, 0x6474E554
SHT_PROGBITS, SHT_STRTAB, SHT_NOBITS, SHT_GNU_SFRAME = 1, 3, 8, 0x6FFFFFF4
SHF_ALLOC, SHF_EXECINSTR = 0x2, 0x4
EHDR, PHDR, SHDR = 64, 56, 64


def wrap_section(sframe: bytes, sframe_vma: int, text_start: int, text_end: int,
                 version: int) -> bytes:
    """An ET_DYN x86-64 file whose .sframe holds `sframe` at `sframe_vma`."""
    phnum, shnum = 3, 4
    sf_off = 0x1000
    if sframe_vma % 0x1000:
        sf_off += sframe_vma % 0x1000
    names = b"\0.text\0.sframe\0.shstrtab\0"
    str_off = sf_off + len(sframe)
    sh_off = (str_off + len(names) + 7) & ~7
    ehdr = struct.pack("<4sBBBBB7sHHIQQQIHHHHHH", b"\x7fELF", 2, 1, 1, 0, 0, b"", 3, 62, 1,
                       text_start, EHDR, sh_off, 0, EHDR, PHDR, phnum, SHDR, shnum, 3)
    text_size = text_end - text_start
    phdrs = b"".join([
        struct.pack("<IIQQQQQQ", PT_LOAD, 5, 0, text_start & ~0xFFF, text_start & ~0xFFF,
                    0, text_end - (text_start & ~0xFFF), 0x1000),
        struct.pack("<IIQQQQQQ", PT_LOAD, 4, sf_off, sframe_vma, sframe_vma, len(sframe),
                    len(sframe), 0x1000),
        struct.pack("<IIQQQQQQ", PT_GNU_SFRAME, 4, sf_off, sframe_vma, sframe_vma, len(sframe),
                    len(sframe), 8),
    ])
    sf_type = SHT_GNU_SFRAME if version >= 3 else SHT_PROGBITS
    shdrs = b"".join([
        bytes(SHDR),
        struct.pack("<IIQQQQIIQQ", 1, SHT_NOBITS, SHF_ALLOC | SHF_EXECINSTR, text_start,
                    0x1000, text_size, 0, 0, 16, 0),
        struct.pack("<IIQQQQIIQQ", 7, sf_type, SHF_ALLOC, sframe_vma, sf_off, len(sframe),
                    0, 0, 8, 0),
        struct.pack("<IIQQQQIIQQ", 15, SHT_STRTAB, 0, 0, str_off, len(names), 0, 0, 1, 0),
    ])
    out = bytearray(ehdr + phdrs)
    out += bytes(sf_off - len(out))
    out += sframe + names
    out += bytes(sh_off - len(out))
    out += shdrs
    return bytes(out)
