"""rules/consumer._any_flex and its reference _any_flex_decoded on hand-built v3 sections, each
limit at the boundary and one past: a FLEX FDE whose attribute record is the section's and the
FRE sub-section's last 5 bytes, then one byte short of either (the mutation run's survivors;
tests/test_models_fast_flex.py holds the two equal on random sections)."""

from __future__ import annotations

import pytest

from sfcheck.format import FDE, build_section, encode, fde_info, make_fre
from sfcheck.format import constants as C
from sfcheck.format.decode import decode_header
from sfcheck.rules.consumer import _any_flex, _any_flex_decoded

FRES = (make_fre(0, [8]),)


def section(version: int = 3, flex_last: bool = True, flex_fres: tuple = ()) -> bytes:
    """FDE 0 plain with one FRE, FDE 1 FLEX (or plain) with `flex_fres`: FDE 1's attribute
    record (and FREs) come last in the FRE sub-section, which ends the section."""
    plain = FDE(start=0, size=0x10, info=fde_info(C.FRE_TYPE_ADDR1), fres=FRES)
    last = FDE(start=0x10, size=0x10, info=fde_info(C.FRE_TYPE_ADDR1), fres=flex_fres,
               info2=C.FDE_TYPE_FLEX if flex_last and version >= 3 else 0)
    return encode(build_section(version, C.ABI_AMD64_LE, [plain, last], fixed_ra=-8))


def both(data: bytes) -> tuple[bool, bool]:
    h = decode_header(data)
    return _any_flex(data, h), _any_flex_decoded(data, h)


def with_fre_len(data: bytes, fre_len: int) -> bytes:
    return data[:16] + fre_len.to_bytes(4, "little") + data[20:]


def test_the_layout_these_cases_rely_on() -> None:
    data = section()
    h = decode_header(data)
    fre_off = int.from_bytes(data[h.fdes_start + 16 + 12:h.fdes_start + 32], "little")
    assert fre_off > 0 and h.fres_start + fre_off + C.V3_ATTR_SIZE == h.fres_end == len(data)
    assert fre_off + C.V3_ATTR_SIZE == h.fre_len


def test_a_flex_record_ending_exactly_at_both_limits_is_seen() -> None:
    assert both(section()) == (True, True)


def test_no_flex_fde_is_no_flex() -> None:
    assert both(section(flex_last=False)) == (False, False)


@pytest.mark.parametrize("version", [1, 2])
def test_before_v3_there_is_no_flex(version: int) -> None:
    assert both(section(version)) == (False, False)


def test_a_record_cut_by_the_section_end_ends_the_walk() -> None:
    # fre_len still covers it: only the bytes are short (byte 3, the type, is still there)
    assert both(section()[:-1]) == (False, False)


def test_a_record_past_fre_len_ends_the_walk() -> None:
    data = section()
    assert both(with_fre_len(data, decode_header(data).fre_len - 1)) == (False, False)


def test_an_fde_array_past_the_bytes_is_no_flex() -> None:
    data = section()
    h = decode_header(data)
    assert both(data[:h.fdes_start + 2 * h.fde_size - 1]) == (False, False)


def test_a_flex_record_with_broken_fres_is_still_flex() -> None:
    """Only the record decides (the dumper's walk reports at the FDE, FREs unread): FDE 1's
    attribute claims 200 FREs where one is."""
    data = bytearray(section(flex_fres=FRES))
    h = decode_header(bytes(data))
    fre_off = int.from_bytes(data[h.fdes_start + 16 + 12:h.fdes_start + 32], "little")
    data[h.fres_start + fre_off:h.fres_start + fre_off + 2] = (200).to_bytes(2, "little")
    assert both(bytes(data)) == (True, True)
