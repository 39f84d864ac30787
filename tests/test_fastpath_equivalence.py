"""The fast section pass (rules/section.py) gives exactly the findings of the plain one.

`oracle_walk` and its helpers below are a verbatim copy of the decoder-based pass
section.py had before the fast path (commit 331258a): every FDE decoded with
`Decoder.fde`, every FRE with `Decoder.iter_fres`, one rule check at a time. The
test runs both on hypothesis-generated sections, on damaged copies of them, and
on large synthetic sections (bench/synth.py) with bytes flipped where the fast
path decides, and compares the finding lists (order included), the function
ranges and the header.
"""

from __future__ import annotations

import random
import sys
from collections.abc import Callable

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sfcheck.errors import DecodeError
from sfcheck.format import constants as C
from sfcheck.format import encode
from sfcheck.format.datawords import cfa_offset
from sfcheck.format.decode import Decoder, byte_order, decode_header
from sfcheck.format.layout import fre_size
from sfcheck.format.model import FDE, FRE, Header
from sfcheck.rules import fde as F
from sfcheck.rules import fre as R
from sfcheck.rules import header as H
from sfcheck.rules import layout as L
from sfcheck.rules import section as section_mod
from sfcheck.rules.context import SectionContext
from sfcheck.rules.section import check_section

from helpers import ROOT
from strategies import mutations, sections

sys.path.insert(0, str(ROOT))
from bench.synth import encode_tiled, plan  # noqa: E402

MAX_REG = {C.ABI_AMD64_LE: 16, C.ABI_AARCH64_LE: 31, C.ABI_AARCH64_BE: 31, C.ABI_S390X_BE: 31}


def oracle_check_section(ctx: SectionContext) -> Header | None:
    data = ctx.data
    try:
        byte_order(data)
    except DecodeError as exc:
        rule = H.TOO_SHORT if len(data) < 2 else H.BAD_MAGIC
        ctx.emit(rule, exc.message, offset=0)
        return None
    if len(data) < C.HEADER_SIZE:
        ctx.emit(H.TOO_SHORT, f"{len(data)} bytes; the header alone needs {C.HEADER_SIZE}",
                 offset=0)
        return None
    if data[2] not in C.VERSIONS:
        ctx.emit(H.VERSION_UNKNOWN, f"version byte is {data[2]}", offset=2)
        return None
    try:
        h = decode_header(data)
    except DecodeError as exc:
        ctx.emit(H.TOO_SHORT, exc.message, offset=7)
        return None
    H.check_header(ctx, h)
    oracle_walk(ctx, h)
    return h


