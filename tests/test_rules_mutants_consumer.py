"""consumer.py's checks on corpus files and hand-built FLEX sections, against what the
reader models and libsframe's dumper say, finding by finding (the mutation run's survivors
in check_reader_model, _exec_spans, _check_flex_dump, _any_flex, _flex_registers,
_check_offsets and _check_text_segments)."""

from __future__ import annotations

from pathlib import Path

import pytest

from sfcheck.elf.loader import load_elf
from sfcheck.elf.model import ElfSFrameInfo
from sfcheck.profiles import Profile, get
from sfcheck.readers import compare
from sfcheck.record import replace
from sfcheck.rules.consumer import MODEL_RULES, check_reader_model
from sfcheck.walk.context import SectionContext

from helpers import CORPUS

PF_X = 0x1


def load(name: str) -> tuple[ElfSFrameInfo, bytes, int]:
    path = CORPUS / name
    if not path.exists():
        pytest.skip(f"{path} is not built")
    info = load_elf(Path(path).read_bytes(), str(path))
    sec = info.sections[0]
    return info, sec.data, sec.vma


def model_findings(info: ElfSFrameInfo | None, data: bytes, vma: int,
                   profile: Profile) -> list[tuple[str, str, int | None]]:
    ctx = SectionContext("f", ".sframe", vma, data)
    check_reader_model(ctx, profile, info)
    return [(f.rule, f.message, f.location.fde) for f in ctx.findings]


def expected(found: list[compare.Disagreement], profile: Profile
             ) -> list[tuple[str, str, int | None]]:
    """One finding per (kind, FDE) the profile lists, in first-seen order: the first
    disagreement's message and how many more PCs of that FDE disagree the same way."""
    groups: dict[tuple[str, int | None], list[compare.Disagreement]] = {}
    for d in found:
        groups.setdefault((d.kind, d.fde), []).append(d)
    out = []
    for (kind, fde), ds in groups.items():
        rule_id = MODEL_RULES[kind].id
        if rule_id not in profile.consumer:
            continue
        n = len(ds)
        more = ("" if n == 1 else " (and 1 more PC of this FDE)" if n == 2
                else f" (and {n - 1} more PCs of this FDE)")
        out.append((rule_id, ds[0].message + more, fde))
    return out


def counts(found: list[compare.Disagreement]) -> set[int]:
    groups: dict[tuple[str, int | None], int] = {}
    for d in found:
        groups[d.kind, d.fde] = groups.get((d.kind, d.fde), 0) + 1
    return set(groups.values())


