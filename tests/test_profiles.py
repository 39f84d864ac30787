"""Consumer profiles: each reader's rejections fire under its profile only, overrides apply."""

from __future__ import annotations

import struct
from dataclasses import replace
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sfcheck.checker import Options, check_elf, check_section_bytes
from sfcheck.cli import main
from sfcheck.effects import EFFECTS
from sfcheck.elf.loader import load_elf
from sfcheck.elf.model import LoadSegment
from sfcheck.format import FDE, build_section, encode, fde_info, make_fre
from sfcheck.format import constants as C
from sfcheck.format.model import Section
from sfcheck.profiles import LISTED, PROFILES, flag_names
from sfcheck.result import Finding, Severity
from sfcheck.rules import RULES
from sfcheck.rules import consumer as K
from sfcheck.rules.registry import GROUPS
from sfcheck.walk.context import MAX_PER_RULE, SectionContext
from sfcheck.walk.section import check_section

from helpers import CORPUS
from strategies import mutated_sections, sections

CONSUMER_IDS = ({K.READER_VERSION.id, K.READER_FLAGS.id, K.READER_AUXHDR.id, K.READER_EMPTY.id,
                 K.READER_OFFSETS.id, K.READER_STARTS.id, K.READER_TEXT.id,
                 K.READER_BYTE_ORDER.id, K.READER_FOREIGN.id,
                 K.READER_FLEX_ONE_WORD.id, K.READER_FLEX_ABI.id}
                | {r.id for r in K.MODEL_RULES.values()})
# The .eh_frame cross-check judges the data, not what a reader accepts: left out of the
# corpus acceptance tests so they test the profiles alone.
NO_SEMANTIC = {"disable": {"semantic", "defect"}}
SORTED_PCREL = C.F_FDE_SORTED | C.F_FDE_FUNC_START_PCREL


def fdes_amd64(start2: int = 0x200) -> list[FDE]:
    return [
        FDE(start=0x100, size=0x40, info=fde_info(C.FRE_TYPE_ADDR1),
            fres=(make_fre(0, [8]), make_fre(1, [16, -16]), make_fre(4, [16, -16], False))),
        FDE(start=start2, size=0x20, info=fde_info(C.FRE_TYPE_ADDR1),
            fres=(make_fre(0, [8]),)),
    ]


def section(version: int = 3, fdes: list[FDE] | None = None, **kw) -> Section:
    return build_section(version, C.ABI_AMD64_LE, fdes_amd64() if fdes is None else fdes, **kw)


def findings(data: bytes, profile: str = "strict", **opts) -> list[Finding]:
    return check_section_bytes(data, options=Options(profile=profile, **opts)).findings


def by_rule(data: bytes, profile: str = "strict") -> dict[str, Severity]:
    """rule -> worst severity under `profile`."""
    out: dict[str, Severity] = {}
    for f in findings(data, profile):
        out[f.rule] = max(out.get(f.rule, f.severity), f.severity)
    return out


def errors(data: bytes, profile: str) -> set[str]:
    return {r for r, s in by_rule(data, profile).items() if s == Severity.ERROR}


def patch(data: bytes, offset: int, fmt: str, value: int) -> bytes:
    b = bytearray(data)
    struct.pack_into("<" + fmt, b, offset, value)
    return bytes(b)


def with_gap(version: int, gap: int = 8) -> bytes:
    """A valid section whose FRE sub-section starts `gap` bytes after the FDE array."""
    s = section(version, flags=C.F_FDE_SORTED | (C.F_FDE_FUNC_START_PCREL if version == 3 else 0))
    return encode(replace(s, header=replace(s.header, freoff=s.header.freoff + gap)))


