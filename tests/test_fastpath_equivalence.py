"""The fast section pass gives exactly the findings of the reference pass.

Both are the product's: `check_section(ctx, fast=False)` runs every FDE through the
decoder and the checks beside the rules (rules/fde.py, fre.py, layout.py);
`check_section(ctx)` lets walk/fast.Table accept runs of FDEs in bulk. The
tests compare them (findings in order, function ranges, header) on hypothesis-generated
sections, damaged copies of them, large synthetic sections (bench/synth.py) with bytes
flipped where the fast path decides, every SFrame section of the corpus (held-in
hostile cases included) and of the upstream test data, and damaged copies of those.
"""

from __future__ import annotations

import contextlib
import random
from collections.abc import Callable, Iterator

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from bench.synth import encode_tiled, plan
from sfcheck.elf.loader import load_elf
from sfcheck.errors import DecodeError, ElfError
from sfcheck.format import constants as C
from sfcheck.format import encode
from sfcheck.format.decode import Decoder, decode_header
from sfcheck.format.model import Header
from sfcheck.walk import fast
from sfcheck.walk import section as section_mod
from sfcheck.walk.context import SectionContext
from sfcheck.walk.section import check_section

from helpers import CORPUS, UPSTREAM, upstream_absent
from strategies import mutations, permute_blocks, sections


@pytest.fixture(scope="module", autouse=True, params=["c-walk", "pure-python"])
def fre_walk(request) -> Iterator[None]:
    """Every test here runs with the C FRE walk (sfcheck.walk._frewalk, when built) and with
    the regex walk (what SFCHECK_PURE_PYTHON=1 selects)."""
    saved = fast.FREWALK
    if request.param == "c-walk":
        if saved is None:
            pytest.skip("the C FRE walk is not built or SFCHECK_PURE_PYTHON is set")
    else:
        fast.FREWALK = None
    yield
    fast.FREWALK = saved


def reference(ctx: SectionContext) -> Header | None:
    return check_section(ctx, fast=False)


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
    slow = _run(reference, data, vma, relocatable)
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


@contextlib.contextmanager
def _counting_fre_walks(monkeypatch) -> Iterator[list[int]]:
    """[n]: how many FRE blocks the decoder walks (Decoder.iter_fres calls) inside."""
    calls = [0]
    orig = Decoder.iter_fres

    def counting(self, *a):
        calls[0] += 1
        return orig(self, *a)

    with monkeypatch.context() as m:
        m.setattr(Decoder, "iter_fres", counting)
        yield calls


def test_fast_path_used_on_clean_sections(monkeypatch) -> None:
    """A clean synthetic section is checked without the decoder walking its FREs (else the
    equivalence tests above would compare the slow path with itself)."""
    lay = plan(300, 3, seed=5)
    data = encode_tiled(lay)
    with _counting_fre_walks(monkeypatch) as calls:
        assert _run(check_section, data, lay.sframe_vma, False)[1] == []
    flex_or_pcmask = sum(1 for s in lay.shapes if s.info2 or s.info & 0x10)
    assert 0 < calls[0] <= flex_or_pcmask



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


def _real_sections() -> list[tuple[str, int, bytes, bool]]:
    """(label, vma, bytes, relocatable) of every SFrame section in the corpus and the
    upstream test data: ELF files' sections, and bare sections by their magic."""
    out = []
    files = sorted(p for base in (CORPUS, UPSTREAM) if base.is_dir()
                   for p in base.rglob("*") if p.is_file())
    for path in files:
        head = path.read_bytes()[:4]
        if head == b"\x7fELF":
            try:
                info = load_elf(str(path), name=str(path), cfi=False)
            except ElfError:
                continue
            out += [(f"{path.name}:{s.name}", s.vma, s.data, info.e_type == "ET_REL")
                    for s in info.sections if s.data]
        elif head[:2] in (C.MAGIC_LE, C.MAGIC_BE):
            out.append((path.name, 0, path.read_bytes(), False))
    return out


REAL = _real_sections()


def test_real_sections_present() -> None:
    """The corpus is part of the checkout: the comparison below must have cases."""
    assert len(REAL) > 50


@pytest.mark.parametrize("label,vma,data,relocatable",
                         [pytest.param(*r, id=r[0]) for r in REAL] + upstream_absent(4))
def test_real_sections(label: str, vma: int, data: bytes, relocatable: bool) -> None:
    """Every real section, then damaged copies: FRE bytes and FDE fields changed."""
    assert_same(data, vma, relocatable)
    if len(data) < C.HEADER_SIZE or data[2] not in C.VERSIONS:
        return
    rng = random.Random(label)
    for _ in range(20):
        buf = bytearray(data)
        for _ in range(rng.randint(1, 3)):
            pos = rng.randrange(C.HEADER_SIZE, len(buf)) if len(buf) > C.HEADER_SIZE else 0
            buf[pos] = rng.choice((0, 1, 7, 8, 0x10, 0x40, 0x80, 0xFF, buf[pos] ^ 1,
                                   buf[pos] ^ 0x80, (buf[pos] + 1) & 0xFF))
        assert_same(bytes(buf), vma, relocatable)


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


@pytest.mark.parametrize("chunk", [1 << 15, 7])
@pytest.mark.parametrize("version", [1, 2, 3])
def test_blocks_out_of_table_order(version: int, chunk: int, monkeypatch) -> None:
    """FRE blocks laid out in another order than the FDEs (gcc's .cold parts): the fast
    path walks them too (each block ends where the next by offset begins), with the
    reference's findings, clean and with bytes flipped; blocks made to overlap included."""
    monkeypatch.setattr(section_mod, "CHUNK", chunk)
    lay = plan(200, version, seed=7)
    data = permute_blocks(encode_tiled(lay), seed=version)
    assert data is not None
    assert not [f for f in assert_same(data, lay.sframe_vma) if f.location.fde is not None]
    with _counting_fre_walks(monkeypatch) as calls:
        _run(check_section, data, lay.sframe_vma, False)
    flex_or_pcmask = sum(1 for s in lay.shapes if s.info2 or s.info & 0x10)
    assert calls[0] <= 3 * flex_or_pcmask + 3  # not one per out-of-order FDE
    h = decode_header(data)
    rng = random.Random(version)
    seen = set()
    for _ in range(60):
        buf = bytearray(data)
        for _ in range(rng.randint(1, 3)):
            pos = rng.randrange(h.fdes_start, len(buf))
            buf[pos] = rng.choice((0, 1, 7, 0x10, 0x80, 0xFF, buf[pos] ^ 1, buf[pos] ^ 0x40))
        seen |= {f.rule for f in assert_same(bytes(buf), lay.sframe_vma)}
    assert "layout-fre-overlap" in seen or "layout-fde-fres-bounds" in seen, seen
