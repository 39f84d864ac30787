"""The .eh_frame cross-check and the known-defect rules, on real corpus binaries.

Damage is done the way it happens in the field: decode the real section, change
one thing in the model, encode it back to the same size and splice it into the
ELF file, then check that exactly the expected rule fires.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest
from elftools.dwarf.dwarf_expr import DWARFExprParser
from elftools.dwarf.structs import DWARFStructs
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sfcheck.checker import Options, check_elf, check_section_bytes
from sfcheck.dwarf.cfi import Opaque, eval_linear
from sfcheck.elf.loader import load_elf
from sfcheck.format import constants as C
from sfcheck.format.decode import decode
from sfcheck.format.encode import encode
from sfcheck.format.fre_rules import RegRule
from sfcheck.format.layout import build_section
from sfcheck.format.model import FDE, fde_info, make_fre
from sfcheck.result import Severity
from sfcheck.rules.defect import concatenated_parts

from helpers import CORPUS

MISMATCH = {"semantic-cfa-mismatch", "semantic-ra-mismatch", "semantic-fp-mismatch"}
GOOD = sorted(p for p in CORPUS.rglob("*")
              if p.is_file() and p.suffix in ("", ".so", ".o") and "bad" not in p.parts
              and "src" not in p.parts and p.name not in ("VERSIONS", "BUILD.log")
              and p.read_bytes()[:4] == b"\x7fELF")


def rules(res) -> set[str]:
    return {f.rule for f in res.findings}


def errors(res) -> set[str]:
    return {f.rule for f in res.findings if f.severity == Severity.ERROR}


def by_rule(res, rule: str):
    return [f for f in res.findings if f.rule == rule]


# -- the corpus agrees ----------------------------------------------------------------

def test_corpus_list_is_not_empty() -> None:
    assert len(GOOD) > 40


@pytest.mark.parametrize("path", GOOD, ids=lambda p: str(p.relative_to(CORPUS)))
def test_corpus_binaries_agree_with_eh_frame(path: Path) -> None:
    res = check_elf(path)
    assert res.error is None
    assert not rules(res) & MISMATCH, [f.text() for f in res.findings]
    # Valid output gets no error at all; lld's links really lack what runtime readers need.
    allowed = {"elf-no-segment", "elf-not-sorted"} if "llvm" in path.parts else set()
    assert errors(res) <= allowed, [f.text() for f in res.findings]


# -- damage, caught ---------------------------------------------------------------------

def patched(path: Path, change) -> bytes:
    """The file with its .sframe decoded, changed by `change(section)`, and re-encoded."""
    raw = path.read_bytes()
    sec = load_elf(raw).sections[0]
    new = encode(change(decode(sec.data)))
    assert len(new) == len(sec.data)
    return raw[:sec.offset] + new + raw[sec.offset + len(new):]


def with_fde(section, index: int, fde: FDE):
    fdes = list(section.fdes)
    fdes[index] = fde
    return dataclasses.replace(section, fdes=tuple(fdes))


def function_fde(path: Path, min_fres: int = 3) -> int:
    """Index of a compiled function's FDE with several FREs (not a PLT stub)."""
    sec = decode(load_elf(path).sections[0].data)
    return next(i for i, f in enumerate(sec.fdes) if len(f.fres) >= min_fres and not f.pcmask
                and i > 2)


V3 = CORPUS / "v3" / "libcorpus.so"
V2 = CORPUS / "v2" / "libcorpus.so"
A64 = CORPUS / "aarch64" / "v3" / "libasm.so"
S390 = CORPUS / "s390x" / "v3" / "libasm.so"


def shift_cfa(fde: FDE, delta: int) -> FDE:
    fres = tuple(dataclasses.replace(f, words=(f.words[0] + delta,) + f.words[1:])
                 if f.words else f for f in fde.fres)
    return dataclasses.replace(fde, fres=fres)


@pytest.mark.parametrize("path", [V3, V2, CORPUS / "v1" / "libcorpus.so"],
                         ids=["v3", "v2", "v1"])
