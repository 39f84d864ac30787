"""The fast path's building blocks (sfcheck/walk), pinned where the equivalence tests cannot
see a change: the pattern and table builders are cached, so a test process that built them
once (any section check) never runs their helpers again. Each test here empties those caches
first and compares the helpers' results with values worked out from the format and the rules'
predicates (tests/mutation.py's walk group)."""

from __future__ import annotations

import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sfcheck.format import constants as C
from sfcheck.format.fre_info_table import INFO
from sfcheck.rules import fre as R
from sfcheck.walk import fde_shapes, fre_patterns
from sfcheck.walk.columns import FdeColumns
from sfcheck.walk.fre_patterns import (
    _cls,
    _fre_shapes,
    _sext,
    _slot_bytes,
    _word,
    cfa_scale_abi,
    pattern_abi,
)

_CACHED = (fre_patterns._cfa_classes, fre_patterns._cfa_word, fre_patterns._slot_word,
           fre_patterns.fre_pattern, fre_patterns.walk_spec, fde_shapes.type_table,
           fde_shapes._verdicts, R.quiet_infos, R.legal_counts)


@pytest.fixture(autouse=True)
def fresh_caches():
    for f in _CACHED:
        f.cache_clear()
    yield
    for f in _CACHED:
        f.cache_clear()


def _info(count: int, size_code: int = 0, base_sp: bool = True, mangled: bool = False) -> int:
    """An fre_info byte (libsframe's SFRAME_V1_FRE_INFO): CFA base bit 0 (1: SP), count in
    bits 1-4, data-word size code in bits 5-6, mangled RA in bit 7."""
    return int(base_sp) | count << 1 | size_code << 5 | int(mangled) << 7


@pytest.mark.parametrize("value,width,expect", [
    (0, 1, 0), (0x7F, 1, 127), (0x80, 1, -128), (0xFF, 1, -1), (0x1FF, 1, -1),
    (0xFF, 2, 255), (0x8000, 2, -0x8000), (0xFFFF, 2, -1), (0x7FFF, 2, 0x7FFF),
    (0x80000000, 4, -(1 << 31)), (0x7FFFFFFF, 4, (1 << 31) - 1), (0x100, 1, 0),
])
def test_sext(value: int, width: int, expect: int) -> None:
    assert _sext(value, width) == expect


@settings(deadline=None)
@given(st.sets(st.integers(0, 255), min_size=1))
def test_cls_matches_exactly_its_bytes(values: set[int]) -> None:
    cls = re.compile(_cls(sorted(values)), re.DOTALL)
    for b in range(256):
        assert (cls.fullmatch(bytes([b])) is not None) == (b in values), b


@pytest.mark.parametrize("values,expect", [
    ([5], b"[\\x05]"),
    ([1, 2, 3, 5], b"[\\x01-\\x03\\x05]"),
    ([0, 2, 1, 2], b"[\\x00-\\x02]"),  # sorted, duplicates merged
    ([0, 0xFE, 0xFF], b"[\\x00\\xfe-\\xff]"),
    (range(256), b"."),
    (range(255), b"[\\x00-\\xfe]"),
])
def test_cls_text(values, expect: bytes) -> None:
    assert _cls(values) == expect


def test_word_places_low_and_top_bytes() -> None:
    assert _word(2, False, b"L", b"T") == b"LT"
    assert _word(2, True, b"L", b"T") == b"TL"
    assert _word(4, False, b"L", b"T") == b"L..T"
    assert _word(4, True, b"L", b"T") == b"T..L"
    with pytest.raises(ValueError, match="single-byte"):
        _word(1, False, b"L", b"T")


@pytest.mark.parametrize("stored", [0, 1, -1, 20, 0x7F])
def test_cfa_scale_abi(stored: int) -> None:
    # s390x stores (CFA offset - 160) / 8: binutils' SFRAME_V2_S390X_CFA_OFFSET_DECODE
    # multiplies by 8 and subtracts the adjustment, SFRAME_S390X_SP_VAL_OFFSET (-160)
    assert cfa_scale_abi(C.ABI_S390X_BE, stored) == stored * 8 + 160
    for abi in (C.ABI_AMD64_LE, C.ABI_AARCH64_LE, C.ABI_AARCH64_BE, 0, 255):
        assert cfa_scale_abi(abi, stored) == stored


