"""Reader models (sfcheck/readers/): the 2023 RFC reader and the V3 series, run against the
reference table; each known behaviour of the shared facts is found on a section built for it,
and a clean section gets nothing."""

from __future__ import annotations

from dataclasses import replace

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from sfcheck.checker import Options, check_section_bytes
from sfcheck.format import FDE, build_section, encode, fde_info, make_fre
from sfcheck.format import constants as C
from sfcheck.readers import compare, rfc2023, v3series
from sfcheck.readers.outcome import DIV0, EFAULT, PAST, REFUSED, ROW, Outcome
from sfcheck.result import Severity

from strategies import mutated_sections, mutations, sections

VMA = 0x10000


def fdes(*extra: FDE) -> list[FDE]:
    return [
        FDE(start=0x100, size=0x40, info=fde_info(C.FRE_TYPE_ADDR1),
            fres=(make_fre(0, [8]), make_fre(1, [16]), make_fre(4, [16, -16], False))),
        FDE(start=0x200, size=0x20, info=fde_info(C.FRE_TYPE_ADDR1),
            fres=(make_fre(0, [8]),)),
        *extra,
    ]


def v1(fd: list[FDE] | None = None, **kw) -> bytes:
    return encode(build_section(1, C.ABI_AMD64_LE, fdes() if fd is None else fd, **kw))


def rules(data: bytes, profile: str = "kernel-rfc-2023") -> dict[str, Severity]:
    got: dict[str, Severity] = {}
    res = check_section_bytes(data, vma=VMA, options=Options(profile=profile))
    for f in res.findings:
        got[f.rule] = max(got.get(f.rule, f.severity), f.severity)
    return got


def errors(data: bytes, profile: str = "kernel-rfc-2023") -> set[str]:
    return {r for r, s in rules(data, profile).items() if s >= Severity.ERROR}


def kinds(data: bytes) -> set[str]:
    return {d.kind for d in compare.run_rfc2023(data, VMA)}


def test_clean_sorted_v1_passes():
    assert errors(v1()) == set()
    # Only PCs no function holds are reported, as warnings (gaps, below the first).
    assert kinds(v1()) <= {compare.GAP}


def test_flags_zero_refused_other_flags_register_unsorted():
    assert "header-reader-refused" in errors(v1(flags=0))
    swapped = list(reversed(fdes()))
    # FRAME_POINTER without SORTED: registered (the `!flags & SORTED` bug), then the binary
    # search over the unsorted table answers with the wrong function.
    data = v1(swapped, flags=C.F_FRAME_POINTER)
    sec = rfc2023.register(data, VMA)
    assert not isinstance(sec, Outcome)
    assert {compare.WRONG, compare.UNINIT_READ} & kinds(data)
    assert "fde-reader-wrong-row" in errors(data) or "fde-reader-uninit" in errors(data)


def test_pcmask_takes_last_fre():
    plt = FDE(start=0x300, size=0x20, info=fde_info(C.FRE_TYPE_ADDR1, pcmask=True),
              fres=(make_fre(0, [8]), make_fre(11, [16])))
    data = v1(fdes(plt))
    found = [d for d in compare.run_rfc2023(data, VMA) if d.kind == compare.WRONG]
    assert found and all(d.fde == 2 for d in found)
    assert "sp+16" in found[0].message and "sp+8" in found[0].message


def test_fde_without_fres_and_late_first_fre_are_uninitialised():
    empty = FDE(start=0x300, size=0x10, info=fde_info(C.FRE_TYPE_ADDR1))
    late = FDE(start=0x400, size=0x10, info=fde_info(C.FRE_TYPE_ADDR1),
               fres=(make_fre(4, [8]),))
    data = v1(fdes(empty, late))
    found = {(d.kind, d.fde) for d in compare.run_rfc2023(data, VMA)}
    assert (compare.UNINIT_READ, 2) in found
    assert (compare.UNINIT_READ, 3) in found
    assert "fde-reader-uninit" in errors(data)


