"""PC -> (FDE, FRE) lookup over one SFrame section, distrusting everything in it.

The section's SORTED flag is never believed: a sorted index of
(function start, end, FDE index) is built once from the FDE records, so every
lookup is a bisection whatever order the table is really in. FDEs are decoded
(with their FREs) only when a PC first lands in them, and cached.
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Sequence
from dataclasses import dataclass
from itertools import islice
from operator import add, itemgetter, lt

from ..errors import DecodeError
from ..format import constants
from ..format.decode import Decoder, check_fde_array, check_fre_subsection
from ..format.fde_table import Columns
from ..format.model import FDE, FRE, Header
from ..record import replace

# An FDE's FRE rows as SFrameTable.rows reads them: the FDE (record and attribute record,
# fres left empty), its FREs' start offsets and each FRE's (info byte, data words).
Rows = tuple[FDE, list[int], list[tuple[int, tuple[int, ...]]]]

# v1 has no rep_size; ld 2.40 emits PCMASK only for x86-64 .plt, whose entries are 16 bytes.
V1_PCMASK_REP_SIZE = 16


class _Bad(Exception):
    """Internal: an FDE that cannot be used because its data is malformed."""

    def __init__(self, message: str, offset: int | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.offset = offset


@dataclass(frozen=True, slots=True)
class Row:
    """The FRE that describes a PC, with where it came from."""

    fde_index: int
    fre_index: int
    fde: FDE
    fre: FRE
    func_start: int  # runtime address


@dataclass(frozen=True, slots=True)
class Miss:
    """A PC inside the table's text but without a usable row."""

    kind: str  # "no-fde" | "no-fre" | "outermost" | "signal" | "malformed"
    message: str
    fde_index: int | None = None
    offset: int | None = None  # section offset of the bad data, when known


