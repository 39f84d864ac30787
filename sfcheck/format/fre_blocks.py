"""FDEs in table order with their FRE blocks split into FREs by one regex call each.

Readers that need every FRE of a large section (the dump, the `.eh_frame`
cross-check) would spend most of their time building FDE and FRE objects. An
FRE's length follows from its info byte, so a regular expression over the raw
block yields (start bytes, info + data-word bytes) per FRE in C. Where that walk
does not account for a block exactly (blocks out of table order, a byte where no
FRE can start, an FRE count that disagrees), :meth:`FreBlocks.decoded` decodes
the FDE the ordinary way, so its DecodeError is the decoder's. Either way the
FRE bytes walked are charged to the same budget as :meth:`Decoder.iter_fdes`,
so aliasing blocks fail at the same FDE with the same error.
"""

from __future__ import annotations

import re
import struct
from collections.abc import Callable, Iterator, Sequence
from functools import cache
from itertools import chain
from operator import itemgetter

from ..errors import DecodeError
from . import constants as C
from .bounds import block_starts_within, block_within, over_budget
from .decode import Decoder, check_fde_array, check_fre_subsection
from .fde_table import START_WIDTH, column
from .fre_info_table import INFO
from .model import FDE, FRE

Tokens = list[tuple[bytes, bytes]]
_START = itemgetter(0)
OnTokens = Callable[[int, tuple, int, int, int, Tokens], None]
# known(i, record, info, info2, FRE count, walk_from, block end) -> True: the reader has
# dealt with the FDE from its raw block (FreBlocks.run).
Known = Callable[[int, tuple, int, int, int, int, int], bool]


def _any_of(infos: list[int]) -> bytes:
    # Raw bytes, escaped only where special: re parses them about twice as fast as \xNN.
    return b"[" + b"".join(re.escape(bytes((i,))) for i in infos) + b"]"


def _any(n: int) -> bytes:
    return b"." * n if n < 2 else b".{%d}" % n  # one repeat, not n items to parse


@cache
def token_pattern(asz: int) -> re.Pattern[bytes]:
    """Any FRE with an `asz`-byte start: (start bytes, info + data-word bytes); ("", "") for
    a byte where none starts (size code 3). Compiled on first use (each costs a few ms of
    a small file's check), for the FRE types a section uses."""
    by_len: dict[int, list[int]] = {}
    for info, fi in enumerate(INFO):
        if fi.valid:
            by_len.setdefault(fi.data_len, []).append(info)
    alts = [_any_of(infos) + _any(k)
            for k, infos in sorted(by_len.items(), key=lambda kv: (kv[0] == 0, kv[0]))]
    return re.compile(b"(" + _any(asz) + b")(" + b"|".join(alts) + b")|.", re.DOTALL)


# FRE type -> (start-address size, the findall of its token pattern), filled by _finder.
_FINDERS: dict[int, tuple[int, Callable[..., Tokens]]] = {}


def _finder(fre_type: int) -> tuple[int, Callable[..., Tokens]] | None:
    """The finder of an FRE type on its first use (None for a type that does not exist)."""
    asz = C.FRE_ADDR_SIZE.get(fre_type)
    if asz is None:
        return None
    found = _FINDERS[fre_type] = (asz, token_pattern(asz).findall)
    return found


