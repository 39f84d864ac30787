"""Model of the 2023 RFC kernel reader ("[PATCH RFC 09/10] unwind: Introduce SFrame user
space unwinding", Josh Poimboeuf, 2023-11-08; kernel/unwind/sframe.c, v1 only).

Written from a reading of the patch (message-id
09460e60dd1c2f8ea1abb8d9188195db699ce76f.1699487758.git.jpoimboe@kernel.org); the
reader's defects are kept on purpose, because the point is to predict what it does:
* registration tests `(!flags & SORTED)`: only flags == 0 is refused;
* find_fde binary-searches `first .. first + num_fdes` inclusive (one record past the
  table) and leaves `found` uninitialised when the PC is below every function;
* find_fre never reads the FDE's size (gaps and PCs past a function take its last row),
  never checks FRE order, always takes the last FRE of a PCMASK FDE (the test is `#if 0`),
  reads FRE starts as u32 into an s32 and the CFA offset unsigned, and leaves `last_f`
  (and the offset count and size) uninitialised when no FRE is at or before the PC;
* the walker (patch 06/10) has no CFA-direction check and leaves `ra` unset when the RA
  offset is 0.
The reader knows no section size: every read goes through get_user and can only fail on
an unmapped page. A read outside the section is reported as PAST (its value is unknown).
"""

from __future__ import annotations

from bisect import bisect_right
from dataclasses import dataclass
from itertools import accumulate

from ..format import constants
from ..format.fre_rules import RegRule
from ..wording import plural
from .outcome import EINVAL, PAST, REFUSED, ROW, UNINIT, Bytes, Outcome, PastSection, Uninit, wrap

READER = "the 2023 RFC kernel reader"
FDE_SIZE = 17  # struct sframe_fde (v1, packed): start s32, size u32, fres_off, fres_num, info
SP, FP = 7, 6  # x86-64 DWARF numbers: the RFC unwinds x86-64 only
OFFSET_SIZES = {0: 1, 1: 2, 2: 4}  # FRE info's offset size code -> bytes (3 is invalid)


@dataclass(frozen=True, slots=True)
class Registered:
    """struct sframe_section as __sframe_add_section fills it (offsets in the section)."""

    vma: int
    fdes: int  # offset of the FDE array
    fres: int  # offset of the FRE sub-section
    num_fdes: int
    ra_off: int  # header's fixed offsets (s8)
    fp_off: int
    flags: int


def register(data: bytes, vma: int) -> Registered | Outcome:
    """__sframe_add_section's header checks (the header is read with copy_from_user)."""
    mem = Bytes(data)
    try:
        magic = mem.uint(0, 2, "preamble")
        version, flags = mem.uint(2, 1, "preamble"), mem.uint(3, 1, "preamble")
        ra_off, fp_off = mem.sint(6, 1, "header"), mem.sint(5, 1, "header")
        auxhdr = mem.uint(7, 1, "header")
        num_fdes, num_fres = mem.uint(8, 4, "header"), mem.uint(12, 4, "header")
        fdeoff, freoff = mem.uint(20, 4, "header"), mem.uint(24, 4, "header")
    except PastSection as exc:
        return Outcome(PAST, f"registration copies a 28-byte header: {exc}",
                       cause="no-bounds")
    why = None
    if magic != constants.MAGIC:
        why = f"magic {magic:#06x} (read little-endian) is not 0xdee2"
    elif version != constants.VERSION_1:
        why = f"version {version} is not 1"
    elif (not flags) & constants.F_FDE_SORTED:  # the reader's precedence: !flags, then & SORTED
        why = "flags 0 (the test `!flags & SFRAME_F_FDE_SORTED` refuses only flags == 0)"
    elif auxhdr:
        why = f"auxhdr_len {auxhdr}"
    elif not num_fdes or not num_fres:
        why = f"num_fdes {num_fdes}, num_fres {num_fres}"
    elif fdeoff > freoff:
        why = f"fdes_off {fdeoff:#x} > fres_off {freoff:#x}"
    if why:
        return Outcome(REFUSED, f"{READER} refuses to register the section: {why}")
    # SFRAME_HDR_SIZE adds auxhdr_len, which is 0 here.
    return Registered(vma, constants.HEADER_SIZE + fdeoff, constants.HEADER_SIZE + freoff,
                      num_fdes, ra_off, fp_off, flags)


