"""Per-ABI facts the unwinder needs beyond the SFrame header."""

from __future__ import annotations

from dataclasses import dataclass

from ..format import constants as C


@dataclass(frozen=True, slots=True)
class Abi:
    name: str
    sp: int  # DWARF register numbers
    fp: int
    ra: int | None  # register holding the RA at a call (None: the call pushes it)
    word_size: int
    big_endian: bool


ABIS: dict[int, Abi] = {
    C.ABI_AMD64_LE: Abi("amd64", sp=7, fp=6, ra=None, word_size=8, big_endian=False),
    C.ABI_AARCH64_LE: Abi("aarch64", sp=31, fp=29, ra=30, word_size=8, big_endian=False),
    C.ABI_AARCH64_BE: Abi("aarch64-be", sp=31, fp=29, ra=30, word_size=8, big_endian=True),
    C.ABI_S390X_BE: Abi("s390x", sp=15, fp=11, ra=14, word_size=8, big_endian=True),
}

# ELF e_machine -> SFrame ABI, for picking register layouts from a core file.
EM_X86_64, EM_AARCH64, EM_S390 = 62, 183, 22
ABI_OF_MACHINE = {
    (EM_X86_64, False): C.ABI_AMD64_LE,
    (EM_AARCH64, False): C.ABI_AARCH64_LE,
    (EM_AARCH64, True): C.ABI_AARCH64_BE,
    (EM_S390, True): C.ABI_S390X_BE,
}
