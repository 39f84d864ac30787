"""fde_shapes.noisy_fdes on a table past DIRECT_MAX FDEs, where the verdicts are looked up
per column instead of per shape: FDE counts that vary (one FDE without FREs, fde-no-fres) give
the reference path's findings on the fast path, C and regex walk (tests/mutation.py's walk
group: the per-column path was never reached)."""

from __future__ import annotations

import pytest

from sfcheck.format import FDE, build_section, encode, fde_info, make_fre
from sfcheck.format import constants as C
from sfcheck.walk import fde_shapes
from sfcheck.walk.context import SectionContext
from sfcheck.walk.section import check_section

N = fde_shapes.DIRECT_MAX + 8
EMPTY = 4100



def _findings(data: bytes, fast_path: bool) -> list[tuple]:
    ctx = SectionContext("x", ".sframe", 0, data)
    check_section(ctx, fast=fast_path)
    ctx.finish()
    return [(f.rule, f.message, f.location.fde, f.location.offset) for f in ctx.findings]


@pytest.fixture(scope="module")
def section() -> bytes:
    def fde(k: int) -> FDE:
        fres = () if k == EMPTY else tuple(make_fre(4 * j, (8,)) for j in range(1 + k % 3))
        return FDE(start=0x1000 + 0x20 * k, size=0x20, info=fde_info(C.FRE_TYPE_ADDR1),
                   fres=fres)
    return encode(build_section(C.VERSION_2, C.ABI_AMD64_LE, [fde(k) for k in range(N)],
                                flags=C.F_FDE_SORTED))


def test_a_table_past_direct_max_on_the_fast_path(section: bytes, walk: str) -> None:
    reference = _findings(section, fast_path=False)
    assert [(r, fde) for r, _m, fde, _o in reference] == [("fde-no-fres", EMPTY)]
    assert _findings(section, fast_path=True) == reference
