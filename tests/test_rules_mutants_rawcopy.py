"""defect.check_raw_copy on hand-built v2 sections (PCREL cleared) and symbols placed at chosen
FDEs' stored or field-relative starts: its answer and finding whole, the "half of the FDEs"
bound at n // 2 and one below for even and odd n, a tie with the stored reading, the 4,096-FDE
cap, and each way out (the mutation run's survivors)."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from sfcheck.elf.model import FuncSymbol
from sfcheck.format import FDE, build_section, encode, fde_info
from sfcheck.format import constants as C
from sfcheck.format.decode import Decoder, decode_header
from sfcheck.format.model import Header
from sfcheck.result import Severity
from sfcheck.rules.defect import check_raw_copy
from sfcheck.walk.context import SectionContext

VMA = 0x40000


def section(n: int, stride: int = 0x1000) -> tuple[bytes, Header]:
    """n FDEs without FREs, `stride` bytes apart (0: all at one start), PCREL cleared: the
    check applies."""
    fdes = [FDE(0x1000 + stride * i, 0x10, fde_info(0), ()) for i in range(n)]
    raw = bytearray(encode(build_section(2, C.ABI_AMD64_LE, fdes)))
    raw[3] &= ~C.F_FDE_FUNC_START_PCREL
    data = bytes(raw)
    h = decode_header(data)
    assert not h.pcrel and h.num_fdes == n
    if stride and n < 100:
        # every FDE's two readings differ from every other start: a symbol hits one reading
        # of one FDE
        both = [start(data, h, i, f) for i in range(n) for f in (False, True)]
        assert len(set(both)) == 2 * n
    return data, h


def start(data: bytes, h: Header, i: int, field: bool) -> int:
    return h.func_start(i, Decoder(data).fde(i, with_fres=False).start, VMA, field_relative=field)


def run(data: bytes, h: Header, field: list[int], stored: list[int] = (), *,
        e_type: str = "ET_DYN", relocatable: bool = False
        ) -> tuple[bool, list[tuple[str, Severity, str, int | None]]]:
    """check_raw_copy with symbols at the field-relative starts of FDEs `field` and the
    stored starts of FDEs `stored` (one symbol more, elsewhere, so the set is never empty)."""
    syms = [FuncSymbol(start(data, h, i, True), 1, f"f{i}") for i in field]
    syms += [FuncSymbol(start(data, h, i, False), 1, f"s{i}") for i in stored]
    syms.append(FuncSymbol(0x10, 1, "elsewhere"))
    info = SimpleNamespace(e_type=e_type, cfi=SimpleNamespace(symbols=tuple(syms)))
    ctx = SectionContext("f", ".sframe", VMA, data, relocatable=relocatable)
    fired = check_raw_copy(ctx, h, info)  # type: ignore[arg-type]
    return fired, [(f.rule, f.severity, f.message, f.location.offset) for f in ctx.findings]


def raw_copy(as_field: int, n: int, as_stored: int
             ) -> tuple[bool, list[tuple[str, Severity, str, int | None]]]:
    return True, [("defect-ld-raw-copy", Severity.WARNING, "v2 section without SORTED/PCREL "
                   "whose starts hit function symbols only when read as field-relative "
                   f"({as_field} of {n} FDEs, {as_stored} as stored): an input section "
                   "copied raw by the linker", 0)]


@pytest.mark.parametrize(("n", "hits", "fires"), [
    (4, 2, True), (4, 1, False),        # n // 2 = 2: at the bound and one below
    (5, 2, True), (5, 1, False),        # n // 2 = 2 (not 2.5)
    (1, 1, True), (1, 0, False),        # at least one
])
def test_half_of_the_fdes_must_hit_as_field_relative(n: int, hits: int, fires: bool) -> None:
    data, h = section(n)
    assert run(data, h, list(range(hits))) == (raw_copy(hits, n, 0) if fires else (False, []))


def test_the_field_relative_reading_must_beat_the_stored_one() -> None:
    data, h = section(3)
    assert run(data, h, [0, 1], [0]) == raw_copy(2, 3, 1)
    assert run(data, h, [0, 1], [0, 2]) == (False, [])  # a tie: no evidence either way


@pytest.mark.parametrize("where", [{"e_type": "ET_REL"}, {"relocatable": True}])
def test_objects_and_relocated_sections_are_not_judged(where: dict) -> None:
    data, h = section(2)
    assert run(data, h, [0, 1], **where) == (False, [])


def test_no_symbols_no_finding() -> None:
    data, h = section(2)
    info = SimpleNamespace(e_type="ET_DYN", cfi=SimpleNamespace(symbols=()))
    ctx = SectionContext("f", ".sframe", VMA, data)
    assert check_raw_copy(ctx, h, info) is False  # type: ignore[arg-type]
    assert ctx.findings == []


def test_an_fde_table_cut_short_is_not_judged() -> None:
    data, h = section(4)
    cut = data[:h.fdes_start + 4 * h.fde_size - 1]
    syms = tuple(FuncSymbol(start(data, h, i, True), 1, "f") for i in range(4))
    info = SimpleNamespace(e_type="ET_DYN", cfi=SimpleNamespace(symbols=syms))
    ctx = SectionContext("f", ".sframe", VMA, cut)
    assert check_raw_copy(ctx, h, info) is False  # type: ignore[arg-type]
    assert ctx.findings == []


def test_only_the_first_4096_fdes_are_read() -> None:
    # one start for all: no field-relative start is a stored one
    data, h = section(4097, stride=0)
    assert run(data, h, list(range(4097))) == raw_copy(4096, 4096, 0)