# Sections each reader rejects: (profile, rule, section bytes).
REJECTED = [
    ("kernel", K.READER_VERSION.id, encode(section(2))),
    ("kernel", K.READER_VERSION.id, encode(section(1, flags=C.F_FDE_SORTED))),
    ("kernel", K.READER_FLAGS.id, encode(section(3, flags=C.F_FDE_FUNC_START_PCREL))),
    ("kernel", K.READER_FLAGS.id, encode(section(3, flags=C.F_FDE_SORTED))),
    ("kernel", K.READER_AUXHDR.id, encode(section(3, auxhdr=b"\0\0\0\0"))),
    ("kernel", K.READER_EMPTY.id, encode(section(3, []))),
    ("kernel", K.READER_EMPTY.id, encode(section(3, [FDE(start=0x100, size=0x10,
                                                   info=fde_info(C.FRE_TYPE_ADDR1))]))),
    ("glibc-2.42", K.READER_VERSION.id, encode(section(3))),
    ("glibc-2.42", K.READER_VERSION.id, encode(section(1, flags=C.F_FDE_SORTED))),
    ("glibc-2.42", K.READER_FLAGS.id, encode(section(2, flags=0))),
    ("glibc-2.42", K.READER_FLAGS.id, encode(section(2, flags=C.F_FDE_FUNC_START_PCREL))),
    ("glibc-2.42", K.READER_OFFSETS.id, encode(section(2, fdeoff=8))),
    ("glibc-2.42", K.READER_OFFSETS.id, with_gap(2)),
    ("libsframe-2.46", K.READER_VERSION.id, encode(section(1, flags=C.F_FDE_SORTED))),
    ("libsframe-2.46", K.READER_FLAGS.id, encode(section(2, flags=C.F_FDE_SORTED))),
    ("libsframe-2.46", K.READER_FLAGS.id, encode(section(3, flags=C.F_FDE_FUNC_START_PCREL))),
    ("llvm-22", K.READER_VERSION.id, encode(section(3))),
    ("llvm-22", K.READER_VERSION.id, encode(section(1, flags=C.F_FDE_SORTED))),
    ("llvm-22", K.READER_OFFSETS.id, with_gap(2)),
]


@pytest.mark.parametrize(("profile", "rule", "data"), REJECTED,
                         ids=[f"{p}-{r}-{i}" for i, (p, r, _) in enumerate(REJECTED)])
def test_rejected_fires_under_profile_only(profile: str, rule: str, data: bytes) -> None:
    assert by_rule(data, profile).get(rule) == Severity.ERROR
    assert not set(by_rule(data)) & CONSUMER_IDS


@pytest.mark.parametrize(("profile", "rule", "data"), REJECTED,
                         ids=[f"{p}-{r}-{i}" for i, (p, r, _) in enumerate(REJECTED)])
def test_message_names_the_reader(profile: str, rule: str, data: bytes) -> None:
    msgs = [f.message for f in findings(data, profile) if f.rule == rule]
    assert msgs and all(PROFILES[profile].reader in m for m in msgs)


# Sections each reader accepts: no error under its profile.
ACCEPTED = [
    ("kernel", encode(section(3))),
    ("glibc-2.42", encode(section(2, flags=C.F_FDE_SORTED))),
    ("glibc-2.42", encode(section(2, flags=SORTED_PCREL))),  # PCREL handled since @86fbb4cb
    ("libsframe-2.46", encode(section(3))),
    ("libsframe-2.46", encode(section(2, flags=SORTED_PCREL))),
    ("llvm-22", encode(section(2, flags=C.F_FDE_SORTED))),
    ("llvm-22", encode(section(2, flags=0))),  # a dumper: no sort order needed
    ("llvm-22", encode(section(2, flags=C.F_FDE_SORTED, fdeoff=8))),  # fdeoff is honoured
    ("kernel", encode(section(3, fdeoff=8))),  # the kernel honours fdeoff (a strict warning)
]


@pytest.mark.parametrize(("profile", "data"), ACCEPTED,
                         ids=[f"{p}-{i}" for i, (p, _) in enumerate(ACCEPTED)])
def test_accepted_has_no_error(profile: str, data: bytes) -> None:
    assert errors(data, profile) == set()