class Memo:
    """What lookups in one registered section have read so far: the bytes never change,
    so a checker probing many PCs decodes each FDE start, FDE record and FRE header once.
    Only successful reads are kept; a read outside the section is redone (and raises)."""

    def __init__(self, data: bytes) -> None:
        self.mem = Bytes(data)
        self.starts: dict[int, int] = {}  # FDE record -> its start (s32)
        self.fdes: dict[int, tuple[int, int, int, int]] = {}  # start, fres_off, num, info
        # FDE record -> its FREs' (start, info byte or None if past the section), in order
        self.fres: dict[int, list[tuple[int, int | None]]] = {}
        # FDE record -> the running maximum of its FRE starts, once all are read: the scan
        # of _find_fre (no PCMASK) stops at the first start above the PC offset, which is
        # the first place this maximum exceeds it.
        self.highs: dict[int, list[int]] = {}
        # (FDE record, FRE the scan stops at) -> _find_fre's outcome: everything it reads
        # and reports depends on where the scan stops, not on the PC (except the offset
        # named when no FRE is at or before it, which is never kept).
        self.found: dict[tuple[int, int], Outcome] = {}


def lookup(data: bytes, sec: Registered, ip: int, memo: Memo | None = None) -> Outcome:
    """sframe_find(ip): find_fde then find_fre, plus what the walker does with the row.
    `memo` (made from the same `data`) carries decoded records between lookups."""
    if memo is None:
        memo = Memo(data)
    try:
        got = _find_fde(memo, sec, ip)
        if isinstance(got, Outcome):
            return got
        index, notes = got
        out = _find_fre(memo, sec, index, ip)
    except PastSection as exc:
        return Outcome(PAST, f"{READER} {exc}")
    if notes:
        out = Outcome(out.kind, out.detail, out.fde, out.fre, out.cfa, out.ra, out.fp,
                      out.outermost, notes + out.notes, out.cause)
    return out


def _find_fde(memo: Memo, sec: Registered, ip: int) -> tuple[int, tuple[str, ...]] | Outcome:
    ip_off = wrap(ip - sec.vma, 32)  # s32 ip_off = ip - sframe_addr
    first, last = 0, sec.num_fdes  # last = first + num_fdes: one record too far
    found: int | Uninit = Uninit("found")
    notes: list[str] = []
    while first <= last:
        mid = first + (last - first) // 2
        if mid >= sec.num_fdes:
            notes.append(f"binary search reads FDE record {mid}, one past the table of "
                         f"{sec.num_fdes} (section offset {sec.fdes + mid * FDE_SIZE:#x})")
        func_off = memo.starts.get(mid)
        if func_off is None:
            func_off = memo.starts[mid] = memo.mem.sint(sec.fdes + mid * FDE_SIZE, 4,
                                                        f"FDE {mid} start")
        if ip_off >= func_off:
            found, first = mid, mid + 1
        else:
            last = mid - 1
    if isinstance(found, Uninit):
        return Outcome(UNINIT, f"PC offset {ip_off:#x} is below every function: find_fde "
                       "tests the uninitialised `found` (a garbage FDE pointer; kernels that "
                       "zero-initialise stack variables return -EINVAL)", cause="found-uninit")
    return found, tuple(notes)


def _find_fre(memo: Memo, sec: Registered, index: int, ip: int) -> Outcome:
    mem = memo.mem
    rec = memo.fdes.get(index)
    if rec is None:
        base = sec.fdes + index * FDE_SIZE
        rec = memo.fdes[index] = (mem.sint(base, 4, f"FDE {index} start"),
                                  mem.uint(base + 8, 4, f"FDE {index} fres_off"),
                                  mem.uint(base + 12, 4, f"FDE {index} fres_num"),
                                  mem.uint(base + 16, 1, f"FDE {index} info"))
    start, fres_off, fres_num, info = rec
    phantom = index >= sec.num_fdes
    fre_type, pcmask = info & 0xF, bool(info & 0x10)
    if fre_type > 2:
        return Outcome(EINVAL, f"FDE {index}: FRE type {fre_type}", index)
    addr_size = 1 << fre_type
    ip_off = wrap(ip - sec.vma - start, 32)
    stop = -1  # where the scan below stops, when known beforehand (then its outcome is kept)
    highs = memo.highs.get(index)
    if highs is None and fres_num and len(memo.fres.get(index, ())) == fres_num:
        highs = memo.highs[index] = list(accumulate((s for s, _ in memo.fres[index]), max))
    if highs is not None:
        stop = fres_num if pcmask else bisect_right(highs, ip_off)
        got = memo.found.get((index, stop))
        if got is not None:
            return got
    out = _scan_fres(memo, sec, index, ip_off, fres_off, fres_num, pcmask, addr_size, phantom)
    if stop > 0:  # a stop at FRE 0 names the PC offset: never kept
        memo.found[index, stop] = out
    return out


