"""consumer.check_consumer's header-level reader rules on hand-built headers and profiles, each
finding whole (rule, severity, message, location): versions, byte order both ways, the
foreign-order walk, required flags per version, equal starts only where the profile lists the
rule (the mutation run's survivors)."""

from __future__ import annotations

import pytest

from sfcheck.elf.model import ElfSFrameInfo
from sfcheck.format import constants as C
from sfcheck.format.model import Header
from sfcheck.profiles import Profile
from sfcheck.result import Finding, Location, Severity
from sfcheck.rules.consumer import check_consumer
from sfcheck.walk.context import SectionContext

E = Severity.ERROR
SORTED, PCREL = C.F_FDE_SORTED, C.F_FDE_FUNC_START_PCREL


def profile(*rules: str, **kw) -> Profile:
    return Profile("t", "test", "R", consumer=dict.fromkeys(rules), **kw)


def header(version: int = 3, flags: int = SORTED | PCREL, big: bool = False) -> Header:
    return Header(version, flags, C.ABI_AMD64_LE, 0, 0, 1, 1, 0, 0, 0, big)


def elf(little: bool = True) -> ElfSFrameInfo:
    return ElfSFrameInfo("f", "ET_DYN", "EM_X86_64", 62, little, 64, (), (), (), ())


def run(p: Profile, h: Header, info: ElfSFrameInfo | None = None,
        ranges: list[tuple[int, int, int]] | None = None, before: list[Finding] = ()
        ) -> list[tuple[str, Severity, str, int | None, int | None, int | None]]:
    ctx = SectionContext("f", ".sframe", 0, b"", ranges=ranges or [])
    ctx.findings.extend(before)
    check_consumer(ctx, p, h, info)
    return [(f.rule, f.severity, f.message, f.location.offset, f.location.fde, f.location.pc)
            for f in ctx.findings[len(before):]]


def test_a_version_the_reader_does_not_take_names_those_it_does() -> None:
    p = profile("header-version-unsupported", versions=frozenset({3, 2}))
    assert run(p, header(1)) == [
        ("header-version-unsupported", E, "R rejects version 1 (reads v2, v3)", 2, None, None)]
    assert run(p, header(2)) == []


@pytest.mark.parametrize(("big", "little", "message"), [
    (True, True, "R rejects a big-endian section in a little-endian file"),
    (False, False, "R rejects a little-endian section in a big-endian file"),
])
def test_byte_order_both_ways(big: bool, little: bool, message: str) -> None:
    p = profile("header-byte-order-elf")
    assert run(p, header(big=big), elf(little)) == [
        ("header-byte-order-elf", E, message, 0, None, None)]
    assert run(p, header(big=big), elf(not little)) == []


WALK_FAILED = [Finding("layout-fre-len", E, "x", Location("f")),
               Finding("fde-fre-type", E, "y", Location("f")),
               Finding("fre-cfa-offset", Severity.WARNING, "z", Location("f"))]


def test_the_foreign_order_walk_names_what_refuses_it() -> None:
    p = profile("header-foreign-order-refused")
    assert run(p, header(big=True), elf(True), before=WALK_FAILED) == [
        ("header-foreign-order-refused", E, "R swaps a big-endian section only after a bounded "
         "walk, which refuses it (fde-fre-type, layout-fre-len)", 0, None, None)]
    assert run(p, header(big=False), elf(True), before=WALK_FAILED) == []   # native order


def test_the_foreign_order_walk_only_where_the_profile_lists_it() -> None:
    p = profile("header-flags-required")
    assert run(p, header(big=True), elf(True), before=WALK_FAILED) == []


def test_required_flags_name_the_missing_ones() -> None:
    p = profile("header-flags-required", required_flags={3: SORTED | PCREL})
    assert run(p, header(3, SORTED)) == [
        ("header-flags-required", E, "R needs FDE_FUNC_START_PCREL; flags are 0x1 "
         "(FDE_SORTED)", 3, None, None)]
    assert run(p, header(3, SORTED | PCREL)) == []
    assert run(p, header(2, 0)) == []   # nothing required of v2


