"""format/fre_blocks: with no block ends given (table order), FreBlocks.run reads each run's
ends from the table as it walks; the walk is the one a kept per-FDE list of ends gave, for
whole tables, runs of any split, and damaged sections."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from sfcheck.errors import DecodeError
from sfcheck.format import Decoder, encode
from sfcheck.format.fre_blocks import FreBlocks

from strategies import mutated_sections, sections


def walk(data: bytes, cuts: list[int], kept: bool) -> list:
    """What run() hands out over FDEs split at `cuts`; `kept`: with the ends as the full
    list the reader used to build (next FDE's block start, then the end of the FRE data)."""
    try:
        dec = Decoder(data)
        blocks = FreBlocks(dec)
    except DecodeError as exc:
        return [("error", exc.message)]
    h = dec.header
    n = h.num_fdes
    if kept:
        offs = [rec[2] for rec in blocks.records(1, n)]
        blocks.nexts = [*(h.fres_start + o for o in offs), dec.fre_limit]
    out: list = []
    bounds = sorted({0, n, *(min(c, n) for c in cuts)})
    try:
        for a, b in zip(bounds, bounds[1:], strict=False):
            blocks.run(a, b, lambda i, rec, info, info2, asz, toks: out.append(
                ("tokens", i, rec, info, info2, asz, toks)),
                lambda i, fde: out.append(("decoded", i, fde)))
    except DecodeError as exc:
        out.append(("error", exc.message))
    return [*out, blocks.walked]


@settings(max_examples=150, deadline=None)
@given(sections(), st.lists(st.integers(0, 40), max_size=4))
def test_valid_sections(sec, cuts) -> None:
    data = encode(sec)
    got = walk(data, cuts, kept=False)
    assert got == walk(data, cuts, kept=True)
    # a valid section: every FDE handed out once, in order, none stopping the walk
    assert [item[1] for item in got[:-1]] == list(range(len(sec.fdes)))


@settings(max_examples=200, deadline=None)
@given(mutated_sections(), st.lists(st.integers(0, 40), max_size=3))
def test_damaged_sections(data, cuts) -> None:
    assert walk(data, cuts, kept=False) == walk(data, cuts, kept=True)
