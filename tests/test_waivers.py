"""Waiver files: parsing, matching by path/package/function/PC, unused and unwaivable ones."""

from __future__ import annotations

import dataclasses
import json
import os
import resource
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from sfcheck.cli import main
from sfcheck.result import FileResult, Finding, Location, Severity
from sfcheck.rules import RULES
from sfcheck.scan import ScanConfig, scan
from sfcheck.waivers import (
    MAX_WAIVER_FILE,
    UNWAIVABLE,
    Waiver,
    WaiverError,
    apply_waivers,
    load_waivers,
    parse_waivers,
)

from archives import LIB_V1, dpkg_deb
from bounded import MiB, one_line_error, run_sfcheck


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
     "unknown key func"),
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
    res = scan([str(LIB_V1)], ScanConfig()).files[0]
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


# --- hostile waiver files and scale ---------------------------------------------------

_RULE_IDS = sorted(r for r in RULES if r not in UNWAIVABLE)[:6] + sorted(UNWAIVABLE)[:1]


@st.composite
def _waiver_cases(draw: st.DrawFn) -> tuple[list[FileResult], list[Waiver]]:
    paths = ["a/x.so", "./b/y.so", "c.deb"]
    files = []
    for i in range(draw(st.integers(1, 4))):
        path = draw(st.sampled_from(paths))
        res = FileResult(path, package=path if i % 2 else None,
                         member="./usr/lib/m.so" if i % 2 else None)
        for _ in range(draw(st.integers(0, 6))):
            rule = draw(st.sampled_from(_RULE_IDS))
            res.findings.append(Finding(rule, RULES[rule].severity, "m", Location(
                path, ".sframe", pc=draw(st.sampled_from([None, 0x10, 0x20])),
                function=draw(st.sampled_from([None, "foo", "bar_1"])))))
        files.append(res)
    waivers = []
    for i in range(draw(st.integers(0, 8))):
        rule = draw(st.sampled_from([r for r in _RULE_IDS if r not in UNWAIVABLE]
                                    + sorted({RULES[r].group for r in _RULE_IDS})))
        waivers.append(Waiver(i + 1, rule, draw(st.sampled_from(["*", "*.so", "a/*", "m.so",
                                                                  "*/m.so", "c*"])),
                              "r", draw(st.sampled_from([None, "foo", "bar*"])),
                              draw(st.sampled_from([None, 0x10])),
                              draw(st.sampled_from([None, "c.deb", "*.deb"]))))
    return files, waivers


@given(_waiver_cases())
def test_indexed_matching_equals_first_covering_waiver(case: tuple) -> None:
    """apply_waivers (indexed, memoised) gives each finding the first waiver, in file order,
    whose `covers` is true: the plain definition, computed here the slow way."""
    files, waivers = case
    expected = [[next((f"r{w.index}" for w in waivers if w.covers(res, f)), None)
                 for f in res.findings] for res in files]
    used = {int(e[1:]) for exp in expected for e in exp if e is not None}
    # Each reason names its waiver, so the chosen one is visible in `waived`.
    unused = apply_waivers(files, [dataclasses.replace(w, reason=f"r{w.index}")
                                   for w in waivers])
    assert [[f.waived for f in res.findings] for res in files] == expected
    assert [w.index for w in unused] == [w.index for w in waivers if w.index not in used]


def test_waiver_file_dev_zero_is_one_line() -> None:
    run = run_sfcheck(["check", "--waivers", "/dev/zero", str(LIB_V1)], cpu_seconds=20,
                      address_space=1024 * MiB)
    assert run.status == 2
    line = one_line_error(run)
    assert "/dev/zero" in line and "character device" in line


def test_waiver_file_too_big_refused(tmp_path: Path) -> None:
    big = tmp_path / "w.toml"
    with big.open("wb") as f:
        f.truncate(MAX_WAIVER_FILE + 1)
    with pytest.raises(WaiverError, match="larger than"):
        load_waivers(str(big))


def test_deeply_nested_waiver_file_is_one_line(tmp_path: Path) -> None:
    wfile = tmp_path / "w.toml"
    wfile.write_text("x = " + "[" * 100_000 + "]" * 100_000 + "\n")
    run = run_sfcheck(["check", "--waivers", str(wfile), str(LIB_V1)], cpu_seconds=20,
                      address_space=1024 * MiB)
    assert run.status == 2
    assert "nested too deeply" in one_line_error(run)


_MANY_GLOBS = """
import sys
from sfcheck.result import FileResult, Finding, Location, Severity
from sfcheck.waivers import parse_waivers, apply_waivers
files = []
for i in range(100):
    res = FileResult(f"pkg/usr/lib/lib{i}.so")
    res.findings = [Finding("fde-overlap", Severity.ERROR, "m",
                            Location(res.path, ".sframe", pc=0x1000 + 16 * k, function=f"f{k}"))
                    for k in range(1000)]
    files.append(res)
text = "".join(
    f'[[waiver]]\\nrule = "fde-overlap"\\npath = "*/lib*{i % 10}*.so"\\npc = {0x900000 + i}\\n'
    f'function = "*g*{i}"\\nreason = "r"\\n' for i in range(3000))
ws = parse_waivers(text)
unused = apply_waivers(files, ws)
print(len(ws), len(unused), sum(f.waived is not None for r in files for f in r.findings))
"""


def test_thousands_of_globs_over_100_files_linear() -> None:
    """3,000 path/pc/function waivers over 100 files of 1,000 findings: the plain product
    is 3e8 glob tests (minutes); the indexed matcher stays within a 20 s CPU limit."""
    env = dict(os.environ)

    def limit() -> None:
        resource.setrlimit(resource.RLIMIT_CPU, (20, 20))

    proc = subprocess.run([sys.executable, "-c", _MANY_GLOBS], capture_output=True, text=True,
                          env=env, preexec_fn=limit)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split() == ["3000", "3000", "0"]


@pytest.mark.parametrize("key", ["rule", "path", "reason", "function", "package"])
def test_each_text_key_must_be_a_string(key: str) -> None:
    entry = {"rule": "'elf-not-sorted'", "path": "'*'", "reason": "'r'", key: "3"}
    text = "[[waiver]]\n" + "".join(f"{k} = {v}\n" for k, v in entry.items())
    with pytest.raises(WaiverError) as exc:
        parse_waivers(text, "w.toml")
    assert str(exc.value) == f"w.toml: waiver #1: `{key}` must be a string"


def test_errors_without_a_source_name_the_text() -> None:
    with pytest.raises(WaiverError) as exc:
        parse_waivers("[[waiver]]\npath = '*'\nreason = 'r'\n")
    assert str(exc.value) == "<waivers>: waiver #1: `rule` is required"


def test_a_package_pattern_never_covers_a_file_outside_packages() -> None:
    """A file scanned on its own has no package: it is matched as "", so a pattern that
    needs a character ("X*", "?*") does not cover it, and "*" does."""
    ws = parse_waivers(waiver_toml(rule="elf-not-sorted", path="*", package="X*", reason="a")
                       + waiver_toml(rule="elf-not-sorted", path="*", package="?*", reason="b")
                       + waiver_toml(rule="elf-not-sorted", path="*", package="*", reason="c"))
    plain = FileResult("build/a.so")
    assert [w.covers_path(plain) for w in ws] == [False, False, True]
