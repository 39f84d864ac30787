"""Relocations applied to a section of a relocatable object (.sframe, .eh_frame): each
REL/RELA section targeting it is checked and resolved once per file, and applied to a copy
of the bytes for each address layout asked for (the file's own, or the cross-check's
synthetic .o layout). A relocation this module does not understand is an error, never
skipped: it would silently leave wrong addresses behind."""

from __future__ import annotations

import struct

from sfcheck.elf.constants import (
    EM_AARCH64,
    EM_S390,
    EM_X86_64,
    SHN_LORESERVE,
    SHN_UNDEF,
    SHT_DYNSYM,
    SHT_REL,
    SHT_RELA,
    SHT_SYMTAB,
)
from sfcheck.elf.symbols import VALUE_AND_SECTION, entry_format, entry_size

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing at run time
if TYPE_CHECKING:
    from collections.abc import Iterator

    from sfcheck.elf.headers import ElfFile, Shdr

# Relocation types that can appear in .rela.sframe and .rela.eh_frame, per machine:
# type -> (name, width in bytes, pc-relative).  A width of 0 means "*_NONE":
# nothing to do.  Anything not listed is reported, never skipped, so a
# relocation we do not understand cannot silently leave wrong addresses behind.
RELOC_TYPES: dict[int, dict[int, tuple[str, int, bool]]] = {
    EM_X86_64: {
        0: ("R_X86_64_NONE", 0, False),
        1: ("R_X86_64_64", 8, False),
        2: ("R_X86_64_PC32", 4, True),
        10: ("R_X86_64_32", 4, False),
        11: ("R_X86_64_32S", 4, False),
        24: ("R_X86_64_PC64", 8, True),
    },
    EM_AARCH64: {
        0: ("R_AARCH64_NONE", 0, False),
        # 256 is the older spelling of the null relocation (R_AARCH64_NULL /
        # R_AARCH64_NONE depending on the binutils era); both mean "nothing".
        256: ("R_AARCH64_NONE", 0, False),
        257: ("R_AARCH64_ABS64", 8, False),
        258: ("R_AARCH64_ABS32", 4, False),
        260: ("R_AARCH64_PREL64", 8, True),
        261: ("R_AARCH64_PREL32", 4, True),
    },
    EM_S390: {
        0: ("R_390_NONE", 0, False),
        4: ("R_390_32", 4, False),
        5: ("R_390_PC32", 4, True),
        22: ("R_390_64", 8, False),
        23: ("R_390_PC64", 8, True),
    },
}

# One relocation, resolved: (r_offset, width, pc-relative, st_value, index of the section
# the symbol is relative to or 0, addend or None for REL).
Reloc = tuple[int, int, bool, int, int, "int | None"]
MASKS = {4: (1 << 32) - 1, 8: (1 << 64) - 1}


