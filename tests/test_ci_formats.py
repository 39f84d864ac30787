"""The CI formats: GitHub workflow commands, GitLab Code Quality and SARIF for code
scanning (sfcheck.report.github, .gitlab, .sarif, .ci): escaping, severities, --show,
fingerprints, and archive members placed on their package (a real dpkg-deb package)."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import jsonschema
import pytest
from hypothesis import given
from hypothesis import strategies as st

from sfcheck.cli import main
from sfcheck.report import ReportOptions, sarif
from sfcheck.report.ci import Fingerprints, repo_path
from sfcheck.report.escape import escape
from sfcheck.report.github import command, escape_data, escape_property
from sfcheck.result import FileResult, Finding, Location, Result, Severity
from sfcheck.rules import RULES

from archives import BAD, LIB_V3, dpkg_deb
from helpers import ROOT

GITLAB_SCHEMA = ROOT / "tests" / "data" / "gitlab-codequality.schema.json"
SARIF_SCHEMA = ROOT / "tests" / "data" / "sarif-2.1.0-rtm.5.schema.json"
COMMAND = re.compile(r"^::(?P<name>[a-z]+) (?P<props>[^:]*)::(?P<message>.*)$")


def parse_command(line: str) -> tuple[str, dict[str, str], str]:
    """A workflow command as the runner reads it: properties split on ',' and '=', then
    each value and the message unescaped (%25 last, so '%253A' stays '%3A')."""
    m = COMMAND.match(line)
    assert m, line

    def unescape(text: str, prop: bool) -> str:
        pairs = [("%0D", "\r"), ("%0A", "\n")] + ([("%3A", ":"), ("%2C", ",")] if prop else [])
        for code, char in [*pairs, ("%25", "%")]:
            text = text.replace(code, char)
        return text

    props = dict(p.split("=", 1) for p in m["props"].split(","))
    return m["name"], {k: unescape(v, True) for k, v in props.items()}, unescape(
        m["message"], False)


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str]:
    status = main(["check", "-j", "1", "--no-config", *argv])
    return status, capsys.readouterr().out


# --- GitHub ----------------------------------------------------------------------------

def test_github_escaping_is_the_runners() -> None:
    assert escape_data("50%\r\nx: a, b") == "50%25%0D%0Ax: a, b"
    assert escape_property("50%\r\nx: a, b") == "50%25%0D%0Ax%3A a%2C b"
    assert escape_property("%3A") == "%253A"  # a literal escape code survives the round trip


# Text, and text made of what the escaping is about (so '%0A' and '%3A' turn up often).
TRICKY = st.text() | st.text(alphabet="%:,\r\n0A2C3D5=x\\")


@given(TRICKY, TRICKY)
def test_github_command_round_trips(value: str, message: str) -> None:
    """Whatever a name or message holds, the runner reads back one command with exactly
    the (text-escaped) value and message."""
    line = command("warning", message, file=value, title=value)
    assert "\n" not in line and "\r" not in line
    name, props, text = parse_command(line)
    assert (name, props, text) == ("warning", {"file": escape(value), "title": escape(value)},
                                   escape(message))


def test_github_severities_and_show(capsys: pytest.CaptureFixture[str], tmp_path: Path,
                                    monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    shutil.copy(BAD, "bad.so")
    shutil.copy(LIB_V3, "lib,v3:%.so")  # ',' ':' '%' in a property value
    status, out = run(capsys, "--format", "github", "-I", "bad.so", "lib,v3:%.so")
    assert status == 1
    commands = [parse_command(line) for line in out.splitlines()]
    names = [c[0] for c in commands]
    assert set(names) == {"error", "warning", "notice"}  # info -> notice
    assert names == sorted(names, key=["error", "warning", "notice"].index)  # errors first
    # bad.so is v2, lib v3: the mixed versions are said once, on no file
    (mixed,) = [c for c in commands if "file" not in c[1]]
    assert mixed[:2] == ("warning", {"title": "sfcheck [elf-mixed-versions]"})
    commands = [c for c in commands if c is not mixed]
    assert {c[1]["file"] for c in commands} == {"bad.so", "lib,v3:%.so"}
    assert all(set(c[1]) == {"file", "title"} for c in commands)  # a binary has no line
    rules = [re.fullmatch(r"sfcheck \[([a-z0-9-]+)\]", c[1]["title"]) for c in commands]
    assert all(rules) and {r[1] for r in rules} >= {"elf-no-segment", "defect-ld-plt-got-cfa"}
    # The default for a CI format is --show warning (no notice), --show error only errors.
    _, default = run(capsys, "--format", "github", "bad.so", "lib,v3:%.so")
    assert {parse_command(x)[0] for x in default.splitlines()} == {"error", "warning"}
    _, one = run(capsys, "--format", "github", "lib,v3:%.so")  # one file too (text: -I)
    assert {parse_command(x)[0] for x in one.splitlines()} == {"warning"}
    _, errors = run(capsys, "--format", "github", "--show", "error", "bad.so", "lib,v3:%.so")
    assert {parse_command(x)[0] for x in errors.splitlines()} == {"error"}


def test_github_says_when_annotations_exceed_what_github_shows(
        capsys: pytest.CaptureFixture[str], tmp_path: Path,
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    shutil.copy(BAD, "bad.so")
    _, out = run(capsys, "--format", "github", "bad.so")
    assert all(COMMAND.match(x) for x in out.splitlines())  # few: commands only
    for i in range(6):  # 2 errors each
        shutil.copy(BAD, f"bad{i}.so")
    _, out = run(capsys, "--format", "github", *(f"bad{i}.so" for i in range(6)))
    *commands, last = out.splitlines()
    errors = sum(parse_command(x)[0] == "error" for x in commands)
    assert errors > 10 and last.startswith(f"sfcheck: {errors} error, ")
    assert "GitHub shows the first 10 of each kind per step" in last


def test_github_message_cannot_forge_a_command(capsys: pytest.CaptureFixture[str],
                                               tmp_path: Path,
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    name = "x\n::error file=forged::y.so"
    shutil.copy(BAD, name)
    _, out = run(capsys, "--format", "github", name)
    lines = out.splitlines()
    assert lines and all(COMMAND.match(x) for x in lines)
    assert all(parse_command(x)[1]["file"] == "x\\x0a::error file=forged::y.so" for x in lines)


# --- GitLab ----------------------------------------------------------------------------

def test_gitlab_validates_and_maps_severities(capsys: pytest.CaptureFixture[str],
                                              tmp_path: Path,
                                              monkeypatch: pytest.MonkeyPatch) -> None:
    schema = json.loads(GITLAB_SCHEMA.read_text())
    jsonschema.Draft202012Validator.check_schema(schema)
    monkeypatch.chdir(tmp_path)
    shutil.copy(BAD, "bad.so")
    shutil.copy(LIB_V3, "lib.so")
    status, out = run(capsys, "--format", "gitlab", "-I", "bad.so", "lib.so")
    assert status == 1 and not out.startswith("\ufeff")
    issues = json.loads(out)
    jsonschema.validate(issues, schema, cls=jsonschema.Draft202012Validator)
    by_rule = {i["check_name"]: i for i in issues}
    assert by_rule["elf-no-segment"]["severity"] == "critical"
    assert by_rule["defect-ld-plt-got-cfa"]["severity"] == "minor"
    assert by_rule["elf-segment-padded"]["severity"] == "info"
    # the mixed versions (bad.so v2, lib.so v3) are about the tree, placed on "."
    assert {i["location"]["path"] for i in issues} == {"bad.so", "lib.so", "."}
    assert by_rule["elf-mixed-versions"]["location"]["path"] == "."
    assert len({i["fingerprint"] for i in issues}) == len(issues)
    _, again = run(capsys, "--format", "gitlab", "-I", "bad.so", "lib.so")
    assert [i["fingerprint"] for i in json.loads(again)] == [i["fingerprint"] for i in issues]
    _, default = run(capsys, "--format", "gitlab", "bad.so", "lib.so")
    assert {i["severity"] for i in json.loads(default)} == {"critical", "minor"}
    # The schema is not vacuous.
    for broken in ([{**issues[0], "severity": "error"}],
                   [{k: v for k, v in issues[0].items() if k != "fingerprint"}],
                   [{**issues[0], "location": {"path": "x"}}]):
        with pytest.raises(jsonschema.ValidationError):
            jsonschema.validate(broken, schema, cls=jsonschema.Draft202012Validator)


def test_gitlab_unreadable_input_is_a_blocker(capsys: pytest.CaptureFixture[str],
                                              tmp_path: Path,
                                              monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    Path("broken.deb").write_bytes(b"!<arch>\nnot really")
    status, out = run(capsys, "--format", "gitlab", "broken.deb")
    assert status == 2
    (issue,) = json.loads(out)
    assert (issue["severity"], issue["location"]["path"]) == ("blocker", "broken.deb")


def _finding(rule: str = "fde-overlap", message: str = "m", **loc: object) -> Finding:
    return Finding(rule, Severity.ERROR, message, Location("p", section=".sframe", **loc))


def test_fingerprint_ignores_the_message_and_never_collides() -> None:
    res = FileResult("lib.so")
    one = Fingerprints().of(res, _finding(message="3 bytes", fde=2, pc=0x10, function="f"))
    assert one == Fingerprints().of(res, _finding(message="9 bytes", fde=2, pc=0x10,
                                                  function="f"))
    # the function's name, not its address or FDE number, when known (a rebuild moves them)
    assert one == Fingerprints().of(res, _finding(fde=7, pc=0x99, function="f"))
    differs = [Fingerprints().of(res, _finding(fde=2, pc=0x10, function="g")),
               Fingerprints().of(res, _finding(rule="fde-size", fde=2, pc=0x10, function="f")),
               Fingerprints().of(FileResult("other.so"), _finding(fde=2, pc=0x10, function="f")),
               Fingerprints().of(FileResult("p.deb:m", package="p.deb", member="m"),
                                 _finding(fde=2, pc=0x10, function="f"))]
    assert one not in differs and len(set(differs)) == len(differs)
    prints = Fingerprints()  # the same key twice in one report: two fingerprints
    assert prints.of(res, _finding(fde=1, pc=1)) != prints.of(res, _finding(fde=1, pc=1))


def test_repo_path(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    assert repo_path(str(tmp_path / "a" / "b.so")) == "a/b.so"
    assert repo_path("./a/b.so") == "a/b.so"
    assert repo_path("/elsewhere/b.so") == "/elsewhere/b.so"


# --- SARIF for code scanning -----------------------------------------------------------

def test_sarif_scan_lists_no_file_without_sframe(capsys: pytest.CaptureFixture[str],
                                                 tmp_path: Path,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    true = shutil.which("true")
    if true is None:
        pytest.skip("no `true` binary")
    monkeypatch.chdir(tmp_path)
    Path("lib").mkdir()
    for i in range(3):
        shutil.copy(true, f"lib/plain{i}")  # ELF without SFrame: most of a distro
    shutil.copy(LIB_V3, "lib/libv3.so")
    for show in ([], ["-I"]):
        _, out = run(capsys, "--format", "sarif", *show, "lib")
        results = json.loads(out)["runs"][0]["results"]
        assert not any(r["ruleId"] == "elf-no-sframe" for r in results)
        assert ("note" in {r["level"] for r in results}) == bool(show)
    _, out = run(capsys, "--format", "json", "lib")  # JSON still carries everything
    assert sum(f["rule"] == "elf-no-sframe" for x in json.loads(out)["files"]
               for f in x["findings"]) == 3


def test_sarif_rules_fit_github_limits() -> None:
    doc = sarif.to_dict(Result())
    rules = doc["runs"][0]["tool"]["driver"]["rules"]
    assert all(len(r["fullDescription"]["text"]) <= 1024 and len(r["name"]) <= 255
               and len(r["shortDescription"]["text"]) <= 1024 and r["help"]["text"]
               for r in rules)
    long = next(r for r in rules if len(RULES[r["id"]].explanation) > 1024)
    assert long["fullDescription"]["text"].endswith(".")  # cut at a sentence
    assert RULES[long["id"]].explanation in long["help"]["text"]


def test_sarif_results_capped_most_severe_kept(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sarif, "MAX_RESULTS", 3)
    findings = [Finding("fde-overlap", sev, f"m{i}", Location("a.so", fde=i, pc=i))
                for i, sev in enumerate([Severity.WARNING, Severity.ERROR, Severity.WARNING,
                                         Severity.ERROR, Severity.ERROR])]
    doc = sarif.to_dict(Result([FileResult("a.so", findings)]), 1,
                        ReportOptions(show=Severity.INFO))
    run_ = doc["runs"][0]
    assert [r["message"]["text"] for r in run_["results"]] == ["FDE 1 (pc 0x1): m1",
                                                                 "FDE 3 (pc 0x3): m3",
                                                                 "FDE 4 (pc 0x4): m4"]
    (note,) = run_["invocations"][0]["toolExecutionNotifications"]
    assert note["message"]["text"].startswith("2 of 5 results left out")


# --- archive members: a real .deb ------------------------------------------------------

MEMBER = "./usr/lib/x86_64-linux-gnu/libbad.so.1"


@pytest.fixture()
def deb(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    built = dpkg_deb(tmp_path, {MEMBER[2:]: BAD}, name="libbad1")
    pool = tmp_path / "pool"
    pool.mkdir()
    shutil.move(built, pool / "libbad1_1.0_amd64.deb")
    monkeypatch.chdir(tmp_path)
    return "pool/libbad1_1.0_amd64.deb"


def test_member_findings_name_the_package(deb: str, capsys: pytest.CaptureFixture[str]) -> None:
    _, out = run(capsys, "--format", "sarif", deb)
    doc = json.loads(out)
    jsonschema.Draft4Validator(json.loads(SARIF_SCHEMA.read_text())).validate(doc)
    run_ = doc["runs"][0]
    results = run_["results"]
    assert results and {r["level"] for r in results} <= {"error", "warning"}
    for r in results:
        (loc,) = r["locations"]
        art = loc["physicalLocation"]["artifactLocation"]
        assert (art["uri"], art["uriBaseId"]) == (deb, "%SRCROOT%")
        assert run_["artifacts"][art["index"]]["location"]["uri"] == deb
        assert "region" not in loc["physicalLocation"]  # a binary has no lines
        assert {"kind": "module", "name": "libbad.so.1",
                "fullyQualifiedName": MEMBER} in loc["logicalLocations"]
        assert r["message"]["text"].startswith(MEMBER + ": ")
        (related,) = r["relatedLocations"]
        nested = run_["artifacts"][related["physicalLocation"]["artifactLocation"]["index"]]
        assert nested["location"]["uri"] == MEMBER[2:] and "uriBaseId" not in nested["location"]
        assert run_["artifacts"][nested["parentIndex"]]["location"]["uri"] == deb
        assert set(r["partialFingerprints"]) == {"primaryLocationLineHash", "sfcheckFinding/v1"}
    assert len({r["partialFingerprints"]["primaryLocationLineHash"] for r in results}) == len(
        results)

    _, out = run(capsys, "--format", "github", deb)
    commands = [parse_command(x) for x in out.splitlines()]
    assert commands and all(c[1]["file"] == deb for c in commands)
    assert all(c[1]["title"].endswith(f"] in {MEMBER}") and c[2].startswith(MEMBER + ": ")
               for c in commands)

    _, out = run(capsys, "--format", "gitlab", deb)
    issues = json.loads(out)
    jsonschema.validate(issues, json.loads(GITLAB_SCHEMA.read_text()))
    assert issues and all(i["location"]["path"] == deb and i["description"].startswith(MEMBER)
                          for i in issues)
