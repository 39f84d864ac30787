"""The fast path of the section check: which FDEs the reference pass would accept silently.

Table reads the FDE table column-wise (format/fde_table.Columns), CHUNK FDEs at a
time, and decides per FDE, all in C-level calls: fde_shapes.noisy_fdes asks
fde.check_fde about every FDE shape present; fre_patterns.fre_pattern walks each FRE
block with one regex call, built from fre.py's predicates; the FRE starts must pass
fre.starts_ok, applied to whole tables through the same functions. When the optional C module
sfcheck.walk._frewalk was built and SFCHECK_PURE_PYTHON is not set, it gives the same
per-FDE verdicts from tables of the same predicates (fre_patterns.walk_spec); the regex
walk stays the reference (tests/test_frewalk.py compares them). An FDE the fast path does
not accept goes through the reference checks in section.py, which produce every
finding; the fast path never emits one. tests/test_fastpath_equivalence.py compares
both paths.
"""

from __future__ import annotations

import os
import re
from array import array
from collections.abc import Iterable, Sequence
from itertools import accumulate, chain, compress, islice, repeat
from operator import add, and_, contains, itemgetter, mul, ne, or_, sub

from ..format import constants
from ..format.bounds import blocks_outside
from ..format.fde_table import HOST_LITTLE, START_WIDTH, UCODE, Columns, column
from ..format.model import Header
from ..record import Record
from ..rules import fde as fde_rules
from ..rules import fre as fre_rules
from .fde_shapes import EQ, noisy_fdes, type_table
from .fre_patterns import fre_pattern, pattern_abi, walk_spec


def _load_frewalk():
    """The C walk, unless SFCHECK_PURE_PYTHON is set (to anything) or it was not built."""
    if "SFCHECK_PURE_PYTHON" in os.environ:
        return None
    try:
        from . import _frewalk
    except ImportError:
        return None
    return _frewalk


# The one switch between the walks, read once at import (tests replace it).
FREWALK = _load_frewalk()

# bytes.translate tables: 0/1 flags per byte value.
_FLIP = bytes([1] + [0] * 255)


def _mark_bytes(bad: bytearray, flags: bytes) -> None:
    """bad[i] |= flags[i] for 0/1 bytes, as one big-integer OR."""
    n = len(bad)
    bad[:] = (int.from_bytes(bad, "little") | int.from_bytes(flags, "little")).to_bytes(
        n, "little")


def _mark(bad: bytearray, flags: Iterable[int | bool]) -> None:
    """bad[i] |= flags[i]."""
    bad[:] = bytes(map(or_, bad, flags))


def _starts(joined: bytes, asz: int, big: bool) -> bytes | array:
    """Concatenated start addresses as a sequence of ints."""
    if asz == 1:
        return joined
    arr = array(UCODE[asz], joined)
    if big == HOST_LITTLE:
        arr.byteswap()
    return arr


def increasing_pairs(values: bytes | array, asz: int) -> int:
    """How many adjacent pairs v[k] < v[k+1] there are, counted with big-integer lane
    arithmetic instead of a Python loop: lane k holds 2**(w-1) + v[k+1] - v[k] - 1 (no
    borrow crosses lanes), whose top bit is set exactly when v[k+1] > v[k]."""
    m = len(values)
    if m < 2:
        return 0
    raw = values if isinstance(values, bytes) else values.tobytes()
    if isinstance(values, array) and not HOST_LITTLE:
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


class TableSource(Record, frozen=True):
    """What the Table of every chunk reads of the section: fixed for one walk."""

    __slots__ = ("data", "header", "readable", "limit", "vma", "field_relative",
                 "check_order")

    def __init__(self, data: bytes, header: Header, readable: int, limit: int, vma: int,
                 field_relative: bool, check_order: bool) -> None:
        self.data = data
        self.header = header
        self.readable = readable  # FDEs whose records exist
        self.limit = limit  # where the FRE data ends (Decoder.fre_limit)
        self.vma = vma
        self.field_relative = field_relative  # starts relative to their own field
        self.check_order = check_order  # fde-unsorted applies (sorted flag, not a .o)