def test_shifted_cfa_offsets_are_caught(path: Path) -> None:
    k = function_fde(path)
    data = patched(path, lambda s: with_fde(s, k, shift_cfa(s.fdes[k], 8)))
    res = check_elf(data)
    hits = by_rule(res, "semantic-cfa-mismatch")
    assert [f.location.fde for f in hits] == [k]
    assert hits[0].severity == Severity.ERROR
    assert "SFrame rsp+" in hits[0].message and ".eh_frame rsp+" in hits[0].message
    assert not rules(res) & {"semantic-ra-mismatch", "semantic-fp-mismatch"}


def test_fres_moved_by_one_byte_are_caught() -> None:
    k = function_fde(V3)

    def move(s):
        fde = s.fdes[k]
        fres = (fde.fres[0],) + tuple(dataclasses.replace(f, start=f.start + 1)
                                      for f in fde.fres[1:])
        return with_fde(s, k, dataclasses.replace(fde, fres=fres))

    res = check_elf(patched(V3, move))
    hits = by_rule(res, "semantic-cfa-mismatch")
    assert [f.location.fde for f in hits] == [k]
    start = hits[0].message.split("first [")[1].split(",")[0]
    first_moved = decode(load_elf(V3).sections[0].data)
    sec = load_elf(V3).sections[0]
    pc = first_moved.header.func_start(k, first_moved.fdes[k].start, sec.vma)
    assert int(start, 16) == pc + first_moved.fdes[k].fres[1].start


def test_swapped_fdes_are_caught() -> None:
    """Swap two FDE records: with PC-relative starts both functions move."""
    s = decode(load_elf(V3).sections[0].data)
    i, j = function_fde(V3), function_fde(V3) + 1
    assert s.fdes[i].size != s.fdes[j].size

    def swap(s):
        fdes = list(s.fdes)
        fdes[i], fdes[j] = fdes[j], fdes[i]
        return dataclasses.replace(s, fdes=tuple(fdes))

    res = check_elf(patched(V3, swap))
    semantic = {f.location.fde for f in res.findings if f.rule in MISMATCH
                or f.rule == "semantic-no-eh-frame-fde"}
    assert semantic & {i, j}
    assert errors(res) & MISMATCH


def test_swapped_start_fields_are_caught() -> None:
    """Swap only where two functions start: each gets the other's rows."""
    s0 = decode(load_elf(V3).sections[0].data)
    i, j = function_fde(V3), function_fde(V3) + 1
    vma = load_elf(V3).sections[0].vma
    h = s0.header
    abs_i, abs_j = (h.func_start(n, s0.fdes[n].start, vma) for n in (i, j))

    def swap(s):
        fi = dataclasses.replace(s.fdes[i], start=s.fdes[i].start + abs_j - abs_i)
        fj = dataclasses.replace(s.fdes[j], start=s.fdes[j].start + abs_i - abs_j)
        return with_fde(with_fde(s, i, fi), j, fj)

    res = check_elf(patched(V3, swap))
    assert {f.location.fde for f in by_rule(res, "semantic-cfa-mismatch")} == {i, j}


def test_fp_offset_change_is_caught() -> None:
    path = CORPUS / "v3" / "libcorpus_fp.so"
    s = decode(load_elf(path).sections[0].data)
    k = next(i for i, f in enumerate(s.fdes) if any(len(r.words) == 2 for r in f.fres))

    def change(s):
        fde = s.fdes[k]
        fres = tuple(dataclasses.replace(r, words=(r.words[0], r.words[1] - 8))
                     if len(r.words) == 2 else r for r in fde.fres)
        return with_fde(s, k, dataclasses.replace(fde, fres=fres))

    res = check_elf(patched(path, change))
    hits = by_rule(res, "semantic-fp-mismatch")
    assert [f.location.fde for f in hits] == [k]
    assert "SFrame c-24" in hits[0].message and ".eh_frame c-16" in hits[0].message


