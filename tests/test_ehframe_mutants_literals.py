""".eh_frame reads whose struct type code (signed or unsigned) decides the result: mutants of
those literals (sfcheck.dwarf.callframe / ehframe) survived an earlier run whose classifier
took the changed text for message text. Each test feeds the one value that tells the two
codes apart (a field with its top bit set) and pins the whole result: the rows, or the
one-line error with its section offset.

- DW_CFA_advance_loc2 / advance_loc4 take an unsigned delta (DWARF 5 section 6.4.2.1): a
  delta with the top bit set moves the location forward, never back.
- a 64-bit entry length is unsigned: 2**63 bytes runs past the section (and says so with a
  positive length).
- the CIE pointer is read unsigned, 32-bit and 64-bit alike (field-by-field path): one with
  the top bit set leads before the section, not forward into it. (libgcc's unwinder reads
  CIE_delta as a signed word; this pins sfcheck's reading as it is, as the C reader's is.)

The other literal mutants of these files are named equivalent (offsets and index columns
that hold non-negative values below 2**63, a codec name's case, comparisons against zero,
the personality pointer whose value is discarded, pointers masked to the address size).
"""

from __future__ import annotations

import struct

import pytest

from sfcheck.dwarf import ehframe
from sfcheck.dwarf.cursor import EhFrameError
from sfcheck.dwarf.ehframe import read_eh_frame

from helpers import sleb, uleb

RA, FP = 16, 6
VMA = 0x4000
INIT = b"\x0c\x07\x08"  # DW_CFA_def_cfa r7 + 8

Rows = list[list[tuple]]


@pytest.fixture(autouse=True)
def pure_python(monkeypatch: pytest.MonkeyPatch) -> None:
    """The Python reference: the mutated code is there."""
    monkeypatch.setattr(ehframe, "CFIRUN", None)


def entry(body: bytes, wide: bool = False) -> bytes:
    if wide:
        return struct.pack("<IQ", 0xFFFFFFFF, len(body)) + body
    return struct.pack("<I", len(body)) + body


def cie() -> bytes:
    """A CIE entry: version 1, "zR", code align 1, data align -8, FDE pointers pcrel sdata4."""
    return entry(struct.pack("<I", 0) + b"\x01zR\0" + uleb(1) + sleb(-8) + bytes([RA])
                 + uleb(1) + b"\x1b" + INIT)


def fde(ident: int, program: bytes, wide: bool = False) -> bytes:
    """An FDE entry with CIE pointer `ident`, pcrel sdata4 start 0x100 past its field, size
    0x20, no augmentation data, then `program`."""
    ptr = struct.pack("<Q" if wide else "<I", ident)
    return entry(ptr + struct.pack("<iI", 0x100, 0x20) + b"\0" + program, wide)


def read(data: bytes) -> Rows:
    return [[tuple(r) for r in f.rows] for f in read_eh_frame(data, VMA, False, 8, RA, FP)]


def error(data: bytes) -> str:
    with pytest.raises(EhFrameError) as got:
        read_eh_frame(data, VMA, False, 8, RA, FP)
    return str(got.value)


def one_fde(program: bytes) -> bytes:
    """The CIE at 0 and one FDE after it pointing back at it."""
    c = cie()
    return c + fde(len(c) + 4, program)


def start_of(data: bytes) -> int:
    """The FDE's start: pcrel from its start field (after the CIE, length and pointer)."""
    return VMA + len(cie()) + 8 + 0x100


def test_advance_loc2_delta_is_unsigned() -> None:
    """DW_CFA_advance_loc2 0x8001 then def_cfa_offset 16: the second row 0x8001 on."""
    data = one_fde(b"\x03\x01\x80\x0e\x10")
    s = start_of(data)
    want = [[(s, (7, 8), None, None), (s + 0x8001, (7, 16), None, None)]]
    assert read(data) == want


def test_advance_loc4_delta_is_unsigned() -> None:
    """DW_CFA_advance_loc4 0x80000001 then def_cfa_offset 16: the second row 2**31 + 1 on."""
    data = one_fde(b"\x04\x01\x00\x00\x80\x0e\x10")
    s = start_of(data)
    want = [[(s, (7, 8), None, None), (s + 0x80000001, (7, 16), None, None)]]
    assert read(data) == want


def test_advance_loc_top_bit_the_same_on_the_c_reader(monkeypatch: pytest.MonkeyPatch) -> None:
    """The C reader (when built) gives the same rows as the reference for both deltas."""
    monkeypatch.undo()
    if ehframe.CFIRUN is None:
        pytest.skip("the C reader is not built (or SFCHECK_PURE_PYTHON is set)")
    for program, delta in ((b"\x03\x01\x80\x0e\x10", 0x8001),
                           (b"\x04\x01\x00\x00\x80\x0e\x10", 0x80000001)):
        data = one_fde(program)
        s = start_of(data)
        assert read(data) == [[(s, (7, 8), None, None), (s + delta, (7, 16), None, None)]]


def test_64_bit_length_with_the_top_bit_runs_past_the_section() -> None:
    data = struct.pack("<IQ", 0xFFFFFFFF, 1 << 63) + bytes(8)
    assert error(data) == ("entry of 0x8000000000000000 bytes runs past the section "
                           "(at .eh_frame+0x0)")


def test_32_bit_cie_pointer_with_the_top_bit_leads_before_the_section() -> None:
    """CIE pointer 0xfffffff0 of the FDE at 0x14 (field at 0x18): 0x18 - 0xfffffff0, not
    0x18 + 0x10. (Not the fast path: no CIE is known at that place.)"""
    c = cie()
    assert len(c) == 0x14
    data = c + fde(0xFFFFFFF0, b"")
    assert error(data) == ("FDE's CIE pointer leads outside the section (-0xffffffd8) "
                           "(at .eh_frame+0x18)")


def test_64_bit_cie_pointer_with_the_top_bit_leads_before_the_section() -> None:
    """A 64-bit FDE at 0x14 (pointer field at 0x20) with CIE pointer 2**64 - 0x10: 0x20 -
    (2**64 - 0x10), not 0x20 + 0x10."""
    data = cie() + fde((1 << 64) - 0x10, b"", wide=True)
    assert error(data) == ("FDE's CIE pointer leads outside the section "
                           "(-0xffffffffffffffd0) (at .eh_frame+0x20)")
