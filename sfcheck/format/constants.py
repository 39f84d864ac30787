"""Numeric constants of the SFrame format (include/sframe.h, binutils 2.40-2.46)."""

from __future__ import annotations

MAGIC = 0xDEE2
MAGIC_LE = b"\xe2\xde"  # 0xdee2 stored little-endian
MAGIC_BE = b"\xde\xe2"

VERSION_1 = 1
VERSION_2 = 2
VERSION_3 = 3
VERSIONS = (VERSION_1, VERSION_2, VERSION_3)

HEADER_SIZE = 28  # preamble + header, identical in v1, v2, v3

# Header flags (sfp_flags).
F_FDE_SORTED = 0x1
F_FRAME_POINTER = 0x2  # v1/v2 only; removed in v3
F_FDE_FUNC_START_PCREL = 0x4  # v2 errata 1 (2.45+) and v3
FLAGS_KNOWN = {VERSION_1: 0x3, VERSION_2: 0x7, VERSION_3: 0x5}

# ABI/arch identifiers.
ABI_AARCH64_BE = 1
ABI_AARCH64_LE = 2
ABI_AMD64_LE = 3
ABI_S390X_BE = 4
ABI_NAMES = {
    ABI_AARCH64_BE: "aarch64-be",
    ABI_AARCH64_LE: "aarch64-le",
    ABI_AMD64_LE: "amd64",
    ABI_S390X_BE: "s390x",
}
ABI_BIG_ENDIAN = {ABI_AARCH64_BE: True, ABI_AARCH64_LE: False, ABI_AMD64_LE: False,
                  ABI_S390X_BE: True}

# FDE record sizes (v3: the index entry; the attribute record is separate).
FDE_SIZE = {VERSION_1: 17, VERSION_2: 20, VERSION_3: 16}
V3_ATTR_SIZE = 5

# FRE types (low 4 bits of the FDE info byte): size of the FRE start address.
FRE_TYPE_ADDR1 = 0
FRE_TYPE_ADDR2 = 1
FRE_TYPE_ADDR4 = 2
FRE_ADDR_SIZE = {FRE_TYPE_ADDR1: 1, FRE_TYPE_ADDR2: 2, FRE_TYPE_ADDR4: 4}

# FDE info byte (sfde_func_info; v3 sfda_func_info) and v3 info2.
FDE_INFO_FRE_TYPE = 0x0F  # bits 0-3: FRE type
FDE_INFO_PCMASK = 0x10  # bit 4: PC type
FDE_INFO_PAUTH_B = 0x20  # bit 5: aarch64 pauth key B
FDE_INFO_UNUSED = 0x40  # bit 6: unused in every version
FDE_INFO_SIGNAL = 0x80  # bit 7: v3 signal frame; unused in v1/v2
FDE_INFO2_TYPE = 0x1F  # bits 0-4: v3 FDE type
FDE_INFO2_UNUSED = 0xE0

# FRE info byte (fre_info).
FRE_INFO_BASE_SP = 0x01  # bit 0: CFA base is SP (else FP)
FRE_INFO_COUNT = 0x1E  # bits 1-4: data-word count
FRE_INFO_SIZE_SHIFT = 5  # bits 5-6: data-word size code
FRE_INFO_MANGLED_RA = 0x80  # bit 7: aarch64 signed RA

# PC types (bit 4 of the FDE info byte); v1/v2 call them "FDE types".
PCTYPE_INC = 0
PCTYPE_MASK = 1

# v3 FDE types (low 5 bits of info2).
FDE_TYPE_DEFAULT = 0
FDE_TYPE_FLEX = 1

PAUTH_KEY_A = 0
PAUTH_KEY_B = 1

# FRE data-word size codes (bits 5-6 of fre_info); 3 is invalid.
WORD_SIZE = {0: 1, 1: 2, 2: 4}
MAX_DATAWORD_BYTES = 24  # libsframe's fre_datawords buffer (2.46)

BASE_REG_FP = 0
BASE_REG_SP = 1

# Data-word indices in DEFAULT FREs.
CFA_IDX = 0
RA_IDX = 1
FP_IDX = 2

RA_OFFSET_INVALID = 0  # s390x/flex padding: "RA not saved"

# s390x stores CFA offsets as (off - 160) / 8.
S390X_CFA_ADJUST = -160
S390X_CFA_ALIGN = 8

def s390x_cfa_decode(stored: int) -> int:
    return stored * S390X_CFA_ALIGN - S390X_CFA_ADJUST


def s390x_cfa_encode(offset: int) -> int:
    # C division truncates toward zero; Python's // floors.
    num = offset + S390X_CFA_ADJUST
    q = abs(num) // S390X_CFA_ALIGN
    return q if num >= 0 else -q