def test_duplicate_function_starts_kernel_only() -> None:
    # v3 starts are PC-relative: the second field sits 16 bytes later, so start - 16 is the
    # same address. A size-0 first function keeps the ranges from overlapping.
    fdes = [FDE(start=0x100, size=0, info=fde_info(C.FRE_TYPE_ADDR1), fres=(make_fre(0, [8]),)),
            FDE(start=0x100 - 16, size=0x20, info=fde_info(C.FRE_TYPE_ADDR1),
                fres=(make_fre(0, [8]),))]
    data = encode(section(3, fdes))
    assert errors(data, "strict") == set()
    got = [f for f in findings(data, "kernel") if f.rule == K.READER_STARTS.id]
    assert len(got) == 1 and got[0].location.fde == 1
    assert K.READER_STARTS.id not in by_rule(data, "libsframe-2.46")


def test_relocatable_files_are_not_held_to_runtime_flags() -> None:
    obj = CORPUS / "v3" / "lib.o"
    res = check_elf(obj, options=Options(profile="kernel", **NO_SEMANTIC))
    assert res.error is None and res.sections
    assert K.READER_FLAGS.id not in {f.rule for f in res.findings}
    # the same header bytes as a bare section (not known to be a .o) are held to them
    raw = load_elf(obj).sections[0].data
    assert by_rule(raw, "kernel").get(K.READER_FLAGS.id) == Severity.ERROR


def test_text_segments_kernel() -> None:
    """FDEs starting in two PF_X segments: every per-segment registration fails."""
    info = load_elf(CORPUS / "v3" / "exe_pie")
    sec = info.sections[0]

    def run(segments: tuple[LoadSegment, ...], profile: str) -> list[Finding]:
        ctx = SectionContext("exe", sec.name, sec.vma, sec.data)
        h = check_section(ctx)
        assert h is not None and ctx.ranges
        K.check_consumer(ctx, PROFILES[profile], h, replace(info, load_segments=segments))
        return [f for f in ctx.findings if f.rule == K.READER_TEXT.id]

    assert run(info.load_segments, "kernel") == []
    text = next(s for s in info.load_segments if s.flags & 1)
    starts = sorted(pc for pc, _, _ in
                    (r for r in _ranges(sec) if text.vaddr <= r[0] < text.vaddr + text.memsz))
    cut = (starts[0] + starts[-1]) // 2 if starts[0] != starts[-1] else starts[0] + 1
    half = cut - text.vaddr
    split = tuple(s for s in info.load_segments if s is not text) + (
        replace(text, memsz=half), replace(text, index=99, vaddr=cut, memsz=text.memsz - half))
    got = run(split, "kernel")
    assert len(got) == 1 and "2 executable segments" in got[0].message
    assert run(split, "glibc-2.42") == []


def _ranges(sec) -> list[tuple[int, int, int]]:
    ctx = SectionContext("exe", sec.name, sec.vma, sec.data)
    check_section(ctx)
    return ctx.ranges


# Severity overrides: (profile, rule, data, strict severity, profile severity).
def _start_at_size() -> bytes:
    f = FDE(start=0x100, size=0x10, info=fde_info(C.FRE_TYPE_ADDR1),
            fres=(make_fre(0, [8]), make_fre(0x10, [16])))
    return encode(section(3, [f]))


def _pcmask_rep0(version: int) -> bytes:
    f = FDE(start=0x100, size=0x30, info=fde_info(C.FRE_TYPE_ADDR1, pcmask=True), rep_size=0,
            fres=(make_fre(0, [8]),))
    flags = SORTED_PCREL if version == 3 else C.F_FDE_SORTED
    return encode(section(version, [f], flags=flags))


def _start_beyond(version: int) -> bytes:
    f = FDE(start=0x100, size=0x10, info=fde_info(C.FRE_TYPE_ADDR1),
            fres=(make_fre(0, [8]), make_fre(0x20, [16])))
    return encode(section(version, [f], flags=SORTED_PCREL))


def _unsorted_v2() -> bytes:
    return encode(section(2, fdes_amd64(start2=0x80), flags=C.F_FDE_SORTED))


