"""Per-ABI facts the unwinder needs beyond the SFrame header."""

from __future__ import annotations

from ..format import constants
from ..format.abi import ABIS, Abi

__all__ = ["ABIS", "ABI_OF_MACHINE", "SP_VAL_OFFSET", "Abi", "EM_AARCH64", "EM_S390",
           "EM_X86_64", "S390X_FPR_DWARF"]


# ELF e_machine -> SFrame ABI, for picking register layouts from a core file.
EM_X86_64, EM_AARCH64, EM_S390 = 62, 183, 22
ABI_OF_MACHINE = {
    (EM_X86_64, False): constants.ABI_AMD64_LE,
    (EM_AARCH64, False): constants.ABI_AARCH64_LE,
    (EM_AARCH64, True): constants.ABI_AARCH64_BE,
    (EM_S390, True): constants.ABI_S390X_BE,
}

# The caller's SP relative to the CFA. s390x defines the CFA as the SP at the call site
# + 160 (sframe.h SFRAME_S390X_SP_VAL_OFFSET; the kernel's SFRAME_SP_OFFSET); elsewhere
# the CFA is the caller's SP.
SP_VAL_OFFSET = {constants.ABI_S390X_BE: -160}
# DWARF numbers of s390x f0..f15 (the DWARF order is f0 f2 f4 f6 f1 f3 f5 f7 f8 f10 ...).
S390X_FPR_DWARF = (16, 20, 17, 21, 18, 22, 19, 23, 24, 28, 25, 29, 26, 30, 27, 31)
