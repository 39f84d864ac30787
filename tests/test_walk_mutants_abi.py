"""The fast path's FRE walk built for the section's ABI: on s390x an RA word is a stack slot
(even) or a register (odd), which the s390x rules judge and the AMD64 patterns would pass as
an offset. A table whose one FRE names a register in its RA word is walked both ways (C and
regex walk) and must give the reference path's findings (tests/mutation.py's walk group:
fast.Table handing the walk another ABI's patterns lost them)."""

from __future__ import annotations

import pytest

from sfcheck.format import FDE, build_section, encode, fde_info, make_fre
from sfcheck.format import constants as C
from sfcheck.format.decode import Decoder
from sfcheck.walk import section
from sfcheck.walk.context import SectionContext

N, ODD = 20, 5  # at least section.FAST_MIN FDEs: the fast path is tried



def _fde(k: int, ra: int) -> FDE:
    """A 32-byte function whose second row saves RA (word 1) and FP (word 2); the CFA word
    0 is SP + 160 on s390x (stored (offset - 160) / 8)."""
    return FDE(start=0x1000 + 0x40 * k, size=0x20, info=fde_info(C.FRE_TYPE_ADDR1),
               fres=(make_fre(0, (0,)), make_fre(4, (0, ra, 8))))


def _section(version: int, ra: int) -> bytes:
    fdes = [_fde(k, ra if k == ODD else 8) for k in range(N)]
    return encode(build_section(version, C.ABI_S390X_BE, fdes, flags=C.F_FDE_SORTED))


def _findings(data: bytes, fast_path: bool) -> list[tuple]:
    ctx = SectionContext("x", ".sframe", 0, data)
    section.check_section(ctx, fast=fast_path)
    ctx.finish()
    return [(f.rule, f.message, f.location.fde, f.location.offset, f.location.pc,
             f.location.fre) for f in ctx.findings]


def _where(data: bytes) -> tuple[int, int]:
    """FDE ODD's second FRE: its section offset and the FDE's function start."""
    dec = Decoder(data)
    return dec.fde(ODD).fres[1].offset, dec.header.func_start(ODD, 0x1000 + 0x40 * ODD)


@pytest.mark.parametrize(("version", "ra", "found"), [
    (3, 6, None),                                         # even: a stack slot
    (3, 5, ("fre-s390x-regnum-v3", "word 1 is 5")),       # v3 has no register form
    (2, 63, None),                                        # register 31, the highest
    (2, 65, ("fre-register", "word 1 encodes register 32")),
])
def test_s390x_ra_words_on_the_fast_path(version: int, ra: int, found: tuple | None,
                                         walk: str) -> None:
    assert N >= section.FAST_MIN
    data = _section(version, ra)
    reference = _findings(data, fast_path=False)
    offset, pc = _where(data)
    assert reference == ([] if found is None else [(*found, ODD, offset, pc, 1)])
    assert _findings(data, fast_path=True) == reference
