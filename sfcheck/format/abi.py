"""Per-ABI register facts: which DWARF registers SP, FP and the RA are."""

from __future__ import annotations

from dataclasses import dataclass

from . import constants as C


@dataclass(frozen=True, slots=True)
class Abi:
    name: str
    sp: int  # DWARF register numbers
    fp: int
    ra: int | None  # register holding the RA at a call (None: the call pushes it)
    ra_column: int  # the DWARF CFI column that describes the RA
    pc: int | None  # DWARF number of the PC, when the ABI has one (x86-64: RIP is 16)
    word_size: int
    big_endian: bool


ABIS: dict[int, Abi] = {
    C.ABI_AMD64_LE: Abi("amd64", sp=7, fp=6, ra=None, ra_column=16, pc=16, word_size=8,
                        big_endian=False),
    C.ABI_AARCH64_LE: Abi("aarch64", sp=31, fp=29, ra=30, ra_column=30, pc=None, word_size=8,
                          big_endian=False),
    C.ABI_AARCH64_BE: Abi("aarch64-be", sp=31, fp=29, ra=30, ra_column=30, pc=None, word_size=8,
                          big_endian=True),
    C.ABI_S390X_BE: Abi("s390x", sp=15, fp=11, ra=14, ra_column=14, pc=None, word_size=8,
                        big_endian=True),
}
