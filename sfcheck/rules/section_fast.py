"""Precompiled patterns that recognise finding-free FRE blocks in one C-level call.

An FRE's length follows from its info byte, so a regular expression over the
raw bytes can walk a whole FDE's FREs: the start address (captured), one of
the info bytes no FRE rule objects to for this header, and the data words,
with the CFA word constrained by byte classes to the values fre-cfa-offset
accepts. `pattern.findall(data, first, end)` then returns one start address
per FRE, or an empty string for a byte where no such FRE begins. The section
checker (section.py) accepts an FDE on this path only when the walk covers
its block exactly and the starts pass the order and size rules; everything
else (PCMASK, FLEX, s390x register words, any finding at all) goes through
the decoder-based checks, which produce the findings. The patterns accept a
subset of the finding-free FREs, never more: test_fastpath_equivalence.py
compares both paths.
"""

from __future__ import annotations

import re
import struct
import sys
from array import array
from collections.abc import Iterable
from functools import cache
from itertools import accumulate, chain, compress, islice, repeat
from operator import add, and_, contains, ge, gt, itemgetter, le, lt, mul, ne, or_, sub

from ..format import constants as C
from ..format.model import Header

# Info bytes of FDEs this path handles: FRE type 0-2, PCINC, no reserved bits.
_PCMASK, _PAUTH = 0x10, 0x20


def fast_fre_type(info: int, version: int, aarch64: bool) -> int:
    """The FRE type of an FDE info byte the fast path takes, or -1."""
    reserved = 0x40 | (0x80 if version < C.VERSION_3 else 0)
    if info & (reserved | _PCMASK) or (info & _PAUTH and not aarch64):
        return -1
    t = info & 0xF
    return t if t <= C.FRE_TYPE_ADDR4 else -1


def fast_fre_types(version: int, abi: int) -> list[int]:
    aarch64 = abi in (C.ABI_AARCH64_BE, C.ABI_AARCH64_LE)
    return [fast_fre_type(b, version, aarch64) for b in range(256)]


# Function sizes each FRE type must have (fde-fre-type-size / fde-fre-type-small).
SIZE_RANGE = ((0, 0x100), (0x100, 0x10000), (0x10000, 1 << 32))


def _cls(values: list[int] | range) -> bytes:
    """A regex character class matching exactly these byte values."""
    vals = sorted(set(values))
    if len(vals) == 256:
        return b"."
    out, k = [], 0
    while k < len(vals):
        j = k
        while j + 1 < len(vals) and vals[j + 1] == vals[j] + 1:
            j += 1
        out.append(b"\\x%02x" % vals[k] if j == k else b"\\x%02x-\\x%02x" % (vals[k], vals[j]))
        k = j + 1
    return b"[" + b"".join(out) + b"]"


def _word(width: int, big: bool, low: bytes, top: bytes) -> bytes:
    """Bytes of one `width`-byte word given classes for its lowest and highest byte."""
    if width == 1:
        raise ValueError("single-byte words have one class")
    mid = b"." * (width - 2)
    return top + mid + low if big else low + mid + top


def _cfa_word(width: int, big: bool, s390x: bool) -> bytes:
    """A stored SP-based CFA word that fre-cfa-offset accepts.

    Elsewhere: offset >= 0 and a multiple of 8. s390x stores (off - 160) / 8, so
    every value is aligned and offset >= 0 means stored >= -20.
    """
    if not s390x:
        if width == 1:
            return _cls(range(0, 0x80, 8))
        return _word(width, big, _cls(range(0, 0x100, 8)), _cls(range(0x80)))
    if width == 1:
        return _cls([*range(0x80), *range(0x100 - 20, 0x100)])
    nonneg = _word(width, big, b".", _cls(range(0x80)))
    neg = _word(width, big, _cls(range(0x100 - 20, 0x100)), b"\\xff")
    if width == 4:
        neg = b"\\xff\\xff\\xff" + _cls(range(0x100 - 20, 0x100)) if big else \
            _cls(range(0x100 - 20, 0x100)) + b"\\xff\\xff\\xff"
    return b"(?:" + nonneg + b"|" + neg + b")"


def _even_word(width: int, big: bool) -> bytes:
    """s390x RA/FP words: only even ones (stack slots) avoid the register rules."""
    even = _cls(range(0, 0x100, 2))
    if width == 1:
        return even
    rest = b"." * (width - 1)
    return rest + even if big else even + rest