def test_pattern_abi_classes() -> None:
    for abi in (C.ABI_S390X_BE, C.ABI_AARCH64_LE, C.ABI_AARCH64_BE):
        assert pattern_abi(abi) == abi
    for abi in (C.ABI_AMD64_LE, 0, 5, 255):
        assert pattern_abi(abi) == C.ABI_AMD64_LE


def test_slot_bytes_are_the_even_ones() -> None:
    assert _slot_bytes() == list(range(0, 256, 2))


@pytest.mark.parametrize("abi", [C.ABI_AMD64_LE, C.ABI_AARCH64_LE, C.ABI_S390X_BE])
@pytest.mark.parametrize("version,fixed", [(1, 0), (2, 1), (3, 0), (3, 2)])
def test_fre_shapes(abi: int, version: int, fixed: int) -> None:
    shapes = _fre_shapes(abi, version, fixed)
    s390x = abi == C.ABI_S390X_BE
    pauth = abi != C.ABI_AMD64_LE and not s390x
    lowest = 1 if version == 1 else 0
    expect = []
    for info in range(256):
        count, code = info >> 1 & 0xF, info >> 5 & 3
        if code == 3 or not lowest <= count < 4 - fixed:
            continue
        if info >> 7 and not pauth:
            continue
        if count * (1, 2, 4)[code] > C.MAX_DATAWORD_BYTES:
            continue
        expect.append((info, (1, 2, 4)[code], count, bool(info & 1), s390x))
    assert shapes == expect
    # the shape of one plain FRE: CFA = SP + 1-byte word, RA and FP words as the header allows
    assert (_info(3 - fixed), 1, 3 - fixed, True, s390x) in shapes


def test_fre_shapes_tuple_fields_follow_info() -> None:
    by_info = {s[0]: s for s in _fre_shapes(C.ABI_AMD64_LE, 3, 1)}
    assert by_info[_info(2, 1, base_sp=False)] == (_info(2, 1, base_sp=False), 2, 2, False,
                                                   False)
    assert by_info[_info(1, 2)] == (_info(1, 2), 4, 1, True, False)
    assert _info(2, 3) not in by_info  # size code 3: fre-size-code's
    assert all(INFO[i].valid for i in by_info)


def test_fdecolumns_repr() -> None:
    assert repr(FdeColumns([(1, 2, 0), (3, 4, 1)])) == "FdeColumns([(1, 2, 0), (3, 4, 1)])"


def test_context_field_properties() -> None:
    """SectionContext's properties are made by _input_field/_state_field while the class is
    created; made again here, they read (and, for the pass state, write) the named part."""
    from sfcheck.walk import context

    ctx = context.SectionContext("f.o", ".sframe", 0x1000, b"\x01\x02", relocatable=True,
                                 fres_walked=True, block_ends=[7])
    for name, value in (("path", "f.o"), ("name", ".sframe"), ("vma", 0x1000),
                        ("data", b"\x01\x02"), ("relocatable", True)):
        prop = context._input_field(name)
        assert prop.fget(ctx) == value
        assert prop.fset is None  # read-only: the input is frozen
        assert name in prop.__doc__
    prop = context._state_field("block_ends")
    assert prop.fget(ctx) == [7]
    prop.fset(ctx, [9, 11])
    assert ctx.pass_state.block_ends == [9, 11]
    assert prop.fget(ctx) == [9, 11]
    assert "block_ends" in prop.__doc__
    walked = context._state_field("fres_walked")
    walked.fset(ctx, False)
    assert ctx.pass_state.fres_walked is False and walked.fget(ctx) is False


def test_fdecolumns_numbering_and_indexing() -> None:
    cols = FdeColumns()
    cols.add(10, 1, 0)
    cols.add(20, 2, 1)
    assert cols.fdes is None  # every FDE so far has its entry
    cols.add(40, 4, 3)  # FDE 2 skipped: the FDE column starts
    assert list(cols.fdes) == [0, 1, 3]
    cols.extend(5, [50, 60], [5, 6])
    assert list(cols) == [(10, 1, 0), (20, 2, 1), (40, 4, 3), (50, 5, 5), (60, 6, 6)]
    assert cols[2] == (40, 4, 3) and cols[-1] == (60, 6, 6)
    assert cols[1:3] == [(20, 2, 1), (40, 4, 3)]
    assert len(cols) == 5
    with pytest.raises(IndexError):
        cols[5]
    plain = FdeColumns([(1, 2, 0), (3, 4, 1), (5, 6, 2)])
    assert plain.fdes is None
    assert plain[-1] == (5, 6, 2) and plain[-3] == (1, 2, 0) and plain[0] == (1, 2, 0)
    plain.extend(3, [7], [8])
    assert plain.fdes is None and plain[3] == (7, 8, 3)


