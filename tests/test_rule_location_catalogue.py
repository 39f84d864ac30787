"""Every rule in the catalogue has a case that asserts where its finding points (issue 29
item 2): the section offset, FDE index, PC and FRE index exactly as the rule reports them, so a
one-line bug that shifts an offset by one, names the neighbouring FDE or drops a field fails.

Rules whose located cases live elsewhere are listed with the test that asserts them; the few
that carry no location beyond the file are exempt, each with its reason. Expected locations
are computed from the layout the format defines (28-byte header, v2 20-byte FDE records, v3
16-byte index entries and 5-byte attribute records, v3 starts relative to their field), not
copied from output."""

from __future__ import annotations

import struct
from collections.abc import Callable
from dataclasses import dataclass, replace

import pytest
from test_rule_locations import test_fde_fre_type_fires_on_the_fde_that_has_it
from test_rules import FDE_CASES, HEADER_CASES, amd64, build, fde, patch

from sfcheck.checker import Options, check_section_bytes
from sfcheck.format import FDE, build_section, encode, fde_info, make_fre
from sfcheck.format import constants as C
from sfcheck.result import Finding
from sfcheck.rules import RULES

HEADER = 28
V2_FDE, V3_INDEX, V3_ATTR = 20, 16, 5
VMA = 0x10000  # where the reader-model cases place the section


@dataclass(frozen=True)
class Where:
    """A finding's location, every field compared (None: the rule reports no such field)."""

    offset: int | None = None
    fde: int | None = None
    pc: int | None = None
    fre: int | None = None
    fre_pc: int | None = None
    section: str | None = ".sframe"


Make = Callable[[], list[Finding]]
LOCATED: dict[str, tuple[Make, Where]] = {}


def located(rule: str, where: Where) -> Callable[[Make], Make]:
    """Register `make` (returns the findings of one input) as `rule`'s located case."""
    def register(make: Make) -> Make:
        assert rule not in LOCATED, rule
        LOCATED[rule] = (make, where)
        return make
    return register


def section_findings(data: bytes, profile: str = "strict", vma: int = 0) -> list[Finding]:
    return check_section_bytes(data, vma=vma, options=Options(profile=profile)).findings


def v3_pc(start: int, index: int, vma: int = 0) -> int:
    """A v3 function start: relative to its index entry's start field."""
    return vma + HEADER + index * V3_INDEX + start


def fre_size(fre) -> int:
    """Bytes of an FRE with a one-byte start (ADDR1): start, info, words."""
    return 1 + 1 + len(fre.words) * (1, 2, 4)[fre.size_code]


def v3_fre_offset(fdes: list[FDE], index: int, fre: int) -> int:
    """Section offset of FRE `fre` of FDE `index` in a v3 section (ADDR1 FDEs)."""
    at = HEADER + len(fdes) * V3_INDEX
    for i, f in enumerate(fdes):
        at += V3_ATTR
        if i == index:
            return at + sum(fre_size(x) for x in f.fres[:fre])
        at += sum(fre_size(x) for x in f.fres)
    raise AssertionError(index)


# -- header and layout ---------------------------------------------------------------------

@located("header-version-obsolete", Where(offset=2))
def _v1() -> list[Finding]:
    return section_findings(amd64(1, flags=C.F_FDE_SORTED))


@located("header-auxhdr", Where(offset=7))  # sfh_auxhdr_len
def _auxhdr() -> list[Finding]:
    return section_findings(amd64(auxhdr=b"\0\0\0\0"))


@located("layout-fdeoff-nonzero", Where(offset=0x14))  # sfh_fdeoff
def _fdeoff() -> list[Finding]:
    return section_findings(amd64(fdeoff=8))


@located("layout-gap-bytes", Where(offset=HEADER + 5))  # the first nonzero byte of the gap
def _gap() -> list[Finding]:
    data = bytearray(amd64(fdeoff=8))
    data[HEADER + 5] = 0x5A
    data[HEADER + 6] = 0x5A
    return section_findings(bytes(data))


