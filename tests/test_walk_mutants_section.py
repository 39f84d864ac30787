"""section._walk_fdes' choices that leave the findings alone by design (the fast path gives the
reference path's findings): which path a table of FAST_MIN FDEs and one fewer takes, and the
block ends it hands to the cross-check when FRE blocks lie out of table order (gcc's .cold
parts). Each slip would only cost time, so the choice itself is asserted (tests/mutation.py's
walk group)."""

from __future__ import annotations

import struct

import pytest

from sfcheck.format import FDE, build_section, encode, fde_info, make_fre
from sfcheck.format import constants as C
from sfcheck.format.decode import Decoder
from sfcheck.format.fde_table import block_ends
from sfcheck.result import Location, Severity
from sfcheck.rules import layout as layout_rules
from sfcheck.walk import section
from sfcheck.walk.context import SectionContext
from sfcheck.walk.section import FAST_MIN, check_section

from strategies import permute_blocks


def _data(n: int) -> bytes:
    fdes = [FDE(start=0x1000 + 0x40 * k, size=0x20, info=fde_info(C.FRE_TYPE_ADDR1),
                fres=tuple(make_fre(4 * j, (8,)) for j in range(1 + k % 3))) for k in range(n)]
    return encode(build_section(C.VERSION_2, C.ABI_AMD64_LE, fdes))


@pytest.mark.parametrize(("n", "fast", "tables"), [
    (FAST_MIN - 1, True, 0), (FAST_MIN, True, 1), (FAST_MIN + 1, True, 1),
    (FAST_MIN, False, 0), (FAST_MIN - 1, False, 0),
    (FAST_MIN, None, 1), (section.NO_GC_MIN + 1, None, 1)])
def test_fast_path_from_fast_min_fdes(monkeypatch, n: int, fast: bool | None,
                                      tables: int) -> None:
    """Below FAST_MIN FDEs, or with fast=False, the reference path alone: no fast.Table.
    Unless told (fast None), check_section takes the fast path, with the garbage collector
    paused (above NO_GC_MIN FDEs) or not."""
    made = []
    real = section.Table

    def counting(*args, **kwargs):
        made.append(args[1:3])
        return real(*args, **kwargs)

    monkeypatch.setattr(section, "Table", counting)
    ctx = SectionContext("x", ".sframe", 0, _data(n))
    if fast is None:
        check_section(ctx)
    else:
        check_section(ctx, fast=fast)
    ctx.finish()
    assert ctx.findings == []
    assert made == [(0, n)] * tables


def _record_bad(monkeypatch) -> list[bytes]:
    """The `bad` flags of each fast.Table the pass builds, in order."""
    bads: list[bytes] = []
    real = section.Table

    def recording(*args, **kwargs):
        tab = real(*args, **kwargs)
        bads.append(bytes(tab.bad))
        return tab

    monkeypatch.setattr(section, "Table", recording)
    return bads


@pytest.mark.parametrize("fast", [True, False])
def test_block_ends_out_of_table_order_reach_the_cross_check(monkeypatch, fast: bool) -> None:
    """Blocks shuffled in the FRE data: the pass keeps fde_table.block_ends for the
    cross-check's walk of the same bytes (None would send those blocks to its decoder), and
    hands them to fast.Table, which then accepts every FDE (none goes to _exact_fde). The
    overlap check takes the next block starts too, so it need not sort the blocks."""
    bads = _record_bad(monkeypatch)

    def no_sort(self) -> list:
        raise AssertionError("the blocks were sorted: next_start not handed on")

    monkeypatch.setattr(layout_rules.Blocks, "tuples", no_sort)
    data = permute_blocks(_data(FAST_MIN + 4), seed=3)
    assert data is not None
    dec = Decoder(data)
    want = block_ends(data, dec.header, dec.header.num_fdes, dec.fre_limit)
    assert want is not None
    ctx = SectionContext("x", ".sframe", 0, data)
    check_section(ctx, fast=fast)
    ctx.finish()
    assert ctx.findings == []
    assert ctx.block_ends is not None and list(ctx.block_ends) == list(want)
    assert bads == ([bytes(FAST_MIN + 4)] if fast else [])


def _findings(data: bytes, fast: bool) -> list[tuple]:
    ctx = SectionContext("x", ".sframe", 0, data)
    check_section(ctx, fast=fast)
    ctx.finish()
    return [(f.rule, f.severity, f.message, f.location) for f in ctx.findings]


def _starts(n: int) -> list[int]:
    return [0x1000 + 0x40 * k for k in range(n)]