def test_negative_narrow_cfa_offset_read_unsigned():
    neg = FDE(start=0x300, size=0x10, info=fde_info(C.FRE_TYPE_ADDR1),
              fres=(make_fre(0, [-16], base_sp=False),))
    data = v1(fdes(neg))
    out = rfc2023.lookup(data, rfc2023.register(data, VMA), VMA + 0x300)
    assert out.kind == ROW and out.cfa.offset == 240
    assert "fde-reader-wrong-row" in errors(data)
    wide = FDE(start=0x300, size=0x10, info=fde_info(C.FRE_TYPE_ADDR1),
               fres=(make_fre(0, [-16], base_sp=False, size_code=2),))
    d2 = v1(fdes(wide))
    assert rfc2023.lookup(d2, rfc2023.register(d2, VMA), VMA + 0x300).cfa.offset == -16


def test_cfa_sp_zero_walker_loops():
    zero = FDE(start=0x300, size=0x10, info=fde_info(C.FRE_TYPE_ADDR1),
               fres=(make_fre(0, [0]),))
    assert "fre-reader-walk-loops" in errors(v1(fdes(zero)))


def test_later_versions_rejected():
    for version in (2, 3):
        data = encode(build_section(version, C.ABI_AMD64_LE, fdes()))
        assert "header-version-unsupported" in errors(data)
        assert "fde-reader-wrong-row" not in errors(data)


def test_fre_start_over_2g_always_chosen():
    big = FDE(start=0x300, size=0x10, info=fde_info(C.FRE_TYPE_ADDR4),
              fres=(make_fre(0, [8]), make_fre(0x80000000, [16])))
    data = v1(fdes(big))
    out = rfc2023.lookup(data, rfc2023.register(data, VMA), VMA + 0x300)
    assert out.kind == ROW and out.fre == 1


def v3_pcmask(rep: int) -> bytes:
    plt = FDE(start=0, size=0x20, info=fde_info(C.FRE_TYPE_ADDR1, pcmask=True), rep_size=rep,
              fres=(make_fre(0, [8]), make_fre(11, [16])))
    sec = build_section(3, C.ABI_AMD64_LE, [plt])
    h = sec.header
    # PC-relative start: the function begins 0x100 before the section.
    fde0 = replace(sec.fdes[0], start=-0x100 - h.fdes_start)
    return encode(replace(sec, fdes=(fde0,)))


def test_v3_rep_size_zero_passes_validation_then_divides_by_zero():
    data = v3_pcmask(0)
    text = (VMA - 0x100, VMA - 0x100 + 0x20)
    sec = v3series.register(data, VMA, text, validate=True)
    assert not isinstance(sec, Outcome), sec
    assert v3series.lookup(data, sec, VMA - 0x100 + 1).kind == DIV0
    assert rules(data, "kernel").get("fde-reader-div-zero") == Severity.ERROR
    ok = v3_pcmask(16)
    sec = v3series.register(ok, VMA, text, validate=True)
    assert v3series.lookup(ok, sec, VMA - 0x100 + 16 + 12).fre == 1
    assert "fde-reader-div-zero" not in rules(ok, "kernel")


def test_v3_text_end_revisions():
    data = v3_pcmask(16)
    at_end = (VMA - 0x200, VMA - 0x100)  # the function starts exactly at text_end
    old = v3series.register(data, VMA, at_end, validate=True)
    new = v3series.register(data, VMA, at_end, validate=True,
                            revision=v3series.TEXT_END_ACCEPTS_EQUAL)
    assert isinstance(old, Outcome) and old.kind == REFUSED
    assert not isinstance(new, Outcome)


def test_v3_unsorted_registration_and_lookup():
    data = encode(build_section(3, C.ABI_AMD64_LE, fdes(), flags=C.F_FDE_FUNC_START_PCREL))
    assert isinstance(v3series.register(data, 0, (0, 1 << 64)), Outcome)


KINDS = {compare.REFUSE, compare.WRONG, compare.UNINIT_READ, compare.PAST_READ, compare.FAILS,
         compare.FAILS_SPEC, compare.DIVZERO, compare.GAP, compare.WALK, compare.WALK_WARN,
         compare.WALK_STOPS}