@located("layout-fde-array-overlap", Where(offset=0x18))  # sfh_freoff
def _array_overlap() -> list[Finding]:
    # FDEs moved 16 bytes on: the two 16-byte entries now end 16 bytes into the FREs.
    return section_findings(patch(amd64(), 0x14, "I", 16))


@located("layout-fre-len", Where(offset=0x10))  # sfh_fre_len
def _fre_len() -> list[Finding]:
    data = amd64()
    claimed = struct.unpack_from("<I", data, 0x10)[0] + 1
    return section_findings(patch(data, 0x10, "I", claimed) + b"\0")


@located("layout-no-fdes", Where(offset=8))  # sfh_num_fdes
def _no_fdes() -> list[Finding]:
    return section_findings(amd64(fdes=[]))


@located("layout-fre-overlap", Where(offset=HEADER + 2 * V3_INDEX, fde=1))
def _fre_overlap() -> list[Finding]:
    """FDE 1's FRE block starts where FDE 0's does (the FRE sub-section's first byte)."""
    sec = build_section(3, C.ABI_AMD64_LE, [fde(), fde(start=0x200)])
    second = replace(sec.fdes[1], fre_off=sec.fdes[0].fre_off)
    return section_findings(encode(replace(sec, fdes=(sec.fdes[0], second))))


@located("layout-fde-fres-bounds", Where(offset=HEADER + 3 * V2_FDE + 3 + 3, fde=2, pc=0x300))
def _fde_fres_bounds() -> list[Finding]:
    """FDE 2 of a v2 section claims 5 FREs where 1 is; the decoder stops where FDE 2's block
    would need its second FRE, after FDE 0's and FDE 1's three bytes (start, info, word)."""
    fdes = [fde(fres=(make_fre(0, [8]),)), fde(start=0x200, fres=(make_fre(0, [8]),)),
            fde(start=0x300, fres=(make_fre(0, [8]),))]
    data = bytearray(build(fdes, version=2))
    struct.pack_into("<I", data, HEADER + 2 * V2_FDE + 12, 5)  # FDE 2's num_fres
    return section_findings(bytes(data))


# -- FDE and FRE ---------------------------------------------------------------------------

NO_FRES = [fde(), fde(start=0x200, fres=())]


@located("fde-no-fres", Where(offset=HEADER + V2_FDE, fde=1, pc=0x200))
def _no_fres() -> list[Finding]:
    return section_findings(build(NO_FRES, version=2))


def test_fde_no_fres_v3_location() -> None:
    """In v3 the start is field-relative: FDE 1's PC moves by its entry's offset."""
    (f,) = [f for f in section_findings(build(NO_FRES)) if f.rule == "fde-no-fres"]
    assert (f.location.offset, f.location.fde, f.location.pc) == (
        HEADER + V3_INDEX, 1, v3_pc(0x200, 1))


SIZE_CODE = [fde(), fde(start=0x200)]


@located("fre-size-code", Where(offset=v3_fre_offset(SIZE_CODE, 1, 1) + 1, fde=1,
                                pc=v3_pc(0x200, 1), fre=1))
def _size_code() -> list[Finding]:
    """Size code 3 in FRE 1 of FDE 1: the finding names the info byte (after the start)."""
    data = bytearray(build(SIZE_CODE))
    data[v3_fre_offset(SIZE_CODE, 1, 1) + 1] |= 0x60
    return section_findings(bytes(data))


S390 = [fde(fres=(make_fre(0, [0]), make_fre(4, [20, -49])))]


@located("fre-s390x-regnum-v3", Where(offset=v3_fre_offset(S390, 0, 1), fde=0,
                                      pc=v3_pc(0x100, 0), fre=1, fre_pc=v3_pc(0x100, 0) + 4))
