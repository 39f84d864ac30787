"""The RFC reader's memo keeps _find_fre's outcome per (FDE, FRE the scan stops at), found
from the running maximum of the FRE starts (sfcheck/readers/rfc2023.py): every lookup
through a shared memo equals a fresh lookup (the plain scan), over v1 sections with FREs
in and out of order, PCMASK FDEs, FREs after the PC and sections cut short, at every PC
of each function and around it, in either order."""

from __future__ import annotations

from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st
from test_readers import VMA, v1

from sfcheck.format import FDE, fde_info, make_fre
from sfcheck.format import constants as C
from sfcheck.readers import rfc2023
from sfcheck.readers.outcome import Outcome

from strategies import mutated_sections


@st.composite
def rfc_sections(draw: st.DrawFn) -> bytes:
    """v1 sections of a few FDEs, FRE starts drawn in any order (repeats too), some PCMASK,
    some without FREs, some cut short by a few bytes."""
    fd = []
    for k in range(draw(st.integers(1, 4))):
        starts = draw(st.lists(st.integers(0, 0x30), max_size=6))
        fres = tuple(make_fre(s, draw(st.sampled_from([[8], [16, -8], [-8, -16, -24]])),
                              base_sp=draw(st.booleans())) for s in starts)
        fd.append(FDE(start=0x100 + 0x40 * k, size=draw(st.sampled_from([0x20, 0x40])),
                      info=fde_info(C.FRE_TYPE_ADDR1, pcmask=draw(st.booleans())), fres=fres))
    data = v1(fd)
    return data[:len(data) - draw(st.integers(0, 3))]


@given(st.one_of(rfc_sections(), mutated_sections()), st.booleans())
@settings(max_examples=300, deadline=None, suppress_health_check=list(HealthCheck))
def test_memo_lookups_at_every_pc_equal_fresh_lookups(data: bytes, backwards: bool) -> None:
    data = data[:2] + b"\x01\x01" + data[4:7] + b"\x00" + data[8:]
    sec = rfc2023.register(data, VMA)
    assume(not isinstance(sec, Outcome))
    pcs = list(range(VMA + 0xf8, VMA + 0x210))
    if backwards:
        pcs.reverse()
    memo = rfc2023.Memo(data)
    for pc in pcs + pcs:
        assert rfc2023.lookup(data, sec, pc, memo) == rfc2023.lookup(data, sec, pc), hex(pc)


def test_a_kept_outcome_is_used_only_where_the_scan_stops_alike() -> None:
    # FREs out of order (0x10, 0x4, 0x20): the running maximum 0x10, 0x10, 0x20 sends PC
    # offsets 0x10-0x1f to the stop at FRE 2 (FRE 1 read, with its order note) and 0-0xf
    # to the stop at FRE 0 (nothing read: uninitialised, the offset named).
    data = v1([FDE(start=0x100, size=0x40, info=fde_info(C.FRE_TYPE_ADDR1),
                   fres=(make_fre(0x10, [8]), make_fre(0x4, [16]), make_fre(0x20, [24])))])
    sec = rfc2023.register(data, VMA)
    memo = rfc2023.Memo(data)
    for off in (0x30, 0x14, 0x10, 0x1f, 0x8, 0x3):
        got = rfc2023.lookup(data, sec, VMA + 0x100 + off, memo)
        assert got == rfc2023.lookup(data, sec, VMA + 0x100 + off)
    assert rfc2023.lookup(data, sec, VMA + 0x114, memo).fre == 1
    assert rfc2023.lookup(data, sec, VMA + 0x130, memo).fre == 2
    assert f"{0x8:#x}" in rfc2023.lookup(data, sec, VMA + 0x108, memo).detail
