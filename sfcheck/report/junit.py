"""JUnit XML renderer: one test suite per checked file, one test case per rule group.

A case fails when the file has findings of that group not waived and at or above
`--fail-on`; lower findings and waived ones are listed in the case's system-out. A file
that could not be read is one case with an error. Jenkins' junit step and GitLab's
`artifacts:reports:junit` read this layout.
"""

from __future__ import annotations

import xml.etree.ElementTree as ET
from typing import TextIO

from ..effects import counted
from ..result import FileResult, Result, Severity, scan_text
from ..rules import RULES
from ..rules.registry import GROUPS
from . import ReportOptions
from .escape import escape as _x  # lossless and XML-safe (see report.escape)


def _lines(lines: list[str]) -> str:
    return "\n".join(_x(line) for line in lines)


def _groups() -> list[str]:
    """Groups that have rules (a group without rules would be an always-passing case)."""
    used = {r.group for r in RULES.values()}
    return [g for g in GROUPS if g in used]


def _suite(res: FileResult, threshold: Severity | None) -> ET.Element:
    suite = ET.Element("testsuite", name=_x(res.path))
    tests = failures = errors = 0
    if res.error:
        case = ET.SubElement(suite, "testcase", classname=_x(res.path), name="read")
        ET.SubElement(case, "error", message=_x(res.error),
                      type="unreadable").text = _x(res.error)
        tests, errors = 1, 1
    else:
        for group in _groups():
            tests += 1
            case = ET.SubElement(suite, "testcase", classname=_x(res.path), name=group)
            found = [f for f in res.findings
                     if (RULES[f.rule].group if f.rule in RULES else "elf") == group]
            failing = [f for f in found if counted(f) and threshold is not None
                       and f.severity >= threshold]
            other = [f for f in found if f not in failing]
            if failing:
                failures += 1
                first = failing[0]
                more = f" (+{len(failing) - 1} more)" if len(failing) > 1 else ""
                ET.SubElement(case, "failure", message=_x(f"[{first.rule}] {first.message}{more}"),
                              type=first.rule).text = _lines([f.text() for f in failing])
            if other:
                ET.SubElement(case, "system-out").text = _lines([
                    f.text() + (f" (waived: {f.waived})" if f.waived is not None else "")
                    for f in other])
    suite.set("tests", str(tests))
    suite.set("failures", str(failures))
    suite.set("errors", str(errors))
    suite.set("skipped", "0")
    return suite


def _scan_suite(result: Result, threshold: Severity | None) -> ET.Element:
    """Findings about the files together: suite `scan`, one case per rule."""
    suite = ET.Element("testsuite", name="scan")
    rules = sorted({f.rule for f in result.findings})
    failures = 0
    for rid in rules:
        case = ET.SubElement(suite, "testcase", classname="scan", name=rid)
        found = [f for f in result.findings if f.rule == rid]
        failing = [f for f in found if f.waived is None and threshold is not None
                   and f.severity >= threshold]
        if failing:
            failures += 1
            ET.SubElement(case, "failure", message=_x(f"[{rid}] {failing[0].message}"),
                          type=rid).text = _lines([scan_text(f) for f in failing])
        else:
            ET.SubElement(case, "system-out").text = _lines([
                scan_text(f) + (f" (waived: {f.waived})" if f.waived is not None else "")
                for f in found])
    for key, n in (("tests", len(rules)), ("failures", failures), ("errors", 0),
                   ("skipped", 0)):
        suite.set(key, str(n))
    return suite


def to_element(result: Result, fail_on: str = "error") -> ET.Element:
    threshold = None if fail_on == "none" else Severity.parse(fail_on)
    root = ET.Element("testsuites", name="sfcheck")
    totals = {"tests": 0, "failures": 0, "errors": 0}
    for res in result.files:
        suite = _suite(res, threshold)
        root.append(suite)
        for key in totals:
            totals[key] += int(suite.get(key, "0"))
    if result.findings:
        suite = _scan_suite(result, threshold)
        root.append(suite)
        for key in totals:
            totals[key] += int(suite.get(key, "0"))
    for key, n in totals.items():
        root.set(key, str(n))
    return root


def render(result: Result, out: TextIO, opts: ReportOptions) -> None:
    root = to_element(result, opts.fail_on)
    ET.indent(root)
    out.write('<?xml version="1.0" encoding="UTF-8"?>\n')
    out.write(ET.tostring(root, encoding="unicode"))
    out.write("\n")