def test_fdecolumns_overflow_to_lists() -> None:
    """A start at 2**63 or more does not fit the "q" array: that column becomes a list
    holding every value, the other stays an array."""
    big = 1 << 63
    cols = FdeColumns([(1, 2, 0)])
    cols.add(big, 3, 1)
    assert isinstance(cols._a, list) and not isinstance(cols._b, list)
    assert list(cols) == [(1, 2, 0), (big, 3, 1)]
    cols = FdeColumns([(1, 2, 0)])
    cols.add(4, big, 1)
    assert isinstance(cols._b, list) and not isinstance(cols._a, list)
    assert list(cols) == [(1, 2, 0), (4, big, 1)]
    cols = FdeColumns([(1, 2, 0)])
    cols.extend(1, [5, big, 7], [6, 8, 9])  # array.extend stops at the value that fails
    assert list(cols) == [(1, 2, 0), (5, 6, 1), (big, 8, 2), (7, 9, 3)]
    cols = FdeColumns([(1, 2, 0)])
    cols.extend(1, [5, 6], [big, 3])
    assert list(cols) == [(1, 2, 0), (5, big, 1), (6, 3, 2)]


def test_fdecolumns_equality() -> None:
    cols = FdeColumns([(1, 2, 0), (3, 4, 2)])
    assert cols == [(1, 2, 0), (3, 4, 2)]
    assert cols != [(1, 2, 0), (3, 4, 1)]
    assert cols != [(1, 2, 0)]
    assert cols != [(1, 2, 0), (3, 4, 2), (5, 6, 3)]
    assert (cols == 5) is False  # not a sequence: NotImplemented, then identity
    assert FdeColumns.__eq__(cols, 5) is NotImplemented


def _sink(**kw):
    from sfcheck.walk.context import SectionContext
    return SectionContext("f", ".sframe", 0, b"", **kw)


def test_sink_cap_count_only_and_count_more() -> None:
    from sfcheck.rules.fde import UNSORTED
    from sfcheck.walk.context import MAX_PER_RULE

    ctx = _sink()
    assert ctx.count_only(UNSORTED) is False  # undecided: emit decides
    for k in range(MAX_PER_RULE - 1):
        ctx.emit(UNSORTED, "m", offset=k, fde=k)
    assert ctx.count_only(UNSORTED) is False  # one more is still kept
    assert ctx.counts[UNSORTED.id] == MAX_PER_RULE - 1
    ctx.emit(UNSORTED, "m", offset=99, fde=49)
    assert ctx.count_only(UNSORTED) is True  # past the cap: counted here, as emit would
    assert ctx.counts[UNSORTED.id] == MAX_PER_RULE + 1
    ctx.count_more(UNSORTED, 4)
    assert ctx.counts[UNSORTED.id] == MAX_PER_RULE + 5
    assert len(ctx.findings) == MAX_PER_RULE
    assert [(f.location.offset, f.location.fde) for f in ctx.findings[-2:]] == [(48, 48),
                                                                                (99, 49)]
    ctx.finish()
    last = ctx.findings[-1]
    assert (last.rule, last.severity, last.location.offset) == (UNSORTED.id,
                                                                UNSORTED.severity, None)
    assert last.message.startswith("5 more findings")


def test_sink_count_only_for_rules_off_or_claimed() -> None:
    from sfcheck.rules.fde import UNSORTED
    from sfcheck.rules.layout import FRE_OVERLAP

    off = _sink(enabled=lambda r: r.id != UNSORTED.id)
    off.emit(UNSORTED, "m", fde=0)
    assert off.findings == [] and off.count_only(UNSORTED) is True
    off.count_more(UNSORTED, 3)
    assert off.counts[UNSORTED.id] == 0
    claimed = _sink(claimed={UNSORTED.id})
    claimed.emit(UNSORTED, "m", fde=0)
    claimed.emit(FRE_OVERLAP, "m", fde=0)
    assert [f.rule for f in claimed.findings] == [FRE_OVERLAP.id]
    assert claimed.count_only(UNSORTED) is True and claimed.count_only(FRE_OVERLAP) is False
    claimed.count_more(UNSORTED, 3)
    assert claimed.counts[UNSORTED.id] == 0