@settings(max_examples=60, deadline=None, suppress_health_check=list(HealthCheck))
@given(sections(versions=(3,)))
def test_v3_model_agrees_with_reference_on_valid_sections(sec):
    """Valid v3 sections with strictly increasing function starts (equal starts are
    fde-start-duplicate): the V3 reader and the reference pick the same row at every probed
    PC inside a function."""
    starts = [sec.func_start(i) for i in range(len(sec.fdes))]
    assume(all(a < b for a, b in zip(starts, starts[1:], strict=False)))  # else fde-start-dup
    # A function below address 0 is not valid either: the kernel adds in unsigned long, so
    # it wraps to the top of the address space and the table is no longer sorted for it.
    assume(not starts or VMA + starts[0] >= 0)
    data = encode(sec)
    bad = [d for d in compare.run_v3(data, VMA)
           if d.kind not in (compare.REFUSE, compare.FAILS_SPEC, compare.GAP, compare.WALK_STOPS,
                             compare.WALK_WARN)]
    assert bad == []


@settings(max_examples=150, deadline=None, suppress_health_check=list(HealthCheck))
@given(mutated_sections())
def test_models_never_raise_on_hostile_bytes(data):
    found = [*compare.run_rfc2023(data, VMA), *compare.run_v3(data, VMA, validate=True),
             *compare.run_v3(data, VMA)]
    assert all(d.kind in KINDS and d.message for d in found)


def test_profiles_command_shows_every_fact_with_its_source(capsys) -> None:
    from sfcheck.cli import main
    from sfcheck.profiles import PROFILES
    assert main(["profiles", "kernel-rfc-2023"]) == 0
    out = capsys.readouterr().out
    p = PROFILES["kernel-rfc-2023"]
    assert p.consumer and p.notes
    for rid, fact in p.consumer.items():
        assert f"{rid}: {fact.text} [{fact.source}]" in out
    for n in p.notes:
        assert f"{n.text} [{n.source}]" in out
    assert "versions: v1" in out


def test_kernel_profile_model_under_elf(tmp_path) -> None:
    """A linked v3 file whose PLT FDE says rep_size 0: an error under `kernel` only."""
    from sfcheck.checker import check_elf
    from sfcheck.elf.loader import load_elf
    from sfcheck.format.decode import Decoder

    from helpers import CORPUS
    src = CORPUS / "v3" / "exe_pie"
    sec = load_elf(src).sections[0]
    dec = Decoder(sec.data)
    h = dec.header
    plt = next(i for i in range(h.num_fdes) if dec.fde(i).pcmask)
    pos = sec.offset + h.fres_start + dec.fde(plt).fre_off + 4  # the attribute's rep_size
    data = bytearray(src.read_bytes())
    assert data[pos] == dec.fde(plt).rep_size != 0
    data[pos] = 0
    (tmp_path / "exe").write_bytes(bytes(data))
    opts = Options(profile="kernel", disable={"semantic", "defect"})
    got = {f.rule for f in check_elf(tmp_path / "exe", options=opts).findings}
    assert "fde-reader-div-zero" in got
    strict = {f.rule for f in check_elf(tmp_path / "exe").findings}
    assert "fde-reader-div-zero" not in strict


def test_v3_flex_ra_rule_without_deref_hits_warn_on_once() -> None:
    """A flex FRE whose RA control word has neither reg_p nor deref_p: the walker's switch has
    no case for "CFA + offset" and reaches WARN_ON_ONCE; with deref_p it is a normal row."""
    def flex(ra_ctl: int) -> bytes:
        fre = make_fre(0, [(7 << 3) | 1, 16, ra_ctl, -8])  # CFA = rsp+16; RA rule, offset -8
        f = FDE(start=0, size=0x10, info=fde_info(C.FRE_TYPE_ADDR1), fres=(fre,),
                info2=C.FDE_TYPE_FLEX)
        sec = build_section(3, C.ABI_AMD64_LE, [f], fixed_ra=0)
        return encode(replace(sec, fdes=(replace(sec.fdes[0], start=-0x100 - 28),)))
    bad = {d.kind for d in compare.run_v3(flex(1 << 3), VMA)}
    assert compare.WALK_WARN in bad
    assert "fre-reader-warn" in errors(flex(1 << 3), "kernel")
    assert compare.WALK_WARN not in {d.kind for d in compare.run_v3(flex(2), VMA)}