def _s390x_odd() -> list[Finding]:
    return section_findings(encode(build_section(3, C.ABI_S390X_BE, S390)))


# -- consumer rules (a reader's limits, under its profile) ---------------------------------

@located("header-version-unsupported", Where(offset=2))
def _version_unsupported() -> list[Finding]:
    return section_findings(amd64(2), "kernel")


@located("header-flags-required", Where(offset=3))
def _flags_required() -> list[Finding]:
    return section_findings(amd64(3, flags=C.F_FDE_SORTED), "kernel")


@located("header-auxhdr-rejected", Where(offset=7))
def _auxhdr_rejected() -> list[Finding]:
    return section_findings(amd64(3, auxhdr=b"\0\0\0\0"), "kernel")


@located("header-empty-counts", Where(offset=8))
def _empty_counts() -> list[Finding]:
    return section_findings(amd64(3, fdes=[]), "kernel")


@located("layout-offsets-ignored", Where(offset=0x14))
def _offsets_ignored() -> list[Finding]:
    return section_findings(amd64(2, flags=C.F_FDE_SORTED, fdeoff=8), "glibc-2.42")


@located("fde-start-duplicate", Where(fde=1, pc=v3_pc(0x100, 0)))
def _start_duplicate() -> list[Finding]:
    """v3 starts are field-relative: FDE 1's field is 16 bytes on, so start - 16 is the same
    address; a size-0 FDE 0 keeps the ranges from overlapping."""
    fdes = [fde(size=0, fres=(make_fre(0, [8]),)),
            fde(start=0x100 - V3_INDEX, size=0x20, fres=(make_fre(0, [8]),))]
    return section_findings(build(fdes), "kernel")


def _plus(*extra: FDE) -> list[FDE]:
    """Two clean FDEs, then the ones under test (so a finding on FDE 0 is a wrong index)."""
    return [fde(start=0x100, size=0x40), fde(start=0x200, size=0x20), *extra]


def _third(**kw) -> FDE:
    return FDE(**{"start": 0x300, "size": 0x10, "info": fde_info(C.FRE_TYPE_ADDR1), **kw})


def _rfc(*extra: FDE) -> list[Finding]:
    data = encode(build_section(1, C.ABI_AMD64_LE, _plus(*extra), flags=C.F_FDE_SORTED))
    return section_findings(data, "kernel-rfc-2023", VMA)


def _v3k(*extra: FDE, abi: int = C.ABI_AMD64_LE, profile: str = "kernel") -> list[Finding]:
    return section_findings(encode(build_section(3, abi, _plus(*extra))), profile, VMA)


# The reader models report the FDE whose lookup disagrees, and nothing more.
@located("fde-reader-wrong-row", Where(fde=2))
def _wrong_row() -> list[Finding]:
    """The RFC reader reads a one-byte CFA offset unsigned: fp-16 becomes fp+240."""
    return _rfc(_third(fres=(make_fre(0, [-16], base_sp=False),)))


@located("fde-reader-uninit", Where(fde=2))
def _uninit() -> list[Finding]:
    return _rfc(_third())


@located("fre-reader-walk-loops", Where(fde=2))
def _walk_loops() -> list[Finding]:
    return _rfc(_third(fres=(make_fre(0, [0]),)))


@located("fde-reader-gap-row", Where(fde=1))
def _gap_row() -> list[Finding]:
    """The RFC reader never checks a function's size: FDE 1 (FDE 0 ends where it starts)
    answers for the gap after its 0x20 bytes. The probe below the lowest function has no
    FDE to name, and is left out."""
    data = encode(build_section(1, C.ABI_AMD64_LE, [fde(size=0x40), fde(start=0x140, size=0x20)],
                                flags=C.F_FDE_SORTED))
    return [f for f in section_findings(data, "kernel-rfc-2023", VMA)
            if "(below)" not in f.message]


