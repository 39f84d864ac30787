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
