"""The V3-series comparison's quiet FDEs (sfcheck/readers/compare.py): an FDE both readers
read alike whose every row passes the walk has nothing to report, so probe_pcs leaves out
the PCs it holds and run_v3 compares only the other FDEs PC by PC. Pinned against the plain
probe list and against run_v3(..., reference=True)."""

from __future__ import annotations

from dataclasses import replace

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_readers import v3_functions, v3_mutated

from sfcheck.format import FDE, build_section, encode, fde_info, make_fre
from sfcheck.format import constants as C
from sfcheck.readers import compare

from strategies import mutated_sections

VMA = 0x10000


def _plain_probe_pcs(table: compare.SFrameTable, limit: int,
                     quiet: set[int]) -> list[tuple[int, str]]:
    """probe_pcs written plainly, with the start, rows and last byte of each FDE in `quiet`
    left out: every (PC, reason) in the order probed, then each PC once with the reason of
    its first probe that is not a gap or the byte below."""
    h = table.header
    if h is None:
        return []
    out: list[tuple[int, str]] = []
    starts: list[int] = []
    for i in range(0, h.num_fdes, max(1, h.num_fdes // limit)):
        try:
            fde = table.fde(i)
        except compare.DecodeError:
            continue
        s = h.func_start(i, fde.start, table.vma + table.bias) & compare.MASK64
        starts.append(s)
        if i not in quiet:
            out.append((s, "start"))
            rep = 16 if h.version == C.VERSION_1 else fde.rep_size
            blocks = (0, rep) if fde.pcmask and rep else (0,)
            for fre in fde.fres[:compare.MAX_FRE_PROBES]:
                out += [((s + b + fre.start) & compare.MASK64, "row") for b in blocks
                        if b + fre.start < fde.size]
            if fde.size:
                out.append(((s + fde.size - 1) & compare.MASK64, "last byte"))
        if fde.size:
            out.append(((s + fde.size) & compare.MASK64, "gap"))
    if starts:
        out.append(((min(starts) - 1) & compare.MASK64, "below"))
    where: dict[int, str] = {}
    for pc, w in out:
        if where.get(pc) in (None, "gap", "below"):
            where[pc] = w
    return list(where.items())


@given(st.one_of(mutated_sections(), v3_functions(), v3_mutated()),
       st.sampled_from([1, 2, 3, compare.MAX_PROBE_FDES]), st.integers(0, 2**64 - 1),
       st.sets(st.integers(0, 12)))
@settings(max_examples=300, deadline=None, suppress_health_check=list(HealthCheck))
def test_probe_pcs_leaves_out_only_a_quiet_fdes_own_pcs(data: bytes, limit: int, vma: int,
                                                       quiet: set[int]):
    # Any answer of `quiet`: the FDEs it names lose their start, rows and last byte, and the
    # rest of the list keeps the plain order and reasons (gaps and the byte below included).
    table = compare.SFrameTable(data, vma=vma)
    asked: list[int] = []

    def hook(i: int, got: compare.Rows) -> bool:
        assert got == table.rows(i)
        asked.append(i)
        return i in quiet

    got = [tuple(p) for p in compare.probe_pcs(table, limit, hook)]
    assert got == _plain_probe_pcs(table, limit, quiet)
    assert len(asked) == len(set(asked))


@given(v3_functions(), st.sampled_from([1, 2, 3]), st.booleans())
@settings(max_examples=200, deadline=None, suppress_health_check=list(HealthCheck))
def test_v3_quiet_fdes_with_a_stride_equal_the_reference(data: bytes, limit: int,
                                                          validate: bool):
    # With a stride, PCs land in FDEs that are not probed themselves (a gap PC, a last
    # byte past the next start): those are judged quiet or not on their own.
    fast = list(compare.run_v3(data, VMA, (), validate, limit))
    assert fast == list(compare.run_v3(data, VMA, (), validate, limit, reference=True))


def _section(fd: list[FDE]) -> bytes:
    sec = build_section(3, C.ABI_AMD64_LE, fd, fixed_ra=-8)
    first = sec.header.fdes_start
    return encode(replace(sec, fdes=tuple(replace(x, start=x.start - (first + k * 16))
                                          for k, x in enumerate(sec.fdes))))


def test_a_quiet_fde_overlapping_the_next_keeps_its_pcs_inside_that_one() -> None:
    # FDE 0 passes everywhere but runs past FDE 1's start; its last byte (0x2b, probed for
    # FDE 0 only) lies in FDE 1, whose only row the walker stops at: the reference reports
    # it there, and so must the quiet path (FDE 0's own probes are kept: not all of them
    # land in it).
    quiet0 = FDE(start=0, size=0x2c, info=fde_info(C.FRE_TYPE_ADDR1),
                 fres=(make_fre(0, [8]), make_fre(1, [16])))
    stops = FDE(start=0x20, size=0x10, info=fde_info(C.FRE_TYPE_ADDR1),
                fres=(make_fre(0, [-8]),))
    data = _section([quiet0, stops])
    ref = list(compare.run_v3(data, VMA, reference=True))
    assert [d.pc - VMA for d in ref if d.kind == compare.WALK_STOPS] == [0x2b, 0x2c, 0x20,
                                                                         0x2f]
    assert list(compare.run_v3(data, VMA)) == ref


def test_quiet_fdes_report_nothing_and_the_loud_one_everything() -> None:
    # Quiet FDEs around one the walker stops at in its second row: only that row's PCs.
    good = [FDE(start=0x40 * k, size=0x20, info=fde_info(C.FRE_TYPE_ADDR1),
                fres=(make_fre(0, [8]), make_fre(4, [16]))) for k in range(4)]
    bad = FDE(start=0x100, size=0x20, info=fde_info(C.FRE_TYPE_ADDR1),
              fres=(make_fre(0, [8]), make_fre(4, [-8])))
    data = _section([*good, bad, replace(good[0], start=0x140)])
    ref = list(compare.run_v3(data, VMA, reference=True))
    assert [(d.kind, d.fde, d.pc - VMA) for d in ref] == [
        (compare.WALK_STOPS, 4, 0x104), (compare.WALK_STOPS, 4, 0x11f)]
    assert list(compare.run_v3(data, VMA)) == ref