def oracle_walk(ctx: SectionContext, h: Header) -> None:
    size = len(ctx.data)
    n = h.num_fdes
    fdes_end = h.fdes_start + n * h.fde_size
    if h.fdeoff > h.freoff:
        ctx.emit(L.FDEOFF_AFTER_FREOFF, f"fdeoff {h.fdeoff:#x} > freoff {h.freoff:#x}",
                 offset=0x14)
    if h.fdeoff:
        ctx.emit(L.FDEOFF_NONZERO, f"fdeoff is {h.fdeoff:#x}; libsframe-based readers compute "
                 f"every PC-relative function start {h.fdeoff:#x} bytes off", offset=0x14)
    readable = n
    if fdes_end > size:
        readable = max(0, (size - h.fdes_start) // h.fde_size)
        ctx.emit(L.FDE_ARRAY_BOUNDS, f"{n} FDEs of {h.fde_size} bytes end at {fdes_end:#x}, "
                 f"the section has {size:#x} bytes ({readable} FDE(s) readable)", offset=8)
    elif h.fdeoff <= h.freoff and fdes_end > h.fres_start:
        ctx.emit(L.FDE_ARRAY_OVERLAP, f"FDE array ends at {fdes_end:#x}, FRE sub-section starts "
                 f"at {h.fres_start:#x}", offset=0x18)
    if h.fres_end > size:
        ctx.emit(L.FRE_BOUNDS, f"FRE sub-section [{h.fres_start:#x}, {h.fres_end:#x}) "
                 f"ends past the section's {size:#x} bytes", offset=0x10)
    if n == 0:
        ctx.emit(L.EMPTY, "num_fdes is 0", offset=8)
    section_mod._check_gaps(ctx, h, fdes_end, size)  # header-level, not the fast path

    dec = Decoder(ctx.data)
    total_fres = walked = 0
    complete = readable == n
    blocks: list[tuple[int, int, int]] = []
    prev_pc: int | None = None
    for i in range(readable):
        off = dec.fde_offset(i)
        try:
            fde = dec.fde(i, with_fres=False)
        except DecodeError as exc:
            ctx.emit(L.FDE_FRES_BOUNDS, exc.message, offset=exc.offset, fde=i)
            complete = False
            continue
        # Objects carry PC-relative relocations on the start field whatever the flags say
        # (the cause of ld/32666), so after relocation their starts are field-relative.
        pc = h.func_start(i, fde.start, ctx.vma, field_relative=h.pcrel or ctx.relocatable)
        loc = {"offset": off, "fde": i, "pc": pc}
        ctx.ranges.append((pc, fde.size, i))
        if (h.sorted and not ctx.relocatable and prev_pc is not None and pc < prev_pc
                and not ctx.counts[F.UNSORTED.id]):
            ctx.emit(F.UNSORTED, f"function start {pc:#x} is below the previous FDE's "
                     f"{prev_pc:#x}", **loc)
        prev_pc = pc
        _check_fde(ctx, h, fde, loc)
        total_fres += fde.num_fres
        first = h.fres_start + fde.fre_off
        if walked > h.fre_len:  # aliasing blocks: stop before the work outgrows the input
            if not ctx.counts[L.FRE_OVERLAP.id]:
                ctx.emit(L.FRE_OVERLAP, f"FRE blocks up to FDE {i} use more than the "
                         f"{h.fre_len:#x}-byte FRE sub-section; FREs of later FDEs not "
                         "walked", offset=first, fde=i)
            complete = False
            continue
        end = first + (C.V3_ATTR_SIZE if h.version == C.VERSION_3 else 0)
        fres: list[FRE] = []
        try:
            for fre in dec.iter_fres(i, fde.fre_type, fde.num_fres, end):
                fres.append(fre)
            if fres:
                end = fres[-1].offset + fre_size(fres[-1], fde.fre_type)
        except DecodeError as exc:
            complete = False
            if exc.field == "fre_info":
                ctx.emit(R.SIZE_CODE, exc.message, offset=exc.offset, fde=i, pc=pc,
                         fre=len(fres))
            elif exc.field != "info":  # an FRE type > 2 is reported by fde-fre-type
                ctx.emit(L.FDE_FRES_BOUNDS, exc.message, offset=exc.offset, fde=i, pc=pc)
        else:
            blocks.append((first, end, i))
            walked += end - first
        _check_fres(ctx, h, fde, fres, pc, loc)
    if complete:
        if total_fres != h.num_fres:
            ctx.emit(L.NUM_FRES, f"FDEs hold {total_fres} FREs, the header says {h.num_fres}",
                     offset=0x0C)
        if walked != h.fre_len and h.fres_end <= size:
            ctx.emit(L.FRE_LEN, f"FRE blocks use {walked:#x} bytes, sfh_fre_len is "
                     f"{h.fre_len:#x}", offset=0x10)
    _check_overlaps(ctx, blocks, [] if ctx.relocatable else ctx.ranges)
    end = max(fdes_end, h.fres_end)
    tail = ctx.data[end:]
    if tail.strip(b"\0"):
        first = end + next(k for k, b in enumerate(tail) if b)
        ctx.emit(L.TRAILING, f"{len(tail)} bytes follow the SFrame data, nonzero from "
                 f"{first:#x}" + (" (another SFrame section?)"
                                  if ctx.data[first:first + 2] in (C.MAGIC_LE, C.MAGIC_BE)
                                  else ""), offset=first)


def _check_overlaps(ctx: SectionContext, blocks: list[tuple[int, int, int]],
                    ranges: list[tuple[int, int, int]]) -> None:
    blocks.sort()
    for (s1, e1, i1), (s2, _e2, i2) in zip(blocks, blocks[1:], strict=False):
        if s2 < e1:
            ctx.emit(L.FRE_OVERLAP, f"FRE blocks of FDE {i1} [{s1:#x}, {e1:#x}) and FDE {i2} "
                     f"(from {s2:#x}) overlap", offset=s2, fde=i2)
    ranges = sorted(r for r in ranges if r[1] > 0)
    for (p1, z1, i1), (p2, _z2, i2) in zip(ranges, ranges[1:], strict=False):
        if p2 < p1 + z1:
            ctx.emit(F.OVERLAP, f"function [{p2:#x}, ...) of FDE {i2} starts inside FDE {i1}'s "
                     f"[{p1:#x}, {p1 + z1:#x})", fde=i2, pc=p2)


def _check_fde(ctx: SectionContext, h: Header, fde: FDE, loc: dict) -> None:
    if fde.fre_type > C.FRE_TYPE_ADDR4:
        ctx.emit(F.FRE_TYPE, f"FRE type {fde.fre_type}", **loc)
    reserved = fde.info & (0x40 | (0x80 if h.version < C.VERSION_3 else 0))
    if reserved or (h.version == C.VERSION_3 and fde.info2 & 0xE0) or fde.padding:
        ctx.emit(F.RESERVED, f"info {fde.info:#04x}" + (
            f", info2 {fde.info2:#04x}" if h.version == C.VERSION_3 else "") + (
            f", padding {fde.padding:#x}" if fde.padding else ""), **loc)
    if h.version == C.VERSION_3 and fde.fde_type > C.FDE_TYPE_FLEX:
        ctx.emit(F.FDE_TYPE, f"FDE type {fde.fde_type}", **loc)
    if h.version == C.VERSION_1:
        pass  # v1 FDEs have no rep_size field
    elif fde.pcmask and fde.rep_size == 0:
        ctx.emit(F.REP_SIZE_ZERO, "PCMASK FDE with rep_size 0", **loc)
    elif not fde.pcmask and fde.rep_size:
        ctx.emit(F.REP_SIZE_UNUSED, f"rep_size {fde.rep_size} on a PCINC FDE", **loc)
    if fde.pauth_key and h.abi not in (C.ABI_AARCH64_BE, C.ABI_AARCH64_LE):
        ctx.emit(F.PAUTH_ABI, f"info {fde.info:#04x} selects pauth key B", **loc)
    if fde.fre_type <= C.FRE_TYPE_ADDR4 and not fde.pcmask:
        need = (C.FRE_TYPE_ADDR1 if fde.size < 0x100 else
                C.FRE_TYPE_ADDR2 if fde.size < 0x10000 else C.FRE_TYPE_ADDR4)
        if fde.fre_type > need:
            ctx.emit(F.FRE_TYPE_SIZE, f"ADDR{C.FRE_ADDR_SIZE[fde.fre_type]} for a "
                     f"{fde.size}-byte function (ADDR{C.FRE_ADDR_SIZE[need]} holds it)", **loc)
        elif fde.fre_type < need:
            ctx.emit(F.FRE_TYPE_SMALL, f"ADDR{C.FRE_ADDR_SIZE[fde.fre_type]} cannot address a "
                     f"{fde.size}-byte function", **loc)


def _legal_counts(h: Header, flex: bool) -> frozenset[int]:
    if flex:
        return frozenset({0, 2, 4, 5, 6})
    # CFA, then RA and FP unless the header fixes them; 0 words (RA undefined) since v2.
    fixed = (h.fixed_ra != 0) + (h.fixed_fp != 0)
    return frozenset(range(0 if h.version >= C.VERSION_2 else 1, 4 - fixed))


def _check_fres(ctx: SectionContext, h: Header, fde: FDE, fres: list[FRE], pc: int,
                loc: dict) -> None:
    flex = fde.flex(h.version)
    legal = _legal_counts(h, flex)
    aarch64 = h.abi in (C.ABI_AARCH64_BE, C.ABI_AARCH64_LE)
    max_reg = MAX_REG.get(h.abi, 31)
    prev = None

    def floc() -> dict:
        """The current FRE's location: built only when a finding needs it, not per FRE."""
        return dict(loc, offset=fre.offset, fre=j,
                    fre_pc=fre.start if fde.pcmask else pc + fre.start)

    for j, fre in enumerate(fres):  # noqa: B007  (floc reads j and fre)
        n = fre.count
        if n * fre.word_size > C.MAX_DATAWORD_BYTES:
            ctx.emit(R.DATAWORDS_SIZE, f"{n} words of {fre.word_size} bytes", **floc())
        if n not in legal:
            kind = "FLEX" if flex else f"{C.ABI_NAMES.get(h.abi, 'unknown-ABI')} DEFAULT"
            ctx.emit(R.WORD_COUNT, f"{n} data words in a {kind} FRE (allowed: "
                     f"{', '.join(map(str, sorted(legal)))})", **floc())
        if fre.mangled_ra and not aarch64:
            ctx.emit(R.MANGLED_ABI, f"fre_info {fre.info:#04x}", **floc())
        if prev is not None and fre.start <= prev:
            ctx.emit(R.START_ORDER, f"start {fre.start:#x} after {prev:#x}", **floc())
        prev = fre.start
        if j == 0 and fre.start != 0:
            ctx.emit(R.FIRST_START, f"first row starts at {fre.start:#x}", **floc())
        if fde.pcmask:
            if h.version > C.VERSION_1 and fde.rep_size and fre.start >= fde.rep_size:
                ctx.emit(R.START_BEYOND_REP, f"start {fre.start:#x} >= rep_size "
                         f"{fde.rep_size}", **floc())
        elif fre.start > fde.size:
            ctx.emit(R.START_BEYOND, f"start {fre.start:#x} > function size {fde.size:#x}",
                     **floc())
        elif fre.start == fde.size and fde.size:
            ctx.emit(R.START_AT_SIZE, f"start {fre.start:#x} == function size", **floc())
        if flex:
            _check_flex(ctx, fre, max_reg, floc)
        elif n:
            _check_default(ctx, h, fre, max_reg, floc)


def _check_flex(ctx: SectionContext, fre: FRE, max_reg: int, floc: Callable[[], dict]) -> None:
    n = fre.count
    if n < 2:
        return
    words = [fre.uword(k) or 0 for k in range(n)]
    if not words[0] & 1:
        ctx.emit(R.FLEX_CFA_REG, f"CFA control word {words[0]:#x} has reg_p clear", **floc())
    ctl_positions = [0]
    if n >= 3:
        if words[2] == 0:
            if n != 5:
                ctx.emit(R.FLEX_PADDING, f"RA padding word with {n} words (needs an FP pair: "
                         "5 words)", **floc())
            if n >= 4:
                ctl_positions.append(3)
        else:
            ctl_positions.append(2)
            if n == 5:
                ctx.emit(R.FLEX_PADDING, "5 words but no padding in the RA position", **floc())
            if n >= 5:
                ctl_positions.append(4)
    for k in ctl_positions[1:]:
        if k < n and words[k] == 0 and k != 2:
            ctx.emit(R.FLEX_PADDING, f"zero control word at word {k}", **floc())
    for k in ctl_positions:
        if k < n and words[k] & 1 and (words[k] >> 3) > max_reg:
            ctx.emit(R.REGISTER, f"control word {k} names register {words[k] >> 3}", **floc())


def _check_default(ctx: SectionContext, h: Header, fre: FRE, max_reg: int,
                   floc: Callable[[], dict]) -> None:
    cfa = cfa_offset(h, fre, False)
    if fre.base_sp and cfa is not None and (cfa < 0 or cfa % 8):
        ctx.emit(R.CFA_OFFSET, f"CFA = SP{cfa:+d}", **floc())
    if h.abi != C.ABI_S390X_BE:
        return
    for k in range(1, fre.count):
        w = fre.words[k]
        if w & 1:
            if h.version >= C.VERSION_3:
                ctx.emit(R.S390X_REGNUM, f"word {k} is {w}", **floc())
            elif (w >> 1) > max_reg or w < 0:
                ctx.emit(R.REGISTER, f"word {k} encodes register {w >> 1}", **floc())


# ---------------------------------------------------------------------------
# The comparison.

def _run(check: Callable[[SectionContext], Header | None], data: bytes, vma: int,
         relocatable: bool):
    ctx = SectionContext("x", ".sframe", vma, data, relocatable=relocatable)
    h = check(ctx)
    ctx.finish()
    return h, ctx.findings, ctx.ranges


def assert_same(data: bytes, vma: int = 0, relocatable: bool = False) -> list:
    """Both paths agree, with the fast path tried on every table size (FAST_MIN 0: small
    tables too, which by default skip it) and with the default threshold."""
    slow = _run(oracle_check_section, data, vma, relocatable)
    old = section_mod.FAST_MIN
    try:
        for fast_min in (0, old):
            section_mod.FAST_MIN = fast_min
            fast = _run(check_section, data, vma, relocatable)
            assert fast[0] == slow[0]
            assert [f.text() for f in fast[1]] == [f.text() for f in slow[1]]
            assert fast[1] == slow[1]
            assert fast[2] == slow[2]
    finally:
        section_mod.FAST_MIN = old
    return fast[1]


SETTINGS = settings(max_examples=400, deadline=None,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])


