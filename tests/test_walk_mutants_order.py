"""fast.Table's sort check on tables whose FDEs are out of PC order: only the FDE after an
out-of-order pair takes the reference path, and none does when fde-unsorted does not apply
(no sorted flag, or a relocatable object). Either slip would only send clean FDEs to the
reference path, the findings unchanged, so the verdicts are compared (tests/mutation.py's
walk group)."""

from __future__ import annotations

import pytest

from sfcheck.format import FDE, build_section, encode, fde_info, make_fre
from sfcheck.format import constants as C
from sfcheck.format.decode import Decoder
from sfcheck.walk.fast import Table, TableSource

N = 12



def _addr1(start: int) -> FDE:
    return FDE(start=start, size=0x20, info=fde_info(C.FRE_TYPE_ADDR1),
               fres=(make_fre(0, (8,)), make_fre(4, (16,))))


def _table(starts: list[int], check_order: bool, version: int, abi: int) -> Table:
    flags = C.F_FDE_SORTED if check_order else 0
    data = encode(build_section(version, abi, [_addr1(s) for s in starts], flags=flags))
    dec = Decoder(data)
    h = dec.header
    assert [dec.fde(i, with_fres=False).start for i in range(N)] == starts
    source = TableSource(data, h, N, dec.fre_limit, 0, False, check_order)
    return Table(source, 0, N, None, False)


def _starts(swapped: int | None) -> list[int]:
    """FDE starts 0x1000, 0x1040, ...; with FDEs swapped..swapped+1 exchanged."""
    starts = [0x1000 + 0x40 * k for k in range(N)]
    if swapped is not None:
        starts[swapped], starts[swapped + 1] = starts[swapped + 1], starts[swapped]
    return starts


ORDERS = [pytest.param(2, C.ABI_AMD64_LE, id="v2-le"),
          pytest.param(3, C.ABI_AMD64_LE, id="v3-le"),
          pytest.param(3, C.ABI_AARCH64_BE, id="v3-be")]


@pytest.mark.parametrize(("version", "abi"), ORDERS)
@pytest.mark.parametrize("check_order", [False, True])
def test_an_ordered_table_is_walked_fast(version: int, abi: int, check_order: bool,
                                         walk: str) -> None:
    assert list(_table(_starts(None), check_order, version, abi).bad) == [0] * N


@pytest.mark.parametrize(("version", "abi"), ORDERS)
@pytest.mark.parametrize("swapped", [0, 5, N - 2])
def test_only_the_fde_after_an_out_of_order_pair_goes_to_the_reference_path(
        version: int, abi: int, swapped: int, walk: str) -> None:
    """FDEs `swapped` and `swapped + 1` exchanged: FDE swapped + 1 starts before FDE swapped
    (fde-unsorted at swapped + 1); FDE 0 and every other FDE stay on the fast path."""
    bad = _table(_starts(swapped), True, version, abi).bad
    assert [i for i, b in enumerate(bad) if b] == [swapped + 1]


@pytest.mark.parametrize(("version", "abi"), ORDERS)
@pytest.mark.parametrize("swapped", [0, 5, N - 2])
def test_out_of_order_fdes_stay_fast_when_the_table_need_not_be_sorted(
        version: int, abi: int, swapped: int, walk: str) -> None:
    """No sorted flag (or a .o): fde-unsorted does not apply, nothing to send anywhere."""
    assert list(_table(_starts(swapped), False, version, abi).bad) == [0] * N