@pytest.mark.parametrize("path", [A64, S390], ids=["aarch64", "s390x"])
def test_ra_offset_change_is_caught(path: Path) -> None:
    s = decode(load_elf(path).sections[0].data)
    k = next(i for i, f in enumerate(s.fdes) if not f.flex(s.header.version)
             and any(len(r.words) >= 2 for r in f.fres))

    def change(s):
        fde = s.fdes[k]
        fres = tuple(dataclasses.replace(r, words=(r.words[0], r.words[1] - 8) + r.words[2:])
                     if len(r.words) >= 2 else r for r in fde.fres)
        return with_fde(s, k, dataclasses.replace(fde, fres=fres))

    res = check_elf(patched(path, change))
    assert [f.location.fde for f in by_rule(res, "semantic-ra-mismatch")] == [k]


@pytest.mark.parametrize("path", [A64, S390], ids=["aarch64", "s390x"])
def test_other_abis_shifted_cfa(path: Path) -> None:
    s = decode(load_elf(path).sections[0].data)
    k = next(i for i, f in enumerate(s.fdes) if not f.flex(s.header.version)
             and len(f.fres) >= 2)
    res = check_elf(patched(path, lambda s: with_fde(s, k, shift_cfa(s.fdes[k], 1))))
    # s390x stores (CFA - 160) / 8: one unit is 8 bytes; aarch64 stores bytes.
    assert k in {f.location.fde for f in by_rule(res, "semantic-cfa-mismatch")}


# -- the ld .plt.got defect (issue: known toolchain defects) ------------------------------

def plt_got_fde(path: Path) -> int:
    res = check_elf(path)
    (hit,) = by_rule(res, "defect-ld-plt-got-cfa")
    return hit.location.fde


@pytest.mark.parametrize("path", [V2, V3, CORPUS / "v2" / "exe_pie", CORPUS / "v3" / "exe_pie"],
                         ids=lambda p: str(p.relative_to(CORPUS)))
def test_plt_got_defect_is_a_named_warning(path: Path) -> None:
    res = check_elf(path)
    (hit,) = by_rule(res, "defect-ld-plt-got-cfa")
    assert hit.severity == Severity.WARNING and ".plt.got" in hit.message
    assert "SFrame rsp+16, .eh_frame rsp+8" in hit.message
    assert not errors(res)


def test_plt_got_corrected_by_hand_is_silent() -> None:
    k = plt_got_fde(V3)
    res = check_elf(patched(V3, lambda s: with_fde(s, k, shift_cfa(s.fdes[k], -8))))
    assert not rules(res) & (MISMATCH | {"defect-ld-plt-got-cfa"})
    assert not errors(res)


def test_generic_rule_still_fires_beside_the_defect() -> None:
    k = function_fde(V3)
    res = check_elf(patched(V3, lambda s: with_fde(s, k, shift_cfa(s.fdes[k], 16))))
    assert by_rule(res, "defect-ld-plt-got-cfa")
    assert [f.location.fde for f in by_rule(res, "semantic-cfa-mismatch")] == [k]


def test_structure_only() -> None:
    k = function_fde(V3)
    data = patched(V3, lambda s: with_fde(s, k, shift_cfa(s.fdes[k], 16)))
    res = check_elf(data, options=Options(disable={"semantic", "defect"}))
    assert not {r for r in rules(res) if r.startswith(("semantic", "defect"))}
    # Without the defect group an empty linked .sframe is still an error, and every reader's
    # refusal of it (header-too-short) is said.
    res = check_elf(CORPUS / "bad" / "ld247_v2obj_raw.so",
                    options=Options(disable={"semantic", "defect"}))
    assert errors(res) == {"elf-empty-sframe", "header-too-short"}


# -- the other known defects, on the corpus binaries built to show them -----------------

