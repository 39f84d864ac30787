"""elf.relocations.Relocator on hand-built relocatable objects: what each relocation may
write, and where it must refuse."""

from __future__ import annotations

import struct

import pytest
from elfbuild import (
    SHF_ALLOC,
    SHF_EXECINSTR,
    SHT_NOBITS,
    SHT_PROGBITS,
    SHT_STRTAB,
    SHT_SYMTAB,
    Elf,
    Sec,
    symbol,
)

from sfcheck.elf.headers import ElfFile
from sfcheck.elf.loader import load_elf
from sfcheck.elf.relocations import Relocator
from sfcheck.errors import ElfError

SHT_RELA = 4
R_X86_64_64 = 1
SFRAME = 2  # the .sframe's section index below


def _object(sframe: Sec) -> bytes:
    """A .o whose .rela.sframe writes one R_X86_64_64 (symbol 1 = .text + 0x40, addend
    0x1234) at offset 8 of a 16-byte .sframe: inside its sh_size."""
    rela = struct.pack("<QQq", 8, (1 << 32) | R_X86_64_64, 0x1234)
    return Elf(e_type=1, sections=[
        Sec(".text", SHT_PROGBITS, b"\xc3" * 16, flags=SHF_ALLOC | SHF_EXECINSTR),
        sframe,
        Sec(".rela.sframe", SHT_RELA, rela, link=4, info=SFRAME, entsize=24),
        Sec(".symtab", SHT_SYMTAB, bytes(24) + symbol(1, 0x40, 1, 1), link=5, info=1,
            entsize=24),
        Sec(".strtab", SHT_STRTAB, b"\0f\0"),
    ]).build()


def _relocator(data: bytes) -> tuple[Relocator, list]:
    elf = ElfFile(data, "t.o")
    shdrs = elf.section_headers()
    return Relocator(elf, shdrs, elf.section_names(shdrs)), shdrs


def test_relocation_writes_inside_the_section() -> None:
    data = _object(Sec(".sframe", SHT_PROGBITS, bytes(16), flags=SHF_ALLOC))
    relocator, shdrs = _relocator(data)
    want = bytes(8) + (0x40 + 0x1234).to_bytes(8, "little")
    assert relocator.apply(shdrs[SFRAME], bytes(16)) == (want, 1)
    assert [(s.data, s.relocations) for s in load_elf(data).sections] == [(want, 1)]


def test_relocation_against_nobits_bytes_is_refused() -> None:
    """A NOBITS .sframe has an sh_size (16) and no bytes. load_elf keeps it without bytes
    and relocates nothing; the relocation is in sh_size, so only the check against the
    bytes held stops it when applied to them (a bytearray slice assigned past the end
    grows the buffer: relocated bytes made out of nothing)."""
    data = _object(Sec(".sframe", SHT_NOBITS, flags=SHF_ALLOC, size=16))
    for cfi in (False, True):
        info = load_elf(data, cfi=cfi)
        assert [(s.nobits, s.data, s.relocations) for s in info.sections] == [(True, b"", 0)]
    relocator, shdrs = _relocator(data)
    assert shdrs[SFRAME].size == 16
    with pytest.raises(ElfError, match=r"r_offset 0x8 \+ 8 outside the 0x0 stored bytes "
                                       r"of section #2"):
        relocator.apply(shdrs[SFRAME], b"")
