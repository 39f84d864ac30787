"""A relocatable object whose `.rela.sframe` is huge (issue 27.6): the `.sframe` of
corpus/v3/lib.o with `count` relocations, cycling over the object's own relocation
offsets, against a symbol table of `symbols` function symbols (~6.4 MB for 100k
relocations and 4 MB of symbols)."""

from __future__ import annotations

import struct

from elfbuild import (
    SHF_ALLOC,
    SHF_EXECINSTR,
    SHT_GNU_SFRAME,
    SHT_PROGBITS,
    SHT_STRTAB,
    SHT_SYMTAB,
    Elf,
    Sec,
    symbol,
)

from sfcheck.elf.loader import load_elf

from helpers import CORPUS

SHT_RELA = 4
R_X86_64_PC32 = 2


def reloc_heavy_object(count: int = 100_000, symbols: int = (4 << 20) // 24) -> bytes:
    src = CORPUS / "v3" / "lib.o"
    raw = load_elf(src).sections[0].raw_data
    assert raw
    # Where lib.o's own .rela.sframe writes (FDE start fields), read from the file.
    data = src.read_bytes()
    shoff, = struct.unpack_from("<Q", data, 0x28)
    shnum, = struct.unpack_from("<H", data, 0x3C)
    offsets = []
    for i in range(shnum):
        sh_type, = struct.unpack_from("<I", data, shoff + 64 * i + 4)
        off, size, _link, info = struct.unpack_from("<QQII", data, shoff + 64 * i + 24)
        if sh_type == SHT_RELA and info == 10:  # lib.o: [10] .sframe
            offsets = [struct.unpack_from("<Q", data, off + k)[0] for k in range(0, size, 24)]
    assert offsets
    rela = b"".join(struct.pack("<QQq", offsets[i % len(offsets)],
                                ((1 + i % (symbols - 1)) << 32) | R_X86_64_PC32, i % 64)
                    for i in range(count))
    symtab = bytes(24) + b"".join(symbol(1, (k % 16), 1, 1) for k in range(symbols - 1))
    return Elf(e_type=1, sections=[
        Sec(".text", SHT_PROGBITS, b"\xc3" * 16, flags=SHF_ALLOC | SHF_EXECINSTR),
        Sec(".sframe", SHT_GNU_SFRAME, raw, flags=SHF_ALLOC),
        Sec(".rela.sframe", SHT_RELA, rela, link=4, info=2, entsize=24),
        Sec(".symtab", SHT_SYMTAB, symtab, link=5, info=1, entsize=24),
        Sec(".strtab", SHT_STRTAB, b"\0f\0"),
    ]).build()
