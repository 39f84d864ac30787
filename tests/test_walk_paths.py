"""Each order and bounds rule lives in one function (rules/fre.py, rules/fde.py,
format/bounds.py); the fast walks restate some of them for whole tables (walk/fast.py's
vectorised forms, walk/_frewalk.c, format/fre_blocks.py's tokens). Here one helper per rule
runs every case through every path -- the rule's function, the reference walk, the regex
fast walk and the C fast walk -- over arbitrary sequences, so a path that drifts from the
function fails. The C walk is left out only when it was not built (no compiler): then
test_c_walk_built says so, never a silent skip."""

from __future__ import annotations

import contextlib
import shutil
import struct
import subprocess
import sys
import sysconfig
from array import array
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sfcheck.errors import DecodeError
from sfcheck.format import constants as C
from sfcheck.format.bounds import (
    block_starts_within,
    block_within,
    blocks_outside,
    fres_fit,
    over_budget,
)
from sfcheck.format.decode import Decoder
from sfcheck.format.encode import encode
from sfcheck.format.fde_table import UCODE
from sfcheck.format.fre_blocks import FreBlocks
from sfcheck.format.layout import build_section, fre_size
from sfcheck.format.model import FDE, FRE, Header, fde_info, make_fre
from sfcheck.rules import fde as fde_rules
from sfcheck.rules import fre as fre_rules
from sfcheck.rules import layout as layout_rules
from sfcheck.walk import fast
from sfcheck.walk.context import SectionContext
from sfcheck.walk.fre_patterns import walk_spec
from sfcheck.walk.section import check_section

try:
    from sfcheck.walk import _frewalk
except ImportError:  # the optional C walk was not built: its path is left out
    _frewalk = None

START_RULES = {fre_rules.START_ORDER.id, fre_rules.FIRST_START.id, fre_rules.START_BEYOND.id,
               fre_rules.FRE_START_AT_SIZE.id}
HEADER = Header(C.VERSION_2, C.F_FDE_SORTED, C.ABI_AMD64_LE, 0, -8, 1, 0, 0, 0, 0, False)
QUIET = make_fre(0, (8,))  # CFA = SP + 8: no FRE rule objects to its info byte or word


class _Probe:
    """A context that notes the rule IDs a check emits under."""

    def __init__(self) -> None:
        self.rules: set[str] = set()

    def emit(self, rule, *args: object, **where: object) -> None:
        self.rules.add(rule.id)

    emit_as = emit


def start_verdicts(starts: list[int], size: int, fre_type: int) -> dict[str, bool]:
    """Whether each path accepts these FRE starts of one PCINC FDE (no start rule fires):
    fre.starts_ok, the reference check (check_fres), the regex walk and the C walk."""
    asz = C.FRE_ADDR_SIZE[fre_type]
    block = b"".join(s.to_bytes(asz, "little") + bytes([QUIET.info]) + bytes(QUIET.words)
                     for s in starts)
    probe = _Probe()
    fres = [FRE(s, QUIET.info, QUIET.words, k * (asz + 2)) for k, s in enumerate(starts)]
    fde = FDE(0, size, fde_info(fre_type), num_fres=len(starts))
    fre_rules.check_fres(probe, HEADER, fde, fres, 0x1000, {})
    out = {"function": fre_rules.starts_ok(starts, size),
           "reference": not probe.rules & START_RULES}
    fixed = fre_rules.fixed_words(HEADER)
    columns = (block, [0], [len(block)], bytes([fre_type]), [len(starts)], [size])
    bad = bytearray(1)
    fast.regex_verdicts(*columns, bad, C.ABI_AMD64_LE, C.VERSION_2, False, fixed)
    out["regex"] = not bad[0]
    if _frewalk is not None:
        bad = bytearray(1)
        _frewalk.verdicts(*columns, bad, walk_spec(C.ABI_AMD64_LE, C.VERSION_2, False, fixed))
        out["c"] = not bad[0]
    return out