class SFrameTable:
    """One SFrame section as loaded at runtime.

    `vma` is the section's link-time address and `bias` what the loader added
    (runtime = link-time + bias). `text_ranges` are link-time [start, end)
    ranges this section claims to describe; when empty, the span of its FDEs
    is used.
    """

    def __init__(self, data: bytes, vma: int = 0, bias: int = 0,
                 text_ranges: Sequence[tuple[int, int]] = (), name: str = ".sframe") -> None:
        self.name = name
        self.vma = vma
        self.bias = bias
        self.error: DecodeError | None = None
        self.header: Header | None = None
        self._starts: list[int] = []
        # Runtime function start of each FDE by index (Header.func_start of its start
        # field), when the FDE array is whole; empty otherwise.
        self.func_starts: list[int] = []
        self._index: list[tuple[int, int, int]] = []  # (start, end, fde index), runtime
        self._cache: dict[int, tuple[FDE, list[int]] | _Bad] = {}
        self._fdes: dict[int, FDE | DecodeError] = {}
        self._rows: dict[int, Rows | DecodeError] = {}
        self._dec: Decoder | None = None
        try:
            self._dec = Decoder(data)
            self.header = self._dec.header
            check_fde_array(self.header, len(self._dec.data))
            check_fre_subsection(self.header, len(self._dec.data))
        except DecodeError as exc:
            self.error = exc
        else:
            self._build_index()
        ranges = [(s + bias, e + bias) for s, e in text_ranges if e > s]
        if not ranges and self._index:  # sorted by start: the first row starts lowest
            ranges = [(self._index[0][0], max(map(itemgetter(1), self._index)))]
        self.text_ranges = sorted(ranges)

    @property
    def abi(self) -> int | None:
        return self.header.abi if self.header else None

    @property
    def version(self) -> int | None:
        return self.header.version if self.header else None

    def _build_index(self) -> None:
        """Read the start and size columns of the whole FDE array at C speed
        (format/fde_table.Columns): the index costs little however many FDEs there are."""
        h = self.header
        assert h is not None
        n = h.num_fdes
        if not n:
            return
        cols = Columns(self._dec.data, h, 0, n)
        pcs = cols.pcs(h, self.vma + self.bias)
        sizes = cols.sizes
        self.func_starts = pcs
        rows = sorted(zip(pcs, map(add, pcs, sizes), range(n), strict=True))
        self._index = rows
        self._starts = [r[0] for r in rows]

    def fde(self, index: int) -> FDE:
        """FDE `index` with its FREs, decoded once (DecodeError if it cannot be)."""
        if self._dec is None:
            assert self.error is not None
            raise self.error
        got = self._fdes.get(index)
        if got is None:
            try:
                got = self._dec.fde(index)
            except DecodeError as exc:
                got = exc
            self._fdes[index] = got
        if isinstance(got, DecodeError):
            raise got
        return got

    def rows(self, index: int) -> Rows:
        """FDE `index` as fde() decodes it, its FREs as rows (start, info byte, data
        words) instead of FRE objects: for a reader of many FDEs that needs no FRE object
        (the reader models' probes). Read once; where fde() raises, the same DecodeError."""
        got = self._rows.get(index)
        if got is None:
            dec = self._dec
            if dec is not None and index not in self._fdes:  # _read_rows' first case, inline
                try:
                    got = dec.fde_rows(index)
                except DecodeError as exc:
                    got = exc
                self._rows[index] = got
            else:
                got = self._rows[index] = self._read_rows(index)
        if isinstance(got, DecodeError):
            raise got
        return got

    def _read_rows(self, index: int) -> Rows | DecodeError:
        got = self._fdes.get(index)
        if self._dec is not None and got is None:
            try:
                return self._dec.fde_rows(index)
            except DecodeError as exc:
                return exc
        try:
            whole = self.fde(index)  # decoded already (or no decoder: the table's error)
        except DecodeError as exc:
            return exc
        return (replace(whole, fres=()), [f.start for f in whole.fres],
                [(f.info, f.words) for f in whole.fres])

    def _fde(self, index: int) -> tuple[FDE, list[int]]:
        """FDE `index` with its FREs and their start offsets, validated once and cached."""
        got = self._cache.get(index)
        if got is None:
            try:
                fde = self.fde(index)
            except DecodeError as exc:
                got = _Bad(str(exc), exc.offset)
            else:
                starts = [f.start for f in fde.fres]
                if all(map(lt, starts, islice(starts, 1, None))):
                    got = (fde, starts)
                else:
                    bad = next(j for j in range(1, len(starts)) if starts[j] <= starts[j - 1])
                    got = _Bad(
                        f"FDE[{index}]: FRE {bad} starts at {starts[bad]:#x}, not after FRE "
                        f"{bad - 1} at {starts[bad - 1]:#x}", fde.fres[bad].offset)
            self._cache[index] = got
        if isinstance(got, _Bad):
            raise got
        return got

    def lookup(self, pc: int) -> Row | Miss:
        """The row for runtime address `pc`."""
        if self.error is not None:
            return Miss("malformed", f"{self.name}: {self.error}", None, self.error.offset)
        i = bisect_right(self._starts, pc) - 1
        if i < 0 or pc >= self._index[i][1]:
            return Miss("no-fde", f"{self.name}: no FDE covers {pc:#x}")
        start, _end, fde_index = self._index[i]
        try:
            fde, starts = self._fde(fde_index)
        except _Bad as exc:
            return Miss("malformed", f"{self.name}: {exc.message}", fde_index, exc.offset)
        v3 = self.header is not None and self.header.version >= constants.VERSION_3
        if v3 and fde.signal:
            # A signal trampoline: the caller's registers are in the kernel's signal
            # frame, whose layout SFrame does not describe.
            return Miss("signal", f"{self.name}: FDE[{fde_index}] is a signal frame",
                        fde_index)
        if not fde.fres:
            # v3: a DEFAULT FDE without FREs marks an outermost frame.
            if v3 and not fde.flex(constants.VERSION_3):
                return Miss("outermost", f"{self.name}: FDE[{fde_index}] has no FREs",
                            fde_index)
            return Miss("no-fre", f"{self.name}: FDE[{fde_index}] has no FREs", fde_index)
        off = pc - start
        if fde.pcmask:
            rep = fde.rep_size if self.header and self.header.version > constants.VERSION_1 \
                else V1_PCMASK_REP_SIZE
            if rep == 0:
                return Miss("malformed", f"{self.name}: FDE[{fde_index}] is PCMASK with "
                            "rep_size 0", fde_index, fde.offset)
            off %= rep
        j = bisect_right(starts, off) - 1
        if j < 0:
            return Miss("no-fre", f"{self.name}: FDE[{fde_index}]'s first FRE starts at "
                        f"{starts[0]:#x}, after PC offset {off:#x}", fde_index)
        return Row(fde_index, j, fde, fde.fres[j], start)


class TableSet:
    """Several sections (executable, shared objects): find the one whose text holds a PC."""

    def __init__(self, tables: Sequence[SFrameTable] = ()) -> None:
        self.tables = list(tables)
        # Flatten to disjoint spans (where two tables claim one address, the
        # lower-starting claim wins) so that a lookup is a single bisection.
        spans: list[tuple[int, int, int]] = []
        for s, e, k in sorted((s, e, k) for k, t in enumerate(self.tables)
                              for s, e in t.text_ranges):
            if spans and s < spans[-1][1]:
                s = spans[-1][1]
            if s < e:
                spans.append((s, e, k))
        self._spans = spans
        self._starts = [s for s, _, _ in spans]

    def find(self, pc: int) -> SFrameTable | None:
        i = bisect_right(self._starts, pc) - 1
        if i >= 0 and pc < self._spans[i][1]:
            return self.tables[self._spans[i][2]]
        return None
