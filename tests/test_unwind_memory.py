"""SparseMemory, the unwinder's stack model: ranges merge when they touch or overlap (later
bytes win), a read is all of its bytes or None, the 64-bit space is the limit."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from sfcheck.unwind.memory import ADDR_MASK, SparseMemory, read_word

TOP = ADDR_MASK + 1


@pytest.mark.parametrize("addr,size", [(-1, 1), (TOP - 1, 2), (TOP, 1)])
def test_range_outside_the_space_refused(addr: int, size: int) -> None:
    with pytest.raises(ValueError) as exc:
        SparseMemory().add(addr, bytes(size))
    assert str(exc.value) == f"range {addr:#x}+{size:#x} is outside the 64-bit space"


def test_range_at_the_top_and_empty_ranges() -> None:
    mem = SparseMemory({TOP - 2: b"\x01\x02", 0x100: b""})
    assert mem.ranges() == [(TOP - 2, TOP)]
    assert mem.read(TOP - 2, 2) == b"\x01\x02" and mem.read(TOP - 1, 2) is None
    mem.add(0x10, b"")
    assert mem.ranges() == [(TOP - 2, TOP)]


def test_touching_ranges_merge_and_gaps_stay() -> None:
    mem = SparseMemory([(0x10, b"ab"), (0x12, b"cd"), (0x20, b"ef"), (0x0E, b"yz")])
    assert mem.ranges() == [(0x0E, 0x14), (0x20, 0x22)]
    assert mem.read(0x0E, 6) == b"yzabcd"
    assert mem.read(0x13, 2) is None  # runs into the gap
    assert mem.read(0x14, 1) is None and mem.read(0x1F, 1) is None
    assert mem.read(0x21, 1) == b"f" and mem.read(0x21, 2) is None


def test_overlapping_ranges_later_bytes_win() -> None:
    mem = SparseMemory()
    mem.add(0x100, b"\x00" * 8)
    mem.add(0x108, b"\x11" * 8)
    mem.add(0x120, b"\x22" * 8)
    mem.write(0x104, b"\xff" * 0x20)  # spans the first two and the gap, touches the third
    assert mem.ranges() == [(0x100, 0x128)]
    assert mem.read(0x100, 0x28) == b"\x00" * 4 + b"\xff" * 0x20 + b"\x22" * 4
    mem.add(0xF0, b"\x33" * 0x40)  # covers it all from below
    assert mem.ranges() == [(0xF0, 0x130)]
    assert mem.read(0xF0, 0x40) == b"\x33" * 0x40


@pytest.mark.parametrize("addr,size,expected", [
    (0x100, 0, b""), (0x100, -1, None), (-1, 1, None), (0xFF, 1, None), (0x103, 1, b"d"),
    (0x103, 2, None), (0, 1, None)])
def test_read_edges(addr: int, size: int, expected: bytes | None) -> None:
    assert SparseMemory({0x100: b"abcd"}).read(addr, size) == expected


def test_read_word_wraps_and_orders() -> None:
    mem = SparseMemory({0: bytes(range(1, 9))})
    assert read_word(mem, TOP, 4, False) == 0x04030201  # 2**64 wraps to 0
    assert read_word(mem, 0, 4, True) == 0x01020304
    assert read_word(mem, 6, 4, False) is None


@given(st.lists(st.tuples(st.integers(0, 64), st.binary(max_size=12)), max_size=8))
def test_reads_see_the_last_write_of_each_byte(writes: list[tuple[int, bytes]]) -> None:
    mem, model = SparseMemory(), {}
    for addr, data in writes:
        mem.add(addr, data)
        model.update({addr + i: b for i, b in enumerate(data)})
    for addr in range(0, 80):
        assert mem.read(addr, 1) == (bytes([model[addr]]) if addr in model else None)
    spans = mem.ranges()
    assert [a for s, e in spans for a in range(s, e)] == sorted(model)
    # apart by at least one byte: touching ranges were merged
    assert all(e < s2 for (_, e), (s2, _) in zip(spans[:-1], spans[1:], strict=True))