def _table(starts: list[int], version: int = C.VERSION_2, no_fres: int = -1,
           flags: int | None = None) -> bytearray:
    """An amd64 section of 0x20-byte functions at `starts`, one FRE each but FDE `no_fres`."""
    fdes = [FDE(start=s, size=0x20, info=fde_info(C.FRE_TYPE_ADDR1),
                fres=() if k == no_fres else (make_fre(0, (8,)),)) for k, s in enumerate(starts)]
    return bytearray(encode(build_section(version, C.ABI_AMD64_LE, fdes, flags=flags)))


def _aliased(fres: int) -> bytes:
    """FAST_MIN FDEs of one 3-byte FRE each (fre_len 48); FDE 14 re-read from FRE 0 with
    `fres` FREs: it is walked as 3 * fres bytes, so before FDE 15 the walk is 3 * fres - 3
    bytes past the sub-section."""
    raw = _table(_starts(FAST_MIN))
    h = Decoder(bytes(raw)).header
    struct.pack_into("<II", raw, h.fdes_start + (FAST_MIN - 2) * h.fde_size + 8, 0, fres)
    return bytes(raw)


@pytest.mark.parametrize("fres", [3, 4])
def test_budget_tested_before_a_run_of_one_fde(fres: int) -> None:
    """FDE 15, a clean run of one after the aliasing FDE 14 (reference path), is over the
    budget by 3 bytes (fres 3: the boundary, the last block's length) or 6: the walk stops
    there on the fast path as on the reference one."""
    over = ("layout-fre-overlap", Severity.ERROR,
            "FRE blocks up to FDE 15 use more than the 0x30-byte FRE sub-section; FREs of "
            "later FDEs not walked", Location("x", ".sframe", offset=393, fde=15))
    reference = _findings(_aliased(fres), fast=False)
    assert over in reference
    # the walk is incomplete: no totals (layout-num-fres, layout-fre-len) after it
    assert [(r, loc.fde, loc.fre) for r, _s, _m, loc in reference] == [
        *(("fre-start-order", 14, k) for k in range(1, fres)),
        ("layout-fre-overlap", 15, None), ("layout-fre-overlap", 14, None),
        ("layout-fre-overlap", 1, None)]
    assert _findings(_aliased(fres), fast=True) == reference


def test_first_fde_sent_to_the_reference_path_has_no_previous_pc() -> None:
    """FDE 0 with two FREs at 0 (fre-start-order) in a sorted table on the fast path: it
    goes to _exact_fde first, with no previous FDE to be below (no fde-unsorted)."""
    fdes = [FDE(start=0x1000 + 0x40 * k, size=0x20, info=fde_info(C.FRE_TYPE_ADDR1),
                fres=(make_fre(0, (8,)),) * (2 if k == 0 else 1)) for k in range(FAST_MIN + 1)]
    data = encode(build_section(C.VERSION_2, C.ABI_AMD64_LE, fdes))
    reference = _findings(data, fast=False)
    assert reference == [("fre-start-order", Severity.ERROR, "start 0x0 after 0x0",
                          Location("x", ".sframe", offset=371, fde=0, pc=0x1000, fre=1,
                                   fre_pc=0x1000))]
    assert _findings(data, fast=True) == reference


@pytest.mark.parametrize("at", [8, 9])
def test_unsorted_fde_at_a_chunk_start(monkeypatch, at: int) -> None:
    """CHUNK 8: FDE `at` starts between FDEs at-2 and at-1 (fde-unsorted). At 8, the first
    of the second chunk, only the first chunk's last PC shows it; at 9, within the chunk."""
    monkeypatch.setattr(section, "CHUNK", 8)
    starts = _starts(3 * 8)
    starts[at] = starts[at - 1] - 0x20
    data = bytes(_table(starts))
    pc, prev = starts[at], starts[at - 1]
    assert _findings(data, fast=False) == [
        ("fde-unsorted", Severity.ERROR,
         f"function start {pc:#x} is below the previous FDE's {prev:#x}",
         Location("x", ".sframe", offset=28 + 20 * at, fde=at, pc=pc))]
    assert _findings(data, fast=True) == _findings(data, fast=False)