@SETTINGS
@given(sections(), st.integers(0, 1 << 40), st.booleans())
def test_generated_sections(sec, vma: int, relocatable: bool) -> None:
    assert_same(encode(sec), vma, relocatable)


@SETTINGS
@given(st.data())
def test_damaged_sections(data) -> None:
    raw = encode(data.draw(sections()))
    damaged = data.draw(mutations(raw, max_ops=3))
    vma = data.draw(st.integers(0, 1 << 32))
    assert_same(damaged, vma)
    old = section_mod.CHUNK
    section_mod.CHUNK = data.draw(st.integers(1, 4))  # chunk edges everywhere
    try:
        assert_same(damaged, vma)
    finally:
        section_mod.CHUNK = old


def _fre_bytes(data: bytes) -> tuple[int, int]:
    h = decode_header(data)
    return h.fres_start, min(h.fres_end, len(data))


@pytest.mark.parametrize("chunk", [1 << 15, 7])
@pytest.mark.parametrize("version", [1, 2, 3])
def test_synthetic_sections_with_flipped_bytes(version: int, chunk: int, monkeypatch) -> None:
    """Realistic sections, each copy with a few FRE or FDE bytes changed, mostly to values
    near the boundaries the fast path tests (CFA alignment, starts, info bytes, sizes).
    With chunk=7 the table is read 7 FDEs at a time, so chunk edges are crossed often."""
    monkeypatch.setattr(section_mod, "CHUNK", chunk)
    lay = plan(400, version, seed=version)
    clean = encode_tiled(lay)
    rules = {f.rule for f in assert_same(clean, lay.sframe_vma)}
    assert rules == ({"header-version-obsolete"} if version == 1 else set())
    rng = random.Random(version)
    lo, hi = _fre_bytes(clean)
    h = decode_header(clean)
    seen: set[str] = set()
    for _ in range(300):
        buf = bytearray(clean)
        for _ in range(rng.randint(1, 3)):
            if rng.random() < 0.8:
                pos = rng.randrange(lo, hi)
            else:  # an FDE field
                pos = rng.randrange(h.fdes_start, h.fdes_start + h.num_fdes * h.fde_size)
            buf[pos] = rng.choice((0, 1, 4, 7, 8, 9, 0x10, 0x20, 0x40, 0x7F, 0x80, 0xFF,
                                   buf[pos] ^ 1, buf[pos] ^ 8, buf[pos] ^ 0x80,
                                   (buf[pos] + 1) & 0xFF, (buf[pos] - 1) & 0xFF))
        found = assert_same(bytes(buf), lay.sframe_vma)
        seen.update(f.rule for f in found)
    # The flips reached the FRE rules the fast path decides on.
    assert {"fre-start-order", "fre-cfa-offset", "fre-word-count"} <= seen, seen