class Relocator:
    """The relocations of one file's sections, resolved once per target section."""

    def __init__(self, elf: ElfFile, shdrs: list[Shdr], names: list[str]) -> None:
        self.elf, self.shdrs, self.names = elf, shdrs, names
        self._plans: dict[int, list[Reloc]] = {}  # section index -> its relocations

    def entries(self, rs: Shdr, name: str) -> Iterator[tuple[int, int, int, int | None]]:
        """Yield (r_offset, symbol index, type, addend or None for REL)."""
        elf = self.elf
        rela = rs.type == SHT_RELA
        # Elf{32,64}_Rel{,a}: r_offset, r_info[, r_addend]
        fmt = {(64, True): "QQq", (64, False): "QQ", (32, True): "IIi", (32, False): "II"}[
            (elf.elfclass, rela)
        ]
        size = struct.calcsize(elf.order + fmt)
        if rs.entsize not in (0, size):
            raise elf.fail(f"relocation section {name} has sh_entsize {rs.entsize}, not {size}")
        if rs.size % size:
            raise elf.fail(
                f"relocation section {name} size {rs.size:#x} is not a multiple of {size}"
            )
        raw = elf.section_bytes(rs, name)
        for entry in struct.iter_unpack(elf.order + fmt, raw):
            r_offset, r_info = entry[0], entry[1]
            addend = entry[2] if rela else None
            if elf.elfclass == 64:
                yield r_offset, r_info >> 32, r_info & 0xFFFFFFFF, addend
            else:
                yield r_offset, r_info >> 8, r_info & 0xFF, addend

    def _symbol_table(self, index: int, where: str, sym: int) -> bytes:
        """The symbol table `index` a relocation section links to (read once per file)."""
        shdrs = self.shdrs
        if not 0 < index < len(shdrs) or shdrs[index].type not in (SHT_SYMTAB, SHT_DYNSYM):
            raise self.elf.fail(f"{where}: symbol {sym} but sh_link {index} is no symbol table")
        return self.elf.symbol_table(shdrs[index], self.names[index])

    def _plan(self, sf: Shdr) -> list[Reloc]:
        """Every REL/RELA relocation targeting ``sf``, checked and resolved in one pass,
        once per file (the .sframe and .eh_frame are relocated for more than one layout).

        A symbol defined in a section is relative to it (in .o files sh_addr is 0, but be
        general); SHN_ABS/SHN_COMMON/SHN_XINDEX symbols are used as they are (SHN_XINDEX
        would need .symtab_shndx; SFrame relocations never use such symbols)."""
        plan = self._plans.get(sf.index)
        if plan is not None:
            return plan
        elf, shdrs, names = self.elf, self.shdrs, self.names
        plan = []
        types = RELOC_TYPES.get(elf.machine, {})
        # Each symbol read inline: a method call per relocation cost ~5% CPU on 100k of them.
        is64 = elf.elfclass == 64
        unpack = struct.Struct(entry_format(elf.order, is64)).unpack_from
        entsize, pick = entry_size(is64), VALUE_AND_SECTION[is64]
        for rs in shdrs:
            if rs.type not in (SHT_REL, SHT_RELA) or rs.info != sf.index:
                continue
            rname = names[rs.index] or f"#{rs.index}"
            symtab, count = None, 0  # the linked symbol table, read at the first symbol
            for j, (r_offset, sym, rtype, addend) in enumerate(self.entries(rs, rname)):
                kind = types.get(rtype)
                if kind is None:
                    raise elf.fail(
                        f"{rname}: relocation {j}: unsupported relocation type {rtype} "
                        f"for machine {elf.machine}"
                    )
                width, pcrel = kind[1], kind[2]
                if width == 0:
                    continue  # *_NONE
                if r_offset + width > sf.size:
                    raise elf.fail(
                        f"{rname}: relocation {j} ({kind[0]}): r_offset {r_offset:#x} + "
                        f"{width} outside section {names[sf.index]} (size {sf.size:#x})"
                    )
                value = shndx = 0
                if sym:  # not STN_UNDEF
                    if symtab is None:
                        symtab = self._symbol_table(
                            rs.link, f"{rname}: relocation {j} ({kind[0]})", sym)
                        count = len(symtab) // entsize
                    if sym >= count:
                        raise elf.fail(
                            f"{rname}: relocation {j} ({kind[0]}): bad symbol index {sym} "
                            f"({count} symbols in {names[rs.link]})"
                        )
                    value, shndx = pick(unpack(symtab, sym * entsize))
                    if not SHN_UNDEF < shndx < SHN_LORESERVE:
                        shndx = 0
                    elif shndx >= len(shdrs):
                        raise elf.fail(f"{rname}: relocation {j} ({kind[0]}): symbol {sym} "
                                       f"refers to missing section {shndx}")
                plan.append((r_offset, width, pcrel, value, shndx, addend))
        self._plans[sf.index] = plan
        return plan

    def apply(self, sf: Shdr, raw: bytes, bases: dict[int, int] | None = None
              ) -> tuple[bytes, int]:
        """Apply every REL/RELA section targeting ``sf`` to a copy of ``raw``: the bytes
        and the number of relocations applied.

        ``bases`` overrides section addresses (the synthetic .o layout)."""
        plan = self._plan(sf)
        buf = bytearray(raw)
        order = self.elf.byteorder
        addr = [sh.addr for sh in self.shdrs] if bases is None else \
            [bases.get(sh.index, 0) for sh in self.shdrs]
        place = addr[sf.index]
        size = len(buf)  # the bytes held: a NOBITS section's are none, whatever sh_size says
        for r_offset, width, pcrel, value, shndx, addend in plan:
            if r_offset + width > size:  # the plan checked sh_size; a slice past the end grows
                raise self.elf.fail(f"relocation at r_offset {r_offset:#x} + {width} outside "
                                    f"the {size:#x} stored bytes of section #{sf.index}")
            if addend is None:  # REL: the addend is what is stored in place
                addend = int.from_bytes(buf[r_offset : r_offset + width], order, signed=True)
            value += addr[shndx] + addend if shndx else addend
            if pcrel:
                value -= place + r_offset
            buf[r_offset : r_offset + width] = (value & MASKS[width]).to_bytes(width, order)
        return bytes(buf), len(plan)
