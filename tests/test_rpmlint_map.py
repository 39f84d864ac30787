"""sfcheck findings as rpmlint issues (sfcheck/integrations/rpmlint_map.py), without rpmlint:
the [SFrame] table, levels, the per-rule cap and escaping. tests/test_rpmlint.py runs the
real rpmlint."""

from __future__ import annotations

import pytest

from sfcheck.checker import check_elf
from sfcheck.integrations.rpmlint_map import (
    UNREADABLE,
    ConfigError,
    Settings,
    descriptions,
    failed,
    issues,
    settings,
)
from sfcheck.profiles import PROFILES
from sfcheck.result import FileResult, Finding, Location, Severity
from sfcheck.rules import RULES

from helpers import CORPUS


def test_defaults_without_a_table() -> None:
    s = settings({})
    assert (s.show, s.max_per_rule) == (Severity.WARNING, 10)
    o = s.options
    assert (o.profile, o.enable, o.disable, o.require_sframe) == (
        PROFILES["strict"], set(), set(), False)


def test_table_reaches_options() -> None:
    s = settings({"SFrame": {"profile": "kernel", "enable": ["elf-no-sframe"],
                             "disable": ["semantic"], "require-sframe": True, "show": "error",
                             "max-per-rule": 3}})
    o = s.options
    assert (o.profile, o.enable, o.disable, o.require_sframe) == (
        PROFILES["kernel"], {"elf-no-sframe"}, {"semantic"}, True)
    assert (s.show, s.max_per_rule) == (Severity.ERROR, 3)


@pytest.mark.parametrize(("table", "says"), [
    ({"profile": "nope"}, "profile 'nope' unknown"),
    ({"disable": ["no-such-rule"]}, "unknown rule or group: no-such-rule"),
    ({"disable": "defect"}, "disable must be a list"),
    ({"show": "debug"}, "show must be"),
    ({"require-sframe": "yes"}, "require-sframe must be true or false"),
    ({"max-per-rule": 0}, "max-per-rule must be"),
    ({"max-per-rule": True}, "max-per-rule must be"),
    ({"profle": "kernel"}, "unknown key 'profle'"),
])
def test_bad_table(table: dict[str, object], says: str) -> None:
    with pytest.raises(ConfigError, match=says):
        settings({"SFrame": table})


def _finding(rule: str, sev: Severity, msg: str = "m", fde: int | None = None) -> Finding:
    return Finding(rule, sev, msg, Location("x", ".sframe", fde=fde))


def test_levels_order_and_show() -> None:
    result = FileResult("x", [_finding("elf-text-coverage", Severity.INFO),
                              _finding("defect-ld-plt-got-cfa", Severity.WARNING),
                              _finding("header-bad-magic", Severity.ERROR)])
    got = list(issues("/usr/bin/p", result, settings({})))
    assert [(lvl, tag) for lvl, tag, _ in got] == [("E", "sframe-header-bad-magic"),
                                                   ("W", "sframe-defect-ld-plt-got-cfa")]
    assert got[0][2] == "/usr/bin/p .sframe: m"
    shown = [tag for _, tag, _ in issues("/usr/bin/p", result, Settings(
        settings({}).options, Severity.INFO))]
    assert shown[-1] == "sframe-elf-text-coverage"


def test_cap_per_rule_counts_the_rest() -> None:
    result = FileResult("x", [_finding("fde-overlap", Severity.ERROR, fde=k) for k in range(7)])
    got = list(issues("/p", result, Settings(settings({}).options, Severity.WARNING, 3)))
    assert len(got) == 3
    assert got[-1][2].endswith("(and 4 more in this file)")
    assert "more" not in got[0][2]


def test_details_cannot_forge_a_line() -> None:
    result = FileResult("x", [_finding("header-bad-magic", Severity.ERROR, "a\nb: E: fake")])
    ((_, _, text),) = issues("/usr/bin/a\nb", result, settings({}))
    assert "\n" not in text and text.startswith("/usr/bin/a\\x0ab ")


def test_unreadable_and_real_file() -> None:
    ((lvl, tag, text),) = issues("/p", FileResult("x", error="ELF header cut short"),
                                 settings({}))
    assert (lvl, tag, text) == ("W", UNREADABLE, "/p ELF header cut short")
    result = check_elf(CORPUS / "v3" / "exe_pie")
    assert [t for _, t, _ in issues("/p", result, settings({}))] == [
        "sframe-defect-ld-plt-got-cfa"]


def test_every_rule_has_a_description() -> None:
    d = descriptions()
    assert {t for t in d if t.startswith("sframe-")} >= {f"sframe-{r}" for r in RULES}
    assert RULES["fde-overlap"].explanation in d["sframe-fde-overlap"]


def test_failure_detail_is_escaped() -> None:
    assert failed("/usr/bin/a b", ValueError("x\ny")) == (
        "E", "sframe-check-failed", "/usr/bin/a b ValueError: x\\x0ay")
