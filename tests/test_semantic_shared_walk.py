"""The cross-check's shared walk (_SectionPass.shared: FRE blocks walked only for FDEs an
.eh_frame FDE overlaps, when the structure check walked them all cleanly) against the
reference pass that walks every block (_SectionPass.share off): the same findings in the
same order, on the corpus, the upstream cases, and on files whose .sframe or .eh_frame
bytes are damaged or emptied, with the per-rule cap lowered so the count-only path runs."""

from __future__ import annotations

import random
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sfcheck.checker import Options, check_elf
from sfcheck.elf.loader import load_elf
from sfcheck.rules.semantic import check as semantic_check
from sfcheck.rules.semantic.check import _SectionPass
from sfcheck.walk import context

from helpers import CORPUS, UPSTREAM, upstream_absent


def _elf_files(root: Path) -> list[Path]:
    if not root.is_dir():
        return []
    return sorted(p for p in root.rglob("*")
                  if p.is_file() and "src" not in p.parts and p.read_bytes()[:4] == b"\x7fELF")


FILES = _elf_files(CORPUS)
WITH_EH = [p for p in FILES
           if (lambda i: i.cfi.eh_frame is not None and i.sections)(
               load_elf(p.read_bytes(), str(p), cfi=True))]


def _findings(data: bytes | Path, share: bool, monkeypatch,
              options: Options | None = None) -> list[str]:
    with monkeypatch.context() as m:
        m.setattr(_SectionPass, "share", share)
        res = check_elf(data, options=options)
    return [f.text() for f in res.findings] + [str(res.error)]


def _same(data: bytes | Path, monkeypatch, options: Options | None = None) -> list[str]:
    got = _findings(data, True, monkeypatch, options)
    assert got == _findings(data, False, monkeypatch, options)
    return got


def test_shared_walk_is_taken(monkeypatch) -> None:
    """Else the tests below compare the reference with itself."""
    calls = []
    real = _SectionPass.shared

    def counting(self, blocks) -> None:
        calls.append(1)
        real(self, blocks)

    monkeypatch.setattr(_SectionPass, "shared", counting)
    for path in WITH_EH:
        check_elf(path)
    assert len(WITH_EH) > 40 and len(calls) > len(WITH_EH) // 2


@pytest.mark.parametrize("path", FILES + _elf_files(UPSTREAM) + upstream_absent(), ids=str)
def test_same_findings_in_order(path: Path, monkeypatch) -> None:
    _same(path, monkeypatch)


