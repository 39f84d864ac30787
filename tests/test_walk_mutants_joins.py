"""fast._check_starts' second join of the FRE starts, pinned by the findings it must not lose.

The regex walk joins the start bytes of every still-accepted FDE of one FRE type and checks
them all at once (first start 0, strictly increasing, last below the size). When an FDE of
that type has an empty match (a byte where no acceptable FRE starts), the join is too short:
that FDE is sent to the reference path and the starts of the others are joined again. Only
this second join was never reached by the other tests, so a separator slipped into it
(tests/mutation.py's walk group) lived: with four bytes between the FREs of one ADDR4 FDE, its
starts 0, 0x60000000 read as 0, 0x58585858, 0x60000000, whose 'last' (by the FRE count) is
0x58585858, below the size 0x5F000000, and the fast path accepts an FDE whose real last start
is past its size, losing fre-start-beyond-size.

Here FDE 16 (ADDR4) has a first FRE whose fre_info (mangled RA on AMD64) no pattern accepts:
its block walks as [b"", ...], as many items as FREs, so only the empty match sends it back;
FDE 17 (ADDR4) is the one whose last start is past its size. The fast path must give the
reference path's findings, with the C walk and with the regex walk (which runs the joins).

Four bytes between FDEs in that join instead (mutant 70) cannot change a verdict: the join is
a whole-table prefilter, and the FDEs are checked one by one whenever it fails. A separator
lands on the first start of any later non-empty FDE (not 0: it fails); with one non-empty FDE
it can only follow it, as one extra value only with 4-byte starts and one FDE without FREs
after it, and then the test passes only if that FDE's own starts do: an equivalent mutant.
"""

from __future__ import annotations

import pytest

from sfcheck.format import FDE, build_section, encode, fde_info, make_fre
from sfcheck.format import constants as C
from sfcheck.format.decode import Decoder
from sfcheck.result import Severity
from sfcheck.rules import fre as fre_rules
from sfcheck.walk.context import SectionContext
from sfcheck.walk.fre_patterns import fre_pattern, pattern_abi
from sfcheck.walk.section import FAST_MIN, check_section

ABI = C.ABI_AMD64_LE
EMPTY, PAST = FAST_MIN, FAST_MIN + 1  # the FDE with an empty match, the one with the finding

Finding = tuple[str, Severity, str, int | None, int | None, int | None, int | None]


def _findings(data: bytes, fast_path: bool) -> list[Finding]:
    ctx = SectionContext("x", ".sframe", 0, data)
    check_section(ctx, fast=fast_path)
    ctx.finish()
    return [(f.rule, f.severity, f.message, f.location.offset, f.location.fde, f.location.pc,
             f.location.fre) for f in ctx.findings]


@pytest.fixture(scope="module")
def section() -> bytes:
    """FAST_MIN clean ADDR1 functions, then the two ADDR4 ones (sizes that need ADDR4)."""
    addr4 = fde_info(C.FRE_TYPE_ADDR4)
    fdes = [FDE(start=0x1000 + 0x40 * k, size=0x20, info=fde_info(C.FRE_TYPE_ADDR1),
                fres=(make_fre(0, (8,)), make_fre(4, (16,)))) for k in range(FAST_MIN)]
    # 00000000 81 | 42000000 01: the regex fails at 0x81 and then reads one FRE from byte 1
    # (start 0x81000000, info 0x42: one 4-byte word, 42000000's last three bytes and 01).
    fdes.append(FDE(start=0x2000, size=0x20000, info=addr4,
                    fres=(make_fre(0, (), mangled_ra=True), make_fre(0x42, ()))))
    fdes.append(FDE(start=0x30000, size=0x5F000000, info=addr4,
                    fres=(make_fre(0, (8,)), make_fre(0x60000000, (16,)))))
    return encode(build_section(C.VERSION_2, ABI, fdes, flags=C.F_FDE_SORTED))


def test_the_block_walks_to_an_empty_match_of_the_fre_count(section: bytes) -> None:
    """The premise: FDE 16's block gives its num_fres items, one of them empty, so the
    count test passes and _check_starts' length test sends it back (the second join)."""
    dec = Decoder(section)
    h = dec.header
    first, end = (h.fres_start + dec.fde(i, with_fres=False).fre_off for i in (EMPTY, PAST))
    pat = fre_pattern(4, pattern_abi(ABI), C.VERSION_2, False, fre_rules.fixed_words(h))
    assert pat.findall(section, first, end) == [b"", b"\x00\x00\x00\x81"]
    assert dec.fde(EMPTY, with_fres=False).num_fres == 2


def test_a_start_past_the_size_after_an_empty_match(section: bytes, walk: str) -> None:
    """FDE 17's second start 0x60000000 is past its size 0x5F000000: the reference path's
    finding, which the fast path keeps (the regex walk through the second join)."""
    dec = Decoder(section)
    h = dec.header
    mangled, past = dec.fde(EMPTY).fres[0], dec.fde(PAST).fres[1]
    reference = _findings(section, fast_path=False)
    assert reference == [
        ("fre-mangled-ra-abi", Severity.ERROR, "fre_info 0x81", mangled.offset, EMPTY,
         h.func_start(EMPTY, 0x2000), 0),
        ("fre-start-beyond-size", Severity.ERROR, "start 0x60000000 > function size 0x5f000000",
         past.offset, PAST, h.func_start(PAST, 0x30000), 1)]
    assert _findings(section, fast_path=True) == reference