class Table:
    """The FDE table read column by column, and which FDEs the fast path accepts.

    `bad[i]` is 1 for an FDE that must go through the exact, decoder-based checks:
    anything a rule might object to, anything the patterns do not cover, and the
    FDE after such one (its sort check depends on what the exact path decoded).
    Clean FDE i's FRE block is [firsts[i], ends[i]), ends[i] being the next
    block's start: the walk proved the FREs fill it exactly.
    """

    __slots__ = ("n", "pcs", "sizes", "size_col", "fre_counts", "firsts", "ends", "bad",
                 "prev_out_of_bounds")

    def __init__(self, source: TableSource, a: int, b: int, prev_pc: int | None,
                 prev_out_of_bounds: bool, block_ends: Sequence[int] | None = None) -> None:
        """FDEs a..b-1 of `source.readable`; prev_pc is FDE a-1's start,
        `prev_out_of_bounds` whether FDE a-1 failed the bounds test (then FDE a goes to the
        exact path too). `block_ends`: where each FDE's block ends
        (fde_table.block_ends; None: at the next FDE's block)."""
        data, h, readable, limit = source.data, source.header, source.readable, source.limit
        check_order = source.check_order
        v, fsz, big = h.version, h.fde_size, h.big_endian
        cols = Columns(data, h, a, b)
        self.n = n = cols.n
        rec = cols.rec
        wide = START_WIDTH[v]
        sizes = cols.sizes.tolist()
        offs = cols.fre_offs.tolist()
        self.pcs = pcs = cols.pcs(h, source.vma, source.field_relative)
        self.sizes = sizes
        self.size_col = cols.sizes  # the same as an array: copied into ctx.ranges as bytes
        firsts = list(map(add, offs, repeat(h.fres_start, n)))
        if block_ends is not None:
            ends = block_ends
        else:
            ends = firsts[1:]
            if b < readable:  # the next chunk's first block bounds this chunk's last one
                nxt = h.fdes_start + b * fsz + wide + 4
                ends.append(h.fres_start + int.from_bytes(data[nxt:nxt + 4],
                                                          "big" if big else "little"))
            else:
                ends.append(limit)
        self.firsts, self.ends = firsts, ends
        attr = constants.V3_ATTR_SIZE if v == constants.VERSION_3 else 0
        walk_from = list(map(add, firsts, repeat(attr, n))) if attr else firsts
        self.bad = bad = bytearray(n)
        self.prev_out_of_bounds = False
        # Each FDE's block lies in the FRE sub-section, before the next FDE's block.
        outside = blocks_outside(walk_from, ends, limit)
        if outside is not None:
            _mark(bad, outside)
            # The exact path may fail to decode such an FDE and then keep the previous
            # FDE's start for the next sort check: send the next FDE there too.
            for i in list(compress(range(n - 1), bad)):
                bad[i + 1] = 1
            self.prev_out_of_bounds = bool(bad[-1])
        if prev_out_of_bounds or (check_order and prev_pc is not None
                     and fde_rules.out_of_order(prev_pc, pcs[0])):
            bad[0] = 1
        if v == constants.VERSION_3:
            at = list(map(mul, firsts, bad.translate(_FLIP))) if any(bad) else firsts
            spans = map(slice, at, map(add, at, repeat(constants.V3_ATTR_SIZE, n)))
            attrs = b"".join(itemgetter(*spans)(data)) if n > 1 else data[at[0]:at[0] + 5]
            fre_counts = column(attrs, 5, 0, 2, False, big, n).tolist()
            infos, info2s, reps, pads = attrs[2::5], attrs[3::5], attrs[4::5], bytes(n)
        else:
            fre_counts = column(rec, fsz, 12, 4, False, big, n).tolist()
            infos, info2s = rec[16::fsz], bytes(n)
            if v == constants.VERSION_2:
                reps, pads = rec[17::fsz], column(rec, fsz, 18, 2, False, big, n)
            else:
                reps, pads = bytes(n), bytes(n)
        self.fre_counts = fre_counts
        types = infos.translate(type_table())
        columns = {"info": infos, "info2": info2s, "rep_size": reps, "padding": pads,
                   "num_fres": fre_counts}
        for flags in noisy_fdes(h, columns, sizes, types):
            _mark_bytes(bad, flags)
        if check_order and any(map(fde_rules.out_of_order, pcs, islice(pcs, 1, None))):
            _mark(bad, chain((False,), map(fde_rules.out_of_order, pcs, islice(pcs, 1, None))))
        if FREWALK is not None:
            FREWALK.verdicts(data, walk_from, ends, types, fre_counts, sizes, bad,
                             walk_spec(pattern_abi(h.abi), v, big, fre_rules.fixed_words(h)))
        else:
            regex_verdicts(data, walk_from, ends, types, fre_counts, sizes, bad,
                           pattern_abi(h.abi), v, big, fre_rules.fixed_words(h))