def split_text(info: ElfSFrameInfo, pcs: list[int]) -> tuple[ElfSFrameInfo, int, int, int]:
    """`info` with its one PF_X PT_LOAD [lo, end) cut to two PF_X segments [lo, mid) and
    [mid, cut) (listed high first), a read-only [cut, end) and a writable segment past it:
    mid and cut are picked among `pcs` so that each part holds some of them."""
    [seg] = [s for s in info.load_segments if s.flags & PF_X]  # one PF_X PT_LOAD
    lo, end = seg.vaddr, seg.vaddr + seg.memsz
    inside = sorted({pc for pc in pcs if lo <= pc < end})
    mid, cut = inside[len(inside) // 3], inside[2 * len(inside) // 3]
    assert lo < mid < cut < end
    segs = (replace(seg, index=11, vaddr=mid, offset=seg.offset + mid - lo, memsz=cut - mid,
                    filesz=cut - mid),
            replace(seg, index=12, vaddr=cut, offset=seg.offset + cut - lo, memsz=end - cut,
                    filesz=end - cut, flags=4),
            replace(seg, index=13, vaddr=end + 0x10000, memsz=0x1000, filesz=0x1000, flags=6),
            replace(seg, index=10, memsz=mid - lo, filesz=mid - lo))
    return replace(info, load_segments=segs), lo, mid, cut


@pytest.mark.parametrize("name", ["aarch64/v1/exe_static", "v1/exe_pie"])
def test_rfc2023_registers_lowest_to_highest_executable_address(name: str) -> None:
    """binfmt registers one range for the RFC reader: [lowest PF_X start, highest PF_X
    end); PCs outside it are never looked up."""
    info, data, vma = load(name)
    profile = get("kernel-rfc-2023")
    everything = list(compare.run_rfc2023(data, vma, None))
    split, lo, mid, cut = split_text(info, [d.pc for d in everything])
    want = expected(list(compare.run_rfc2023(data, vma, (lo, cut))), profile)
    assert want
    for other in (None, (mid, cut), (lo, mid), (lo, cut + 0x20000)):  # what a slip gives
        assert want != expected(list(compare.run_rfc2023(data, vma, other)), profile), other
    assert model_findings(split, data, vma, profile) == want
    # an object registers nothing (no PT_LOAD yet): every PC
    rel = replace(split, e_type="ET_REL")
    assert model_findings(rel, data, vma, profile) == expected(everything, profile)


def test_rfc2023_counts_pcs_per_fde() -> None:
    info, data, vma = load("aarch64/v1/exe_static")
    [seg] = [s for s in info.load_segments if s.flags & PF_X]
    found = list(compare.run_rfc2023(data, vma, (seg.vaddr, seg.vaddr + seg.memsz)))
    assert {1, 2} < counts(found)  # FDEs with one PC, two, and more
    profile = get("kernel-rfc-2023")
    assert model_findings(info, data, vma, profile) == expected(found, profile)


def test_v3_registers_each_executable_segment() -> None:
    info, data, vma = load("v3/exe_static")
    profile = get("kernel")
    everything = list(compare.run_v3(data, vma, []))
    split, lo, mid, cut = split_text(info, [d.pc for d in everything])
    found = list(compare.run_v3(data, vma, [(lo, mid), (mid, cut)]))
    want = expected(found, profile)
    assert want
    assert want != expected(everything, profile)
    assert model_findings(split, data, vma, profile) == want
    assert max(counts(found)) >= 3


def test_unlisted_kinds_are_skipped_not_the_rest() -> None:
    """A profile without the first kind's rule still reports the later kinds."""
    info, data, vma = load("v1/exe_pie")
    [seg] = [s for s in info.load_segments if s.flags & PF_X]
    found = list(compare.run_rfc2023(data, vma, (seg.vaddr, seg.vaddr + seg.memsz)))
    base = get("kernel-rfc-2023")
    first = MODEL_RULES[found[0].kind].id
    profile = replace(base, consumer={k: v for k, v in base.consumer.items() if k != first})
    want = expected(found, profile)
    assert want and all(r != first for r, _, _ in want)
    assert model_findings(info, data, vma, profile) == want


# -- libsframe's dumper on FLEX FREs (_check_flex_dump, _flex_registers)

REG = (7 << 3) | 1  # a control word with reg_p set: register 7


@pytest.mark.parametrize(("words", "named"), [
    ([REG, 8, REG], ["CFA", "RA"]),             # three words: RA's control word is there
    ([REG, 8, 0, REG], ["CFA"]),                # RA padding: FP's word 3 has no offset
    ([REG, 8, 0, REG, 16], ["CFA", "FP"]),
    ([REG, 8, REG, 0, 2, 0], ["CFA", "RA"]),    # FP's control word 4 without reg_p
    ([REG, 8, REG, 0, REG, 0], ["CFA", "RA", "FP"]),
])
def test_flex_registers(words: list[int], named: list[str]) -> None:
    from sfcheck.format import make_fre
    from sfcheck.rules.consumer import _flex_registers

    assert _flex_registers(make_fre(0, words)) == named


def flex_section(abi: int | None = None) -> bytes:
    from sfcheck.format import FDE, build_section, encode, fde_info, make_fre
    from sfcheck.format import constants as C

    fres = (make_fre(0, [REG]), make_fre(4, [REG, 8]))  # one word, then a CFA register
    fdes = [FDE(0x1000 + 0x100 * i, 0x40, fde_info(C.FRE_TYPE_ADDR1), fres,
                info2=C.FDE_TYPE_FLEX) for i in range(2)]
    data = encode(build_section(3, C.ABI_AMD64_LE, fdes))
    return data if abi is None else data[:4] + bytes([abi]) + data[5:]  # sfh_abi_arch


def flex_findings(data: bytes, profile: Profile) -> list[tuple[str, str, int | None,
                                                              int | None]]:
    from sfcheck.format.decode import decode_header
    from sfcheck.rules.consumer import _check_flex_dump

    ctx = SectionContext("f", ".sframe", 0, data)
    _check_flex_dump(ctx, profile, decode_header(data))
    return [(f.rule, f.message, f.location.fde, f.location.fre) for f in ctx.findings]


def test_flex_dump_reports_the_first_assertion_of_each_kind() -> None:
    """The dumper aborts at its first assertion: one finding per kind, at the first FRE
    that triggers it, though FDE 1 repeats both."""
    profile = get("libsframe-2.46")
    assert flex_findings(flex_section(0x7F), profile) == [
        ("fre-reader-flex-one-word", "1 data word in a FLEX FRE: libsframe 2.46's dumper "
         "asserts the CFA offset exists (dump_sframe_func_fres_flex)", 0, 0),
        ("fre-reader-flex-abi", "CFA register in a FLEX FRE under abi_arch 127: libsframe "
         "2.46's dumper asserts in sframe_get_reg_name", 0, 1)]
    assert flex_findings(flex_section(), profile) == [  # a known ABI names its registers
        ("fre-reader-flex-one-word", "1 data word in a FLEX FRE: libsframe 2.46's dumper "
         "asserts the CFA offset exists (dump_sframe_func_fres_flex)", 0, 0)]


def test_flex_dump_abi_alone_reports_once() -> None:
    base = get("libsframe-2.46")
    profile = replace(base, consumer={k: v for k, v in base.consumer.items()
                                      if k != "fre-reader-flex-one-word"})
    assert [(r, fde, fre) for r, _, fde, fre in flex_findings(flex_section(0x7F), profile)] \
        == [("fre-reader-flex-abi", 0, 1)]


# -- glibc reads the FDEs from the header's end and the FREs right after them

def test_offsets_glibc_reads_from_the_canonical_layout() -> None:
    from sfcheck.format import FDE, build_section, encode, fde_info, make_fre
    from sfcheck.format import constants as C
    from sfcheck.format.decode import decode_header
    from sfcheck.rules.consumer import _check_offsets

    fdes = [FDE(0x1000, 0x40, fde_info(C.FRE_TYPE_ADDR1), (make_fre(0, [8]),))]
    h = decode_header(encode(build_section(2, C.ABI_AMD64_LE, fdes, fdeoff=8)))
    assert (h.fdeoff, h.freoff) == (8, 8 + C.FDE_SIZE[2])
    ctx = SectionContext("f", ".sframe", 0, b"")
    _check_offsets(ctx, get("glibc-2.42"), h)
    assert [(f.rule, f.message, f.location.offset) for f in ctx.findings] == [(
        "layout-offsets-ignored", "glibc 2.42 assumes the canonical layout: FDEs at fdeoff "
        f"0x8 (read from 0), FREs at freoff {8 + C.FDE_SIZE[2]:#x} (read from "
        f"{C.FDE_SIZE[2]:#x})", 0x14)]


# -- the kernel registers the section once per PF_X segment (_check_text_segments)

# PT_LOAD[3 + k] is [0x10000 * (k + 1), +0x1000): FDEs 0, 1 in PT_LOAD[3]; 2 in PT_LOAD[4];
# 3 and 4 in PT_LOAD[5]; 5 in none
ALL_SEGMENTS = [(0x10000, 8, 0), (0x10100, 8, 1), (0x20000, 8, 2), (0x30000, 8, 3),
                (0x30100, 8, 4), (0x90000, 8, 5)]


def text_findings(e_type: str, flags: tuple[int, int, int],
                  ranges: list[tuple[int, int, int]] = ALL_SEGMENTS) -> list[tuple[str, str]]:
    from sfcheck.elf.model import LoadSegment
    from sfcheck.rules.consumer import _check_text_segments

    loads = tuple(LoadSegment(3 + k, 0x1000 * k, 0x10000 * (k + 1), 0x1000, 0x1000, f)
                  for k, f in enumerate(flags))
    info = ElfSFrameInfo("f", e_type, "EM_X86_64", 62, True, 64, (), (), loads, ())
    ctx = SectionContext("f", ".sframe", 0, b"", ranges=ranges)
    _check_text_segments(ctx, info, "the kernel (V3 series)")
    return [(f.rule, f.message) for f in ctx.findings]


def test_text_segments_named_with_their_first_fde() -> None:
    assert text_findings("ET_DYN", (5, 4, 5)) == [(
        "elf-text-segments", "function starts lie in 2 executable segments: PT_LOAD[3] "
        "(from FDE 0), PT_LOAD[5] (from FDE 3); the kernel (V3 series) with "
        "CONFIG_SFRAME_VALIDATION rejects every registration")]
    assert text_findings("ET_EXEC", (5, 5, 5))[0][1].startswith(
        "function starts lie in 3 executable segments: PT_LOAD[3] (from FDE 0), PT_LOAD[4] "
        "(from FDE 2), PT_LOAD[5] (from FDE 3);")


@pytest.mark.parametrize(("e_type", "flags"), [
    ("ET_DYN", (5, 4, 6)),   # one PF_X segment: one registration
    ("ET_DYN", (4, 4, 6)),   # none
    ("ET_REL", (5, 4, 5)),   # an object: no segments are registered
])
def test_text_segments_quiet(e_type: str, flags: tuple[int, int, int]) -> None:
    assert text_findings(e_type, flags) == []


def test_text_segments_one_used_of_two() -> None:
    """Two PF_X segments, starts in one: FDE 1 starts at PT_LOAD[5]'s end, outside it."""
    assert text_findings("ET_DYN", (5, 4, 5), [(0x10000, 8, 0), (0x31000, 8, 1)]) == []