def test_sink_claim_drops_findings_and_counts() -> None:
    from sfcheck.rules.defect import CONCATENATED
    from sfcheck.rules.fde import UNSORTED
    from sfcheck.rules.layout import FRE_OVERLAP

    ctx = _sink()
    ctx.emit(UNSORTED, "m", fde=1)
    ctx.emit(FRE_OVERLAP, "m", fde=2)
    ctx.claim(CONCATENATED, (UNSORTED.id,))
    assert [(f.rule, f.location.fde) for f in ctx.findings] == [(FRE_OVERLAP.id, 2)]
    assert UNSORTED.id not in ctx.counts and ctx.counts[FRE_OVERLAP.id] == 1
    assert ctx.claimed == {UNSORTED.id}
    ctx.emit(UNSORTED, "m", fde=3)  # claimed: dropped from now on
    assert len(ctx.findings) == 1
    off = _sink(enabled=lambda r: r.id != CONCATENATED.id)
    off.emit(UNSORTED, "m", fde=1)
    off.claim(CONCATENATED, (UNSORTED.id,))  # the defect rule is off: it explains nothing
    assert [f.rule for f in off.findings] == [UNSORTED.id] and off.claimed == set()
    assert off.counts[UNSORTED.id] == 1


def test_sink_count_only_with_decisions_shared() -> None:
    """A file's sections share the decisions (`decided`), not the counts: a rule decided in
    an earlier section, never emitted in this one, is below the cap here."""
    from sfcheck.rules.fde import UNSORTED

    first = _sink()
    first.emit(UNSORTED, "m", fde=0)
    second = _sink(decided=first.decided)
    assert second.count_only(UNSORTED) is False
    assert UNSORTED.id not in second.counts


# ---------------------------------------------------------------------------
# fast.py's C-level helpers, against plain loops.

@settings(deadline=None)
@given(st.sampled_from([1, 2, 4]), st.data())
def test_increasing_pairs_counts_like_a_loop(asz: int, data) -> None:
    from array import array

    from sfcheck.format.fde_table import UCODE
    from sfcheck.walk.fast import increasing_pairs

    top = (1 << (8 * asz)) - 1
    vals = data.draw(st.lists(st.one_of(st.integers(0, top), st.sampled_from([0, 1, top,
                                                                              top - 1])),
                              max_size=40))
    seq = bytes(vals) if asz == 1 else array(UCODE[asz], vals)
    expect = sum(a < b for a, b in zip(vals, vals[1:], strict=False))
    assert increasing_pairs(seq, asz) == expect


def test_increasing_pairs_edges() -> None:
    from array import array

    from sfcheck.walk.fast import increasing_pairs

    assert increasing_pairs(b"", 1) == 0 and increasing_pairs(b"\x05", 1) == 0
    assert increasing_pairs(b"\x00\xff", 1) == 1 and increasing_pairs(b"\xff\x00", 1) == 0
    assert increasing_pairs(b"\x01\x01\x02", 1) == 1
    assert increasing_pairs(array("I", [0, 0xFFFFFFFF, 0xFFFFFFFE, 0xFFFFFFFF]), 4) == 2
    assert increasing_pairs(array("H", [1, 2, 3, 4, 5]), 2) == 4


def test_mark_helpers_or_flags() -> None:
    from sfcheck.walk.fast import _mark, _mark_bytes

    bad = bytearray(b"\x00\x01\x00\x00\x01")
    _mark_bytes(bad, b"\x01\x00\x00\x01\x00")
    assert bad == bytearray(b"\x01\x01\x00\x01\x01")
    _mark(bad, [False, False, True, False, False])
    assert bad == bytearray(b"\x01\x01\x01\x01\x01")
    one = bytearray(1)
    _mark_bytes(one, b"\x01")
    assert one == bytearray(b"\x01")