def regex_verdicts(data: bytes, walk_from: list[int], ends: Sequence[int], types: bytes,
                   fre_counts: list[int], sizes: list[int], bad: bytearray, abi: int, version: int,
                   big: bool, fixed: int) -> None:
    """The reference FRE walk: bad[i] = 1 for each FDE i with bad[i] == 0 whose block
    data[walk_from[i]:ends[i]] is not fre_counts[i] FREs fre_pattern accepts, with starts 0
    first, strictly increasing and below sizes[i] (types 0-2; other types: the count
    only, walked with the 1-byte pattern). _frewalk.verdicts must agree exactly."""
    n = len(bad)
    # Walk every FRE block not already rejected: one findall per FDE, in C.
    pats = [fre_pattern(asz, abi, version, big, fixed) for asz in (1, 2, 4)]
    pats += [pats[0]] * 253
    if any(bad):
        good = bad.translate(_FLIP)
        res = list(map(re.Pattern.findall, map(pats.__getitem__, types), repeat(data, n),
                       map(mul, walk_from, good), map(mul, ends, good)))
    else:
        res = list(map(re.Pattern.findall, map(pats.__getitem__, types), repeat(data, n),
                       walk_from, ends))
    # Exactly num_fres items (the count fits: bounds.fres_fit; _check_starts rejects an
    # empty item, a byte that starts no FRE).
    lens = list(map(len, res))
    if lens != fre_counts:
        _mark(bad, map(ne, lens, fre_counts))
    for t in range(3):
        _check_starts(res, types, t, big, bad, fre_counts, sizes)


def _check_starts(res: list, types: bytes, t: int, big: bool, flags: bytearray,
                  all_fre_counts: list[int], all_sizes: list[int]) -> None:
    """Start addresses of the type-t FDEs still accepted: no empty match (a byte where
    no acceptable FRE starts), first start 0, strictly increasing, last < size."""
    asz = (1, 2, 4)[t]
    mask = bytes(map(and_, types.translate(EQ[t]), flags.translate(_FLIP)))
    if not any(mask):
        return
    fre_counts = list(compress(all_fre_counts, mask))
    # Per-FDE joins first: faster than joining ~10^6 one-byte items in one go.
    joined = b"".join(map(b"".join, compress(res, mask)))
    if len(joined) != asz * sum(fre_counts):
        _mark(flags, map(contains, res, repeat(b"", len(res))))
        mask = bytes(map(and_, mask, flags.translate(_FLIP)))
        fre_counts = list(compress(all_fre_counts, mask))
        joined = b"".join(map(b"".join, compress(res, mask)))
    vals = _starts(joined, asz, big)
    sizes = list(compress(all_sizes, mask))
    nonempty = list(map(bool, fre_counts))
    ends = list(accumulate(fre_counts))
    last = list(map(sub, compress(ends, nonempty), repeat(1)))
    first = list(map(sub, compress(ends, nonempty), compress(fre_counts, nonempty)))
    # fre.starts_ok over every FDE at once: no first start off 0, no last start past its
    # size, and every adjacent pair within an FDE in order (the lanes count those).
    ok = (not any(map(fre_rules.first_start_off, map(vals.__getitem__, first)))
          and not any(map(fre_rules.start_past, map(vals.__getitem__, last),
                          compress(sizes, nonempty)))
          and increasing_pairs(vals, asz) == len(vals) - len(first))
    if ok:
        return
    # Find the FDEs at fault, one at a time (only sections with findings get here).
    for i in compress(range(len(res)), mask):
        if not fre_rules.starts_ok(_starts(b"".join(res[i]), asz, big), all_sizes[i]):
            flags[i] = 1
