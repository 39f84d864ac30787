"""defect.concatenated_parts and check_concatenated on hand-built v2 sections laid end to end:
padding of 8 bytes and of 9, the part limit, 8 headers named and 9, a damaged next header, and
the finding whole (rule, severity, message, offset)."""

from __future__ import annotations

import pytest

from sfcheck.format import FDE, build_section, encode, fde_info, make_fre
from sfcheck.format import constants as C
from sfcheck.result import Severity
from sfcheck.rules.defect import check_concatenated, concatenated_parts
from sfcheck.walk.context import SectionContext


def part(n: int) -> bytes:
    fdes = [FDE(start=0x1000 + 0x20 * i, size=0x10, info=fde_info(C.FRE_TYPE_ADDR1),
                fres=(make_fre(0, (8,)),)) for i in range(n)]
    return encode(build_section(2, C.ABI_AMD64_LE, fdes))


def offsets(parts: list[bytes], pad: int) -> list[int]:
    out, pos = [], 0
    for p in parts:
        out.append(pos)
        pos += len(p) + pad
    return out


def finding(data: bytes) -> tuple[bool, list[tuple[str, Severity, str, int | None]]]:
    ctx = SectionContext("f", ".sframe", 0, data)
    fired = check_concatenated(ctx)
    return fired, [(f.rule, f.severity, f.message, f.location.offset) for f in ctx.findings]


@pytest.mark.parametrize("pad", [0, 1, 7, 8])
def test_up_to_eight_bytes_of_padding_between_parts(pad: int) -> None:
    parts = [part(1), part(2), part(3)]
    assert concatenated_parts((b"\0" * pad).join(parts)) == offsets(parts, pad)


def test_nine_bytes_of_padding_end_the_search() -> None:
    assert concatenated_parts((b"\0" * 9).join([part(1), part(2)])) == [0]


def test_a_part_ending_the_data_is_the_last() -> None:
    # the first part alone, and the first part followed by zero padding only
    assert concatenated_parts(part(1)) == [0]
    assert concatenated_parts(part(1) + b"\0" * 4) == [0]


def test_a_next_part_with_a_bad_header_is_not_counted() -> None:
    second = bytearray(part(1))
    second[2] = 99  # version 99
    assert concatenated_parts(part(1) + bytes(second) + part(1)) == [0]
    # the magic alone (no whole header after it)
    assert concatenated_parts(part(1) + second[:4]) == [0]


@pytest.mark.parametrize("limit", [1, 2, 3])
def test_the_part_limit(limit: int) -> None:
    parts = [part(1)] * 4
    assert concatenated_parts(b"".join(parts), limit) == offsets(parts, 0)[:limit]


def test_one_part_is_no_finding() -> None:
    assert finding(part(2)) == (False, [])


def test_two_parts_are_named_with_their_fde_counts() -> None:
    a, b = part(2), part(3)
    assert finding(a + b"\0" * 3 + b) == (True, [(
        "defect-concatenated-sections", Severity.WARNING,
        f"2 SFrame sections laid end to end (headers at 0x0, {len(a) + 3:#x}); readers see "
        "only the first, covering 2 of 5 FDEs", len(a) + 3)])


@pytest.mark.parametrize(("count", "more"), [(8, ""), (9, ", ...")])
def test_eight_headers_are_named(count: int, more: str) -> None:
    parts = [part(1)] * count
    at = offsets(parts, 0)
    shown = ", ".join(f"{p:#x}" for p in at[:8]) + more
    assert finding(b"".join(parts)) == (True, [(
        "defect-concatenated-sections", Severity.WARNING,
        f"{count} SFrame sections laid end to end (headers at {shown}); readers see only the "
        f"first, covering 1 of {count} FDEs", at[1])])


def test_parts_with_the_longest_auxiliary_header() -> None:
    """A 255-byte auxiliary header (the most sfh_auxhdr_len says) is read whole."""
    fdes = [FDE(start=0x1000, size=0x10, info=fde_info(C.FRE_TYPE_ADDR1),
                fres=(make_fre(0, (8,)),))]
    aux = encode(build_section(2, C.ABI_AMD64_LE, fdes, auxhdr=b"\x01" * 0xFF))
    assert aux[7] == 0xFF
    assert concatenated_parts(aux + aux + part(1)) == [0, len(aux), 2 * len(aux)]


def test_data_without_a_header_is_one_part() -> None:
    assert concatenated_parts(b"\x01" * 64) == [0]
    assert finding(b"\x01" * 64) == (False, [])


def test_at_most_4096_parts_are_found() -> None:
    empty = encode(build_section(2, C.ABI_AMD64_LE, []))  # a header alone
    parts = concatenated_parts(empty * 4097)
    assert len(parts) == 4096 and parts[-1] == 4095 * len(empty)


def test_the_finding_claims_the_trailing_bytes_rule() -> None:
    ctx = SectionContext("f", ".sframe", 0, part(1) + part(1))
    assert check_concatenated(ctx)
    assert ctx.claimed == {"layout-trailing-bytes"}


def test_switched_off_it_claims_nothing() -> None:
    def enabled(rule) -> bool:
        return rule.id != "defect-concatenated-sections"
    ctx = SectionContext("f", ".sframe", 0, part(1) + part(1), enabled=enabled)
    check_concatenated(ctx)
    assert ctx.claimed == set() and ctx.findings == []
