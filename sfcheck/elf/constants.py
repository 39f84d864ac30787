"""ELF numbers the loader reads (System V gABI and the GNU extensions), and the bounds on
what one file may make sfcheck hold (a hostile header can claim anything)."""

from __future__ import annotations

ELF_MAGIC = b"\x7fELF"

SHT_PROGBITS = 1
SHT_SYMTAB = 2
SHT_RELA = 4
SHT_NOTE = 7
SHT_NOBITS = 8
SHT_REL = 9
SHT_DYNSYM = 11
SHT_GNU_SFRAME = 0x6FFFFFF4  # binutils 2.45 on; .sframe was SHT_PROGBITS before

SHF_ALLOC = 0x2
SHF_EXECINSTR = 0x4

PT_LOAD = 1
PT_GNU_SFRAME = 0x6474E554
PF_X = 1

SHN_UNDEF = 0
SHN_LORESERVE = 0xFF00
SHN_XINDEX = 0xFFFF
PN_XNUM = 0xFFFF

EM_S390 = 22
EM_X86_64 = 62
EM_AARCH64 = 183

E_TYPES = {0: "ET_NONE", 1: "ET_REL", 2: "ET_EXEC", 3: "ET_DYN", 4: "ET_CORE"}
# pyelftools' names of the machines SFrame is seen on; the rest come from its table.
MACHINES = {3: "EM_386", EM_S390: "EM_S390", EM_X86_64: "EM_X86_64", EM_AARCH64: "EM_AARCH64",
            40: "EM_ARM", 243: "EM_RISCV", 21: "EM_PPC64", 8: "EM_MIPS"}

MAX_SECTION_BYTES = 256 << 20  # one section copied out of the file (.sframe, .eh_frame, ...)
MAX_SFRAME_SECTIONS = 64  # SFrame sections checked per file (linked files have one)
MAX_SYMBOLS = 1 << 21  # symbol table entries read for names (big C++ libraries have ~1M)
MAX_SYMBOL_NAME = 256  # bytes of a symbol name looked at (a name without NUL is cut here)
