"""Per-FDE pairs kept as columns: the function ranges (pc, size) the structure check reads
and the FRE blocks [first, end) it walks. A tuple per FDE costs ~150 bytes (1M FDEs:
150 MB) from the check to the last consumer; two arrays and, only when some FDE was
skipped, a third for which FDE each entry belongs to, cost 16-20 bytes."""

from __future__ import annotations

from array import array
from collections.abc import Iterable, Iterator, Sequence
from operator import eq


class FdeColumns(Sequence[tuple[int, int, int]]):
    """Entries (a, b, fde) in table order, read as a sequence of those tuples (made as
    they are read). CODES: the array type of the a and b columns; a value that does not
    fit (starts at or past 2**63, sizes past 2**32 in hand-made input) turns that column
    into a list."""

    __slots__ = ("_a", "_b", "fdes")
    CODES = ("q", "q")

    def __init__(self, items: Iterable[tuple[int, int, int]] = ()) -> None:
        self._a: array | list[int] = array(self.CODES[0])
        self._b: array | list[int] = array(self.CODES[1])
        # Entry k's FDE; None while that is FDE k (every FDE so far has its entry).
        self.fdes: array | None = None
        for a, b, fde in items:
            self.add(a, b, fde)

    def _number_from(self, fde: int) -> None:
        if self.fdes is None and fde != len(self._a):
            self.fdes = array("q", range(len(self._a)))

    def add(self, a: int, b: int, fde: int) -> None:
        self._number_from(fde)
        try:
            self._a.append(a)
        except OverflowError:
            self._a = [*self._a, a]
        try:
            self._b.append(b)
        except OverflowError:
            self._b = [*self._b, b]
        if self.fdes is not None:
            self.fdes.append(fde)

    def extend(self, fde: int, a_col: Sequence[int], b_col: Sequence[int]) -> None:
        """The entries of FDEs fde, fde + 1, ... (as many as `a_col`)."""
        self._number_from(fde)
        n = len(self._a)
        try:
            self._a.extend(a_col)
        except OverflowError:  # array.extend stops at the first value that does not fit
            self._a = [*self._a[:n], *a_col]
        try:
            self._b.extend(b_col)
        except OverflowError:
            self._b = [*self._b[:n], *b_col]
        if self.fdes is not None:
            self.fdes.extend(range(fde, fde + len(a_col)))

    def __len__(self) -> int:
        return len(self._a)

    def __iter__(self) -> Iterator[tuple[int, int, int]]:
        fdes = range(len(self._a)) if self.fdes is None else self.fdes
        return zip(self._a, self._b, fdes, strict=True)

    def __getitem__(self, k):  # type: ignore[override]
        if isinstance(k, slice):
            return list(self)[k]
        a, b = self._a[k], self._b[k]  # IndexError out of range
        if self.fdes is not None:
            return (a, b, self.fdes[k])
        return (a, b, k + len(self._a) if k < 0 else k)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Sequence):
            return NotImplemented
        return len(self) == len(other) and all(map(eq, self, other))

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"{type(self).__name__}({list(self)!r})"
