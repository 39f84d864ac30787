"""The ELF layer (moved from elf.py; split into modules in the next commit)."""

from sfcheck.elf.loader import *  # noqa: F403
from sfcheck.elf.loader import (  # noqa: F401
    ELF_MAGIC,
    MAX_SECTION_BYTES,
    MAX_SFRAME_SECTIONS,
    Buffer,
    ElfError,
    FuncSymbols,
    address_set,
    addresses,
    string_at,
)
