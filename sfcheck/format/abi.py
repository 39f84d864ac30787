"""Per-ABI facts: which DWARF registers SP, FP and the RA are, how many registers there are,
whether return addresses can be signed."""

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
    max_reg: int  # highest DWARF register number an SFrame word may name
    pauth: bool = False  # pointer authentication (FDE pauth key, FRE mangled-RA bit)


ABIS: dict[int, Abi] = {
    C.ABI_AMD64_LE: Abi("amd64", sp=7, fp=6, ra=None, ra_column=16, pc=16, word_size=8,
                        big_endian=False, max_reg=16),
    C.ABI_AARCH64_LE: Abi("aarch64", sp=31, fp=29, ra=30, ra_column=30, pc=None, word_size=8,
                          big_endian=False, max_reg=31, pauth=True),
    C.ABI_AARCH64_BE: Abi("aarch64-be", sp=31, fp=29, ra=30, ra_column=30, pc=None, word_size=8,
                          big_endian=True, max_reg=31, pauth=True),
    C.ABI_S390X_BE: Abi("s390x", sp=15, fp=11, ra=14, ra_column=14, pc=None, word_size=8,
                        big_endian=True, max_reg=31),
}


MAX_REG_UNKNOWN = 31  # an undefined ABI byte: the widest register file


def max_reg(abi: int) -> int:
    a = ABIS.get(abi)
    return a.max_reg if a else MAX_REG_UNKNOWN


def has_pauth(abi: int) -> bool:
    a = ABIS.get(abi)
    return a.pauth if a else False