@pytest.mark.parametrize("abi", [C.ABI_AARCH64_LE, C.ABI_AARCH64_BE, C.ABI_S390X_BE])
def test_other_abis_with_flipped_bytes(abi: int) -> None:
    """Big-endian words and the s390x CFA scaling go through the same patterns."""
    lay = plan(200, 3, seed=abi)
    clean = bytearray(encode_tiled(lay))
    clean[4] = abi
    big = C.ABI_BIG_ENDIAN[abi]
    if big:  # re-encode every multi-byte field: decode as LE, encode as BE
        from sfcheck.format.decode import decode
        sec = decode(bytes(clean))
        from dataclasses import replace
        sec = replace(sec, header=replace(sec.header, big_endian=True))
        clean = bytearray(encode(sec))
    assert_same(bytes(clean), lay.sframe_vma)
    rng = random.Random(abi)
    lo, hi = _fre_bytes(bytes(clean))
    for _ in range(200):
        buf = bytearray(clean)
        pos = rng.randrange(lo, hi)
        buf[pos] = rng.choice((0, 1, 0x80, 0xEB, 0xEC, 0xFF, buf[pos] ^ 1, buf[pos] ^ 8))
        assert_same(bytes(buf), lay.sframe_vma)


def test_fast_path_used_on_clean_sections(monkeypatch) -> None:
    """A clean synthetic section is checked without the decoder walking its FREs (else the
    equivalence tests above would compare the slow path with itself)."""
    lay = plan(300, 3, seed=5)
    data = encode_tiled(lay)
    calls = 0
    orig = Decoder.iter_fres

    def counting(self, *a):
        nonlocal calls
        calls += 1
        return orig(self, *a)

    monkeypatch.setattr(Decoder, "iter_fres", counting)
    assert _run(check_section, data, lay.sframe_vma, False)[1] == []
    flex_or_pcmask = sum(1 for s in lay.shapes if s.info2 or s.info & 0x10)
    assert 0 < calls <= flex_or_pcmask



