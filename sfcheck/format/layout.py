"""Build sections from scratch with canonical counts and offsets (what gas and ld write)."""

from __future__ import annotations

from . import constants as C
from .model import FDE, FRE, Header, Section


def fre_size(fre: FRE, fre_type: int) -> int:
    return C.FRE_ADDR_SIZE[fre_type] + 1 + len(fre.words) * fre.word_size


def fre_block_size(fde: FDE, version: int) -> int:
    """Bytes an FDE's FREs (and v3 attribute record) take in the FRE sub-section."""
    attr = C.V3_ATTR_SIZE if version == C.VERSION_3 else 0
    return attr + sum(fre_size(f, fde.fre_type) for f in fde.fres)


def default_fixed_ra(abi: int) -> int:
    return -8 if abi == C.ABI_AMD64_LE else 0


def build_section(version: int, abi: int, fdes: list[FDE] | tuple[FDE, ...], *,
                  flags: int | None = None, fixed_fp: int = 0, fixed_ra: int | None = None,
                  big_endian: bool | None = None, fdeoff: int = 0, auxhdr: bytes = b"",
                  trailing: bytes = b"") -> Section:
    """Lay out `fdes` (start, size, info, fres given) the way the libsframe encoder does.

    Each FDE's fre_off and num_fres are recomputed; FDEs are kept in the order given.
    """
    if flags is None:
        flags = C.F_FDE_SORTED | (C.F_FDE_FUNC_START_PCREL if version >= C.VERSION_3 else 0)
    if fixed_ra is None:
        fixed_ra = default_fixed_ra(abi)
    if big_endian is None:
        big_endian = C.ABI_BIG_ENDIAN.get(abi, False)
    placed = []
    fre_off = 0
    for fde in fdes:
        # replace(fde, fre_off=fre_off, num_fres=len(fde.fres)), without its overhead
        placed.append(FDE(fde.start, fde.size, fde.info, fde.fres, fde.rep_size, fde.info2,
                          fde.padding, fre_off, len(fde.fres), fde.offset))
        fre_off += fre_block_size(fde, version)
    header = Header(version=version, flags=flags, abi=abi, fixed_fp=fixed_fp, fixed_ra=fixed_ra,
                    num_fdes=len(placed), num_fres=sum(len(f.fres) for f in placed),
                    fre_len=fre_off, fdeoff=fdeoff,
                    freoff=fdeoff + len(placed) * C.FDE_SIZE[version], big_endian=big_endian,
                    auxhdr=auxhdr)
    return Section(header=header, fdes=tuple(placed), trailing=trailing)