def test_equal_starts_only_where_the_profile_lists_the_rule() -> None:
    ranges = [(0x1000, 8, 0), (0x1000, 8, 1), (0x1010, 8, 2)]
    listed = profile("fde-start-duplicate", increasing_starts=True)
    assert run(listed, header(), ranges=ranges) == [
        ("fde-start-duplicate", E, "function start 0x1000 equals the previous FDE's; R with "
         "CONFIG_SFRAME_VALIDATION rejects the section", None, 1, 0x1000)]
    assert run(profile("header-flags-required", increasing_starts=True), header(),
               ranges=ranges) == []


# -- routing to the section-wide checks ----------------------------------------------------

REG = (7 << 3) | 1  # a FLEX control word naming register 7


def flex_data(abi: int) -> bytes:
    from sfcheck.format import FDE, build_section, encode, fde_info, make_fre

    fres = (make_fre(0, [REG]), make_fre(4, [REG, 8]))  # one word, then a CFA register
    fdes = [FDE(0x1000, 0x40, fde_info(C.FRE_TYPE_ADDR1), fres, info2=C.FDE_TYPE_FLEX)]
    data = encode(build_section(3, C.ABI_AMD64_LE, fdes))
    return data[:4] + bytes([abi]) + data[5:]  # sfh_abi_arch


def flex_rules(data: bytes, p: Profile) -> list[tuple[str, int | None, int | None]]:
    from sfcheck.format.decode import decode_header

    ctx = SectionContext("f", ".sframe", 0, data)
    check_consumer(ctx, p, decode_header(data), None)
    return [(f.rule, f.location.fde, f.location.fre) for f in ctx.findings]


@pytest.mark.parametrize(("listed", "found"), [
    (("fre-reader-flex-one-word",), [("fre-reader-flex-one-word", 0, 0)]),
    (("fre-reader-flex-abi",), [("fre-reader-flex-abi", 0, 1)]),
    (("fre-reader-flex-one-word", "fre-reader-flex-abi"),
     [("fre-reader-flex-one-word", 0, 0), ("fre-reader-flex-abi", 0, 1)]),
    ((), []),
])
def test_either_flex_dump_rule_alone_runs_the_dump(listed: tuple[str, ...],
                                                   found: list) -> None:
    assert flex_rules(flex_data(0x7F), profile(*listed)) == found


def test_text_segments_name_the_reader() -> None:
    from sfcheck.elf.model import LoadSegment

    loads = (LoadSegment(2, 0x1000, 0x1000, 0x100, 0x100, 5),
             LoadSegment(3, 0x2000, 0x2000, 0x100, 0x100, 5))
    inf = ElfSFrameInfo("f", "ET_DYN", "EM_X86_64", 62, True, 64, (), (), loads, ())
    p = profile("elf-text-segments", one_text_segment=True)
    assert run(p, header(), inf, ranges=[(0x1000, 8, 0), (0x2000, 8, 1)]) == [
        ("elf-text-segments", E, "function starts lie in 2 executable segments: PT_LOAD[2] "
         "(from FDE 0), PT_LOAD[3] (from FDE 1); R with CONFIG_SFRAME_VALIDATION rejects every "
         "registration", None, None, None)]


def test_the_reader_model_gets_the_files_segments() -> None:
    """check_consumer hands the ELF file to the model: the kernel registers each PF_X
    segment, so a file cut into two reports what the model says of those two."""
    from test_rules_mutants_consumer import expected, load, split_text

    from sfcheck.format.decode import decode_header
    from sfcheck.profiles import get
    from sfcheck.readers import compare
    from sfcheck.rules.consumer import MODEL_RULES

    info, data, vma = load("v3/exe_static")
    everything = list(compare.run_v3(data, vma, []))
    split, lo, mid, cut = split_text(info, [d.pc for d in everything])
    p = get("kernel")
    want = expected(list(compare.run_v3(data, vma, [(lo, mid), (mid, cut)])), p)
    assert want and want != expected(everything, p)
    ctx = SectionContext("f", ".sframe", vma, data)
    check_consumer(ctx, p, decode_header(data), split)
    model = {r.id for r in MODEL_RULES.values()}
    assert [(f.rule, f.message, f.location.fde) for f in ctx.findings if f.rule in model] == want