def test_fre_order_never_checked_by_the_rfc_reader() -> None:
    unordered = FDE(start=0x300, size=0x20, info=fde_info(C.FRE_TYPE_ADDR1),
                    fres=(make_fre(0, [8]), make_fre(8, [16]), make_fre(4, [24])))
    found = [d for d in compare.run_rfc2023(v1(fdes(unordered)), VMA)
             if d.fde == 2 and d.kind == compare.WRONG]
    assert found and found[0].cause == "fre-order"
    # The V3 series checks the order: -EFAULT, where the reference also refuses the FDE.
    assert not [d for d in compare.run_rfc2023(v1(), VMA) if d.cause == "fre-order"]


def test_stacktrace_setup_hands_its_ranges_to_sframe_add_section() -> None:
    from sfcheck.readers.v3series import (
        STACKTRACE_REGISTER_SFRAME as REG,
    )
    from sfcheck.readers.v3series import (
        STACKTRACE_UNREGISTER_SFRAME as UNREG,
    )
    from sfcheck.readers.v3series import (
        stacktrace_setup,
    )

    assert stacktrace_setup(REG, 0x1000, 0x200, 0x4000, 0x100) == (
        (0x1000, 0x1200), (0x4000, 0x4100))
    for op in (UNREG, 0, 3):  # only registration registers; others say why
        out = stacktrace_setup(op, 0x1000, 0x200, 0x4000, 0x100)
        assert isinstance(out, Outcome) and out.kind == REFUSED
    assert "neither register nor unregister" in stacktrace_setup(3, 1, 1, 1, 1).detail
    # a zero start, or an end that wraps to exactly 0: -EINVAL before any read
    for args in ((0, 0x200, 0x4000, 0x100), (0x1000, 0x200, 0, 0x100),
                 (0x1000, (1 << 64) - 0x1000, 0x4000, 0x100),
                 (0x1000, 0x200, 0x4000, (1 << 64) - 0x4000)):
        out = stacktrace_setup(REG, *args)
        assert isinstance(out, Outcome) and "zero-length" in out.detail, args
    # an end that wraps below the start passes this check (the header check refuses it)
    assert stacktrace_setup(REG, 0x1000, (1 << 64) - 0x800, 0x4000, 0x100) == (
        (0x1000, 0x800), (0x4000, 0x4100))


def test_memo_keeps_a_read_past_the_section_for_the_lookup_that_makes_it():
    # The last FRE's start is the section's last byte: a lookup that stops before it never
    # reads its info byte; one at or after it does, and must still read past the section.
    data = v1([FDE(start=0x100, size=0x40, info=fde_info(C.FRE_TYPE_ADDR1),
                   fres=(make_fre(0, [8]), make_fre(0x10, [16])))])
    data = data[:-2]  # drop the last FRE's info and CFA offset, keep its start
    sec = rfc2023.register(data, VMA)
    assert not isinstance(sec, Outcome)
    memo = rfc2023.Memo(data)
    assert rfc2023.lookup(data, sec, VMA + 0x104, memo).kind == ROW
    out = rfc2023.lookup(data, sec, VMA + 0x110, memo)
    assert out.kind == PAST and "FRE 1 info" in out.detail
    assert out == rfc2023.lookup(data, sec, VMA + 0x110)
    assert rfc2023.lookup(data, sec, VMA + 0x104, memo).kind == ROW


@given(mutated_sections())
@settings(max_examples=60, deadline=None, suppress_health_check=list(HealthCheck))
def test_memo_lookups_equal_fresh_lookups(data: bytes):
    # As v1 (the RFC reads only v1) with flags and auxhdr_len the reader registers.
    data = data[:2] + b"\x01\x01" + data[4:7] + b"\x00" + data[8:]
    sec = rfc2023.register(data, VMA)
    assume(not isinstance(sec, Outcome))
    pcs = [p.pc for p in compare.probe_pcs(compare.SFrameTable(data, vma=VMA))]
    memo = rfc2023.Memo(data)
    for pc in [*reversed(pcs), *pcs, VMA, VMA + 0x1000]:
        assert rfc2023.lookup(data, sec, pc, memo) == rfc2023.lookup(data, sec, pc)


@st.composite
def v3_mutated(draw: st.DrawFn) -> bytes:
    """v3 sections, valid or damaged, with the flags and auxhdr_len the V3 series registers."""
    valid = encode(draw(sections(versions=(3,))))
    data = bytearray(draw(st.one_of(st.just(valid), mutations(valid))))
    if len(data) > 7:
        data[3] |= C.F_FDE_SORTED | C.F_FDE_FUNC_START_PCREL
        data[7] = 0
    return bytes(data)