@pytest.mark.parametrize("flags", [0, C.F_FDE_SORTED])
def test_sort_check_only_for_a_sorted_table(monkeypatch, flags: int) -> None:
    """FDEs 5 and 6 swapped: without the sorted flag no fde-unsorted, and fast.Table accepts
    every FDE; with it, FDE 6 goes to _exact_fde, which reports it."""
    bads = _record_bad(monkeypatch)
    exact = []
    real_exact = section._exact_fde

    def exact_recording(ctx, h, dec, i, walk):
        exact.append(i)
        real_exact(ctx, h, dec, i, walk)

    monkeypatch.setattr(section, "_exact_fde", exact_recording)
    starts = _starts(FAST_MIN)
    starts[5], starts[6] = starts[6], starts[5]
    data = bytes(_table(starts, flags=flags))
    found = _findings(data, fast=True)
    if flags:
        assert found == [("fde-unsorted", Severity.ERROR,
                          "function start 0x1140 is below the previous FDE's 0x1180",
                          Location("x", ".sframe", offset=28 + 20 * 6, fde=6, pc=0x1140))]
        assert bads == [bytes(6) + b"\x01" + bytes(FAST_MIN - 7)]
        # the runs before and after FDE 6 are within the budget: booked in bulk
        assert exact == [6]
    else:
        assert found == []
        assert bads == [bytes(FAST_MIN)]
        assert exact == []


def test_fre_size_code_leaves_the_walk_incomplete() -> None:
    """FDE 1's FRE with size code 3 (fre-size-code): its block is not walked, so the FRE
    bytes are not totalled against sfh_fre_len (no layout-fre-len for the 3 bytes left)."""
    raw = _table(_starts(3))
    raw[Decoder(bytes(raw)).header.fres_start + 3 + 1] |= 0x60
    assert _findings(bytes(raw), fast=False) == [
        ("fre-size-code", Severity.ERROR, "FDE[1]: FRE 0 has data-word size code 3 (invalid)",
         Location("x", ".sframe", offset=92, fde=1, pc=0x1040, fre=0))]


def _overlapping(n: int, noisy: int, clash: int, kind: str) -> bytes:
    """n FDEs of one FRE, FDE `noisy` with none (the reference path), and FDE `clash` + 1
    clashing with FDE `clash`: its function starts inside FDE clash's ("range"), or FDE
    clash claims two FREs, the second FDE clash + 1's ("block")."""
    raw = _table(_starts(n), no_fres=noisy)
    h = Decoder(bytes(raw)).header
    if kind == "range":
        at = h.fdes_start + (clash + 1) * h.fde_size
        struct.pack_into("<i", raw, at, struct.unpack_from("<i", raw, at)[0] - 0x30)
    else:
        struct.pack_into("<I", raw, h.fdes_start + clash * h.fde_size + 12, 2)
    return bytes(raw)


@pytest.mark.parametrize(("kind", "rule"), [("range", "fde-overlap"),
                                            ("block", "layout-fre-overlap")])
@pytest.mark.parametrize(("chunk", "noisy", "clash"), [
    (section.CHUNK, 2, 9), (8, 9, 12), (8, 3, 13)])
