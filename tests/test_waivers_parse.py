"""Waivers, exact: the names a path glob is tried on (archive members, "./" prefixes), the
messages of a file that is not a waiver file, and findings of rules outside the catalogue."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from sfcheck.result import FileResult, Finding, Location, Severity
from sfcheck.waivers import (
    WaiverError,
    apply_waivers,
    load_waivers,
    parse_waivers,
    waive_file,
)

# a shared object inside a tar inside a .deb's data member: two ':' in the member path
NESTED = FileResult("p.deb:data.tar.xz:./usr/share/inner.tar:./lib/x.so", package="p.deb",
                    member="data.tar.xz:./usr/share/inner.tar:./lib/x.so")
# an archive whose first layer is a tar: the member path itself starts with "./"
TAR_FIRST = FileResult("p.tar:./usr/share/inner.tar:./lib/x.so", package="p.tar",
                       member="./usr/share/inner.tar:./lib/x.so")


def one_waiver(path: str) -> str:
    return f"[[waiver]]\nrule = 'elf-not-sorted'\npath = '{path}'\nreason = 'r'\n"


def covers(path: str, res: FileResult) -> bool:
    (w,) = parse_waivers(one_waiver(path))
    return w.covers_path(res)


@pytest.mark.parametrize("path,res,expected", [
    ("x.so", FileResult("./x.so"), True),  # the reported path without its "./"
    ("./x.so", FileResult("./x.so"), True),
    ("x.so", FileResult("dir/x.so"), False),
    ("p.deb:*", NESTED, True),  # the reported path (package:member) is still tried
    ("data.tar.xz:*", NESTED, True),  # the member path
    ("lib/x.so", NESTED, True),  # the innermost member, without "./"
    ("./lib/x.so", NESTED, True),
    ("usr/share/inner.tar:./lib/x.so", NESTED, False),  # only the last layer stands alone
    ("usr/share/inner.tar:*", TAR_FIRST, True),  # the member without its "./"
    ("lib/x.so", TAR_FIRST, True),
    ("usr/lib/x.so", TAR_FIRST, False),
])
def test_path_glob_names(path: str, res: FileResult, expected: bool) -> None:
    assert covers(path, res) is expected


@pytest.mark.parametrize("text,message", [
    ("a = 1\n", "w.toml: unknown top-level key a (write each waiver as a [[waiver]] table)"),
    ("a = 1\nb = 2\n",
     "w.toml: unknown top-level keys a, b (write each waiver as a [[waiver]] table)"),
    ("waiver = 1\n", "w.toml: `waiver` must be an array of tables ([[waiver]])"),
    ("waiver = [1]\n", "w.toml: waiver #1: not a table"),
    ("x = " + "[" * 5000 + "]" * 5000 + "\n",
     "w.toml: not a waiver file: arrays or tables nested too deeply"),
])
def test_not_a_waiver_file_messages(text: str, message: str) -> None:
    with pytest.raises(WaiverError) as exc:
        parse_waivers(text, "w.toml")
    assert str(exc.value) == message


@pytest.mark.parametrize("text", ["", "# no waivers yet\n"])
def test_file_without_waivers_is_empty(text: str) -> None:
    assert parse_waivers(text, "w.toml") == []


def test_load_names_the_file_in_parse_errors(tmp_path: Path) -> None:
    wfile = tmp_path / "w.toml"
    wfile.write_text("waiver = [1]\n")
    with pytest.raises(WaiverError) as exc:
        load_waivers(str(wfile))
    assert str(exc.value) == f"{wfile}: waiver #1: not a table"


def test_load_names_the_file_when_not_utf8(tmp_path: Path) -> None:
    wfile = tmp_path / "w.toml"
    wfile.write_bytes(b"reason = '\xff'\n")
    with pytest.raises(WaiverError) as exc:
        load_waivers(str(wfile))
    assert str(exc.value).startswith(f"{wfile}: cannot read waiver file: 'utf-8' codec")


def test_finding_of_a_rule_outside_the_catalogue_is_not_waived() -> None:
    """A finding whose rule is not in RULES (no group to look up) meets only waivers of
    its own ID, and a waiver cannot name such an ID: nothing covers it, nothing fails."""
    ws = parse_waivers(one_waiver("*"))
    findings = [Finding(rule, Severity.ERROR, "m", Location("p", ".sframe", pc=0x10))
                for rule in ("user-rule-x", "elf-not-sorted")]
    assert waive_file(FileResult("p"), findings, ws) == {1}
    assert [f.waived for f in findings] == [None, "r"]


def test_scan_findings_meet_the_waivers_of_every_path() -> None:
    """Findings about the scan as a whole sit at the empty path: "*" covers them, a
    waiver naming files does not; a waiver used by a file stays used beside them."""
    ws = parse_waivers(one_waiver("*") + one_waiver("lib/*") + one_waiver("x.so")
                       + one_waiver("none/*"))
    scan_finding = Finding("elf-not-sorted", Severity.ERROR, "m", Location("", ".sframe"))
    res = FileResult("x.so", findings=[Finding("elf-not-sorted", Severity.ERROR, "m",
                                               Location("x.so", ".sframe", pc=0x10))])
    scan = [scan_finding]
    unused = apply_waivers([res], ws, scan)
    assert scan[0].waived == "r" and res.findings[0].waived == "r"
    assert [w.index for w in unused] == [2, 3, 4]  # #1 covers both (first in file order)
    # the file's finding alone: #1 again; the scan's alone: only "*" can match it
    ws = parse_waivers(one_waiver("x.so") + one_waiver("*"))
    res.findings[0] = dataclasses.replace(res.findings[0], waived=None)
    scan = [scan_finding]
    assert [w.index for w in apply_waivers([res], ws, scan)] == []
    assert scan[0].waived == "r"


def test_group_waiver_covers_its_rules_only() -> None:
    (w,) = parse_waivers("[[waiver]]\nrule = 'elf'\npath = '*'\nreason = 'r'\n")
    assert [w.covers_rule(r) for r in ("elf", "elf-not-sorted", "elf-no-sframe",
                                       "header-flags-required", "user-rule-x")] == [
        True, True, True, False, False]


def _waiver(rule: str, pc: int | None) -> str:
    return one_waiver("*").replace("rule = 'elf-not-sorted'", f"rule = '{rule}'") + (
        f"pc = {pc}\n" if pc is not None else "")


# Waivers that cover one finding through different index keys (rule or group, pc or none),
# in both file orders: the first in the file wins whichever key the index meets first.
@pytest.mark.parametrize("first,second", [
    (("elf-not-sorted", None), ("elf-not-sorted", 0x10)),
    (("elf-not-sorted", 0x10), ("elf-not-sorted", None)),
    (("elf", None), ("elf-not-sorted", None)),
    (("elf-not-sorted", None), ("elf", None)),
    (("elf", 0x10), ("elf-not-sorted", None)),
    (("elf-not-sorted", 0x10), ("elf", None)),
])
def test_first_waiver_in_file_order_across_index_keys(first: tuple, second: tuple) -> None:
    text = _waiver(*first) + _waiver(*second)
    ws = [dataclasses.replace(w, reason=f"r{w.index}") for w in parse_waivers(text)]
    findings = [Finding("elf-not-sorted", Severity.ERROR, "m", Location("p", ".sframe",
                                                                       pc=0x10))]
    assert waive_file(FileResult("p"), findings, ws) == {1}
    assert findings[0].waived == "r1"