V3 = encode(section(3))
V2 = encode(section(2, flags=C.F_FDE_SORTED))
OVERRIDES = [
    ("kernel", "defect-fre-start-at-size", _start_at_size(), Severity.WARNING, Severity.INFO),
    ("libsframe-2.46", "defect-fre-start-at-size", _start_at_size(), Severity.WARNING,
     Severity.INFO),
    ("kernel", "layout-num-fres", patch(V3, 0xC, "I", 9), Severity.ERROR, Severity.WARNING),
    ("kernel", "layout-trailing-bytes", V3 + b"\0\x01", Severity.ERROR, Severity.WARNING),
    ("kernel", "header-flags-unknown", patch(V3, 3, "B", SORTED_PCREL | 0x2), Severity.ERROR,
     Severity.WARNING),
    ("kernel", "fde-pcmask-rep-size", _pcmask_rep0(3), Severity.ERROR, Severity.ERROR),
    ("glibc-2.42", "layout-num-fres", patch(V2, 0xC, "I", 9), Severity.ERROR, Severity.WARNING),
    ("glibc-2.42", "fde-pcmask-rep-size", _pcmask_rep0(2), Severity.ERROR, Severity.ERROR),
    ("libsframe-2.46", "fre-start-beyond-size", _start_beyond(3), Severity.ERROR, Severity.ERROR),
    ("libsframe-2.46", "layout-fdeoff-nonzero", encode(section(3, fdeoff=8)), Severity.WARNING,
     Severity.ERROR),
    ("llvm-22", "fde-unsorted", _unsorted_v2(), Severity.ERROR, Severity.WARNING),
    ("llvm-22", "fde-pcmask-rep-size", _pcmask_rep0(2), Severity.ERROR, Severity.WARNING),
    ("llvm-22", "layout-trailing-bytes", V2 + b"\x07", Severity.ERROR, Severity.WARNING),
]


@pytest.mark.parametrize(("profile", "rule", "data", "strict", "under"), OVERRIDES,
                         ids=[f"{p}-{r}" for p, r, *_ in OVERRIDES])
def test_severity_override(profile: str, rule: str, data: bytes, strict: Severity,
                           under: Severity) -> None:
    assert PROFILES[profile].overrides[rule].severity == under
    assert by_rule(data).get(rule) == strict
    assert by_rule(data, profile).get(rule) == under


def test_suppressed_rule_is_reported_once() -> None:
    """glibc: fdeoff != 0 is layout-offsets-ignored (error), not also the strict warning."""
    data = encode(section(2, flags=C.F_FDE_SORTED, fdeoff=8))
    assert by_rule(data).get("layout-fdeoff-nonzero") == Severity.WARNING
    under = by_rule(data, "glibc-2.42")
    assert "layout-fdeoff-nonzero" not in under and under[K.READER_OFFSETS.id] == Severity.ERROR


def test_suppressed_findings_are_not_counted() -> None:
    """A suppressed rule is not counted, so the per-rule cap note never looks for it."""
    rule, other = RULES["fre-start-order"], RULES["fre-first-start"]
    ctx = SectionContext("x", ".sframe", 0, b"",
                         severity_for=lambda r, s: None if r is rule else Severity.INFO)
    for _ in range(MAX_PER_RULE + 5):
        ctx.emit(rule, "dropped")
        ctx.emit(other, "kept")
    ctx.finish()
    assert rule.id not in ctx.counts
    assert {f.rule for f in ctx.findings} == {other.id}
    assert {f.severity for f in ctx.findings} == {Severity.INFO}
    assert sum("more finding" in f.message for f in ctx.findings) == 1


