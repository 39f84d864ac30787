"""Waiver files: parsing, matching by path/package/function/PC, unused and unwaivable ones."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from sfcheck.cli import main
from sfcheck.result import FileResult, Finding, Location, Severity
from sfcheck.rules import RULES
from sfcheck.scan import ScanConfig, scan
from sfcheck.waivers import (
    UNWAIVABLE,
    WaiverError,
    apply_waivers,
    load_waivers,
    needs_symbols,
    parse_waivers,
)

from archives import LIB_V1, dpkg_deb


def waiver_toml(**fields: object) -> str:
    body = "\n".join(f"{k} = {json.dumps(v) if isinstance(v, str) else v}"
                     for k, v in fields.items())
    return f"[[waiver]]\n{body}\n"


def finding(rule: str, pc: int | None = None, function: str | None = None) -> Finding:
    return Finding(rule, RULES[rule].severity, "m", Location("p", ".sframe", pc=pc,
                                                             function=function))


def test_unwaivable_rules_exist() -> None:
    assert set(RULES) >= UNWAIVABLE


@pytest.mark.parametrize("text,words", [
    ("[[waiver]]\nrule = 'elf-not-sorted'\npath = '*'\n", "`reason` is required"),
    ("[[waiver]]\nrule = 'elf-not-sorted'\npath = '*'\nreason = '  '\n", "`reason` is required"),
    ("[[waiver]]\npath = '*'\nreason = 'r'\n", "`rule` is required"),
    ("[[waiver]]\nrule = 'elf-not-sorted'\nreason = 'r'\n", "`path` is required"),
    ("[[waiver]]\nrule = 'no-such-rule'\npath = '*'\nreason = 'r'\n", "unknown rule"),
    ("[[waiver]]\nrule = 'layout-fre-bounds'\npath = '*'\nreason = 'r'\n", "cannot be waived"),
    ("[[waiver]]\nrule = 'elf-not-sorted'\npath = '*'\nreason = 'r'\nfunc = 'x'\n",
     "unknown key(s) func"),
    ("[[waiver]]\nrule = 'elf-not-sorted'\npath = '*'\nreason = 'r'\npc = -1\n", "`pc`"),
    ("[[waiver]]\nrule = 'elf-not-sorted'\npath = '*'\nreason = 'r'\npc = '0x10'\n", "`pc`"),
    ("[[waiver]]\nrule = 3\npath = '*'\nreason = 'r'\n", "must be a string"),
    ("rule = 'x'\n", "unknown top-level key"),
    ("[[waiver]\n", "not valid TOML"),
])
def test_parse_errors_name_the_waiver(text: str, words: str) -> None:
    with pytest.raises(WaiverError) as exc:
        parse_waivers(text, "w.toml")
    assert words in str(exc.value) and str(exc.value).startswith("w.toml")


def test_parse_ok_with_hex_pc() -> None:
    (w,) = parse_waivers(waiver_toml(rule="fde", path="lib/*.so", reason=" why ") + "pc = 0x10b0\n")
    assert (w.index, w.rule, w.pc, w.reason) == (1, "fde", 0x10B0, "why")
    assert not needs_symbols([w])
    assert w.as_dict() == {"index": 1, "rule": "fde", "path": "lib/*.so", "reason": "why",
                           "pc": 0x10B0}


def test_matching_rule_group_path_package_pc_function() -> None:
    ws = parse_waivers(
        waiver_toml(rule="elf-not-sorted", path="usr/lib/*", reason="r1")
        + waiver_toml(rule="fde", path="*", package="libx_*.deb", reason="r2")
        + waiver_toml(rule="fde-overlap", path="*", function="asm_*", reason="r3")
        + waiver_toml(rule="fre-start-order", path="*", reason="r4") + "pc = 0x40\n")
    member = FileResult("libx_1.deb:./usr/lib/a.so", package="/out/libx_1.deb",
                        member="./usr/lib/a.so")
    member.findings = [finding("elf-not-sorted"), finding("fde-unsorted"),
                       finding("layout-fre-bounds")]
    plain = FileResult("build/a.so")
    plain.findings = [finding("elf-not-sorted"), finding("fde-overlap", 0x10, "asm_memcpy"),
                      finding("fde-overlap", 0x20, "memcpy"), finding("fde-overlap", 0x30),
                      finding("fre-start-order", 0x40), finding("fre-start-order", 0x41)]
    unused = apply_waivers([member, plain], ws)
    assert unused == []
    assert [f.waived for f in member.findings] == ["r1", "r2", None]  # bounds: unwaivable
    assert [f.waived for f in plain.findings] == [None, "r3", None, None, "r4", None]
    assert member.worst() == Severity.ERROR and plain.worst() == Severity.ERROR


def test_unused_waivers_returned_in_order() -> None:
    ws = parse_waivers(waiver_toml(rule="elf-not-sorted", path="nothing/*", reason="a")
                       + waiver_toml(rule="elf-not-pcrel", path="*", reason="b"))
    res = FileResult("x.so", findings=[finding("elf-not-pcrel")])
    assert [w.index for w in apply_waivers([res], ws)] == [1]
    assert res.worst() is None  # the only finding is waived


def test_load_waivers_io_error(tmp_path: Path) -> None:
    with pytest.raises(WaiverError, match="cannot read waiver file"):
        load_waivers(str(tmp_path / "missing.toml"))


def _function_finding() -> Finding:
    """A finding on the corpus that names a function (found, not hard-coded)."""
    res = scan([str(LIB_V1)], ScanConfig(symbols=True)).files[0]
    named = [f for f in res.findings if f.location.function]
    assert named, "expected at least one finding with a function name on v1/libcorpus.so"
    return named[0]


def test_function_waiver_end_to_end(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    f = _function_finding()
    wfile = tmp_path / "w.toml"
    wfile.write_text(waiver_toml(rule=f.rule, path="*libcorpus.so", function=f.location.function,
                                 reason="known gas issue")
                     + waiver_toml(rule="elf-not-sorted", path="*/other.so", reason="stale"))
    out = tmp_path / "r.json"
    status = main(["check", "-j", "1", "--fail-on", "warning", "--waivers", str(wfile),
                   "--format", "json", "-o", str(out), str(LIB_V1)])
    doc = json.loads(out.read_text())
    waived = [x for x in doc["files"][0]["findings"] if x["waived"]]
    assert waived and all(x["rule"] == f.rule and x["waiver_reason"] == "known gas issue"
                          and x["location"]["function"] == f.location.function for x in waived)
    assert [w["index"] for w in doc["unused_waivers"]] == [2]
    assert "waiver #2 (elf-not-sorted on */other.so) matched no finding" in capsys.readouterr().err
    # Other unwaived warnings (v1 is obsolete) still fail --fail-on warning.
    assert status == doc["exit_status"] == 1


def test_waivers_decide_exit_status(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    base = ["check", "-j", "1", "--disable", "semantic", "--disable", "defect",
            "--fail-on", "warning", str(LIB_V1)]
    assert main(base) == 1  # header-version-obsolete (and friends) are warnings
    text = capsys.readouterr().out
    failing = [line for line in text.splitlines()
               if ": warning: [" in line or ": error: [" in line]
    rules = sorted({line.split("[", 1)[1].split("]", 1)[0] for line in failing})
    wfile = tmp_path / "w.toml"
    wfile.write_text("".join(waiver_toml(rule=r, path="*", reason="accepted") for r in rules))
    assert main([*base, "--waivers", str(wfile)]) == 0
    out = capsys.readouterr().out
    assert out.count("(waived: accepted)") == len(failing)
    assert "0 errors, 0 warnings" in out and f", {len(failing)} waived" in out


def test_waiver_matches_package_member(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    deb = dpkg_deb(tmp_path, {"usr/lib/libold.so": LIB_V1}, name="libold1")
    wfile = tmp_path / "w.toml"
    wfile.write_text(waiver_toml(rule="header-version-obsolete", path="usr/lib/libold.so",
                                 package="libold1_*.deb", reason="v1 until the next rebuild"))
    assert main(["check", "-j", "1", "--fail-on", "warning", "--disable", "semantic",
                 "--disable", "defect", "--disable", "elf-not-pcrel",
                 "--waivers", str(wfile), str(deb)]) == 0
    out = capsys.readouterr().out
    assert ":./usr/lib/libold.so: warning: [header-version-obsolete]" in out
    assert "(waived: v1 until the next rebuild)" in out


def test_bad_waiver_file_is_usage_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    wfile = tmp_path / "w.toml"
    wfile.write_text(waiver_toml(rule="layout-fre-bounds", path="*", reason="no"))
    assert main(["check", "--waivers", str(wfile), str(LIB_V1)]) == 2
    assert "cannot be waived" in capsys.readouterr().err
