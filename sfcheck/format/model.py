"""The decoded form of an SFrame section.

The model keeps every stored field (counts, offsets, raw info bytes) rather
than values derived from them, so that `encode(decode(b)) == b` holds and a
test can build a section that lies about itself. `layout.build_section`
computes the canonical counts and offsets for a section built from scratch.
"""

from __future__ import annotations

from ..record import Record
from . import constants as C
from .fre_info_table import COUNT, INFO, WORD_SIZE

_HEADER_FIELDS = ("version", "flags", "abi", "fixed_fp", "fixed_ra", "num_fdes", "num_fres",
                  "fre_len", "fdeoff", "freoff", "big_endian", "auxhdr")


class Header(Record, frozen=True, fields=_HEADER_FIELDS):
    # After the stored fields, values derived once at construction (every check and
    # lookup reads them, often per FDE): plain slots instead of properties. Not
    # compared, not shown, not constructor arguments.
    __slots__ = (*_HEADER_FIELDS, "size", "fdes_start", "fres_start", "fres_end", "sorted",
                 "pcrel")

    def __init__(self, version: int, flags: int, abi: int, fixed_fp: int, fixed_ra: int,
                 num_fdes: int, num_fres: int, fre_len: int, fdeoff: int, freoff: int,
                 big_endian: bool, auxhdr: bytes = b"") -> None:
        self.version = version
        self.flags = flags
        self.abi = abi
        self.fixed_fp = fixed_fp
        self.fixed_ra = fixed_ra
        self.num_fdes = num_fdes
        self.num_fres = num_fres
        self.fre_len = fre_len
        self.fdeoff = fdeoff
        self.freoff = freoff
        self.big_endian = big_endian
        self.auxhdr = auxhdr
        self.size = size = C.HEADER_SIZE + len(auxhdr)  # incl. auxiliary header
        self.fdes_start = size + fdeoff
        self.fres_start = size + freoff
        self.fres_end = size + freoff + fre_len
        self.sorted = bool(flags & C.F_FDE_SORTED)
        # v1 predates the PCREL flag; its start addresses are always section-relative.
        self.pcrel = version >= C.VERSION_2 and bool(flags & C.F_FDE_FUNC_START_PCREL)

    @property
    def fde_size(self) -> int:
        return C.FDE_SIZE[self.version]

    @property
    def fdes_end(self) -> int:
        """Where the FDE array the header claims ends (maybe past the section)."""
        return self.fdes_start + self.num_fdes * self.fde_size

    @property
    def data_end(self) -> int:
        """Where the SFrame data the header claims ends: trailing bytes start here."""
        return max(self.fdes_end, self.fres_end)

    def start_base(self, field_relative: bool | None = None,
                   honour_fdeoff: bool = True) -> tuple[int, int]:
        """(base, stride): FDE i's function starts at vma + stored start + base + i * stride.

        PC-relative starts count from the field itself. libsframe (and so objdump)
        ignores fdeoff when locating the field: honour_fdeoff=False reproduces it.
        `field_relative` overrides the flag (relocated .o files are field-relative
        whatever the flags say). The one statement of the formula: func_start and
        fde_table.Columns.pcs use it.
        """
        if not (self.pcrel if field_relative is None else field_relative):
            return 0, 0
        return (self.fdes_start if honour_fdeoff else self.size), self.fde_size

    def func_start(self, index: int, start: int, section_vma: int = 0,
                   honour_fdeoff: bool = True, field_relative: bool | None = None) -> int:
        """The absolute start of FDE `index`'s function, from its stored `start` field."""
        base, stride = self.start_base(field_relative, honour_fdeoff)
        return section_vma + start + base + index * stride