def fixed_words(h: Header) -> int:
    """How many of the RA/FP words the header fixes (they are then not in the FREs)."""
    return (h.fixed_ra != 0) + (h.fixed_fp != 0)


def legal_counts(version: int, fixed: int) -> frozenset[int]:
    """Data-word counts of a DEFAULT FRE that fre-word-count accepts: the CFA, then an RA
    and an FP word unless the header fixes them (libsframe's getters, the kernel's
    __read_default_fde_fre_datawords); 0 words (RA undefined) since v2."""
    counts = set(range(0 if version >= C.VERSION_2 else 1, 4 - fixed))
    return frozenset(counts)


def pattern_abi(abi: int) -> int:
    """The ABI fre_pattern needs to tell apart (aarch64, s390x, the rest): one compiled
    pattern per class, not per ABI byte value (fuzzed headers hold all 256)."""
    if abi in (C.ABI_AARCH64_BE, C.ABI_AARCH64_LE, C.ABI_S390X_BE):
        return abi
    return C.ABI_AMD64_LE


@cache
def fre_pattern(asz: int, abi: int, version: int, big: bool,
                fixed: int) -> re.Pattern[bytes]:
    """One finding-free DEFAULT FRE with a start of `asz` bytes, or any single byte.

    findall() returns the start-address bytes of each FRE, and b"" where a byte
    starts no acceptable FRE (so a clean walk contains no b"").
    """
    aarch64 = abi in (C.ABI_AARCH64_BE, C.ABI_AARCH64_LE)
    s390x = abi == C.ABI_S390X_BE
    legal = legal_counts(version, fixed)
    tails: dict[bytes, list[int]] = {}
    order: list[tuple[int, int, bytes]] = []
    for info in range(256):
        code = (info >> 5) & 3
        n = (info >> 1) & 0xF
        if code == 3 or info & 0x80 and not aarch64 or n not in legal:
            continue
        w = C.WORD_SIZE[code]
        if n * w > C.MAX_DATAWORD_BYTES:
            continue
        words = []
        for k in range(n):
            if k == 0 and info & 1:
                words.append(_cfa_word(w, big, s390x))
            elif k > 0 and s390x:
                words.append(_even_word(w, big))
            else:
                words.append(b"." * w)
        tail = b"".join(words)
        if tail not in tails:
            tails[tail] = []
            order.append((w, n if n else 99, tail))
        tails[tail].append(info)
    # Most frequent shapes first: 1-byte words, then fewer words.
    alts = [_cls(tails[t]) + t for _w, _n, t in sorted(order, key=lambda o: (o[0], o[1]))]
    body = b"(" + b"." * asz + b")(?:" + b"|".join(alts) + b")|."
    return re.compile(body, re.DOTALL)


@cache
def starts_struct(asz: int, count: int, big: bool) -> struct.Struct:
    """Unpacks `count` concatenated ADDR2/ADDR4 start addresses."""
    return struct.Struct((">" if big else "<") + str(count) + ("H" if asz == 2 else "I"))


# ---------------------------------------------------------------------------
# Column-wise classification of a whole FDE table.

_UCODE = {1: "B", 2: "H", 4: "I", 8: "Q"}
_SCODE = {1: "b", 2: "h", 4: "i", 8: "q"}
_HOST_LITTLE = sys.byteorder == "little"

# bytes.translate tables: 0/1 flags per byte value.
_NONZERO = bytes([0] + [1] * 255)
_FLIP = bytes([1] + [0] * 255)
_IS255 = bytes([0] * 255 + [1])
_EQ = [bytes(int(b == t) for b in range(256)) for t in range(3)]


def _mark(bad: bytearray, flags: Iterable[int | bool]) -> None:
    """bad[i] |= flags[i]."""
    bad[:] = bytes(map(or_, bad, flags))


def _mark_if(bad: bytearray, flags: bytes) -> None:
    if 1 in flags:
        _mark(bad, flags)


def _starts(joined: bytes, asz: int, big: bool) -> bytes | array:
    """Concatenated start addresses as a sequence of ints."""
    if asz == 1:
        return joined
    arr = array(_UCODE[asz], joined)
    if big == _HOST_LITTLE:
        arr.byteswap()
    return arr


def column(rec: bytes, stride: int, off: int, width: int, signed: bool, big: bool,
           n: int) -> array:
    """Field `off` (width bytes) of n records of `stride` bytes, as an array of ints."""
    code = (_SCODE if signed else _UCODE)[width]
    if width == 1:
        return array(code, rec[off::stride])
    out = bytearray(width * n)
    for k in range(width):
        out[k::width] = rec[off + k::stride]
    arr = array(code, out)
    if big == _HOST_LITTLE:  # the data is not in host order
        arr.byteswap()
    return arr


