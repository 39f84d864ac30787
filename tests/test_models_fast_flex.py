"""rules/consumer._any_flex (the FDE type read from the FRE-offset column) against
_any_flex_decoded (one decoded FDE record at a time): the same answer on valid, damaged and
truncated v3 sections (and any other version: False), so _check_flex_dump is skipped exactly
when its walk would report nothing."""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sfcheck.errors import DecodeError
from sfcheck.format import encode
from sfcheck.format.decode import decode_header
from sfcheck.rules.consumer import _any_flex, _any_flex_decoded

from strategies import mutations, sections


def _same(data: bytes) -> None:
    try:
        h = decode_header(data)
    except DecodeError:
        return
    assert _any_flex(data, h) == _any_flex_decoded(data, h)


@given(sections(versions=(3,)).flatmap(lambda s: mutations(encode(s))))
@settings(max_examples=400, deadline=None, suppress_health_check=list(HealthCheck))
def test_column_read_equals_decoded_records_on_damaged_v3(data: bytes) -> None:
    _same(data)


@given(sections(), st.integers(0, 12), st.integers(0, 12))
@settings(max_examples=200, deadline=None, suppress_health_check=list(HealthCheck))
def test_column_read_equals_decoded_records_cut_short(section, cut: int, less: int) -> None:
    # Bytes cut from the end, or fre_len claiming fewer: an attribute record ends just
    # inside or just past either limit.
    data = encode(section)
    order = "big" if data[:2] == b"\xde\xe2" else "little"
    fre_len = int.from_bytes(data[16:20], order)
    _same(data[:len(data) - cut])
    _same(data[:16] + max(0, fre_len - less).to_bytes(4, order) + data[20:])


def test_a_flex_fde_after_one_that_fails_is_not_seen() -> None:
    from sfcheck.format import FDE, build_section, fde_info, make_fre
    from sfcheck.format import constants as C

    fres = (make_fre(0, [8]),)
    plain = FDE(start=0, size=0x10, info=fde_info(C.FRE_TYPE_ADDR1), fres=fres)
    flex = FDE(start=0x10, size=0x10, info=fde_info(C.FRE_TYPE_ADDR1), fres=fres,
               info2=C.FDE_TYPE_FLEX)
    data = encode(build_section(3, C.ABI_AMD64_LE, [plain, flex], fixed_ra=-8))
    h = decode_header(data)
    assert _any_flex(data, h) and _any_flex_decoded(data, h)
    # FDE 0's FRE offset (bytes 12-15 of its record) pointed past the FRE sub-section.
    at = h.fdes_start + 12
    bad = data[:at] + (0xFFFF).to_bytes(4, "little") + data[at + 4:]
    assert not _any_flex(bad, h) and not _any_flex_decoded(bad, h)


def test_an_attribute_record_cut_by_the_section_end_stops_the_walk() -> None:
    # FDE 0's attribute record (no FREs) is the last 5 bytes of the section, FDE 1's (FLEX)
    # comes before it; one byte cut: FDE 0 fails to decode, so FDE 1 is never seen.
    from sfcheck.format import FDE, build_section, fde_info, make_fre
    from sfcheck.format import constants as C

    flex = FDE(start=0x10, size=0x10, info=fde_info(C.FRE_TYPE_ADDR1),
               fres=(make_fre(0, [8]),), info2=C.FDE_TYPE_FLEX)
    plain = FDE(start=0x20, size=0x10, info=fde_info(C.FRE_TYPE_ADDR1), fres=())
    data = bytearray(encode(build_section(3, C.ABI_AMD64_LE, [flex, plain], fixed_ra=-8)))
    h = decode_header(bytes(data))
    a, b = h.fdes_start + 12, h.fdes_start + 16 + 12  # the two records' FRE offsets
    data[a:a + 4], data[b:b + 4] = data[b:b + 4], data[a:a + 4]
    whole = bytes(data)
    assert _any_flex(whole, h) and _any_flex_decoded(whole, h)
    cut = whole[:-1]
    assert not _any_flex_decoded(cut, h)
    assert not _any_flex(cut, h)
