"""Where an ELF file is loaded, from the mappings of it a process (or a core) lists.

A file may be mapped more than once: the loader's mappings, plus any the program made itself
(a page of its own executable mapped to read its headers, at whatever address mmap chose).
The bias comes from a mapping of the page that holds the first PT_LOAD's file offset
(offset 0 for any ordinary file; the next PT_LOAD's when that page is not listed), as gdb
finds it. When several mappings hold that page, the one the other PT_LOAD segments line up
with wins (each segment mapped at bias + its address, at its file offset), then `prefer`
(the executable's AT_ENTRY - e_entry), then the lowest.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import NamedTuple


class Segment(NamedTuple):
    vaddr: int
    offset: int


class Mapped(NamedTuple):
    start: int
    end: int
    offset: int  # file offset of `start`


def _lines_up(seg: Segment, bias: int, maps: Sequence[Mapped]) -> bool:
    addr = bias + seg.vaddr
    return any(m.start <= addr < m.end and m.offset + (addr - m.start) == seg.offset
               for m in maps)


def load_bias(segments: Sequence[Segment], maps: Sequence[Mapped],
              prefer: int | None = None) -> int | None:
    """runtime - link-time address, or None when no mapping holds any PT_LOAD's offset."""
    candidates: list[int] = []
    for seg in sorted(segments, key=lambda s: s.offset):  # the first one some mapping holds
        candidates = [m.start + (seg.offset - m.offset) - seg.vaddr for m in maps
                      if m.offset <= seg.offset < m.offset + (m.end - m.start)]
        if candidates:
            break
    if not candidates:
        return None

    def rank(bias: int) -> tuple[int, bool, int]:
        fit = sum(_lines_up(s, bias, maps) for s in segments)
        return (-fit, bias != prefer, bias)

    return min(set(candidates), key=rank)
