"""The configuration file (sfcheck.config, wired in sfcheck.cli): discovery from the
working directory up, precedence, every kind of error, and the command line winning."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from sfcheck.cli import main

from archives import BAD, LIB_V3


@pytest.fixture()
def repo(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A repository root with a subdirectory `sub` as the working directory, holding a
    file with warnings only (lib.so) and one with errors (bad.so)."""
    root = tmp_path / "repo"
    (root / ".git").mkdir(parents=True)
    sub = root / "sub"
    sub.mkdir()
    shutil.copy(LIB_V3, sub / "lib.so")
    shutil.copy(BAD, sub / "bad.so")
    monkeypatch.chdir(sub)
    return root


def check(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    status = main(["check", "-j", "1", *argv])
    out, err = capsys.readouterr()
    return status, out, err


def test_found_upwards_and_command_line_wins(repo: Path,
                                             capsys: pytest.CaptureFixture[str]) -> None:
    assert check(capsys, "lib.so")[0] == 0  # a warning: passes at the default fail-on
    (repo / "sfcheck.toml").write_text('fail-on = "warning"\nformat = "json"\n')
    status, out, _ = check(capsys, "lib.so")
    assert status == 1 and json.loads(out)["fail_on"] == "warning"
    status, out, _ = check(capsys, "--fail-on", "error", "--format", "text", "lib.so")
    assert status == 0 and out.startswith("lib.so: warning: ")
    assert check(capsys, "--no-config", "lib.so")[0] == 0


def test_sfcheck_toml_wins_over_pyproject(repo: Path,
                                          capsys: pytest.CaptureFixture[str]) -> None:
    (repo / "pyproject.toml").write_text('[tool.sfcheck]\nfail-on = "warning"\n')
    assert check(capsys, "lib.so")[0] == 1  # [tool.sfcheck] is read
    (repo / "sfcheck.toml").write_text('fail-on = "none"\n')
    assert check(capsys, "bad.so")[0] == 0  # sfcheck.toml, not pyproject.toml


def test_search_stops_at_first_config_and_at_repository_root(
        repo: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (repo.parent / "sfcheck.toml").write_text('fail-on = "warning"\n')  # above the repo
    assert check(capsys, "lib.so")[0] == 0  # not read: .git is the root
    (repo / "sfcheck.toml").write_text('fail-on = "warning"\n')
    (repo / "sub" / "pyproject.toml").write_text('[project]\nname = "x"\n')  # no table
    assert check(capsys, "lib.so")[0] == 1  # the search went on past it, to repo/
    (repo / "sub" / "pyproject.toml").write_text('[tool.sfcheck]\nprofile = "strict"\n')
    assert check(capsys, "lib.so")[0] == 0  # the first one holding sfcheck settings


def test_config_option_names_a_file(repo: Path, tmp_path: Path,
                                    capsys: pytest.CaptureFixture[str]) -> None:
    (repo / "sfcheck.toml").write_text('fail-on = "none"\n')
    other = tmp_path / "ci.toml"
    other.write_text('fail-on = "warning"\n')
    assert check(capsys, "--config", str(other), "lib.so")[0] == 1
    with pytest.raises(SystemExit) as exit_:  # argparse's usage error
        check(capsys, "--config", str(other), "--no-config", "lib.so")
    assert exit_.value.code == 2 and "not allowed with" in capsys.readouterr().err


def test_waivers_relative_to_the_file_and_lists(repo: Path,
                                                capsys: pytest.CaptureFixture[str]) -> None:
    (repo / "conf").mkdir()
    (repo / "conf" / "w.toml").write_text('[[waiver]]\nrule = "defect"\npath = "*"\n'
                                          'reason = "known ld defect"\n')
    (repo / "conf" / "sfcheck.toml").write_text('waivers = "w.toml"\nfail-on = "warning"\n')
    status, out, _ = check(capsys, "--config", str(repo / "conf" / "sfcheck.toml"), "lib.so")
    assert status == 0 and "(waived: known ld defect)" in out
    (repo / "sfcheck.toml").write_text('disable = ["defect"]\nfail-on = "warning"\n')
    assert check(capsys, "lib.so")[0] == 0  # the defect group is off
    # a rule the command line enables leaves the file's disable list
    assert check(capsys, "--enable", "defect", "lib.so")[0] == 1
    (repo / "sfcheck.toml").write_text('enable = ["defect-ld-plt-got-cfa"]\n'
                                       'fail-on = "warning"\n')
    assert check(capsys, "--disable", "defect-ld-plt-got-cfa", "lib.so")[0] == 0


@pytest.mark.parametrize(("text", "expected"), [
    ('fail-on = "warning\n', "sfcheck.toml: invalid TOML: "),
    ('fail_on = "warning"\n', "sfcheck.toml: fail_on: unknown key (did you mean 'fail-on'?)"),
    ('colour = "always"\n', "sfcheck.toml: colour: unknown key; known keys: profile, "),
    ("jobs = \"2\"\n", "sfcheck.toml: jobs: expected a whole number >= 1, got '2'"),
    ("jobs = 0\n", "sfcheck.toml: jobs: expected a whole number >= 1, got 0"),
    ('show = "all"\n', "sfcheck.toml: show: expected one of error, warning, info, got 'all'"),
    ('profile = "linux"\n', "sfcheck.toml: profile: expected one of strict, "),
    ('enable = "fde"\n', "sfcheck.toml: enable: expected a list of rule IDs or groups"),
    ('disable = ["fde-nope"]\n', "sfcheck.toml: disable: unknown rule or group 'fde-nope'"),
    ("require-sframe = 1\n", "sfcheck.toml: require-sframe: expected true or false, got 1"),
    ('format = "xml"\n', "sfcheck.toml: format: expected one of text, json, sarif, junit, "),
])
def test_errors_are_one_line_naming_file_and_key(repo: Path, text: str, expected: str,
                                                 capsys: pytest.CaptureFixture[str]) -> None:
    (repo / "sfcheck.toml").write_text(text)
    status, out, err = check(capsys, "lib.so")
    assert status == 2 and out == ""
    assert err.count("\n") == 1 and err.startswith(f"sfcheck: error: {repo}/" + expected), err


def test_pyproject_errors_name_the_table(repo: Path,
                                         capsys: pytest.CaptureFixture[str]) -> None:
    (repo / "pyproject.toml").write_text('[tool.sfcheck]\nfail-on = 3\n')
    status, _, err = check(capsys, "lib.so")
    assert status == 2 and err == (f"sfcheck: error: {repo}/pyproject.toml: tool.sfcheck."
                                   "fail-on: expected one of error, warning, info, none, got 3\n")
    status, _, err = check(capsys, "--config", str(repo / "sub" / "lib.so"), "lib.so")
    assert status == 2 and err.count("\n") == 1 and ": not UTF-8: " in err
    (repo / "sub" / "pyproject.toml").write_text('[project]\nname = "x"\n')
    status, _, err = check(capsys, "--config", "pyproject.toml", "lib.so")
    assert (status, err) == (2, "sfcheck: error: pyproject.toml: no [tool.sfcheck] table\n")
    status, _, err = check(capsys, "--config", "missing.toml", "lib.so")
    assert status == 2 and err.startswith("sfcheck: error: missing.toml: cannot read")


@pytest.mark.parametrize("text", [
    '[tool.sfcheck]\nfail-on = "warning"\n',
    '[ tool . "sfcheck" ]\nfail-on = "warning"\n',
    'tool.sfcheck.fail-on = "warning"\n',
    '[tool]\nsfcheck = { fail-on = "warning" }\n',
    '["tool"]\nruff.line-length = 1\nsfcheck.fail-on = "warning"\n',
])
def test_every_spelling_of_the_table_is_read(repo: Path, text: str,
                                             capsys: pytest.CaptureFixture[str]) -> None:
    """pyproject.toml is parsed only when it may hold [tool.sfcheck]: that test must not
    miss a way TOML writes the table."""
    (repo / "pyproject.toml").write_text(text + '[project]\nname = "sfcheck"\n')
    assert check(capsys, "lib.so")[0] == 1


def test_removed_working_directory_is_no_config(tmp_path: Path,
                                                monkeypatch: pytest.MonkeyPatch,
                                                capsys: pytest.CaptureFixture[str]) -> None:
    gone = tmp_path / "gone"
    gone.mkdir()
    monkeypatch.chdir(gone)
    gone.rmdir()
    status, out, err = check(capsys, str(LIB_V3))
    assert status == 0 and err == "" and "warning: [defect-ld-plt-got-cfa]" in out


def test_a_directory_we_may_not_look_into_ends_the_search(tmp_path: Path, monkeypatch) -> None:
    """Running as a user who may not search a parent directory (CI's work directory is
    root's 0700 mktemp): that directory holds no configuration of ours, and the check goes
    on; it was an internal error (PermissionError, exit 70)."""
    from sfcheck import config

    (tmp_path / "sfcheck.toml").write_text('fail-on = "none"\n')  # above the closed one
    closed, work = tmp_path / "closed", tmp_path / "closed" / "work"
    work.mkdir(parents=True)
    real_is_file = Path.is_file

    def is_file(self: Path) -> bool:
        if self.parent == closed:
            raise PermissionError(13, "Permission denied", str(self))
        return real_is_file(self)

    monkeypatch.setattr(Path, "is_file", is_file)
    assert config.discover(work) is None
    monkeypatch.chdir(work)
    assert main(["check", "-q", str(LIB_V3)]) in (0, 1)