@given(v3_mutated(), st.booleans())
@settings(max_examples=80, deadline=None, suppress_health_check=list(HealthCheck))
def test_v3_memo_lookups_equal_reference_lookups(data: bytes, narrow: bool):
    # The Memo's lookup is derived (bisections over records read once); memo=None is the
    # reference, reading the section afresh the way the reader does.
    pcs = [p.pc for p in compare.probe_pcs(compare.SFrameTable(data, vma=VMA))]
    text = (min(pcs), max(pcs)) if narrow and pcs else (0, compare.MASK64)
    sec = v3series.register(data, VMA, text)
    assume(not isinstance(sec, Outcome))
    memo = v3series.Memo(data, sec)
    for pc in [*reversed(pcs), *pcs, VMA, text[0]]:
        assert v3series.lookup(data, sec, pc, memo) == v3series.lookup(data, sec, pc)


@pytest.mark.parametrize("second", [0x20, 0x21])
def test_v3_memo_raises_a_kept_fault_again(second: int):
    # FRE 1 starting past the function's size (0x20) is a fault of __read_fre, whatever the
    # PC (it is read before the scan compares its start); at the size it is not. The memo
    # keeps the fault and every later lookup in the FDE meets it again.
    f = FDE(start=0, size=0x20, info=fde_info(C.FRE_TYPE_ADDR1),
            fres=(make_fre(0, [8]), make_fre(second, [16])))
    sec_ = build_section(3, C.ABI_AMD64_LE, [f])
    fde0 = replace(sec_.fdes[0], start=-0x100 - sec_.header.fdes_start)
    data = encode(replace(sec_, fdes=(fde0,)))
    sec = v3series.register(data, VMA, (0, compare.MASK64))
    assert not isinstance(sec, Outcome)
    memo = v3series.Memo(data, sec)
    pc = VMA - 0x100 + 4
    outs = [v3series.lookup(data, sec, pc + k, memo) for k in (0, 8, 0)]
    if second > 0x20:
        assert outs[0].kind == EFAULT and "beyond the function size" in outs[0].detail
    else:
        assert outs[0].kind == ROW and outs[0].fre == 0
    assert outs == [v3series.lookup(data, sec, pc + k) for k in (0, 8, 0)]