@settings(max_examples=60, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(pick=st.integers(0, 10_000), seed=st.integers(0, 2**32 - 1),
       flips=st.integers(1, 4))
def test_same_findings_on_damaged_sframe(pick: int, seed: int, flips: int,
                                         monkeypatch) -> None:
    """Damaged FDE records and FRE blocks: the structure check then often does not walk
    cleanly (the reference path runs) or walks cleanly with moved starts and sizes."""
    path = WITH_EH[pick % len(WITH_EH)]
    raw = bytearray(path.read_bytes())
    sec = load_elf(bytes(raw), str(path)).sections[0]
    rng = random.Random(seed)
    if sec.size <= 28:
        return
    for _ in range(flips):
        raw[rng.randrange(sec.offset + 28, sec.offset + sec.size)] = rng.randrange(256)
    _same(bytes(raw), monkeypatch)


def _eh_frame_of(path: Path) -> tuple[bytearray, int, int]:
    from elftools.elf.elffile import ELFFile

    with open(path, "rb") as f:
        sec = ELFFile(f).get_section_by_name(".eh_frame")
        return bytearray(path.read_bytes()), sec["sh_offset"], sec["sh_size"]


@settings(max_examples=60, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(pick=st.integers(0, 10_000), seed=st.integers(0, 2**32 - 1),
       flips=st.integers(1, 6), cap=st.sampled_from([1, 3, 50]))
def test_same_findings_on_damaged_eh_frame(pick: int, seed: int, flips: int, cap: int,
                                           monkeypatch) -> None:
    """Damaged .eh_frame starts and sizes: FDEs overlapped, partly or not at all, in
    every mix, around the per-rule cap."""
    monkeypatch.setattr(context, "MAX_PER_RULE", cap)
    monkeypatch.setattr(semantic_check, "MAX_PER_RULE", cap)
    path = WITH_EH[pick % len(WITH_EH)]
    raw, off, size = _eh_frame_of(path)
    rng = random.Random(seed)
    for _ in range(flips):
        raw[off + rng.randrange(size)] = rng.randrange(256)
    _same(bytes(raw), monkeypatch)


@pytest.mark.parametrize("disable", [(), ("semantic-no-eh-frame-fde",)])
def test_emptied_eh_frame_counts_the_same(monkeypatch, disable: tuple[str, ...]) -> None:
    """No .eh_frame FDE: every SFrame FDE is uncovered and, past the cap, counted in bulk."""
    monkeypatch.setattr(context, "MAX_PER_RULE", 3)
    monkeypatch.setattr(semantic_check, "MAX_PER_RULE", 3)
    capped = 0
    for path in WITH_EH:
        raw, off, size = _eh_frame_of(path)
        raw[off:off + size] = bytes(size)
        got = _same(bytes(raw), monkeypatch, Options(disable=set(disable)))
        capped += any("[semantic-no-eh-frame-fde]" in f and "more finding" in f
                      for f in got)
    assert (capped > 10) == (not disable)


def test_maybe_overlapping_is_a_superset() -> None:
    """The bulk pre-filter never drops an FDE the per-FDE overlap loop would find."""
    from types import SimpleNamespace

    rng = random.Random(5)
    for _ in range(300):
        ehs = sorted((SimpleNamespace(start=s, end=s + rng.randrange(-2, 40))
                      for s in (rng.randrange(200) for _ in range(rng.randrange(6)))),
                     key=lambda e: (e.start, e.end))
        starts = [rng.randrange(-10, 250) for _ in range(40)]
        sizes = [rng.randrange(0, 30) for _ in range(40)]
        maybe = semantic_check._maybe_overlapping([e.start for e in ehs], [e.end for e in ehs],
                                                  starts, sizes)
        assert len(maybe) == len(starts)
        for i, (s, n) in enumerate(zip(starts, sizes, strict=True)):
            if any(e.start < s + n and e.end > s for e in ehs):
                assert maybe[i]


def test_blocks_out_of_table_order(monkeypatch) -> None:
    """FRE blocks laid out in another order than the FDEs (gcc's .cold parts) are walked
    as tokens and settled like the others: the findings of every shortcut together are
    those of the decoder and the exact comparison for every FDE."""
    from sfcheck.rules.semantic.settle import Settle

    from strategies import permute_blocks

    permuted = settled = 0
    real = Settle.quiet

    def counting(self, *args):
        nonlocal settled
        settled += 1
        return real(self, *args)

    for k, path in enumerate(WITH_EH):
        raw = bytearray(path.read_bytes())
        sec = load_elf(bytes(raw), str(path)).sections[0]
        new = permute_blocks(sec.data, seed=k)
        if new is None or new == sec.data:
            continue
        permuted += 1
        raw[sec.offset:sec.offset + len(new)] = new
        with monkeypatch.context() as m:
            m.setattr(Settle, "quiet", counting)
            fast = check_elf(bytes(raw))
        with monkeypatch.context() as m:
            m.setattr(Settle, "quiet", lambda *a, **k: False)
            m.setattr(_SectionPass, "fast", False)
            m.setattr(_SectionPass, "share", False)
            slow = check_elf(bytes(raw))
        assert [f.text() for f in fast.findings] == [f.text() for f in slow.findings], path
    assert permuted > 20 and settled > 100


def test_single_overlaps_as_the_loop_finds_them() -> None:
    """The bulk index of the one overlapping .eh_frame FDE is what overlapping() finds
    (nested, touching, empty and duplicate FDEs included)."""
    from types import SimpleNamespace

    rng = random.Random(9)
    hits = 0
    for _ in range(400):
        ehs = sorted((SimpleNamespace(start=s, end=s + rng.choice([0, 1, 8, 16, 40, 100]))
                      for s in (rng.randrange(0, 200, rng.choice([1, 8]))
                                for _ in range(rng.randrange(6)))),
                     key=lambda e: (e.start, e.end))
        eh_starts = [e.start for e in ehs]
        starts = [rng.randrange(-10, 250, rng.choice([1, 8])) for _ in range(40)]
        sizes = [rng.choice([0, 1, 8, 16, 40]) for _ in range(40)]
        got = semantic_check._single_overlaps(eh_starts, [e.end for e in ehs], starts, sizes)
        for i, (s, n) in enumerate(zip(starts, sizes, strict=True)):
            k = max(semantic_check.bisect_right(eh_starts, s) - 1, 0)
            found = []
            while k < len(ehs) and ehs[k].start < s + n:
                if ehs[k].end > s:
                    found.append(k)
                k += 1
            if got[i] >= 0:  # -1: not decided in bulk, the loop runs
                assert found == [got[i]]
                hits += 1
            elif len(found) == 1 and ehs[found[0]].start == s and ehs[found[0]].end == s + n:
                raise AssertionError("the common case, one .eh_frame FDE alike, is decided")
    assert hits > 1000


def test_starts_past_int64_fall_back_to_a_list(monkeypatch) -> None:
    """FDE starts that do not fit array('q') (kernel addresses) are kept as a list: the
    shared walk's findings stay the reference's. The overflow is forced on the first
    column made from an iterator, which is the starts (the path a real overflow takes)."""
    real_array = semantic_check.array
    forced: list[int] = []

    def overflowing(code: str, values=()):  # type: ignore[no-untyped-def]
        if not forced and not isinstance(values, list):  # ([0] * n: the coverage counts)
            forced.append(1)
            raise OverflowError("int too big to convert")
        return real_array(code, values)

    monkeypatch.setattr(semantic_check, "array", overflowing)
    for path in WITH_EH:  # the first file the shared walk is taken on
        got = _findings(path, True, monkeypatch)
        if forced:
            break
    assert forced  # the fallback ran
    monkeypatch.setattr(semantic_check, "array", real_array)
    assert got == _findings(path, False, monkeypatch)
    assert got == _findings(path, True, monkeypatch)  # and as without the fallback


@pytest.mark.parametrize("fmt", ["iIIIB", "iIIIBBH", "qII"])  # SFrame v1, v2, v3 records
@pytest.mark.parametrize("order", "<>")
def test_nonzero_sizes_counts_as_the_records_say(fmt: str, order: str) -> None:
    """The bulk count of FDEs with a nonzero size (none_overlap's) is what unpacking every
    record finds, sizes of every byte pattern and zero included."""
    import struct

    rng = random.Random(fmt + order)
    rec = struct.Struct(order + fmt)
    for n in (0, 1, 2, 7, 300):
        rows = []
        for _ in range(n):
            vals = [rng.randrange(-2**31, 2**31) if c in "iq" else
                    rng.randrange(1 << (8 * struct.calcsize(c))) for c in fmt]
            vals[1] = rng.choice([0, 0, 1, 1 << 8, 1 << 16, 1 << 24, rng.randrange(2**32)])
            rows.append(rec.pack(*vals))
        table = memoryview(b"".join(rows))
        want = sum(1 for r in struct.iter_unpack(rec.format, table) if r[1])
        assert semantic_check._nonzero_sizes(table, rec.format, rec.size) == want
