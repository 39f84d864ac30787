"""defect.py's helpers at their edges (the mutation run's survivors in _start_fields and
check_discarded): _start_fields must answer None exactly where decoding FDEs 0..m-1 one
record at a time (Decoder.fde, with_fres=False) raises, and a section cut at each byte
boundary of its FDE table or v3 attribute record is on one side or the other."""

from __future__ import annotations

import pytest

from sfcheck.errors import DecodeError
from sfcheck.format import FDE, build_section, encode, fde_info, make_fre
from sfcheck.format import constants as C
from sfcheck.format.decode import Decoder, decode_header
from sfcheck.rules.defect import _start_fields, check_discarded
from sfcheck.walk.context import SectionContext


def section(version: int, fre_counts: tuple[int, ...]) -> bytes:
    fdes = [FDE(0x1000 + 0x100 * i, 0x40, fde_info(0),
                tuple(make_fre(4 * k, (8,)) for k in range(n)))
            for i, n in enumerate(fre_counts)]
    return encode(build_section(version, C.ABI_AMD64_LE, fdes))


def one_by_one(data: bytes, m: int) -> list[int] | None:
    """FDEs 0..m-1's start fields, decoding one record at a time (None: one raises)."""
    try:
        dec = Decoder(data)
        return [dec.fde(i, with_fres=False).start for i in range(m)]
    except DecodeError:
        return None


def start_fields(data: bytes, m: int) -> list[int] | None:
    cols = _start_fields(data, m)
    return None if cols is None else list(cols.starts)


def test_v2_cut_in_the_fde_table() -> None:
    data = section(2, (1, 1))
    h = decode_header(data)
    end = h.fdes_start + 2 * h.fde_size  # the table ends where the FREs start
    assert start_fields(data[:end], 2) == one_by_one(data[:end], 2) is not None
    assert start_fields(data[:end - 1], 2) is None  # FDE 1 cut short by one byte
    assert one_by_one(data[:end - 1], 2) is None
    for cut in range(h.fdes_start, end, 7):
        assert start_fields(data[:cut], 2) is None, cut


def test_v2_first_fre_offset_at_the_end() -> None:
    """An FDE without FREs last in the table: its FRE offset is fre_len, still inside."""
    data = section(2, (1, 0))
    h = decode_header(data)
    dec = Decoder(data)
    assert dec.fde(1, with_fres=False).fre_off == h.fre_len
    assert start_fields(data, 2) == one_by_one(data, 2) is not None


def test_v3_attribute_record_cut_at_the_section_end() -> None:
    data = section(3, (1, 1))
    h = decode_header(data)
    attr = h.fres_start + Decoder(data).fde(1, with_fres=False).fre_off
    fits = attr + C.V3_ATTR_SIZE  # FDE 1's attribute record ends exactly at the cut
    assert fits < h.fres_end  # its FRE follows: fre_len alone would let a cut record pass
    assert start_fields(data[:fits], 2) == one_by_one(data[:fits], 2) is not None
    assert start_fields(data[:fits - 1], 2) is None
    assert one_by_one(data[:fits - 1], 2) is None


@pytest.mark.parametrize(("linked", "data", "fired"), [
    (True, b"", True),           # a linked file with an empty section: the linker's doing
    (True, b"\xe2\xde", False),  # bytes: not discarded
    (False, b"", False),         # an object may hold an empty section
    (False, b"\xe2\xde", False),
])
def test_check_discarded(linked: bool, data: bytes, fired: bool) -> None:
    ctx = SectionContext("lib.so", ".sframe", 0, data)
    assert check_discarded(ctx, linked) is fired
    want = [("defect-ld-discarded-sframe", ".sframe has size 0 in a linked file: the linker "
             "discarded the SFrame inputs")]
    assert [(f.rule, f.message) for f in ctx.findings] == (want if fired else [])