def _assert_run_v3_equals_reference(data: bytes, two_ranges: bool, validate: bool) -> None:
    """run_v3's derived paths give reference=True's Disagreements in its order, over the
    whole address space or two text ranges split at the middle probe."""
    texts: list[tuple[int, int]] = []
    if two_ranges:
        pcs = sorted(p.pc for p in compare.probe_pcs(compare.SFrameTable(data, vma=VMA)))
        if pcs:
            mid = pcs[len(pcs) // 2]
            texts = [(0, mid), (mid, compare.MASK64)]
    fast = list(compare.run_v3(data, VMA, texts, validate))
    assert fast == list(compare.run_v3(data, VMA, texts, validate, reference=True))


@given(st.one_of(st.builds(encode, sections(versions=(3,))), v3_mutated()), st.booleans(),
       st.booleans())
@settings(max_examples=120, deadline=None, suppress_health_check=list(HealthCheck))
def test_v3_memoised_walk_verdicts_equal_the_reference(data: bytes, two_ranges: bool,
                                                       validate: bool):
    # run_v3 skips _v3_walk for a rule triple it already passed; reference=True walks every
    # row. Same Disagreements, same order, on valid and damaged sections.
    _assert_run_v3_equals_reference(data, two_ranges, validate)


def test_v3_memoised_walk_reports_every_row_it_stops_at() -> None:
    """A function whose row passes (CFA = SP+16), then three whose rows share one rule the
    walker stops at (CFA = SP-8), then one it warns at: a verdict is kept only for the rules
    of a row that passed, so every such row is reported, as the reference walk reports it."""
    good = FDE(start=0, size=0x10, info=fde_info(C.FRE_TYPE_ADDR1),
               fres=(make_fre(0, [16]),))
    fres = (make_fre(0, [-8]),)
    fd = [FDE(start=0x100 * k, size=0x10, info=fde_info(C.FRE_TYPE_ADDR1), fres=fres)
          for k in range(1, 4)]
    # The same CFA rule as the good row, but an RA rule the walker warns at: the verdict
    # is kept for the whole rule triple, not the CFA alone.
    warn = FDE(start=0x400, size=0x10, info=fde_info(C.FRE_TYPE_ADDR1),
               fres=(make_fre(0, [(7 << 3) | 1, 16, 1 << 3, -8]),), info2=C.FDE_TYPE_FLEX)
    data = encode(build_section(3, C.ABI_AMD64_LE, [good, *fd, warn], fixed_ra=-8))
    ref = list(compare.run_v3(data, VMA, reference=True))
    stops = [d for d in ref if d.kind == compare.WALK_STOPS]
    assert len({d.fde for d in stops}) == 3
    assert {d.fde for d in ref if d.kind == compare.WALK_WARN} == {4}
    assert list(compare.run_v3(data, VMA)) == ref


@st.composite
def v3_functions(draw: st.DrawFn) -> bytes:
    """v3 sections laid out like code: small functions one after another, some with a gap
    after them, some sharing a start or overlapping the one before; some PCMASK (a rep_size
    of 0 too), signal, flex, without FREs or with a first FRE after the start; rows without
    data words (outermost), rows whose words the reader faults on or whose rules the walker
    stops or warns at. Then, sometimes, damaged."""
    fdes: list[FDE] = []
    rel: list[int] = []
    at = draw(st.integers(0, 0x40))
    for _ in range(draw(st.integers(1, 8))):
        size = draw(st.integers(1, 0x30))
        n = draw(st.integers(0, min(4, size)))
        starts = sorted(draw(st.lists(st.integers(0, size - 1), min_size=n, max_size=n,
                                      unique=True)))
        if starts and draw(st.booleans()):
            starts[0] = 0
        flex = draw(st.booleans())
        word = st.one_of(st.integers(-24, 24), st.sampled_from(
            [(7 << 3) | 1, (6 << 3) | 1, (7 << 3) | 3, (3 << 3) | 1, 0, 1, 2]))
        fres = tuple(make_fre(s, draw(st.lists(word, min_size=0, max_size=4)),
                              base_sp=draw(st.booleans())) for s in starts)
        pcmask = draw(st.integers(0, 5)) == 0
        fdes.append(FDE(start=0, size=size, fres=fres,
                        info=fde_info(C.FRE_TYPE_ADDR1, pcmask, 0, draw(st.integers(0, 5)) == 0),
                        rep_size=draw(st.integers(0, size)) if pcmask else 0,
                        info2=C.FDE_TYPE_FLEX if flex else C.FDE_TYPE_DEFAULT))
        rel.append(at)
        at += draw(st.sampled_from([0, size, size, size, size + 8, max(size - 4, 0)]))
    sec = build_section(3, C.ABI_AMD64_LE, fdes, fixed_ra=-8)
    first = sec.header.fdes_start
    placed = tuple(replace(f, start=r - (first + k * 16)) for k, (f, r) in
                   enumerate(zip(sec.fdes, rel, strict=True)))
    data = encode(replace(sec, fdes=placed))
    return draw(st.one_of(st.just(data), mutations(data))) if draw(st.booleans()) else data


@given(v3_functions(), st.booleans(), st.booleans())
@settings(max_examples=300, deadline=None, suppress_health_check=list(HealthCheck))
def test_v3_once_per_fde_equals_the_reference(data: bytes, two_ranges: bool, validate: bool):
    # run_v3 chooses the row once per FDE where the model and the reference read the FDE
    # alike, and goes per PC elsewhere: the same Disagreements as reference=True, in order.
    _assert_run_v3_equals_reference(data, two_ranges, validate)


def test_v3_once_per_fde_reports_what_the_reference_reports() -> None:
    """One section with each thing the per-FDE path must leave to the per-PC path or
    decide the reference's way: a row the walker stops at, one it warns at, an outermost
    row, a flex row whose words the reader faults on, a first FRE after the start, a
    signal FDE, a PCMASK FDE, an FDE without FREs, a duplicate start and a gap."""
    def f(start: int, *fres: object, size: int = 0x10, **kw: object) -> FDE:
        return FDE(start=start, size=size, info=kw.pop("info", fde_info(C.FRE_TYPE_ADDR1)),
                   fres=tuple(fres), **kw)
    fd = [
        f(0x000, make_fre(0, [16]), make_fre(4, [-8])),
        f(0x010, make_fre(0, [(7 << 3) | 1, 16, 1 << 3, -8]), info2=C.FDE_TYPE_FLEX),
        f(0x020, make_fre(0, [16]), make_fre(2, [])),
        f(0x030, make_fre(0, [(7 << 3) | 1]), info2=C.FDE_TYPE_FLEX),
        f(0x040, make_fre(4, [16])),
        f(0x050, make_fre(0, [16]), info=fde_info(C.FRE_TYPE_ADDR1, signal=True)),
        f(0x060, make_fre(0, [16]), make_fre(2, [-8]), rep_size=4,
          info=fde_info(C.FRE_TYPE_ADDR1, pcmask=True)),
        f(0x070),
        f(0x080, make_fre(0, [-8]), size=8),
        f(0x080, make_fre(0, [16]), make_fre(2, [-8])),
        f(0x0a0, make_fre(0, [16]), size=8),
    ]
    sec = build_section(3, C.ABI_AMD64_LE, fd, fixed_ra=-8)
    first = sec.header.fdes_start
    data = encode(replace(sec, fdes=tuple(replace(x, start=x.start - (first + k * 16))
                                          for k, x in enumerate(sec.fdes))))
    ref = list(compare.run_v3(data, VMA, reference=True))
    assert {d.fde for d in ref if d.kind == compare.WALK_STOPS} == {0, 6, 9}
    assert {d.fde for d in ref if d.kind == compare.WALK_WARN} == {1}
    assert {d.fde for d in ref if d.kind == compare.FAILS_SPEC} == {7}
    assert list(compare.run_v3(data, VMA)) == ref


def test_v3_once_per_fde_leaves_a_wrapped_start_to_the_per_pc_path() -> None:
    # The reader adds the section address and the start in an unsigned long (it wraps);
    # the reference does not, so it holds no function at the top of the address space
    # while the reader finds this one there: a gap row, found per PC.
    fd = [FDE(start=0, size=0x20, info=fde_info(C.FRE_TYPE_ADDR1), fres=(make_fre(0, [16]),))]
    sec = build_section(3, C.ABI_AMD64_LE, fd, fixed_ra=-8)
    data = encode(replace(sec, fdes=(replace(sec.fdes[0], start=-0x10 - sec.header.fdes_start),)))
    ref = list(compare.run_v3(data, 0, reference=True))
    assert [d.kind for d in ref if d.pc == compare.MASK64 - 0xF] == [compare.GAP]
    assert list(compare.run_v3(data, 0)) == ref


@given(v3_functions(), st.booleans())
@settings(max_examples=150, deadline=None, suppress_health_check=list(HealthCheck))
def test_v3_memo_lookups_equal_reference_lookups_on_code_like_sections(data: bytes,
                                                                        narrow: bool):
    # As above, on sections where rows of DEFAULT and flex FDEs share an info byte and
    # data words (the memo keeps rules by what they are read from, FDE type included).
    test_v3_memo_lookups_equal_reference_lookups.hypothesis.inner_test(data, narrow)


@given(st.one_of(st.builds(encode, sections(versions=(3,))), v3_mutated(), v3_functions()),
       st.booleans())
@settings(max_examples=300, deadline=None, suppress_health_check=list(HealthCheck))
def test_v3_memo_clean_from_the_reference_decode_equals_its_own_read(data: bytes,
                                                                     narrow: bool):
    # Memo.clean_from takes the model's read of an FDE from the reference's decode of the
    # same bytes: the same answer as Memo.clean reading them itself, and the same records
    # kept for later lookups (each lookup after it equals the reference lookup).
    table = compare.SFrameTable(data, vma=VMA)
    pcs = [p.pc for p in compare.probe_pcs(table)]
    text = (sorted(pcs)[len(pcs) // 2], compare.MASK64) if narrow and pcs \
        else (0, compare.MASK64)
    sec = v3series.register(data, VMA, text)
    assume(not isinstance(sec, Outcome))
    derived = v3series.Memo(data, sec)
    for i in range(sec.num_fdes):
        try:
            ref, starts, rows = table.rows(i)
        except compare.DecodeError:
            continue
        own = v3series.Memo(data, sec)
        assert derived.clean_from(i, ref, starts, rows) == own.clean(i)
        if i in derived.fres:
            assert (derived.fdes[i], derived.fres[i][:2]) == (own.fdes[i], own.fres[i][:2])
            assert (derived.fres[i][2] is None) == (own.fres[i][2] is None)
    for pc in [*pcs, VMA, text[0]]:
        assert derived.lookup(pc) == v3series.lookup(data, sec, pc)


def _plain_probe_pcs(table: compare.SFrameTable, limit: int) -> list[tuple[int, str]]:
    """probe_pcs written plainly: every (PC, reason) in the order probed, then each PC once
    with the reason of its first probe that is not a gap or the byte below."""
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
        out.append((s, "start"))
        rep = 16 if h.version == C.VERSION_1 else fde.rep_size
        blocks = (0, rep) if fde.pcmask and rep else (0,)
        for fre in fde.fres[:compare.MAX_FRE_PROBES]:
            out += [((s + b + fre.start) & compare.MASK64, "row") for b in blocks
                    if b + fre.start < fde.size]
        if fde.size:
            out.append(((s + fde.size - 1) & compare.MASK64, "last byte"))
            out.append(((s + fde.size) & compare.MASK64, "gap"))
    if starts:
        out.append(((min(starts) - 1) & compare.MASK64, "below"))
    where: dict[int, str] = {}
    for pc, w in out:
        if where.get(pc) in (None, "gap", "below"):
            where[pc] = w
    return list(where.items())


@given(st.one_of(mutated_sections(), v3_functions(), v3_mutated()),
       st.sampled_from([1, 2, 3, compare.MAX_PROBE_FDES]), st.integers(0, 2**64 - 1))
@settings(max_examples=300, deadline=None, suppress_health_check=list(HealthCheck))
def test_probe_pcs_equals_the_plain_probe_list(data: bytes, limit: int, vma: int):
    # v1, v2 and v3, valid and damaged, every FDE probed or a stride of them, addresses
    # that wrap: probe_pcs gives the plain list's PCs and reasons in its order.
    table = compare.SFrameTable(data, vma=vma)
    assert [tuple(p) for p in compare.probe_pcs(table, limit)] == _plain_probe_pcs(table, limit)


def test_probe_pcs_the_byte_below_replaces_a_wrapped_gap() -> None:
    # Function A ends (wrapping the address space) at the byte below B, the lowest
    # function: that PC is probed as "below", as the plain list has it.
    sec = build_section(3, C.ABI_AMD64_LE, [
        FDE(start=0, size=0xFF, info=fde_info(C.FRE_TYPE_ADDR1), fres=(make_fre(0, [8]),)),
        FDE(start=0, size=0x10, info=fde_info(C.FRE_TYPE_ADDR1), fres=(make_fre(0, [8]),))])
    first = sec.header.fdes_start
    placed = tuple(replace(f, start=r - (first + k * 16)) for k, (f, r) in
                   enumerate(zip(sec.fdes, (0, 0x100), strict=True)))
    table = compare.SFrameTable(encode(replace(sec, fdes=placed)), vma=2**64 - 0x80)
    got = dict(compare.probe_pcs(table))
    assert got[0x7F] == "below" and got[2**64 - 0x80] == "start"
    assert list(got.items()) == _plain_probe_pcs(table, compare.MAX_PROBE_FDES)


@pytest.mark.parametrize("second", [0x20, 0x21])
def test_v3_memo_clean_from_leaves_a_start_past_the_size_to_the_model(second: int):
    # The reference decodes an FRE starting past the function's size; the model faults
    # on it (__read_fre): clean_from answers as clean() does, None.
    f = FDE(start=0, size=0x20, info=fde_info(C.FRE_TYPE_ADDR1),
            fres=(make_fre(0, [8]), make_fre(second, [16])))
    data = encode(build_section(3, C.ABI_AMD64_LE, [f]))
    sec = v3series.register(data, VMA, (0, compare.MASK64))
    assert not isinstance(sec, Outcome)
    got = v3series.Memo(data, sec).clean_from(0, *compare.SFrameTable(data, vma=VMA).rows(0))
    assert got == v3series.Memo(data, sec).clean(0)
    assert (got is None) == (second > 0x20)