@located("fde-reader-lookup-fails", Where(fde=2))
def _lookup_fails() -> list[Finding]:
    """The V3 series faults on an FRE past the function (even one no lookup needs)."""
    return _v3k(_third(size=4, fres=(make_fre(0, [8]), make_fre(9, [16]))))


@located("fde-reader-lookup-fails-spec", Where(fde=2))
def _lookup_fails_spec() -> list[Finding]:
    """A v3 FDE without FREs marks an outermost frame; the V3 series fails the lookup."""
    return _v3k(_third())


@located("fre-reader-walk-stops", Where(fde=2))
def _walk_stops() -> list[Finding]:
    return _v3k(_third(fres=(make_fre(0, [12]),)))


@located("fde-reader-div-zero", Where(fde=2))
def _div_zero() -> list[Finding]:
    return _v3k(_third(info=fde_info(C.FRE_TYPE_ADDR1, pcmask=True), rep_size=0,
                       fres=(make_fre(0, [8]), make_fre(11, [16]))))


FLEX_SP = (7 << 3) | 1  # control word: register 7 (rsp), reg_p


def _flex_fres(*fres) -> list[FDE]:
    return _plus(_third(info2=C.FDE_TYPE_FLEX, fres=fres))


ONE_WORD = _flex_fres(make_fre(0, [FLEX_SP, 8]), make_fre(4, [FLEX_SP]))


@located("fre-reader-flex-one-word", Where(offset=v3_fre_offset(ONE_WORD, 2, 1), fde=2, fre=1))
def _flex_one_word() -> list[Finding]:
    return section_findings(encode(build_section(3, C.ABI_AMD64_LE, ONE_WORD)), "libsframe-2.46")


# FRE 0's CFA word has reg_p clear (the dumper names no register); FRE 1's names rsp.
UNKNOWN_ABI = _flex_fres(make_fre(0, [0, 8]), make_fre(4, [FLEX_SP, 16]))


@located("fre-reader-flex-abi", Where(offset=v3_fre_offset(UNKNOWN_ABI, 2, 1), fde=2, fre=1))
def _flex_abi() -> list[Finding]:
    return section_findings(encode(build_section(3, 9, UNKNOWN_ABI)), "libsframe-2.46")


# -- the table against the catalogue -------------------------------------------------------

# Rules whose location is asserted by a parametrised case elsewhere: each id -> the test.
ELSEWHERE: dict[str, str] = {
    **{rule: "test_rule_versions.py::test_fde_and_fre_rules_per_version" for rule, _ in FDE_CASES},
    **{rule: "test_rule_versions.py::test_header_rules_point_at_their_field"
       for rule, _ in HEADER_CASES},
    "fde-fre-type": "test_rule_locations.py::"
                    + test_fde_fre_type_fires_on_the_fde_that_has_it.__name__,
}

# Rules with no location beyond the file: what they are about is not in one section.
EXEMPT: dict[str, str] = {
    "elf-no-sframe": "the file has no SFrame section to point into",
    "elf-findings-capped": "counts the findings of the whole file",
    "elf-mixed-versions": "about the scan's files together, not one file",
}


@pytest.mark.parametrize("rule", sorted(LOCATED))
def test_rule_points_where_it_should(rule: str) -> None:
    make, where = LOCATED[rule]
    got = [f.location for f in make() if f.rule == rule]
    assert got, f"{rule} did not fire"
    loc = got[0]
    assert Where(loc.offset, loc.fde, loc.pc, loc.fre, loc.fre_pc, loc.section) == where
    assert len(got) == 1, [(g.offset, g.fde) for g in got]


def test_every_rule_has_a_located_case() -> None:
    covered = set(LOCATED) | set(ELSEWHERE)
    assert not covered & set(EXEMPT), "an exempt rule has a located case: drop the exemption"
    assert (covered | set(EXEMPT)) - set(RULES) == set(), "stale rule ids"
    assert sorted(set(RULES) - covered - set(EXEMPT)) == []