def _scan_fres(memo: Memo, sec: Registered, index: int, ip_off: int, fres_off: int,
               fres_num: int, pcmask: bool, addr_size: int, phantom: bool) -> Outcome:
    """find_fre's scan of FDE `index`'s FREs for PC offset `ip_off`, and the row it reads."""
    mem = memo.mem
    f = sec.fres + fres_off
    last_f: int | Uninit = Uninit("last_f")
    last_j = -1
    count = size = 0
    notes: list[str] = []
    prev_start: int | None = None
    seen = memo.fres.setdefault(index, [])
    for j in range(fres_num):  # bounded: every FRE advances f by >= 2 bytes inside the data
        if j < len(seen):
            fre_start, fre_info = seen[j]
        else:  # FRE j's position depends only on FREs 0..j-1: decode it once
            fre_start = wrap(mem.uint(f, addr_size, f"FDE {index} FRE {j} start"), 32)
            at = f + addr_size
            fre_info = mem.data[at] if at < len(mem.data) else None
            seen.append((fre_start, fre_info))
        f += addr_size
        if prev_start is not None and fre_start <= prev_start:
            notes.append(f"FRE {j} starts at {fre_start:#x}, not after FRE {j - 1} "
                         f"({prev_start:#x}): the order is never checked")
        prev_start = fre_start
        if not pcmask and fre_start > ip_off:
            break
        # PCMASK: the `ip_off % rep_size` test is compiled out, so no FRE ends the scan.
        if fre_info is None:  # only now does the reader read the byte past the section
            fre_info = mem.uint(f, 1, f"FDE {index} FRE {j} info")
        f += 1
        count = (fre_info >> 1) & 0xF
        size = OFFSET_SIZES.get((fre_info >> 5) & 3, 0)
        if not count or not size:
            return Outcome(EINVAL, f"FDE {index} FRE {j}: offset count {count}, size code "
                           f"{(fre_info >> 5) & 3}", index, j)
        last_f, last_j, use_fp = f, j, not fre_info & 1
        f += count * size
    if isinstance(last_f, Uninit):
        why = "it has no FREs" if not fres_num else \
            f"its first FRE starts after PC offset {ip_off:#x}"
        return Outcome(UNINIT, f"FDE {index}: {why}, so find_fre reads through the "
                       "uninitialised `last_f` with an uninitialised offset size (kernels "
                       "that zero-initialise stack variables return -EINVAL)", index,
                       cause="last-f-uninit")
    f = last_f
    cfa_off = wrap(mem.uint(f, size, "CFA offset"), 32)  # read UNSIGNED into an s32
    f += size
    count -= 1
    ra_off = sec.ra_off
    if not ra_off:
        if not count:
            return Outcome(EINVAL, f"FDE {index} FRE {last_j}: no RA offset", index, last_j)
        count -= 1
        ra_off = mem.sint(f, size, "RA offset")
        f += size
    fp_off = sec.fp_off
    if not fp_off and count:
        count -= 1
        fp_off = mem.sint(f, size, "FP offset")
        f += size
    if count:
        return Outcome(EINVAL, f"FDE {index} FRE {last_j}: {plural(count, 'offset')} left over",
                       index, last_j)
    if phantom:
        notes.insert(0, f"the FDE used is record {index}, past the table of "
                     f"{sec.num_fdes}: made of the bytes that follow it")
    cfa = RegRule(FP if use_fp else SP, cfa_off, False)
    ra = RegRule(None, ra_off, True) if ra_off else None
    fp = RegRule(None, fp_off, True) if fp_off else None
    if ra is None:
        return Outcome(UNINIT, f"FDE {index} FRE {last_j}: RA offset 0, and the walker "
                       "then leaves `ra` uninitialised: a garbage return address enters the "
                       "trace", index, last_j, cfa, ra, fp, notes=tuple(notes),
                       cause="ra-uninit")
    return Outcome(ROW, "", index, last_j, cfa, ra, fp, notes=tuple(notes))
