"""Report formats: text stays as it was, JSON and SARIF validate against their schemas,
JUnit parses with a JUnit parser; all four render the same scan."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import jsonschema
import pytest
from junitparser import Error, Failure, JUnitXml

from sfcheck.cli import main
from sfcheck.report import json_report
from sfcheck.rules import RULES
from sfcheck.rules.registry import GROUPS

from archives import BAD, LIB_V1, LIB_V3, ar_bytes, deb_bytes, tar_bytes
from helpers import ROOT

SARIF_SCHEMA = ROOT / "tests" / "data" / "sarif-2.1.0-rtm.5.schema.json"
LINE = re.compile(r"^(?P<path>\S+): (?P<sev>error|warning|info): \[(?P<rule>[a-z0-9-]+)\] .+$")
SUMMARY = re.compile(r"^(?P<path>\S+): (1 SFrame section|\d+ SFrame sections)( \(v[\d, v]+\))?: "
                     r"\d+ errors?, "
                     r"\d+ warnings?, \d+ info(, \d+ waived)?$")


@pytest.fixture(scope="module")
def tree(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """ELF files, a non-ELF file, a .deb, a .a, a hostile tar and a waiver file."""
    root = tmp_path_factory.mktemp("tree")
    shutil.copy(BAD, root / "bad.so")
    shutil.copy(LIB_V1, root / "libv1.so")
    (root / "notes.txt").write_text("not ELF\n")
    (root / "pkg.deb").write_bytes(deb_bytes(tar_bytes([("./usr/lib/libv3.so",
                                                         LIB_V3.read_bytes())])))
    (root / "libx.a").write_bytes(ar_bytes([("x.o", BAD.read_bytes())]))
    (root / "evil.tar").write_bytes(tar_bytes([("../evil.so", LIB_V3.read_bytes())]))
    (root / "w.toml").write_text('[[waiver]]\nrule = "elf-no-segment"\npath = "*bad.so"\n'
                                 'reason = "lld test input"\n'
                                 '[[waiver]]\nrule = "elf-not-sorted"\npath = "nowhere"\n'
                                 'reason = "stale"\n')
    return root


def run(tree: Path, fmt: str, *extra: str) -> tuple[int, str]:
    out = tree.parent / f"out.{fmt}"  # outside the tree: later scans must not see it
    status = main(["check", "-j", "2", "--format", fmt, "-o", str(out),
                   "--waivers", str(tree / "w.toml"), *extra, str(tree)])
    return status, out.read_text()


def test_single_file_text_unchanged(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["check", "--no-color", str(BAD)]) == 1
    lines = capsys.readouterr().out.splitlines()
    assert lines and all(LINE.match(x) for x in lines[:-1])
    assert SUMMARY.match(lines[-1]) and lines[-1].startswith(f"{BAD}: ")
    assert "sfcheck summary" not in "\n".join(lines)  # one file: no table


def test_text_tree_with_summary_table(tree: Path) -> None:
    status, text = run(tree, "text")
    assert status == 2  # the hostile tar is refused: an input error
    lines = text.splitlines()
    assert f"{tree}/evil.tar: error: tar archive refused: member path escapes the archive root:" \
           " ../evil.so" in lines
    assert any(x.startswith(f"{tree}/pkg.deb:./usr/lib/libv3.so: ") for x in lines)
    assert any(x.startswith(f"{tree}/libx.a:x.o: ") for x in lines)
    assert "(waived: lld test input)" in text
    table = text[text.index("sfcheck summary"):]
    # 4 objects: 2 files on disk and 2 members (the .deb's library, the .a's object)
    assert re.search(r"\n  objects checked\s+4  \(2 files, 2 members of 2 archives\)\n", table)
    assert re.search(r"skipped: not ELF\s+2\b", table)  # notes.txt and w.toml
    assert re.search(r"unreadable or refused\s+1\b", table)
    # count, files, waived: bad.so waived, x.o not
    assert re.search(r"elf-no-segment\s+error\s+2\s+2\s+1\b", table)


def test_json_validates_against_shipped_schema(tree: Path) -> None:
    schema = json_report.schema()  # read through importlib.resources: shipped as package data
    jsonschema.Draft202012Validator.check_schema(schema)
    status, text = run(tree, "json")
    doc = json.loads(text)
    jsonschema.validate(doc, schema, cls=jsonschema.Draft202012Validator)
    assert doc["schema_version"] == json_report.SCHEMA_VERSION and doc["exit_status"] == status == 2
    assert [f["path"].removeprefix(str(tree) + "/") for f in doc["files"]] == [
        "bad.so", "evil.tar", "libv1.so", "libx.a:x.o", "pkg.deb:./usr/lib/libv3.so"]
    member = doc["files"][-1]
    assert (member["package"], member["member"]) == (f"{tree}/pkg.deb", "./usr/lib/libv3.so")
    assert doc["summary"]["versions"] == {"1": 1, "2": 2, "3": 1}
    summary = doc["summary"]
    assert (summary["files_checked"], summary["archive_members"], summary["archives"]) == (4, 2, 2)
    assert [w["index"] for w in doc["unused_waivers"]] == [2]
    # The schema is not vacuous: a document missing a field or with a bad value fails.
    for broken in ({k: v for k, v in doc.items() if k != "files"},
                   {**doc, "fail_on": "fatal"},
                   {**doc, "summary": {**summary, "archive_members": -1}},
                   {**doc, "files": [{**doc["files"][0], "findings": [{"rule": "x"}]}]}):
        with pytest.raises(jsonschema.ValidationError):
            jsonschema.validate(broken, schema, cls=jsonschema.Draft202012Validator)


def test_sarif_validates_against_sarif_210_schema(tree: Path) -> None:
    schema = json.loads(SARIF_SCHEMA.read_text())
    _, text = run(tree, "sarif", "-I")  # every finding: the CI default is --show warning
    doc = json.loads(text)
    jsonschema.Draft4Validator(schema).validate(doc)
    assert doc["version"] == "2.1.0"
    (sarif_run,) = doc["runs"]
    rules = sarif_run["tool"]["driver"]["rules"]
    assert [r["id"] for r in rules] == list(RULES)
    assert all(r["help"]["text"] and r["fullDescription"]["text"] for r in rules)
    _, jtext = run(tree, "json")
    jdoc = json.loads(jtext)
    findings = [f for file in jdoc["files"] for f in file["findings"]
                if f["rule"] != "elf-no-sframe"]  # a scan counts files without SFrame
    # then the findings about the files together (the tree mixes v1 and v3): no location
    findings += jdoc["findings"]
    assert [f["rule"] for f in jdoc["findings"]] == ["elf-mixed-versions"]
    results = sarif_run["results"]
    assert len(results) == len(findings)  # one result per finding, same order
    assert [r["ruleId"] for r in results] == [f["rule"] for f in findings]
    assert results[-1]["properties"] == {"scope": "scan"}  # placed on the first file
    assert results[-1]["locations"][0]["message"]["text"].startswith("the scan as a whole")
    for r in results:
        assert rules[r["ruleIndex"]]["id"] == r["ruleId"]
        (loc,) = r["locations"]
        art = loc["physicalLocation"]["artifactLocation"]
        assert sarif_run["artifacts"][art["index"]]["location"]["uri"] == art["uri"]
    suppressed = [r for r in results if "suppressions" in r]
    assert suppressed and all(r["ruleId"] == "elf-no-segment" and
                              r["suppressions"][0]["justification"] == "lld test input"
                              for r in suppressed)
    default = json.loads(run(tree, "sarif")[1])["runs"][0]["results"]
    assert default == [r for r in results if r["level"] != "note"]  # --show warning
    member = next(a for a in sarif_run["artifacts"] if a["location"]["uri"] == "usr/lib/libv3.so")
    parent = sarif_run["artifacts"][member["parentIndex"]]
    assert parent["location"]["uri"].endswith("/pkg.deb")
    (inv,) = sarif_run["invocations"]
    assert inv["executionSuccessful"] is False and inv["exitCode"] == 2
    assert "evil.tar" in inv["toolExecutionNotifications"][0]["message"]["text"]
    assert "waiver #2" in inv["toolConfigurationNotifications"][0]["message"]["text"]


def test_junit_parses_one_case_per_file_and_group(tree: Path) -> None:
    _, text = run(tree, "junit", "--fail-on", "error")
    path = tree.parent / "out.junit"
    xml = JUnitXml.fromfile(str(path))
    suites = list(xml)
    doc = json.loads(run(tree, "json")[1])
    groups = [g for g in GROUPS if any(r.group == g for r in RULES.values())]
    # then the suite of the findings about the files together (the tree mixes v1 and v3)
    assert [s.name for s in suites] == [f["path"] for f in doc["files"]] + ["scan"]
    (scan_case,) = suites[-1]
    assert scan_case.name == "elf-mixed-versions" and not scan_case.result  # a warning
    for suite, file in zip(suites, doc["files"], strict=False):
        cases = list(suite)
        if file["error"]:
            assert [c.name for c in cases] == ["read"]
            assert isinstance(cases[0].result[0], Error)
            continue
        assert [c.name for c in cases] == groups
        for case in cases:
            failing = [f for f in file["findings"] if f["group"] == case.name
                       and f["severity"] == "error" and not f["waived"]]
            failures = [r for r in case.result if isinstance(r, Failure)]
            assert bool(failures) == bool(failing)
            if failing:
                assert failures[0].type == failing[0]["rule"]
    assert xml.tests == sum(len(list(s)) for s in suites)
    assert xml.failures > 0 and xml.errors == 1


def test_quiet_prints_nothing_but_writes_output(tree: Path, capsys: pytest.CaptureFixture[str]
                                                ) -> None:
    out = tree.parent / "quiet.json"
    assert main(["check", "-q", "-j", "1", str(BAD)]) == 1
    assert capsys.readouterr().out == ""
    assert main(["check", "-q", "-j", "1", "--format", "json", "-o", str(out), str(BAD)]) == 1
    assert capsys.readouterr().out == "" and json.loads(out.read_text())["exit_status"] == 1


def test_output_to_unwritable_path_is_usage_error(tmp_path: Path,
                                                  capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["check", "-o", str(tmp_path / "no" / "such" / "dir.json"), str(BAD)]) == 2
    assert "cannot write" in capsys.readouterr().err