class FRE(Record, frozen=True, compare=("start", "info", "words")):
    """A frame row entry: `start` is relative to the function (or the block for PCMASK)."""

    __slots__ = ("start", "info", "words", "offset")

    def __init__(self, start: int, info: int, words: tuple[int, ...], offset: int = -1) -> None:
        self.start = start
        self.info = info
        self.words = words
        self.offset = offset  # position in the section, -1 if built (not compared)

    @property
    def base_sp(self) -> bool:
        return INFO[self.info].base_sp

    @property
    def count(self) -> int:
        return COUNT[self.info]

    @property
    def size_code(self) -> int:
        return INFO[self.info].size_code

    @property
    def word_size(self) -> int:
        """Bytes per data word (1 for the invalid size code 3, which no decoded FRE has)."""
        return WORD_SIZE[self.info] or 1

    @property
    def mangled_ra(self) -> bool:
        return INFO[self.info].mangled_ra

    @property
    def ra_undefined(self) -> bool:
        return self.count == 0

    def uword(self, idx: int) -> int | None:
        """Data word `idx` read as unsigned (flex control words), None if absent."""
        if idx >= len(self.words):
            return None
        return self.words[idx] & ((1 << (8 * self.word_size)) - 1)


def fre_info(base_sp: bool, count: int, size_code: int, mangled_ra: bool = False) -> int:
    return (int(mangled_ra) << 7) | ((size_code & 3) << 5) | ((count & 0xF) << 1) | int(base_sp)


def smallest_size_code(words: tuple[int, ...]) -> int:
    """The size code gas would pick: the narrowest signed width holding every word."""
    for code, width in C.WORD_SIZE.items():
        lim = 1 << (8 * width - 1)
        if all(-lim <= w < lim for w in words):
            return code
    return 2


def make_fre(start: int, words: tuple[int, ...] | list[int], base_sp: bool = True,
             mangled_ra: bool = False, size_code: int | None = None) -> FRE:
    words = tuple(words)
    code = smallest_size_code(words) if size_code is None else size_code
    return FRE(start, fre_info(base_sp, len(words), code, mangled_ra), words)


_FDE_FIELDS = ("start", "size", "info", "fres", "rep_size", "info2", "padding", "fre_off",
               "num_fres")


class FDE(Record, frozen=True, compare=_FDE_FIELDS):
    """A function descriptor: v1/v2 record, or v3 index entry plus attribute record."""

    __slots__ = (*_FDE_FIELDS, "offset")

    def __init__(self, start: int, size: int, info: int, fres: tuple[FRE, ...] = (),
                 rep_size: int = 0, info2: int = 0, padding: int = 0, fre_off: int = 0,
                 num_fres: int = 0, offset: int = -1) -> None:
        self.start = start  # the stored start field: section-relative or (PCREL) field-relative
        self.size = size
        self.info = info
        self.fres = fres
        self.rep_size = rep_size
        self.info2 = info2  # v3 only
        self.padding = padding  # v2 only (sfde_func_padding2)
        self.fre_off = fre_off  # sfde_func_start_fre_off as stored
        self.num_fres = num_fres  # as stored (v3: in the attribute record)
        self.offset = offset  # position of the record in the section (not compared)

    @property
    def fre_type(self) -> int:
        return self.info & 0xF

    @property
    def pc_type(self) -> int:
        return (self.info >> 4) & 1

    @property
    def pcmask(self) -> bool:
        return self.pc_type == C.PCTYPE_MASK

    @property
    def pauth_key(self) -> int:
        return (self.info >> 5) & 1

    @property
    def signal(self) -> bool:
        """v3 signal-frame bit (bit 7 of info); meaningless in v1/v2."""
        return bool(self.info & 0x80)

    @property
    def fde_type(self) -> int:
        return self.info2 & 0x1F

    def flex(self, version: int) -> bool:
        return version >= C.VERSION_3 and self.fde_type == C.FDE_TYPE_FLEX


def fde_info(fre_type: int, pcmask: bool = False, pauth_key: int = 0,
             signal: bool = False) -> int:
    return (int(signal) << 7) | ((pauth_key & 1) << 5) | (int(pcmask) << 4) | (fre_type & 0xF)


class Section(Record, frozen=True):
    __slots__ = ("header", "fdes", "trailing")

    def __init__(self, header: Header, fdes: tuple[FDE, ...], trailing: bytes = b"") -> None:
        self.header = header
        self.fdes = fdes
        self.trailing = trailing  # bytes after the FRE sub-section (zero padding when valid)

    def func_start(self, index: int, section_vma: int = 0, honour_fdeoff: bool = True) -> int:
        """The absolute start address of FDE `index`'s function."""
        return self.header.func_start(index, self.fdes[index].start, section_vma, honour_fdeoff)
