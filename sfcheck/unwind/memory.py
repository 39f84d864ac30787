"""Memory models the unwinder reads the stack through.

A model answers `read(addr, size)` with exactly `size` bytes or None; it never
raises for an address it does not hold, so a wild CFA or saved-FP value ends
the walk with "unreadable memory" instead of an exception.
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Iterable, Mapping
from typing import Protocol

ADDR_MASK = (1 << 64) - 1


class Memory(Protocol):
    def read(self, addr: int, size: int) -> bytes | None:
        """`size` bytes at `addr`, or None when any of them is not readable."""
        ...


class SparseMemory:
    """A sparse map of address ranges to bytes (tests, fuzzing, synthetic stacks).

    Overlapping or touching ranges are merged (later data wins), so a read
    that spans two adjacent ranges still succeeds; a read that touches a
    hole fails as a whole.
    """

    def __init__(self, ranges: Mapping[int, bytes] | Iterable[tuple[int, bytes]] = ()) -> None:
        self._starts: list[int] = []
        self._blobs: list[bytearray] = []
        items = ranges.items() if isinstance(ranges, Mapping) else ranges
        for addr, data in items:
            self.add(addr, data)

    def add(self, addr: int, data: bytes) -> None:
        if addr < 0 or addr + len(data) > ADDR_MASK + 1:
            raise ValueError(f"range {addr:#x}+{len(data):#x} is outside the 64-bit space")
        if not data:
            return
        end = addr + len(data)
        # Find every existing range that overlaps or touches [addr, end) and merge.
        lo = bisect_right(self._starts, addr) - 1
        touches = lo >= 0 and self._starts[lo] + len(self._blobs[lo]) >= addr
        first = lo if touches else lo + 1
        last = first
        while last < len(self._starts) and self._starts[last] <= end:
            last += 1
        if first == last:
            self._starts.insert(first, addr)
            self._blobs.insert(first, bytearray(data))
            return
        new_start = min(addr, self._starts[first])
        new_end = max(end, *(self._starts[i] + len(self._blobs[i]) for i in range(first, last)))
        merged = bytearray(new_end - new_start)
        for i in range(first, last):
            off = self._starts[i] - new_start
            merged[off:off + len(self._blobs[i])] = self._blobs[i]
        merged[addr - new_start:end - new_start] = data
        self._starts[first:last] = [new_start]
        self._blobs[first:last] = [merged]

    def write(self, addr: int, data: bytes) -> None:
        """Alias of add(): overwrite (or create) bytes at `addr`."""
        self.add(addr, data)

    def ranges(self) -> list[tuple[int, int]]:
        """[(start, end)] of every readable range, ascending."""
        return [(s, s + len(b)) for s, b in zip(self._starts, self._blobs, strict=True)]

    def read(self, addr: int, size: int) -> bytes | None:
        if size < 0 or addr < 0:
            return None
        i = bisect_right(self._starts, addr) - 1
        if i < 0:
            return None
        off = addr - self._starts[i]
        blob = self._blobs[i]
        if off + size > len(blob):
            return None
        return bytes(blob[off:off + size])


def read_word(mem: Memory, addr: int, size: int, big_endian: bool) -> int | None:
    """An unsigned word, or None if unreadable (addresses wrap like the hardware's)."""
    data = mem.read(addr & ADDR_MASK, size)
    if data is None or len(data) != size:
        return None
    return int.from_bytes(data, "big" if big_endian else "little")