@cache
def type_table(version: int, abi: int) -> bytes:
    """FDE info byte -> FRE type (0, 1, 2) on the fast path, 255 where it is not taken."""
    return bytes(t if t >= 0 else 255 for t in fast_fre_types(version, abi))


def increasing_pairs(values: bytes | array, asz: int) -> int:
    """How many adjacent pairs v[k] < v[k+1] there are, counted with big-integer lane
    arithmetic instead of a Python loop: lane k holds 2**(w-1) + v[k+1] - v[k] - 1 (no
    borrow crosses lanes), whose top bit is set exactly when v[k+1] > v[k]."""
    m = len(values)
    if m < 2:
        return 0
    raw = values if isinstance(values, bytes) else values.tobytes()
    if isinstance(values, array) and not _HOST_LITTLE:
        arr = array(values.typecode, values)
        arr.byteswap()
        raw = arr.tobytes()
    lane = 2 * asz
    spread = bytearray(lane * m)
    for k in range(asz):
        spread[k::lane] = raw[k::asz]
    x = int.from_bytes(spread, "little")
    y = x >> (8 * lane)
    x &= (1 << (8 * lane * (m - 1))) - 1
    top = int.from_bytes((bytes(lane - 1) + b"\x80") * (m - 1), "little")
    ones = int.from_bytes((b"\x01" + bytes(lane - 1)) * (m - 1), "little")
    return (((y | top) - x - ones) & top).bit_count()