@pytest.mark.parametrize(("name", "rule"), [
    ("bad/ld240_v2obj_raw.so", "defect-ld-raw-copy"),
    ("bad/ld247_v2obj_raw.so", "defect-ld-discarded-sframe"),
    ("bad/ld247_llvmobj_raw.so", "defect-ld-discarded-sframe"),
    ("bad/lld_2obj.so", "defect-concatenated-sections"),
    ("bad/lld_5obj_exe", "defect-concatenated-sections"),
    ("bad/ld244_v3obj_plt.so", "defect-ld-plt-got-cfa"),
    ("bad/ld247_v2obj_plt.so", "defect-ld-plt-got-cfa"),
    ("v1/libcorpus.so", "defect-gas-cfa-register"),
    ("aarch64/v1/libasm.so", "defect-gas-cfa-register"),
    ("v1/exe_static", "defect-outermost-not-marked"),
    ("v2/nolibc.o", "defect-outermost-not-marked"),
    ("aarch64/v1/libasm.so", "defect-outermost-not-marked"),
    ("llvm/nolibc.o", "defect-outermost-not-marked"),
    ("v2/libcorpus.so", "defect-gas-skipped-fde"),
    ("v2/drap.o", "defect-gas-skipped-fde"),
    ("defects/cfi_at_end-v1.o", "defect-fre-start-at-size"),
    ("defects/cfi_at_end-v2.o", "defect-fre-start-at-size"),
    ("defects/cfi_at_end-v3.o", "defect-fre-start-at-size"),
    ("defects/cfi_at_end-v3.so", "defect-fre-start-at-size"),
])
def test_known_defects_on_real_binaries(name: str, rule: str) -> None:
    res = check_elf(CORPUS / name)
    assert rule in rules(res), [f.text() for f in res.findings]
    assert not rules(res) & MISMATCH


def test_raw_copy_replaces_the_semantic_noise() -> None:
    res = check_elf(CORPUS / "bad" / "ld240_v2obj_raw.so")
    assert not {r for r in rules(res) if r.startswith("semantic")}
    assert "elf-fde-outside-text" in errors(res)  # the structural facts stay


def test_concatenation_replaces_trailing_bytes() -> None:
    res = check_elf(CORPUS / "bad" / "lld_5obj_exe")
    (hit,) = by_rule(res, "defect-concatenated-sections")
    assert "5 SFrame sections" in hit.message
    assert "layout-trailing-bytes" not in rules(res)
    res = check_elf(CORPUS / "bad" / "lld_5obj_exe",
                    options=Options(disable={"defect"}))
    assert "layout-trailing-bytes" in errors(res)


def test_skipped_functions_are_named() -> None:
    res = check_elf(CORPUS / "v2" / "libcorpus.so")
    text = " ".join(f.message for f in by_rule(res, "defect-gas-skipped-fde"))
    assert "corpus_drap" in text and "CFA based on r10" in text
    assert "corpus_cfa_rbx" in text and "CFA based on rbx" in text


def _section(n: int) -> bytes:
    fdes = [FDE(start=0x1000 + 0x20 * i, size=0x10, info=fde_info(C.FRE_TYPE_ADDR1),
                fres=(make_fre(0, (8,)),)) for i in range(n)]
    return encode(build_section(2, C.ABI_AMD64_LE, fdes))


@given(st.lists(st.integers(1, 5), min_size=1, max_size=5), st.integers(0, 7))
def test_concatenated_parts(counts: list[int], pad: int) -> None:
    parts = [_section(n) for n in counts]
    data = (b"\0" * pad).join(parts)
    offsets = concatenated_parts(data)
    expect, pos = [], 0
    for p in parts:
        expect.append(pos)
        pos += len(p) + pad
    assert offsets == expect
    res = check_section_bytes(data)
    assert ("defect-concatenated-sections" in rules(res)) == (len(parts) > 1)


# -- expression evaluation ------------------------------------------------------------------

PARSER = DWARFExprParser(DWARFStructs(little_endian=True, dwarf_format=32, address_size=8))
PLT_EXPR = [0x77, 8, 0x80, 0, 0x3F, 0x1A, 0x3B, 0x2A, 0x33, 0x24, 0x22]  # ld's .plt CFA


@given(st.integers(0, 1 << 40))
def test_plt_cfa_expression(pc: int) -> None:
    got = eval_linear(tuple(PARSER.parse_expr(PLT_EXPR)), pc, 16, None)
    assert got == RegRule(7, 8 + (8 if pc & 15 >= 11 else 0), False)