@st.composite
def start_cases(draw) -> tuple[list[int], int, int]:
    fre_type = draw(st.sampled_from((C.FRE_TYPE_ADDR1, C.FRE_TYPE_ADDR2, C.FRE_TYPE_ADDR4)))
    top = (1 << 8 * C.FRE_ADDR_SIZE[fre_type]) - 1
    near = st.integers(0, 12)  # small values: equal and adjacent starts are common
    value = st.one_of(near, st.integers(0, top))
    starts = draw(st.lists(value, max_size=6))
    if draw(st.booleans()):  # a well-formed run: 0 first, increasing
        starts = sorted(set([0, *starts]))
    return starts, draw(st.one_of(near, st.integers(0, top + 2))), fre_type


@settings(max_examples=400, deadline=None)
@given(start_cases())
def test_fre_start_rules_agree_on_every_path(case) -> None:
    starts, size, fre_type = case
    got = start_verdicts(starts, size, fre_type)
    fast_paths = {k: v for k, v in got.items() if k != "reference"}
    assert len(set(fast_paths.values())) == 1, got
    if size or starts != [0]:  # a size-0 function's one row at 0: the fast walks leave it
        assert got["reference"] == got["function"], got
    else:
        assert got["reference"] and not got["function"]


def test_start_helper_sees_each_rule() -> None:
    """The helper's cases do reach each rule (a helper that accepted everything would pass
    the property above)."""
    for starts, size in (([0, 0], 9), ([1], 9), ([0, 9], 9), ([0, 10], 9), ([0, 4, 2], 9)):
        got = start_verdicts(starts, size, C.FRE_TYPE_ADDR1)
        assert not any(got.values()), (starts, size, got)
    assert all(start_verdicts([0, 3, 8], 9, C.FRE_TYPE_ADDR2).values())


@given(st.sampled_from((1, 2, 4)).flatmap(
    lambda asz: st.tuples(st.just(asz), st.lists(st.integers(0, (1 << 8 * asz) - 1)))))
def test_increasing_pairs_counts_pairs_in_order(case) -> None:
    """walk/fast.increasing_pairs (big-integer lanes) counts the adjacent pairs that
    fre.start_out_of_order passes."""
    asz, vals = case
    packed = bytes(vals) if asz == 1 else array(UCODE[asz], vals)
    want = sum(not fre_rules.start_out_of_order(a, b)
               for a, b in zip(vals, vals[1:], strict=False))
    assert fast.increasing_pairs(packed, asz) == want


def section_with_starts(pcs: list[int]) -> bytes:
    """A sorted-flag v2 section whose FDEs start at `pcs` (in this order), one quiet FRE
    each: the only rule the starts can trip is fde-unsorted (and fde-overlap)."""
    fdes = [FDE(pc, 4, fde_info(C.FRE_TYPE_ADDR1), (make_fre(0, (8,)),)) for pc in pcs]
    return encode(build_section(C.VERSION_2, C.ABI_AMD64_LE, fdes, flags=C.F_FDE_SORTED))


def unsorted_findings(pcs: list[int], fast_walk: bool, frewalk: object) -> list[str]:
    saved = fast.FREWALK
    fast.FREWALK = frewalk
    try:
        ctx = SectionContext("x", ".sframe", 0, section_with_starts(pcs))
        check_section(ctx, fast=fast_walk)
    finally:
        fast.FREWALK = saved
    return [f.text() for f in ctx.findings if f.rule == fde_rules.UNSORTED.id]


@settings(max_examples=60, deadline=None)
@given(st.lists(st.integers(0, 40).map(lambda k: 0x1000 + 8 * k), min_size=17, max_size=40))
def test_fde_unsorted_agrees_on_every_path(pcs) -> None:
    """fde-unsorted from fde.out_of_order, the reference walk and both fast walks (17 FDEs
    or more: below walk/section.FAST_MIN the fast path is not taken)."""
    first = next((k for k in range(1, len(pcs)) if fde_rules.out_of_order(pcs[k - 1], pcs[k])),
                 None)
    paths = [unsorted_findings(pcs, False, None), unsorted_findings(pcs, True, None)]
    if _frewalk is not None:
        paths.append(unsorted_findings(pcs, True, _frewalk))
    assert all(p == paths[0] for p in paths), paths
    # Reported once per section, at the first FDE below its predecessor.
    assert len(paths[0]) == (first is not None)
    if first is not None:
        assert f"FDE {first}" in paths[0][0] or f"{pcs[first]:#x}" in paths[0][0]


