"""What a reader does with each finding under a profile (sfcheck.effects): the effect data,
the verdict, and that the exit status and every output format count only what concerns the
reader, while strict output stays as it was."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from pathlib import Path

import jsonschema
import pytest

from sfcheck import effects
from sfcheck.checker import Options, check_section_bytes
from sfcheck.cli import main
from sfcheck.format import FDE, build_section, encode, fde_info, make_fre
from sfcheck.format import constants as C
from sfcheck.profiles import LISTED, PROFILES, STRICT
from sfcheck.report import json_report
from sfcheck.result import FileResult, Finding, Location, Severity

from helpers import CORPUS, ROOT

SARIF_SCHEMA = ROOT / "tests" / "data" / "sarif-2.1.0-rtm.5.schema.json"
PCREL_SORTED = C.F_FDE_SORTED | C.F_FDE_FUNC_START_PCREL


def _unsorted(version: int = 3) -> bytes:
    """FDE_SORTED set, FDEs out of order: a lookup-only defect (fde-unsorted)."""
    fdes = [FDE(start=0x200, size=0x20, info=fde_info(C.FRE_TYPE_ADDR1),
                fres=(make_fre(0, [8]),)),
            FDE(start=0x100, size=0x40, info=fde_info(C.FRE_TYPE_ADDR1),
                fres=(make_fre(0, [8]), make_fre(1, [16, -16])))]
    return encode(build_section(version, C.ABI_AMD64_LE, fdes, flags=PCREL_SORTED))


@pytest.fixture()
def unsorted(tmp_path: Path) -> str:
    path = tmp_path / "unsorted.sframe"
    path.write_bytes(_unsorted())
    return str(path)


def _check(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str]:
    status = main(["check", "--no-config", "-j", "1", "--no-color", *argv])
    return status, capsys.readouterr().out


def _f(rule: str, severity: Severity = Severity.ERROR, effect: str | None = None,
       waived: str | None = None) -> Finding:
    return Finding(rule, severity, "m", Location("x"), waived=waived, effect=effect)


# --- the data -------------------------------------------------------------------------

def test_effect_defaults_per_profile() -> None:
    kernel, llvm = PROFILES["kernel"], PROFILES["llvm-22"]
    assert kernel is PROFILES["kernel-v13"]  # `kernel` names the latest posting
    # a rule the profile names wins over everything
    assert kernel.effect("fde-pcmask-rep-size", "fde", Severity.ERROR) == effects.CRASHES
    assert kernel.effect("header-flags-required", "header", Severity.ERROR) == effects.REFUSES
    # below error, and not named: the reader takes it without harm
    assert kernel.effect("fde-no-fres", "fde", Severity.WARNING) == effects.NOTHING
    # an error the profile does not name: its group's default
    assert kernel.effect("semantic-cfa-mismatch", "semantic", Severity.ERROR) == effects.MISREADS
    assert llvm.effect("semantic-cfa-mismatch", "semantic", Severity.ERROR) == effects.NOTHING
    assert llvm.effect("layout-fre-bounds", "layout", Severity.ERROR) == effects.SKIPS
    assert PROFILES["libsframe-2.46"].effect("layout-fre-bounds", "layout",
                                             Severity.ERROR) == effects.CRASHES
    # sfcheck's own gates are no reader's business: counted as under strict
    assert kernel.effect("elf-no-sframe", "elf", Severity.ERROR) is None
    assert STRICT.effect("fde-unsorted", "fde", Severity.ERROR) is None
    # the list: what the dumpers print as stored is nothing to them
    for name in ("llvm-22", "libsframe-2.46"):
        p = PROFILES[name]
        for rid, group in (("semantic-ra-mismatch", "semantic"), ("elf-abi-machine", "elf"),
                           ("header-fixed-ra", "header"), ("layout-gap-bytes", "layout"),
                           ("header-flags-required", "header"), ("fde-unsorted", "fde")):
            assert p.effect(rid, group, Severity.ERROR) == effects.NOTHING, (name, rid)
    for p in LISTED[1:]:  # every runtime and dumper profile says something of every group
        assert set(p.group_effects) == {"header", "layout", "fde", "fre", "elf", "semantic",
                                        "defect"}, p.name


def test_verdict_is_the_gravest_counted_error() -> None:
    res = FileResult("x", findings=[_f("a", effect=effects.MISREADS),
                                    _f("b", effect=effects.REFUSES),
                                    _f("c", effect=effects.CRASHES, waived="known"),
                                    _f("d", effect=effects.NOTHING),
                                    _f("e", Severity.WARNING, effect=effects.CRASHES),
                                    _f("f", effect=effects.REFUSES)])
    # the waived, the nothing and the warning are not counted; the rest are, of any effect
    assert effects.verdict(res) == (effects.REFUSES, 3)
    assert effects.verdict_text("kernel-v13", res) == "kernel-v13: would refuse (3 findings)"
    # a refusal comes first: a refused section is never read far enough to crash
    res.findings.append(_f("g", effect=effects.CRASHES))
    assert effects.verdict(res) == (effects.REFUSES, 4)
    res = FileResult("x", findings=[_f("a", effect=effects.MISREADS),
                                    _f("b", effect=effects.CRASHES),
                                    _f("c", effect=effects.SKIPS)])
    assert effects.verdict(res) == (effects.CRASHES, 3)
    res = FileResult("x", findings=[_f("a", effect=effects.MISREADS),
                                    _f("b", effect=effects.SKIPS)])
    assert effects.verdict(res) == (effects.SKIPS, 2)
    assert effects.verdict(FileResult("y", findings=[_f("d", effect=effects.NOTHING)])) == (
        effects.TAKES, 0)
    assert effects.verdict_text("llvm-22", FileResult("y")) == "llvm-22: would take"


def test_worst_ignores_what_the_reader_never_reads() -> None:
    res = FileResult("x", findings=[_f("a", effect=effects.NOTHING),
                                    _f("b", Severity.WARNING, effect=effects.MISREADS)])
    assert res.worst() == Severity.WARNING
    assert FileResult("x", findings=[_f("a")]).worst() == Severity.ERROR  # strict: as before


# --- exit status and text --------------------------------------------------------------

def test_lookup_only_defect_passes_a_dumper_and_fails_the_kernel(
        unsorted: str, capsys: pytest.CaptureFixture[str]) -> None:
    status, out = _check(capsys, "--raw", "--profile", "libsframe-2.46", unsorted)
    assert status == 0
    assert "[fde-unsorted]" in out and "(libsframe-2.46: nothing, not counted)" in out
    assert out.rstrip().endswith("libsframe-2.46: would take") or \
        "libsframe-2.46: would take\n" in out
    status, out = _check(capsys, "--raw", "--profile", "kernel", unsorted)
    assert status == 1
    assert "(kernel-v13: skips)" in out and "kernel-v13: would skip the section (" in out
    status, out = _check(capsys, "--raw", unsorted)  # strict: unchanged
    assert status == 1 and "would" not in out and "kernel" not in out and "nothing" not in out


def test_dumper_profile_passes_a_corpus_file_only_lookups_reject(
        capsys: pytest.CaptureFixture[str]) -> None:
    v2 = str(CORPUS / "v2" / "exe_pie")  # no FDE_FUNC_START_PCREL: header-flags-required
    status, out = _check(capsys, "--profile", "libsframe-2.46", v2)
    assert status == 0 and "[header-flags-required]" in out
    assert f"{v2}: libsframe-2.46: would take" in out
    status, out = _check(capsys, "--profile", "glibc-2.42", "--fail-on", "warning", v2)
    assert f"{v2}: glibc-2.42: would take" in out


def test_scan_summary_counts_files_per_verdict(capsys: pytest.CaptureFixture[str]) -> None:
    status, out = _check(capsys, "--profile", "kernel", str(CORPUS / "v2" / "exe_pie"),
                         str(CORPUS / "v3" / "exe_pie"), str(CORPUS / "v3" / "libcorpus.so"))
    assert status == 1
    line = next(x for x in out.splitlines() if x.startswith("  kernel-v13: "))
    assert line.startswith("  kernel-v13: would take 2, would refuse 1 (of 3 files with SFrame;")


# --- machine formats -------------------------------------------------------------------

def test_json_carries_effects_and_verdicts_and_validates(
        unsorted: str, capsys: pytest.CaptureFixture[str]) -> None:
    schema = json_report.schema()
    status, out = _check(capsys, "--raw", "--profile", "kernel", "--format", "json", unsorted)
    doc = json.loads(out)
    jsonschema.validate(doc, schema, cls=jsonschema.Draft202012Validator)
    assert doc["profile"] == "kernel-v13" and doc["exit_status"] == status == 1
    assert {f["effect"] for f in doc["files"][0]["findings"]} == {"skips"}
    assert doc["files"][0]["verdict"]["verdict"] == "skips"
    assert doc["summary"]["verdicts"]["skips"] == 1
    # the schema is not vacuous about the new fields
    for broken in ({**doc, "profile": 3},
                   {**doc, "summary": {**doc["summary"], "verdicts": {"maybe": 1}}}):
        with pytest.raises(jsonschema.ValidationError):
            jsonschema.validate(broken, schema, cls=jsonschema.Draft202012Validator)
    bad = json.loads(out)
    bad["files"][0]["findings"][0]["effect"] = "explodes"
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(bad, schema, cls=jsonschema.Draft202012Validator)
    # strict: none of it
    _, out = _check(capsys, "--raw", "--format", "json", unsorted)
    doc = json.loads(out)
    assert "profile" not in doc and "verdicts" not in doc["summary"]
    assert "verdict" not in doc["files"][0] and "effect" not in doc["files"][0]["findings"][0]


def test_ci_formats_list_what_is_nothing_to_the_reader_as_a_note(
        unsorted: str, capsys: pytest.CaptureFixture[str]) -> None:
    _, out = _check(capsys, "--raw", "--profile", "libsframe-2.46", "--format", "sarif",
                    unsorted)
    doc = json.loads(out)
    jsonschema.Draft4Validator(json.loads(SARIF_SCHEMA.read_text())).validate(doc)
    (result,) = doc["runs"][0]["results"]
    assert result["level"] == "note" and result["properties"]["effect"] == "nothing"
    assert result["properties"]["profile"] == "libsframe-2.46"
    _, out = _check(capsys, "--raw", "--profile", "kernel", "--format", "sarif", unsorted)
    levels = {r["level"] for r in json.loads(out)["runs"][0]["results"]}
    assert levels == {"error"}
    _, out = _check(capsys, "--raw", "--profile", "libsframe-2.46", "--format", "github",
                    unsorted)
    assert out.startswith("::notice ") and "libsframe-2.46: nothing" in out
    _, out = _check(capsys, "--raw", "--profile", "libsframe-2.46", "--format", "gitlab",
                    unsorted)
    assert [i["severity"] for i in json.loads(out)] == ["info"]
    status, out = _check(capsys, "--raw", "--profile", "libsframe-2.46", "--format", "junit",
                         unsorted)
    assert status == 0 and ET.fromstring(out).get("failures") == "0"
    status, out = _check(capsys, "--raw", "--profile", "kernel", "--format", "junit", unsorted)
    assert status == 1 and ET.fromstring(out).get("failures") != "0"


def test_check_section_bytes_annotates_under_a_profile_only() -> None:
    data = _unsorted()
    assert {f.effect for f in check_section_bytes(data).findings} == {None}
    got = check_section_bytes(data, options=Options(profile="llvm-22")).findings
    assert {f.rule: f.effect for f in got} == {"fde-unsorted": "nothing",
                                               "header-version-unsupported": "skips"}


def test_alias_is_the_same_profile() -> None:
    """`--profile kernel` is kernel-v13 in every finding and effect (the tests that run each
    profile run the alias's target once)."""
    data = _unsorted()
    got = {name: check_section_bytes(data, options=Options(profile=name)).findings
           for name in ("kernel", "kernel-v13")}
    assert got["kernel"] == got["kernel-v13"] and got["kernel"]
    assert [p.name for p in LISTED].count("kernel-v13") == 1
    assert "kernel" not in [p.name for p in LISTED]