def test_profiles_are_documented() -> None:
    for name, p in PROFILES.items():
        assert (p.name == name or name in p.aliases) and p.title
        for rid, effect in p.effects.items():
            assert rid in RULES, f"{name}: effect of unknown rule {rid}"
            assert effect is None or effect in EFFECTS
        assert set(p.group_effects) <= set(GROUPS) and set(p.group_effects.values()) <= set(EFFECTS)
        for rid in p.consumer:
            assert rid in CONSUMER_IDS, rid
        for rid, o in p.overrides.items():
            assert rid in RULES, f"{name}: override of unknown rule {rid}"
            assert rid not in CONSUMER_IDS
            assert o.why and o.source
        if name != "strict":
            assert p.sources and all(f.source for f in p.consumer.values())
            assert K.READER_VERSION.id in p.consumer
    for rid in CONSUMER_IDS:
        assert RULES[rid].group in ("header", "layout", "fde", "fre", "elf")
        assert any(rid in p.consumer for p in PROFILES.values()), f"{rid} used by no profile"
    assert not PROFILES["strict"].consumer and not PROFILES["strict"].overrides
    assert flag_names(SORTED_PCREL) == "FDE_SORTED|FDE_FUNC_START_PCREL"


def test_options_validate_profile() -> None:
    Options(profile="kernel").validate()
    with pytest.raises(ValueError, match="unknown profile"):
        Options(profile="musl").validate()


def test_the_checker_reads_the_profile_object_the_options_hold() -> None:
    """Options holds a Profile, looked up once where a name comes in: the checker judges
    by that object's facts, never by looking its name up again."""
    kernel = PROFILES["kernel"]
    takes_v2 = replace(kernel, versions=frozenset({2, 3}))  # same name, other facts
    v2 = encode(section(2))
    assert K.READER_VERSION.id in errors(v2, "kernel")
    got = check_section_bytes(v2, options=Options(profile=takes_v2)).findings
    assert K.READER_VERSION.id not in {f.rule for f in got}
    so = CORPUS / "v3" / "libcorpus.so"
    takes_v2_only = replace(kernel, versions=frozenset({2}))
    assert K.READER_VERSION.id not in {f.rule for f in check_elf(so, options=Options(
        profile=kernel, **NO_SEMANTIC)).findings}
    assert K.READER_VERSION.id in {f.rule for f in check_elf(so, options=Options(
        profile=takes_v2_only, **NO_SEMANTIC)).findings}


# Real corpus files.
def linked(pattern: str) -> list[Path]:
    """Linked ELF files (executables and .so), not the recorded tool outputs beside them."""
    return sorted(p for p in CORPUS.glob(pattern) if p.is_file() and (
        p.name.endswith(".so") or (p.name.startswith("exe") and "." not in p.name)))


V3_LINKED = linked("v3/*") + linked("aarch64/v3/*") + linked("s390x/v3/*")
V2_LINKED = linked("v2/*")


def test_corpus_lists_are_not_empty() -> None:
    assert len(V3_LINKED) >= 8 and len(V2_LINKED) >= 7


def rules_with(path: Path, profile: str, severity: Severity = Severity.ERROR) -> set[str]:
    res = check_elf(path, options=Options(profile=profile, **NO_SEMANTIC))
    assert res.error is None
    return {f.rule for f in res.findings if f.severity >= severity}


@pytest.mark.parametrize("path", V3_LINKED, ids=lambda p: str(p.relative_to(CORPUS)))
def test_v3_corpus_kernel_accepts_glibc_llvm_reject(path: Path) -> None:
    assert rules_with(path, "kernel") == set()
    assert rules_with(path, "libsframe-2.46") == set()
    for profile in ("glibc-2.42", "llvm-22"):
        assert rules_with(path, profile) == {K.READER_VERSION.id}


@pytest.mark.parametrize("path", V2_LINKED, ids=lambda p: str(p.relative_to(CORPUS)))
def test_v2_corpus_glibc_llvm_accept_kernel_rejects(path: Path) -> None:
    assert rules_with(path, "glibc-2.42") == set()
    assert rules_with(path, "llvm-22") == set()
    assert rules_with(path, "kernel") == {K.READER_VERSION.id}
    # binutils 2.44 output has no PC-relative starts: libsframe 2.46 lookups misread it
    assert rules_with(path, "libsframe-2.46") == {K.READER_FLAGS.id}


