"""Per-ABI facts: which DWARF registers SP, FP and the RA are, how many registers there are,
whether return addresses can be signed."""

from __future__ import annotations

from ..record import Record
from . import constants as C


class Abi(Record, frozen=True):
    __slots__ = ("name", "sp", "fp", "ra", "ra_column", "pc", "word_size", "big_endian",
                 "max_reg", "pauth")

    def __init__(self, name: str, sp: int, fp: int, ra: int | None, ra_column: int,
                 pc: int | None, word_size: int, big_endian: bool, max_reg: int,
                 pauth: bool = False) -> None:
        self.name = name
        self.sp = sp  # DWARF register numbers
        self.fp = fp
        self.ra = ra  # register holding the RA at a call (None: the call pushes it)
        self.ra_column = ra_column  # the DWARF CFI column that describes the RA
        self.pc = pc  # DWARF number of the PC, when the ABI has one (x86-64: RIP is 16)
        self.word_size = word_size
        self.big_endian = big_endian
        self.max_reg = max_reg  # highest DWARF register number an SFrame word may name
        self.pauth = pauth  # pointer authentication (FDE pauth key, FRE mangled-RA bit)


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
