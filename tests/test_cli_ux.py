"""The rough edges of the command line: help texts, `rules GROUP`, did-you-mean, `dump
--section`, counted nouns and the `sfcheck profiles` table (sfcheck.cli)."""

from __future__ import annotations

import argparse
import os
import re
import shutil
from pathlib import Path

import pytest

from sfcheck.cli import build_parser, main
from sfcheck.cli.catalogue import profile_table
from sfcheck.elf.loader import load_elf
from sfcheck.profiles import LISTED, PROFILES
from sfcheck.rules import GROUPS, RULES
from sfcheck.wording import noun, plural

from archives import EXE_V2, LIB_V3, deb_bytes, tar_bytes
from helpers import ROOT


def _parsers(parser: argparse.ArgumentParser, path: str = "sfcheck"
             ) -> list[tuple[str, argparse.ArgumentParser]]:
    """Every parser of the command line, the top level first, with its command path."""
    found = [(path, parser)]
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                found += _parsers(sub, f"{path} {name}")
    return found


def test_every_command_argument_and_option_has_help() -> None:
    missing = []
    for path, parser in _parsers(build_parser()):
        if not parser.description:
            missing.append(f"{path}: no description")
        for action in parser._actions:
            if isinstance(action, argparse._SubParsersAction):
                helps = {a.dest: a.help for a in action._choices_actions}
                missing += [f"{path} {name}: no help line" for name in action.choices
                            if not helps.get(name)]
            if not action.help or action.help == argparse.SUPPRESS:
                missing.append(f"{path}: {'/'.join(action.option_strings) or action.dest}")
    assert missing == []