class FreBlocks:
    """The FDE table of one section, record by record (see the module docstring).

    :meth:`records` yields FDE i's raw record (start field, size, FRE offset, ...); :meth:`run`
    hands each FDE to the reader as tokens or, failing that, decoded.
    """

    def __init__(self, dec: Decoder) -> None:
        h = self.h = dec.header
        self.dec = dec
        check_fde_array(h, len(dec.data))
        check_fre_subsection(h, len(dec.data))
        # Records are unpacked as they are walked, not kept: a list of tuples would cost
        # ~140 bytes per FDE for the whole pass (a view of the table costs nothing).
        self.fsz = h.fde_size
        self.table = memoryview(dec.data)[h.fdes_start:h.fdes_start + h.num_fdes * self.fsz]
        # Where each FDE's block ends; None: at the next FDE's block (table order, what
        # toolchains write), read from the table as each run is walked, not kept: a list
        # would cost an int object per FDE for the whole walk.
        self.nexts: Sequence[int] | None = None
        self.walked = 0  # FRE bytes walked so far: bounds.over_budget
        self.attr = C.V3_ATTR_SIZE if h.version == C.VERSION_3 else 0

    def records(self, begin: int, stop: int) -> Iterator[tuple[int, ...]]:
        """The raw records of FDEs begin..stop-1, unpacked one by one."""
        return struct.iter_unpack(self.dec._fde_struct.format,
                                  self.table[begin * self.fsz:stop * self.fsz])

    def _table_nexts(self, begin: int, stop: int) -> Iterator[int]:
        """Where blocks begin..stop-1 end in table order: at the next FDE's block, the last
        FDE's at the end of the FRE data. Caller: begin < stop. Read as a column (an array),
        not by a second, unfinished records() iterator: with one, CPython 3.11.7 crashed in
        a later garbage collection after run() raised (seen in tests/test_format_props.py,
        test_aliased_fre_ranges_do_not_amplify_work, _dump cases run together)."""
        h, fsz = self.h, self.fsz
        n = h.num_fdes
        last = min(stop + 1, n)
        count = max(0, last - begin - 1)
        offs = column(bytes(self.table[(begin + 1) * fsz:last * fsz]), fsz,
                      START_WIDTH[h.version] + 4, 4, False, h.big_endian, count)
        nexts = map(h.fres_start.__add__, offs)
        return chain(nexts, (self.dec.fre_limit,)) if stop >= n else nexts

    def run(self, begin: int, stop: int, on_tokens: OnTokens,
            on_decoded: Callable[[int, FDE], None], known: Known | None = None) -> None:
        """For FDEs begin..stop-1 in order: on_tokens(i, record, info, info2, start-address
        size, tokens) when the block is exactly its FREs, one token each, ending where the
        next FDE's block starts; otherwise on_decoded(i, FDE) (or the decoder's
        DecodeError). One loop for every reader: it runs once per FDE of a large table.

        `known`, asked first about each block within bounds, may settle an FDE from its
        raw bytes data[walk_from:end] (True): a reader that has seen those very bytes with
        the same FRE type and count split into tokens knows they split again, the same
        way (the token pattern looks at nothing outside them). The block is charged as a
        token block; `known` acts before the charge, so it is for walks that cannot stop
        early."""
        h, dec, data = self.h, self.dec, self.dec.data
        fres_start, fre_len, limit, attr = h.fres_start, h.fre_len, dec.fre_limit, self.attr
        attr_struct, finders_, start_of = dec._attr_struct, _FINDERS, _START
        if begin >= stop:
            return
        nexts = (self._table_nexts(begin, stop) if self.nexts is None
                 else self.nexts[begin:stop])
        for i, rec, nxt in zip(range(begin, stop), self.records(begin, stop), nexts,
                               strict=True):
            off = rec[2]
            first = fres_start + off
            walk_from = first + attr
            if block_starts_within(off, attr, fre_len) and block_within(walk_from, nxt, limit):
                if attr:
                    nf, info, info2, _rep = attr_struct.unpack_from(data, first)
                else:
                    nf, info, info2 = rec[3], rec[4], 0
                if known is not None and known(i, rec, info, info2, nf, walk_from, nxt):
                    self.spend(i, first, nxt)
                    continue
                found = finders_.get(info & 0xF) or _finder(info & 0xF)
                if found is not None:
                    toks = found[1](data, walk_from, nxt)
                    # exactly nf FREs, no byte that starts none: they fit (fres_fit)
                    if len(toks) == nf and all(map(start_of, toks)):
                        self.spend(i, first, nxt)
                        on_tokens(i, rec, info, info2, found[0], toks)
                        continue
            on_decoded(i, self.decoded(i))

    def decoded(self, i: int) -> FDE:
        """FDE i by the decoder (DecodeError where it stops), its FRE bytes charged."""
        fde = self.dec.fde(i)
        first, end = self.dec.fre_span(fde)
        self.spend(i, first, end)
        return fde

    def spend(self, i: int, first: int, end: int) -> None:
        """Decoder.iter_fdes' bound on the FRE bytes walked (aliasing blocks)."""
        self.walked += end - first
        if over_budget(self.walked, self.h.fre_len):
            raise self._overlap(i, first)

    def _overlap(self, i: int, first: int) -> DecodeError:
        return DecodeError(
            f"FDE[{i}]: FRE blocks of the FDEs so far use more than the "
            f"{self.h.fre_len:#x}-byte FRE sub-section: blocks overlap", first,
            f"FDE[{i}]", "start_fre_off")


def starts_of(toks: Tokens, asz: int, big_endian: bool) -> bytes | tuple[int, ...]:
    """The FREs' start addresses (relative to the function), as a sequence of ints."""
    joined = b"".join(map(_START, toks))
    if asz == 1:
        return joined
    return struct.unpack((">" if big_endian else "<") + str(len(toks))
                         + ("H" if asz == 2 else "I"), joined)


_WORD_CODE = {1: "b", 2: "h", 4: "i"}


def token_fre(rest: bytes, big_endian: bool) -> FRE:
    """The FRE (start 0) of a token's info + data-word bytes; the token pattern made sure
    the bytes are exactly what the info byte says."""
    fi = INFO[rest[0]]
    code = _WORD_CODE[fi.word_size] * fi.count
    return FRE(0, rest[0], struct.unpack((">" if big_endian else "<") + code, rest[1:]))