# CLI end to end.
def test_cli_profile_exit_status(capsys: pytest.CaptureFixture[str]) -> None:
    v2, v3 = str(CORPUS / "v2" / "exe_pie"), str(CORPUS / "v3" / "exe_pie")
    quiet = ["--disable", "semantic", "--disable", "defect", "--no-color"]
    assert main(["check", "--profile", "kernel", *quiet, v3]) == 0
    assert main(["check", "--profile", "kernel", *quiet, v2]) == 1
    out = capsys.readouterr().out
    assert "[header-version-unsupported]" in out and "the kernel (V3 series) rejects version 2" \
        in out
    assert main(["--profile", "glibc-2.42", *quiet, v2]) == 0  # default command is check
    assert main(["check", "--profile", "llvm-22", *quiet, v3]) == 1
    assert main(["check", *quiet, v2]) == 0  # strict: a v2 file is fine
    with pytest.raises(SystemExit) as exc:
        main(["check", "--profile", "musl", v2])
    assert exc.value.code == 2


def test_cli_profiles_and_explain(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["profiles"]) == 0
    out = capsys.readouterr().out
    # the compact table: a header, then one row per profile (a long last column wraps
    # onto indented lines)
    table = [line for line in out[:out.index("\n\n")].splitlines() if not line.startswith(" ")]
    assert [line.split()[0] for line in table[1:]] == [p.name for p in LISTED]
    assert table[1 + [p.name for p in LISTED].index("kernel-v13")].split()[1:3] == [
        "v3", "FDE_SORTED|FDE_FUNC_START_PCREL"]
    assert "20260127150554.2760964-1-jremus@linux.ibm.com" in out  # v13's cover letter
    assert "`kernel` is kernel-v13" in out
    assert "bminor/glibc:sysdeps/generic/sframe-read.c@86fbb4cb" in out
    assert main(["profiles", "kernel"]) == 0  # the alias names the latest posting
    one = capsys.readouterr().out
    assert one.startswith("kernel-v13: ") and "also named: kernel" in one
    assert "required flags (v3): FDE_SORTED|FDE_FUNC_START_PCREL" in one and "llvm" not in one
    assert "[PATCH v13] unwind_deferred: Implement sframe handling" in one
    assert "unwind: Add stacktrace_setup system call" in one and "2026-04-29" in one
    assert main(["profiles", "musl"]) == 2
    capsys.readouterr()
    assert main(["explain", K.READER_FLAGS.id]) == 0
    exp = capsys.readouterr().out
    assert "--profile kernel-v13: error, refuses the section." in exp
    assert "--profile glibc-2.42: error, skips the section." in exp
    assert "--profile llvm-22" not in exp  # a consumer rule llvm-22 does not run
    assert main(["explain", "defect-fre-start-at-size"]) == 0
    exp = capsys.readouterr().out
    assert "--profile kernel-v13: info, nothing (shown, not counted)." in exp
    assert "--profile llvm-22: warning, nothing" in exp  # no override: the rule's own severity
    assert main(["explain", "semantic-cfa-mismatch"]) == 0
    exp = capsys.readouterr().out
    assert "--profile kernel-v13: error, misreads it." in exp
    assert "--profile llvm-22: error, nothing (shown, not counted)." in exp


# Properties.
PROPS = settings(max_examples=150, deadline=None,
                 suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])


def _ids(data: bytes, profile: str) -> dict[str, set[Severity]]:
    out: dict[str, set[Severity]] = {}
    for f in findings(data, profile):
        out.setdefault(f.rule, set()).add(f.severity)
    return out


def _differs_only_by_profile(data: bytes) -> None:
    strict = _ids(data, "strict")
    assert not set(strict) & CONSUMER_IDS
    for p in LISTED[1:]:
        name = p.name
        under = _ids(data, name)
        assert set(under) - set(strict) <= set(p.consumer), name
        dropped = {r for r, o in p.overrides.items() if o.severity is None}
        assert set(strict) - set(under) <= dropped, name
        for rid, sevs in under.items():
            if rid in p.overrides:
                assert sevs == {p.overrides[rid].severity}, (name, rid)
            elif rid in strict:
                assert sevs == strict[rid], (name, rid)
            else:  # a consumer rule: at its own severity (the model's gap rows: warnings)
                assert sevs == {RULES[rid].severity}, (name, rid)


