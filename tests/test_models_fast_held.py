"""_v3_by_fde's quiet FDEs asked in one loop first (compare._held_quiet) and left out of
probe_pcs without a second decode (its `held`): the same probe list, and the same quiet
verdicts and rows, as asking held_quiet of each FDE inside probe_pcs (_same_rows, then
_passes). Hypothesis over laid-out, valid and damaged v3 sections."""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_readers import v3_functions, v3_mutated

from sfcheck.readers import compare, v3series

from strategies import mutated_sections


def _setup(data: bytes, vma: int, text: tuple[int, int]):
    table = compare.SFrameTable(data, vma=vma)
    spans = compare._reference_spans(table, data)
    sec = v3series.register(data, vma, text)
    if spans is None or isinstance(sec, compare.Outcome):
        return None
    memo = v3series.Memo(data, sec)
    if memo.addrs != spans[0]:
        return None
    return table, memo, spans[1]


def _asked_inside(table, memo, ends, limit):
    """held_quiet asked by probe_pcs of each FDE, as _v3_by_fde's closures do."""
    h = table.header
    same, quiet_of, passed, walked = {}, {}, {}, set()
    addrs = memo.addrs
    last = len(addrs) - 1

    def quiet(i, got=None):
        q = quiet_of.get(i)
        if q is None:
            span = same[i] = compare._same_rows(table, memo, i, ends[i], got)
            q = quiet_of[i] = span is not None and compare._passes(memo, i, span, passed,
                                                                   walked, h.abi)
        return q

    def held_quiet(i, got):
        return ends[i] <= (addrs[i + 1] if i < last else compare.MASK64 + 1) and quiet(i, got)

    return compare.probe_pcs(table, limit, held_quiet), same, quiet_of, passed, walked, quiet


@given(st.one_of(v3_functions(), v3_mutated(), mutated_sections()),
       st.sampled_from([1, 2, 3, compare.MAX_PROBE_FDES]), st.integers(0, 2**40),
       st.sampled_from([(0, compare.MASK64), (0, 0x10040), (0x10010, 0x10030)]))
@settings(max_examples=400, deadline=None, suppress_health_check=list(HealthCheck))
def test_held_quiet_first_gives_the_same_probes_and_verdicts(data: bytes, limit: int, vma: int,
                                                              text: tuple[int, int]) -> None:
    got = _setup(data, vma, text)
    if got is None:
        return
    table, memo, ends = got
    ref_probes, ref_same, ref_quiet, ref_passed, ref_walked, _ = _asked_inside(
        table, memo, ends, limit)

    table2, memo2, _ends = _setup(data, vma, text)
    same, quiet_of, passed, walked = {}, {}, {}, set()

    def quiet(i, got=None):  # the reference closure, on the second table and memo
        q = quiet_of.get(i)
        if q is None:
            span = same[i] = compare._same_rows(table2, memo2, i, ends[i], got)
            q = quiet_of[i] = span is not None and compare._passes(
                memo2, i, span, passed, walked, table2.header.abi)
        return q

    held = compare._held_quiet(table2, memo2, ends, limit, same, quiet_of, passed, walked,
                               quiet)
    addrs = memo2.addrs

    def held_quiet(i, got):
        return ends[i] <= (addrs[i + 1] if i < len(addrs) - 1 else compare.MASK64 + 1) \
            and quiet(i, got)

    assert compare.probe_pcs(table2, limit, held_quiet, held) == ref_probes
    assert quiet_of == ref_quiet
    assert same == ref_same
    assert {i for i, q in quiet_of.items() if q} >= set(held)
    assert all(held[i] == ends[i] - addrs[i] for i in held)
    assert passed == ref_passed and walked == ref_walked
    # The model's memo holds what clean() reads, for every FDE taken on the fast path.
    for i in held:
        assert memo2.clean(i) == v3series.Memo(data, memo2.sec).clean(i)