def count_section(words: list[tuple[int, ...]], count: int, fre_type: int, tail: bytes) -> bytes:
    """A v2 section of one FDE whose block is quiet FREs with these data words (starts 0, 1,
    ...), then `tail` inside the FRE sub-section, with num_fres set to `count`."""
    fres = tuple(make_fre(k, w) for k, w in enumerate(words))
    fde = FDE(0x1000, 0x40, fde_info(fre_type), fres)
    data = bytearray(encode(build_section(C.VERSION_2, C.ABI_AMD64_LE, [fde])))
    fdes_start = C.HEADER_SIZE
    fre_len = struct.unpack_from("<I", data, 0x10)[0]
    struct.pack_into("<I", data, fdes_start + 12, count)  # sfde_func_num_fres
    struct.pack_into("<I", data, 0x10, fre_len + len(tail))  # sfh_fre_len
    return bytes(data + tail)


def count_verdicts(data: bytes, fre_type: int) -> dict[str, object]:
    """What each path makes of the one FDE's FRE count: bounds.fres_fit over the FRE data
    left ("function"); where the decoder's read of num_fres FREs ends, or the field of its
    DecodeError ("reference"); whether the reference walk reports the count as
    layout-fde-fres-bounds ("walk"); and whether each fast walk takes the block (the regex
    and C walks over [first, FRE data end), as walk/fast.Table gives a last block, and
    fre_blocks' tokens)."""
    dec = Decoder(data)
    h = dec.header
    first, limit = h.fres_start, dec.fre_limit
    count = dec.fde(0, with_fres=False).num_fres
    asz = C.FRE_ADDR_SIZE[fre_type]
    out: dict[str, object] = {"function": fres_fit(count, asz, first, limit)}
    try:
        fres = list(dec.iter_fres(0, fre_type, count, first))
        out["reference"] = fres[-1].offset + fre_size(fres[-1], fre_type) if fres else first
    except DecodeError as exc:
        out["reference"] = exc.field
    ctx = SectionContext("x", ".sframe", 0, data)
    check_section(ctx, fast=False)
    out["walk"] = any(f.rule == layout_rules.FDE_FRES_BOUNDS.id and "need at least" in f.message
                      for f in ctx.findings)
    fixed = fre_rules.fixed_words(h)
    columns = (data, [first], [limit], bytes([fre_type]), [count], [0x40])
    bad = bytearray(1)
    fast.regex_verdicts(*columns, bad, C.ABI_AMD64_LE, C.VERSION_2, False, fixed)
    out["regex"] = not bad[0]
    if _frewalk is not None:
        bad = bytearray(1)
        _frewalk.verdicts(*columns, bad, walk_spec(C.ABI_AMD64_LE, C.VERSION_2, False, fixed))
        out["c"] = not bad[0]
    taken: list[int] = []
    with contextlib.suppress(DecodeError):  # the decoder's error: the block not taken
        FreBlocks(dec).run(0, 1, lambda i, *rest: taken.append(i), lambda i, fde: None)
    out["tokens"] = bool(taken)
    return out


FAST_WALKS = ("regex", "c", "tokens")
QUIET_WORDS = st.sampled_from([(8,), (16, -16)])  # CFA = SP + 8; CFA = SP + 16, FP at -16


@st.composite
def count_cases(draw) -> tuple[list[tuple[int, ...]], int, int, bytes]:
    fre_type = draw(st.sampled_from((C.FRE_TYPE_ADDR1, C.FRE_TYPE_ADDR2, C.FRE_TYPE_ADDR4)))
    words = draw(st.lists(QUIET_WORDS, max_size=5))
    k = len(words)
    count = draw(st.one_of(st.just(k), st.integers(0, k + 3), st.integers(0, (1 << 32) - 1)))
    asz = C.FRE_ADDR_SIZE[fre_type]
    one_more = k.to_bytes(asz, "little") + bytes([QUIET.info]) + bytes(QUIET.words)
    tail = draw(st.one_of(st.just(b""), st.just(one_more), st.binary(max_size=8)))
    return words, count, fre_type, tail