def test_drap_and_opaque_expressions() -> None:
    drap = tuple(PARSER.parse_expr([0x76, 0x78, 0x06]))  # DW_OP_breg6 -8; DW_OP_deref
    assert eval_linear(drap, 0, 16, None) == RegRule(6, -8, True)
    two_regs = tuple(PARSER.parse_expr([0x76, 0, 0x77, 0, 0x22]))  # rbp + rsp
    assert isinstance(eval_linear(two_regs, 0, 16, None), Opaque)
    const = tuple(PARSER.parse_expr([0x38]))  # lit8
    assert isinstance(eval_linear(const, 0, 16, None), Opaque)


# -- hostile input ----------------------------------------------------------------------------

SMALL = CORPUS / "v3" / "libcorpus.so"


def _eh_frame_span(path: Path) -> tuple[int, int]:
    from elftools.elf.elffile import ELFFile
    with open(path, "rb") as f:
        sec = ELFFile(f).get_section_by_name(".eh_frame")
        return sec["sh_offset"], sec["sh_size"]


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_mutated_eh_frame_never_raises(data) -> None:
    raw = bytearray(SMALL.read_bytes())
    off, size = _eh_frame_span(SMALL)
    for _ in range(data.draw(st.integers(1, 12))):
        pos = off + data.draw(st.integers(0, size - 1))
        raw[pos] = data.draw(st.integers(0, 255))
    res = check_elf(bytes(raw))
    assert res.error is None
    for f in res.findings:
        assert f.rule  # every finding is a catalogued rule
    assert len(res.findings) < 2000


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_mutated_sframe_and_eh_frame_never_raise(data) -> None:
    raw = bytearray(SMALL.read_bytes())
    sec = load_elf(SMALL).sections[0]
    off, size = _eh_frame_span(SMALL)
    for _ in range(data.draw(st.integers(1, 8))):
        if data.draw(st.booleans()):
            pos = sec.offset + data.draw(st.integers(0, sec.size - 1))
        else:
            pos = off + data.draw(st.integers(0, size - 1))
        raw[pos] = data.draw(st.integers(0, 255))
    for profile in ("strict", "kernel"):
        res = check_elf(bytes(raw), options=Options(profile=profile))
        assert res.error is None




def test_cli_structure_only(capsys) -> None:
    from sfcheck.cli import main
    k = function_fde(V3)
    data = patched(V3, lambda s: with_fde(s, k, shift_cfa(s.fdes[k], 16)))
    import tempfile
    with tempfile.NamedTemporaryFile(suffix=".so") as f:
        f.write(data)
        f.flush()
        assert main([f.name]) == 1
        assert "[semantic-cfa-mismatch]" in capsys.readouterr().out
        assert main(["--disable", "semantic", "--disable", "defect", f.name]) == 0
        out = capsys.readouterr().out
        assert "[semantic-" not in out and "[defect-" not in out


def test_raw_copy_found_from_start_fields_alone() -> None:
    """The raw-copy scan reads FDE start fields only: a damaged FRE block (an info byte
    with the reserved size code) is reported by the structural rules and hides nothing."""
    from sfcheck.format.decode import Decoder

    path = CORPUS / "bad" / "ld240_v2obj_raw.so"
    raw = bytearray(path.read_bytes())
    sec = load_elf(bytes(raw), str(path)).sections[0]
    dec = Decoder(sec.data)
    last = dec.fde(dec.header.num_fdes - 1, with_fres=False)
    asz = {C.FRE_TYPE_ADDR1: 1, C.FRE_TYPE_ADDR2: 2, C.FRE_TYPE_ADDR4: 4}[last.info & 0xF]
    at = sec.offset + dec.header.fres_start + last.fre_off + asz  # its first FRE's info
    raw[at] = 0x60 | (1 << 1)  # size code 3: no FRE has it
    res = check_elf(bytes(raw))
    assert "defect-ld-raw-copy" in rules(res), [f.text() for f in res.findings]
    assert "fre-size-code" in rules(res) or "layout-fde-fres-bounds" in rules(res)