class Table:
    """The FDE table read column by column, and which FDEs the fast path accepts.

    `bad[i]` is 1 for an FDE that must go through the exact, decoder-based checks:
    anything a rule might object to, anything the patterns do not cover, and the
    FDE after such one (its sort check depends on what the exact path decoded).
    Clean FDE i's FRE block is [firsts[i], ends[i]), ends[i] being the next
    block's start: the walk proved the FREs fill it exactly.
    """

    __slots__ = ("n", "pcs", "sizes", "nfs", "firsts", "ends", "bad", "carry")

    def __init__(self, data: bytes, h, a: int, b: int, readable: int, limit: int, vma: int,
                 field_relative: bool, check_order: bool, prev_pc: int | None,
                 carry: bool) -> None:
        """FDEs a..b-1 of `readable`; prev_pc is FDE a-1's start, `carry` whether FDE a-1
        failed the bounds test (then FDE a goes to the exact path too)."""
        v, fsz, big = h.version, h.fde_size, h.big_endian
        self.n = n = b - a
        rec = data[h.fdes_start + a * fsz:h.fdes_start + b * fsz]
        wide = 8 if v == C.VERSION_3 else 4
        starts = column(rec, fsz, 0, wide, True, big, n)
        sizes = column(rec, fsz, wide, 4, False, big, n).tolist()
        offs = column(rec, fsz, wide + 4, 4, False, big, n).tolist()
        if field_relative:
            base = vma + h.fdes_start + a * fsz
            self.pcs = pcs = list(map(add, starts, range(base, base + n * fsz, fsz)))
        else:
            self.pcs = pcs = list(map(add, starts, repeat(vma, n)))
        self.sizes = sizes
        firsts = list(map(add, offs, repeat(h.fres_start, n)))
        ends = firsts[1:]
        if b < readable:  # the next chunk's first block bounds this chunk's last one
            nxt = h.fdes_start + b * fsz + wide + 4
            ends.append(h.fres_start + int.from_bytes(data[nxt:nxt + 4],
                                                      "big" if big else "little"))
        else:
            ends.append(limit)
        self.firsts, self.ends = firsts, ends
        attr = C.V3_ATTR_SIZE if v == C.VERSION_3 else 0
        walk_from = list(map(add, firsts, repeat(attr, n))) if attr else firsts
        self.bad = bad = bytearray(n)
        self.carry = False
        # Each FDE's block lies in the FRE sub-section, before the next FDE's block.
        if not all(map(le, walk_from, ends)) or max(ends) > limit:
            _mark(bad, map(gt, walk_from, ends))
            _mark(bad, map(gt, ends, repeat(limit, n)))
            # The exact path may fail to decode such an FDE and then keep the previous
            # FDE's start for the next sort check: send the next FDE there too.
            for i in list(compress(range(n - 1), bad)):
                bad[i + 1] = 1
            self.carry = bool(bad[-1])
        if carry or (check_order and prev_pc is not None and pcs[0] < prev_pc):
            bad[0] = 1
        if v == C.VERSION_3:
            at = list(map(mul, firsts, bad.translate(_FLIP))) if any(bad) else firsts
            spans = map(slice, at, map(add, at, repeat(C.V3_ATTR_SIZE, n)))
            attrs = b"".join(itemgetter(*spans)(data)) if n > 1 else data[at[0]:at[0] + 5]
            nfs = column(attrs, 5, 0, 2, False, big, n).tolist()
            infos = attrs[2::5]
            _mark_if(bad, attrs[3::5].translate(_NONZERO))  # info2: FLEX or reserved bits
            _mark_if(bad, attrs[4::5].translate(_NONZERO))  # rep_size
        else:
            nfs = column(rec, fsz, 12, 4, False, big, n).tolist()
            infos = rec[16::fsz]
            if v == C.VERSION_2:
                _mark_if(bad, rec[17::fsz].translate(_NONZERO))  # rep_size
                _mark_if(bad, rec[18::fsz].translate(_NONZERO))  # padding
                _mark_if(bad, rec[19::fsz].translate(_NONZERO))
        self.nfs = nfs
        types = infos.translate(type_table(v, h.abi))
        _mark_if(bad, types.translate(_IS255))
        for t, (lo, hi) in enumerate(SIZE_RANGE):
            sel = list(compress(sizes, types.translate(_EQ[t])))
            if sel and (min(sel) < lo or max(sel) >= hi):
                need = map(add, map(ge, sizes, repeat(0x100, n)),
                           map(ge, sizes, repeat(0x10000, n)))
                _mark(bad, map(ne, need, types))
                break
        if check_order and not all(map(le, pcs, islice(pcs, 1, None))):
            _mark(bad, chain((False,), map(gt, pcs, islice(pcs, 1, None))))
        # Walk every FRE block not already rejected: one findall per FDE, in C.
        pats = [fre_pattern(asz, pattern_abi(h.abi), v, big, fixed_words(h))
                for asz in (1, 2, 4)]
        pats += [pats[0]] * 253
        if any(bad):
            good = bad.translate(_FLIP)
            res = list(map(re.Pattern.findall, map(pats.__getitem__, types), repeat(data, n),
                           map(mul, walk_from, good), map(mul, ends, good)))
        else:
            res = list(map(re.Pattern.findall, map(pats.__getitem__, types), repeat(data, n),
                           walk_from, ends))
        lens = list(map(len, res))
        if lens != nfs:
            _mark(bad, map(ne, lens, nfs))
        for t in range(3):
            self._check_starts(res, types, t, big)

    def _check_starts(self, res: list, types: bytes, t: int, big: bool) -> None:
        """Start addresses of the type-t FDEs still accepted: no empty match (a byte where
        no acceptable FRE starts), first start 0, strictly increasing, last < size."""
        asz = (1, 2, 4)[t]
        flags = self.bad
        mask = bytes(map(and_, types.translate(_EQ[t]), flags.translate(_FLIP)))
        if not any(mask):
            return
        nfs = list(compress(self.nfs, mask))
        # Per-FDE joins first: faster than joining ~10^6 one-byte items in one go.
        joined = b"".join(map(b"".join, compress(res, mask)))
        if len(joined) != asz * sum(nfs):
            _mark(flags, map(contains, res, repeat(b"", len(res))))
            mask = bytes(map(and_, mask, flags.translate(_FLIP)))
            nfs = list(compress(self.nfs, mask))
            joined = b"".join(map(b"".join, compress(res, mask)))
        vals = _starts(joined, asz, big)
        sizes = list(compress(self.sizes, mask))
        nonempty = list(map(bool, nfs))
        ends = list(accumulate(nfs))
        last = list(map(sub, compress(ends, nonempty), repeat(1)))
        first = list(map(sub, compress(ends, nonempty), compress(nfs, nonempty)))
        ok = (not any(map(vals.__getitem__, first))
              and all(map(lt, map(vals.__getitem__, last), compress(sizes, nonempty)))
              and increasing_pairs(vals, asz) == len(vals) - len(first))
        if ok:
            return
        # Find the FDEs at fault, one at a time (only sections with findings get here).
        for i in compress(range(len(res)), mask):
            v = _starts(b"".join(res[i]), asz, big)
            if v and (v[0] or v[-1] >= self.sizes[i]
                      or not all(map(lt, v, islice(v, 1, None)))):
                flags[i] = 1