def test_rules_help_names_every_group(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        main(["rules", "--help"])
    out = " ".join(capsys.readouterr().out.split())
    used = [g for g in GROUPS if any(r.group == g for r in RULES.values())]
    assert f"({', '.join(used)})" in out


def test_rules_group_lists_that_group_only(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["rules", "fde", "defect"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert [x for x in lines if not x.startswith(" ")] == ["fde:", "defect:"]
    listed = {x.split()[0] for x in lines if x.startswith(" ")}
    assert listed == {r.id for r in RULES.values() if r.group in ("fde", "defect")}
    assert main(["rules", "defect-ld-plt-got-cfa", "fre"]) == 0
    lines = capsys.readouterr().out.splitlines()
    fre = [r.id for r in RULES.values() if r.group == "fre"]
    assert [x.split()[0] for x in lines] == ["fre:", *fre, "defect:", "defect-ld-plt-got-cfa"]


@pytest.mark.parametrize(("argv", "message"), [
    (["rules", "fd"], "sfcheck: error: no rule group or rule 'fd' (did you mean `fde`?); "
                      "groups: " + ", ".join(GROUPS)),
    (["rules", "fde", "nosuch"], "sfcheck: error: no rule group or rule 'nosuch'; groups: "
                                 + ", ".join(GROUPS)),
    (["rules", "fde-unsortd"], "sfcheck: error: no rule group or rule 'fde-unsortd' "
                               "(did you mean `fde-unsorted`?); groups: " + ", ".join(GROUPS)),
    (["check", "--enable", "semantc", "x"], "sfcheck: error: unknown rule or group: semantc "
                                            "(did you mean `semantic`?)"),
    (["check", "--disable", "defect-ld-plt-got", "x"],
     "sfcheck: error: unknown rule or group: defect-ld-plt-got "
     "(did you mean `defect-ld-plt-got-cfa`?)"),
    (["explain", "plt-got"], "sfcheck: error: unknown rule 'plt-got' "
                             "(did you mean `defect-ld-plt-got-cfa`?)"),
    (["explain", "fde-unsortd"], "sfcheck: error: unknown rule 'fde-unsortd' "
                                 "(did you mean `fde-unsorted`?)"),
    (["explain", "zzz"], "sfcheck: error: unknown rule 'zzz' (see `sfcheck rules`)"),
    (["explain", "fde"], "sfcheck: error: unknown rule 'fde': a group; `sfcheck rules fde` "
                         "lists its rules"),
    (["profiles", "kernal"], "sfcheck: error: unknown profile 'kernal' (did you mean "
                             f"`kernel`?) (one of {', '.join(PROFILES)})"),
])
def test_unknown_group_or_rule_is_one_line_with_a_suggestion(
        argv: list[str], message: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(argv) == 2
    captured = capsys.readouterr()
    assert captured.out == "" and captured.err == message + "\n"


def test_dump_section_matching_nothing_is_a_usage_error(
        capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["dump", "--section", ".sframx", str(LIB_V3)]) == 2
    captured = capsys.readouterr()
    assert captured.err == f"{LIB_V3}: error: no SFrame section named '.sframx' (it has .sframe)\n"
    assert "Contents of" not in captured.out
    assert main(["dump", "--section", ".sframe", str(LIB_V3)]) == 0
    assert "Contents of the SFrame section .sframe:" in capsys.readouterr().out


def test_dump_of_a_file_without_sframe_still_says_so(
        capsys: pytest.CaptureFixture[str]) -> None:
    true = shutil.which("true")
    if true is None or load_elf(os.path.realpath(true)).sections:
        pytest.skip("no `true` binary without SFrame on this system")
    plain = os.path.realpath(true)
    for extra in ([], ["--section", ".sframe"]):
        assert main(["dump", *extra, str(plain)]) == 0
        assert capsys.readouterr().err == f"{plain}: no SFrame section\n"


def test_plural() -> None:
    assert [plural(n, "finding") for n in (0, 1, 2)] == ["0 findings", "1 finding",
                                                         "2 findings"]
    assert plural(1, "data word") == "1 data word" and plural(3, "data word") == "3 data words"
    assert plural(2, "info", many="info") == "2 info"
    assert noun(1, "key") == "key" and noun(2, "key") == "keys"


def test_no_count_in_the_cli_output_reads_word_s() -> None:
    """`(s)` after a count, in the code that writes messages, reports and the CLI."""
    offenders = []
    for path in sorted((ROOT / "sfcheck").rglob("*.py")):
        for n, line in enumerate(path.read_text().splitlines(), 1):
            if re.search(r"\}\s*[\w.]+\(s\)", line):
                offenders.append(f"{path.relative_to(ROOT)}:{n}: {line.strip()}")
    assert offenders == []


def test_single_file_line_counts_its_sections(capsys: pytest.CaptureFixture[str]) -> None:
    main(["check", "-j", "1", "--show", "warning", str(LIB_V3)])
    lines = capsys.readouterr().out.splitlines()
    assert re.fullmatch(re.escape(f"{LIB_V3}: 1 SFrame section (v3): ") + r"0 errors, "
                        r"1 warning, 2 info", lines[-2])
    assert lines[-1] == "sfcheck: 2 findings below --show warning not listed; -I lists them"


def test_profiles_table_fits_100_columns_and_names_every_profile(
        capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["profiles"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines == profile_table()
    assert max(len(x) for x in lines) <= 100
    rows = {x.split()[0] for x in lines[1:lines.index("")] if not x.startswith(" ")}
    assert rows == {p.name for p in LISTED}  # aliases (`kernel`) get no row of their own
    for p in LISTED:  # each source is there, wrapped or not
        for source in p.sources[:1]:
            assert source in " ".join(" ".join(lines).split())


def test_profiles_table_is_generated_from_the_profile_data(
        monkeypatch: pytest.MonkeyPatch) -> None:
    kernel = PROFILES["kernel"]
    monkeypatch.setattr(kernel, "rejects_auxhdr", False)
    row = next(x for x in profile_table() if x.startswith("kernel-v13 "))
    assert "auxhdr" not in row and "num_fdes/num_fres 0" in row



def test_scan_summary_of_one_package_counts_its_members(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    deb = tmp_path / "pkg.deb"
    deb.write_bytes(deb_bytes(tar_bytes([("./usr/lib/libv3.so", LIB_V3.read_bytes()),
                                         ("./usr/bin/exe", EXE_V2.read_bytes())])))
    assert main(["check", "-j", "1", str(deb)]) == 0
    out = capsys.readouterr().out
    assert re.search(r"\n  objects checked\s+2  \(2 members of 1 archive\)\n", out)
    assert main(["check", "-j", "1", str(LIB_V3), str(EXE_V2)]) == 0
    assert re.search(r"\n  files checked\s+2\n", capsys.readouterr().out)