@pytest.mark.parametrize("big", [False, True])
def test_starts_reads_each_width(big: bool) -> None:
    from sfcheck.walk.fast import _starts

    order = "big" if big else "little"
    assert _starts(b"\x03\x01", 1, big) == b"\x03\x01"
    assert list(_starts((0x102).to_bytes(2, order) + (7).to_bytes(2, order), 2, big)) == [
        0x102, 7]
    assert list(_starts((0x1020304).to_bytes(4, order), 4, big)) == [0x1020304]


def test_fast_fre_type_and_table() -> None:
    from sfcheck.walk.fde_shapes import fast_fre_type, type_table

    table = type_table()
    assert len(table) == 256
    for info in range(256):
        t = info & C.FDE_INFO_FRE_TYPE
        expect = t if not info & C.FDE_INFO_PCMASK and t <= C.FRE_TYPE_ADDR4 else 255
        assert fast_fre_type(info) == expect == table[info], hex(info)
    assert fast_fre_type(0) == 0 and fast_fre_type(2) == 2 and fast_fre_type(3) == 255
    assert fast_fre_type(C.FDE_INFO_PCMASK) == 255


_HEADERS: dict = {}


def _header(version: int):
    if version in _HEADERS:
        return _HEADERS[version]
    from sfcheck.format.decode import decode_header

    from synth import encode_tiled, plan

    h = _HEADERS[version] = decode_header(encode_tiled(plan(20, version, seed=3)))
    return h


@settings(deadline=None, max_examples=30)
@given(st.sampled_from([1, 2, 3]), st.data())
def test_noisy_fdes_is_the_verdict_of_each_shape(version: int, data) -> None:
    """noisy_fdes' layers, ORed, flag exactly the FDEs whose shape _verdict (check_fde on a
    probe) sends to the reference path, whichever shortcut it takes."""
    from sfcheck.rules import fde as fde_rules
    from sfcheck.walk.fde_shapes import _verdict, noisy_fdes, type_table

    h = _header(version)
    n = data.draw(st.integers(1, 24))
    pool = data.draw(st.lists(st.integers(0, 255), min_size=1, max_size=3))
    infos = bytes(data.draw(st.lists(st.sampled_from(pool + [0, 1, 2]), min_size=n,
                                     max_size=n)))
    info2s = bytes(data.draw(st.lists(st.sampled_from([0, 0, 1, 2]), min_size=n,
                                      max_size=n))) if version == 3 else bytes(n)
    reps = bytes(data.draw(st.lists(st.sampled_from([0, 0, 8, 16]), min_size=n,
                                    max_size=n))) if version > 1 else bytes(n)
    pads = data.draw(st.lists(st.sampled_from([0, 0, 1]), min_size=n, max_size=n)) \
        if version == 2 else bytes(n)
    counts = data.draw(st.lists(st.sampled_from([0, 1, 1, 2, 300]), min_size=n, max_size=n))
    sizes = data.draw(st.lists(st.sampled_from([0, 1, 16, 100, 5000, 70000]), min_size=n,
                               max_size=n))
    columns = {"info": infos, "info2": info2s, "rep_size": reps, "padding": pads,
               "num_fres": counts}
    layers = noisy_fdes(h, dict(columns), sizes, infos.translate(type_table()))
    got = [int(any(layer[k] for layer in layers)) for k in range(n)]
    expect = [int(_verdict(h, (infos[k], info2s[k], reps[k], pads[k],
                               fde_rules.size_class(sizes[k]), counts[k])))
              for k in range(n)]
    assert got == expect
    assert all(len(layer) == n for layer in layers)


@pytest.mark.parametrize("version", [2, 3])
def test_noisy_fdes_size_class_from_the_info_byte(version: int) -> None:
    """Every FDE of one FRE type in one size class: the class follows from the info byte,
    including for bytes the patterns cannot walk (PCMASK, FRE type 3), which are flagged."""
    from sfcheck.walk.fde_shapes import noisy_fdes, type_table

    h = _header(version)
    infos = bytes([0x00, C.FDE_INFO_PCMASK, 0x03, 0x00, 0x00])
    n = len(infos)
    columns = {"info": infos, "info2": bytes(n), "rep_size": bytes(n), "padding": bytes(n),
               "num_fres": [1, 1, 1, 1, 1]}
    layers = noisy_fdes(h, columns, [100] * n, infos.translate(type_table()))
    assert [int(any(layer[k] for layer in layers)) for k in range(n)] == [0, 1, 1, 0, 0]