@pytest.mark.parametrize("chunk", [1 << 15, 3])
@pytest.mark.parametrize("version", [1, 2, 3])
def test_aliased_blocks_before_clean_ones(version: int, chunk: int, monkeypatch) -> None:
    """FDEs sharing the biggest FRE block use up the walk budget: the clean FDEs after them
    are not walked (layout-fre-overlap), on both paths."""
    monkeypatch.setattr(section_mod, "CHUNK", chunk)
    lay = plan(60, version, seed=11)
    data = bytearray(encode_tiled(lay))
    h = decode_header(bytes(data))
    fsz = h.fde_size
    recs = [bytes(data[h.fdes_start + i * fsz:h.fdes_start + (i + 1) * fsz]) for i in range(60)]
    big = max(range(60), key=lambda i: len(lay.shapes[i].fres))
    off = 8 if version == 3 else 4
    for i in range(40):  # copy the big FDE's size and FRE fields, keep the start
        pos = h.fdes_start + i * fsz + off
        data[pos:h.fdes_start + (i + 1) * fsz] = recs[big][off:]
    rules = {f.rule for f in assert_same(bytes(data), lay.sframe_vma)}
    assert "layout-fre-overlap" in rules


@settings(max_examples=300, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 300), st.integers(0, 60)), max_size=12),
       st.lists(st.tuples(st.integers(0, 300), st.integers(0, 80)), min_size=1, max_size=4))