@PROPS
@given(st.binary(max_size=200))
def test_any_bytes_every_profile(data: bytes) -> None:
    _differs_only_by_profile(data)


@PROPS
@given(mutated_sections())
def test_damaged_sections_every_profile(data: bytes) -> None:
    _differs_only_by_profile(data)


@PROPS
@given(sections())
def test_valid_sections_every_profile(s: Section) -> None:
    data = encode(s)
    _differs_only_by_profile(data)
    # a version the reader does not take is reported, and nothing else from the consumer rules
    for p in LISTED[1:]:
        name = p.name
        ids = _ids(data, name)
        if s.header.version not in p.versions:
            assert set(ids) & CONSUMER_IDS == {K.READER_VERSION.id}
        else:
            assert K.READER_VERSION.id not in ids


def test_flex_registers_the_dumper_names() -> None:
    """Which FLEX control words libsframe's dumper passes to sframe_get_reg_name."""
    from sfcheck.rules.consumer import _flex_registers
    reg = (7 << 3) | 1  # reg_p, register 7
    assert _flex_registers(make_fre(0, [reg, 8])) == ["CFA"]
    assert _flex_registers(make_fre(0, [2, 8])) == []  # CFA-relative: "c", no register name
    assert _flex_registers(make_fre(0, [reg])) == []  # one word: the dumper asserts first
    assert _flex_registers(make_fre(0, [reg, 8, reg, 0])) == ["CFA", "RA"]
    # RA padding (word 2 is 0) moves FP's control word to 3
    assert _flex_registers(make_fre(0, [reg, 8, 0, reg, 16])) == ["CFA", "FP"]
    assert _flex_registers(make_fre(0, [2, 8, 2, -8, reg, 0])) == ["FP"]


def _flex_dump_findings(data: bytes, profile: str) -> list[tuple]:
    return [(f.rule, f.message, f.location.fde, f.location.fre, f.location.offset)
            for f in findings(data, profile)
            if f.rule in (K.READER_FLEX_ONE_WORD.id, K.READER_FLEX_ABI.id)]


@settings(max_examples=150, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.one_of(mutated_sections(), sections(versions=(3,)).map(encode)),
       abi=st.sampled_from([None, 0x7F]), profile=st.sampled_from(["libsframe-2.46",
                                                                   "libsframe-2.40"]))
def test_flex_dump_prefilter_changes_nothing(data: bytes, abi: int | None,
                                             profile: str) -> None:
    """_any_flex only skips _check_flex_dump's walk where that walk reports nothing: the
    findings are the walk's own, on valid and damaged sections, known and unknown ABIs."""
    from unittest import mock

    if abi is not None and len(data) > 4:
        data = data[:4] + bytes([abi]) + data[5:]  # sfh_abi_arch
    got = _flex_dump_findings(data, profile)
    with mock.patch.object(K, "_any_flex", lambda _data, _h: True):
        assert got == _flex_dump_findings(data, profile)


def test_flex_dump_prefilter_sees_a_flex_fde_after_default_ones() -> None:
    """The FLEX FDE is the last: the prefilter reads every FDE record to find it."""
    flex = FDE(start=0x300, size=0x10, info=fde_info(C.FRE_TYPE_ADDR1),
               fres=(make_fre(0, [(7 << 3) | 1]),), info2=C.FDE_TYPE_FLEX)
    data = encode(section(3, fdes_amd64() + [flex]))
    assert [(r, fde, fre) for r, _m, fde, fre, _o in
            _flex_dump_findings(data, "libsframe-2.46")] == [(K.READER_FLEX_ONE_WORD.id, 2, 0)]
