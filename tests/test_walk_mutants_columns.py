"""fast.increasing_pairs' lanes at their edges on both host byte orders, and FdeColumns'
three columns kept in step (tests/mutation.py's walk group)."""

from __future__ import annotations

from array import array

import pytest

from sfcheck.format.fde_table import UCODE
from sfcheck.walk import fast
from sfcheck.walk.columns import FdeColumns
from sfcheck.walk.fast import increasing_pairs

# (values, asz, pairs v[k] < v[k+1]), counted by hand: lengths 0, 1, odd and even, equal
# neighbours, decreases by 1, and the top value 2**(8*asz) - 1 beside 0 and itself.
CASES = [
    ([], 2, 0), ([7], 2, 0), ([7], 4, 0),
    ([5, 5], 2, 0), ([5, 4], 2, 0), ([4, 5], 2, 1),
    ([0, 0xFFFF], 2, 1), ([0xFFFF, 0], 2, 0), ([0xFFFF, 0xFFFF], 2, 0),
    ([0xFFFE, 0xFFFF, 0xFFFF, 0xFFFE], 2, 1),
    ([1, 2, 3, 4, 5], 2, 4), ([5, 4, 3, 2, 1], 2, 0), ([0, 0x100, 0xFF, 0x100, 0x101], 2, 3),
    ([0, 0xFFFFFFFF], 4, 1), ([0xFFFFFFFF, 0xFFFFFFFE], 4, 0),
    ([0, 0xFFFFFFFF, 0xFFFFFFFE, 0xFFFFFFFF], 4, 2),
    ([0x10000, 0xFFFF, 0x10000, 0x10000, 0x1000000], 4, 2),
    ([0, 1, 1, 2, 1, 0xFFFFFFFF, 0], 4, 3),
]


def _ids(case: tuple) -> str:
    return f"{case[1]}-" + "-".join(map(hex, case[0]))


@pytest.mark.parametrize("case", CASES, ids=_ids)
def test_increasing_pairs_exact_on_a_little_endian_host(case: tuple) -> None:
    values, asz, expect = case
    assert increasing_pairs(array(UCODE[asz], values), asz) == expect


@pytest.mark.parametrize("case", CASES, ids=_ids)
def test_increasing_pairs_exact_on_a_big_endian_host(case: tuple, monkeypatch) -> None:
    """A big-endian host, simulated: HOST_LITTLE false, and an array whose bytes are the
    values' big-endian encoding, as the host's own array of those values would hold them
    (its ints read here are the byte-swapped values). The function swaps a copy back before
    spreading the lanes."""
    values, asz, expect = case
    held = array(UCODE[asz], values)
    held.byteswap()
    assert held.tobytes() == b"".join(v.to_bytes(asz, "big") for v in values)
    monkeypatch.setattr(fast, "HOST_LITTLE", False)
    assert increasing_pairs(held, asz) == expect
    assert held.tobytes() == b"".join(v.to_bytes(asz, "big") for v in values)  # not swapped


@pytest.mark.parametrize("values,expect", [
    (b"", 0), (b"\x09", 0), (b"\x03\x03", 0), (b"\x04\x03", 0), (b"\x03\x04", 1),
    (b"\x00\xff\xff\xfe\xff", 2), (b"\x00\x01\x02\x02\x01\x00\xff", 3)])
def test_increasing_pairs_exact_on_bytes(values: bytes, expect: int, monkeypatch) -> None:
    """One-byte starts come as bytes, which have no byte order: the same on either host."""
    assert increasing_pairs(values, 1) == expect
    monkeypatch.setattr(fast, "HOST_LITTLE", False)
    assert increasing_pairs(values, 1) == expect


def test_fdecolumns_columns_of_unequal_length_are_an_error() -> None:
    """extend() given fewer sizes than starts leaves the columns out of step: reading them is
    an error, not a table silently cut to its shortest column."""
    cols = FdeColumns([(1, 2, 0)])
    cols.extend(1, [3, 5], [4])
    with pytest.raises(ValueError):
        list(cols)