def test_function_range_shortcut(ranges, spans) -> None:
    """rules/elf.py's C-level shortcut says "all inside" only when the per-range loop
    would find nothing."""
    from sfcheck.rules.elf import _all_inside

    spans = sorted((a, a + w) for a, w in spans)
    ranges = [(pc, size, i) for i, (pc, size) in enumerate(ranges)]
    naive = all(any(a <= pc and pc + size <= b for a, b in spans) for pc, size, _ in ranges)
    if _all_inside(ranges, spans):
        assert naive


# ---------------------------------------------------------------------------
# The dump: dump_text (fast FRE walk, shared row templates) against the plain
# decoder walk objdump.py had before (commit 331258a), lines and error alike.

def oracle_dump_text(data: bytes, section_vma: int = 0, name: str = ".sframe"):
    from sfcheck.dump.objdump import fde_lines, header_lines

    if not data:
        return
    dec = Decoder(data)
    h = dec.header
    yield from header_lines(h, name)
    yield ""
    yield "  Function Index :"
    for i, fde in enumerate(dec.iter_fdes()):
        yield from fde_lines(dec, i, fde, section_vma)


def _dump(fn, data: bytes, vma: int) -> tuple[list[str], str | None]:
    lines: list[str] = []
    try:
        for line in fn(data, vma):
            lines.append(line)
    except DecodeError as exc:
        return lines, f"{exc.message} @{exc.offset}"
    return lines, None


def assert_same_dump(data: bytes, vma: int = 0) -> None:
    from sfcheck.dump.objdump import dump_text

    assert _dump(dump_text, data, vma) == _dump(oracle_dump_text, data, vma)


@SETTINGS
@given(st.data())
def test_dump_generated_and_damaged(data) -> None:
    raw = encode(data.draw(sections()))
    vma = data.draw(st.sampled_from([0, 0x1000, (1 << 64) - 0x100]))
    assert_same_dump(raw, vma)
    assert_same_dump(data.draw(mutations(raw, max_ops=3)), vma)


@pytest.mark.parametrize("version", [1, 2, 3])
def test_dump_synthetic_with_flipped_bytes(version: int) -> None:
    lay = plan(300, version, seed=20 + version)
    clean = encode_tiled(lay)
    assert_same_dump(clean, lay.sframe_vma)
    rng = random.Random(version)
    lo, hi = _fre_bytes(clean)
    h = decode_header(clean)
    for _ in range(150):
        buf = bytearray(clean)
        for _ in range(rng.randint(1, 3)):
            pos = (rng.randrange(lo, hi) if rng.random() < 0.8 else
                   rng.randrange(h.fdes_start, h.fdes_start + h.num_fdes * h.fde_size))
            buf[pos] = rng.choice((0, 1, 0x60, 0x7F, 0x80, 0xFF, buf[pos] ^ 2, buf[pos] ^ 0x20))
        assert_same_dump(bytes(buf), lay.sframe_vma)