def test_clean_runs_booked_at_their_fde_indices(monkeypatch, kind: str, rule: str, chunk: int,
                                                noisy: int, clash: int) -> None:
    """A clean run after a noisy FDE, in the first chunk or a later one (CHUNK 8): its
    function ranges and FRE blocks are booked from FDE a + i on, so the overlap found
    afterwards names the FDE the reference path names."""
    monkeypatch.setattr(section, "CHUNK", chunk)
    data = _overlapping(FAST_MIN + 4, noisy, clash, kind)
    reference = _findings(data, fast=False)
    assert (rule, clash + 1) in {(r, loc.fde) for r, _s, _m, loc in reference}
    bads = _record_bad(monkeypatch)
    assert _findings(data, fast=True) == reference
    # FDE clash + 1 was booked in bulk, in a run after an FDE of the reference path
    assert bads[noisy // chunk][noisy % chunk] == 1
    assert bads[(clash + 1) // chunk][(clash + 1) % chunk] == 0


def _attr_outside(n: int) -> tuple[bytes, bytes, int]:
    """n v3 FDEs, and the same with FDE 1's 5-byte attribute record pointed 2 bytes before
    the FRE sub-section's end; and where FDE 1's fre_off field is."""
    clean = _table(_starts(n), version=C.VERSION_3)
    h = Decoder(bytes(clean)).header
    field = h.fdes_start + h.fde_size + 12
    broken = bytearray(clean)
    struct.pack_into("<I", broken, field, h.fre_len - 2)
    return bytes(clean), bytes(broken), field


@pytest.mark.parametrize("fast", [True, False])
def test_v3_attribute_record_outside_the_fre_sub_section(fast: bool) -> None:
    """FDE 1 of a v3 section points its 5-byte attribute record 2 bytes before the FRE
    sub-section's end: _exact_fde cannot decode the FDE and says why, at FDE 1's fre_off
    field; the walk is then incomplete (no layout-num-fres or layout-fre-len totals)."""
    _clean, broken, field = _attr_outside(3)
    assert _findings(broken, fast=fast) == [
        ("layout-fde-fres-bounds", Severity.ERROR, "FDE[1]: attribute record at FRE offset "
         "0x16 does not fit in the 0x18-byte FRE sub-section",
         Location("x", ".sframe", offset=field, fde=1))]


@pytest.mark.parametrize("n", [3, FAST_MIN + 1])
@pytest.mark.parametrize("fast", [True, False])
def test_object_starts_are_field_relative_without_the_flag(n: int, fast: bool) -> None:
    """A relocated .o's FDE starts are PC-relative whatever the flags say (gas emits
    R_*_PC32 relocations on them: binutils ld/32666), here a v2 table without
    SFRAME_F_FDE_FUNC_START_PCREL: each FDE's function starts at its field's offset plus
    the stored value, on the reference path (the small table, FDE 1 with no FREs) and in
    the fast path's columns."""
    data = bytes(_table(_starts(n), no_fres=1))
    h = Decoder(data).header
    assert not h.pcrel
    field = [h.fdes_start + k * h.fde_size for k in range(n)]
    ctx = SectionContext("x.o", ".sframe", 0, data, relocatable=True)
    check_section(ctx, fast=fast)
    ctx.finish()
    assert list(ctx.ranges) == [(field[k] + 0x1000 + 0x40 * k, 0x20, k) for k in range(n)]
    [no_fres] = [f for f in ctx.findings if f.rule == "fde-no-fres"]
    assert (no_fres.location.fde, no_fres.location.pc) == (1, field[1] + 0x1040)


@pytest.mark.parametrize("relocatable", [False, True])
def test_function_overlap_not_checked_in_objects(relocatable: bool) -> None:
    """FDE 10's function overlaps FDE 9's, whether its start is read as absolute or as
    field-relative (a .o's): fde-overlap in a linked file; in a .o every text section
    starts at 0, so function ranges from different sections coincide and the check does
    not apply."""
    raw = bytearray(_overlapping(FAST_MIN + 4, 2, 9, "range"))
    h = Decoder(bytes(raw)).header
    at9 = h.fdes_start + 9 * h.fde_size
    (start9,) = struct.unpack_from("<i", raw, at9)
    struct.pack_into("<i", raw, at9 + h.fde_size, start9 + 0x10 - h.fde_size)
    data = bytes(raw)
    for field_relative in (False, True):
        pcs = [h.func_start(i, start, field_relative=field_relative)
               for i, start in ((9, start9), (10, start9 + 0x10 - h.fde_size))]
        assert abs(pcs[1] - pcs[0]) < 0x20  # overlapping 0x20-byte functions
    ctx = SectionContext("x", ".sframe", 0, data, relocatable=relocatable)
    check_section(ctx)
    ctx.finish()
    assert ("fde-overlap" in {f.rule for f in ctx.findings}) is not relocatable


@pytest.mark.parametrize("fast", [True, False])
def test_fres_walked_only_after_a_complete_walk(fast: bool) -> None:
    """The pass tells the cross-check it may reuse its walk (fres_walked) after walking every
    FDE's FREs, and not when an FDE could not be decoded (the v3 attribute record case)."""
    clean, broken, _field = _attr_outside(FAST_MIN + 1)
    for raw, walked in ((clean, True), (broken, False)):
        ctx = SectionContext("x", ".sframe", 0, raw)
        check_section(ctx, fast=fast)
        assert ctx.fres_walked is walked



@pytest.mark.parametrize("fast", [True, False])
def test_an_fre_type_past_addr4_is_fde_fre_type_alone(fast: bool) -> None:
    """FDE 1 says FRE type 3 (v2: info byte at 16 in a 20-byte FDE after the 28-byte header):
    its FREs cannot be read, and fde-fre-type says so; the decoder's error on field "info" is
    not also a layout-fde-fres-bounds (the mutation run's _exact_fde 134/135 compared the
    field with "XXinfoXX"/"INFO", hidden then as message text)."""
    data = bytearray(_data(3))
    info = 28 + 20 * 1 + 16
    data[info] = (data[info] & ~C.FDE_INFO_FRE_TYPE) | 3
    ctx = SectionContext("x", ".sframe", 0, bytes(data))
    check_section(ctx, fast=fast)
    ctx.finish()
    assert [(f.rule, f.severity, f.message, f.location.fde) for f in ctx.findings] == [
        ("fde-fre-type", Severity.ERROR, "FRE type 3", 1)]