@settings(max_examples=300, deadline=None)
@given(count_cases())
def test_fre_count_agrees_on_every_path(case) -> None:
    """The FRE count (num_fres against the FRE bytes) from bounds.fres_fit: the decoder and
    the reference walk reject exactly the counts it rejects, and a fast walk takes a block
    only when the count fits it and the decoder, reading that many FREs, ends exactly at the
    block's end (the fast walks' own test: the block splits into exactly num_fres FREs)."""
    words, count, fre_type, tail = case
    data = count_section(words, count, fre_type, tail)
    got = count_verdicts(data, fre_type)
    limit = len(data)
    assert (got["reference"] == "num_fres") == (not got["function"]), got
    assert got["walk"] == (not got["function"]), got
    for path in FAST_WALKS:
        if got.get(path):
            assert got["function"] and got["reference"] == limit, (path, got)
    if _frewalk is not None:
        assert got["regex"] == got["c"], got
    if not tail and count == len(words):  # the right count: every path takes it
        assert all(got.get(path, True) for path in FAST_WALKS), got
        assert got["reference"] == limit, got


def test_count_helper_sees_both_answers() -> None:
    """The helper's cases reach a count that does not fit and a right one (a helper that
    answered one way would pass the property above)."""
    too_many = count_verdicts(count_section([(8,)], 9, C.FRE_TYPE_ADDR2, b""), C.FRE_TYPE_ADDR2)
    assert not too_many["function"] and too_many["walk"]
    assert not any(too_many.get(path) for path in FAST_WALKS)
    right = count_verdicts(count_section([(8,), (16, -16)], 2, C.FRE_TYPE_ADDR1, b""),
                           C.FRE_TYPE_ADDR1)
    assert right["function"] and not right["walk"]
    assert all(right.get(path, True) for path in FAST_WALKS)
    assert (_frewalk is None) or right["c"]


def test_c_walk_built() -> None:
    """Where a C compiler and Python's headers exist (CI installs the wheel, which carries
    the compiled walk), the C walk is importable, so the properties above ran it too."""
    if _frewalk is not None:
        return
    headers = sysconfig.get_paths()["include"]
    if shutil.which("cc") is None and shutil.which("gcc") is None:
        pytest.skip("no C compiler: the optional C walk cannot have been built")
    if not (Path(headers) / "Python.h").exists():
        pytest.skip(f"no Python.h under {headers}: the optional C walk cannot have been built")
    pytest.fail("sfcheck.walk._frewalk is not importable (python setup.py build_ext --inplace)")


@given(st.lists(st.tuples(st.integers(0, 50), st.integers(0, 50))), st.integers(0, 50))
def test_blocks_outside_is_block_within_per_block(spans, limit) -> None:
    firsts = [a for a, _b in spans]
    ends = [b for _a, b in spans]
    want = [not block_within(a, b, limit) for a, b in spans]
    got = blocks_outside(firsts, ends, limit)
    assert (got is None) == (not any(want))
    if got is not None:
        assert list(map(bool, got)) == want


@pytest.mark.parametrize(("walked", "fre_len", "over"), [(9, 9, False), (10, 9, True),
                                                         (0, 0, False)])
def test_over_budget(walked: int, fre_len: int, over: bool) -> None:
    assert over_budget(walked, fre_len) is over


@pytest.mark.parametrize("module", ["sfcheck.walk.context", "sfcheck.walk.section",
                                    "sfcheck.walk.fast", "sfcheck.walk.fde_shapes",
                                    "sfcheck.walk.fre_patterns", "sfcheck.rules.consumer",
                                    "sfcheck.rules.fre", "sfcheck.format.fre_info_table"])
def test_imports_first(module: str) -> None:
    """The rules import walk.context and the walk imports the rules: each loads first in a
    fresh interpreter (no import cycle left half-initialised)."""
    subprocess.run([sys.executable, "-c", f"import {module}"], check=True, capture_output=True)


@given(st.integers(0, 60), st.sampled_from((0, C.V3_ATTR_SIZE)), st.integers(0, 60),
       st.integers(0, 60), st.integers(0, 80))
def test_block_within_implies_block_starts_within(fre_off, attr, fre_len, end, size) -> None:
    """The fast path tests only block_within(walk start, end, FRE data end); the decoder's
    bounds.block_starts_within (layout-fde-fres-bounds on the start offset) follows from it
    whatever the section size (the FRE data ends at the sub-section's end or before)."""
    fres_start = 28
    limit = min(fres_start + fre_len, size)
    if block_within(fres_start + fre_off + attr, end, limit):
        assert block_starts_within(fre_off, attr, fre_len)
