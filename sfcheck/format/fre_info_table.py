"""The FRE info byte, decoded once: a 256-entry table indexed by the byte.

fre_info has one layout in v1, v2 and v3 (binutils SFrame specification, "SFrame FRE
Info Word"): bit 0 the CFA base register (0 FP, 1 SP), bits 1-4 the data-word count,
bits 5-6 the data-word size code (0, 1, 2: 1, 2, 4 bytes; 3 invalid), bit 7 the
mangled-RA bit (aarch64 pointer authentication). What a count means per version and FDE
type (no words: RA undefined from v2 errata 2 on; v3 flex (control, offset) pairs) is the
rules' business, not the byte's. Every reader of the byte indexes INFO (or one of its
columns) rather than shifting and masking: a tuple index per FRE in hot loops.
"""

from __future__ import annotations

from ..record import NamedTuple
from . import constants


class FreInfo(NamedTuple):
    count: int  # data words
    size_code: int  # 0-3
    word_size: int  # bytes per data word; 0 for size code 3 (invalid)
    base_sp: bool  # the CFA is SP-based (else FP-based)
    mangled_ra: bool
    data_len: int  # count * word_size: the bytes after the info byte (size code 3: 0)

    @property
    def valid(self) -> bool:
        """The size code names a word size (3 does not: the FRE's length is unknown)."""
        return self.word_size != 0


def _entry(info: int) -> FreInfo:
    count = (info & constants.FRE_INFO_COUNT) >> 1
    code = info >> constants.FRE_INFO_SIZE_SHIFT & 3
    width = constants.WORD_SIZE.get(code, 0)
    return FreInfo(count, code, width, bool(info & constants.FRE_INFO_BASE_SP),
                   bool(info & constants.FRE_INFO_MANGLED_RA), count * width)


INFO: tuple[FreInfo, ...] = tuple(map(_entry, range(256)))
# Columns of INFO, for bytes.translate and per-FRE lookups without an attribute access.
COUNT = bytes(i.count for i in INFO)
WORD_SIZE = bytes(i.word_size for i in INFO)
DATA_LEN = bytes(i.data_len for i in INFO)
