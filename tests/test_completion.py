"""Shell completion on the real parser (argcomplete, the `completion` extra): fixed option
values, rule IDs, groups and profile names, and `sfcheck FILE...` completed as `check`.

Driven as the shell drives it: `_ARGCOMPLETE`, `COMP_LINE` and `COMP_POINT` in the
environment, the candidates written to the output stream (fd 8 in a real shell)."""

from __future__ import annotations

import argparse
import contextlib
import io
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from sfcheck import completion
from sfcheck.cli import SUBCOMMANDS, build_parser
from sfcheck.profiles import PROFILE_NAMES
from sfcheck.rules import GROUPS, RULES

from helpers import ROOT

pytest.importorskip("argcomplete", reason="pip install argcomplete (completion extra)")


class _Done(Exception):
    pass


def _exit(status: int) -> None:
    raise _Done(status)


@contextlib.contextmanager
def _fd9_hidden() -> Iterator[None]:
    """argcomplete 2 (Debian 12's) writes debug output to fd 9 when it is open and closes it
    with its file object later: in pytest fd 9 can be pytest's own (faulthandler's stderr),
    and the run then ends in EBADF. Closed during the call, fd 9 is left alone."""
    try:
        saved = os.dup(9)
    except OSError:  # not open: nothing to protect
        yield
        return
    os.close(9)
    try:
        yield
    finally:
        os.dup2(saved, 9)
        os.close(saved)


def complete(line: str, monkeypatch: pytest.MonkeyPatch, cwd: Path = ROOT) -> list[str]:
    """The candidates bash gets for `line` with the cursor at its end."""
    monkeypatch.chdir(cwd)
    for name, value in {"_ARGCOMPLETE": "1", "_ARGCOMPLETE_IFS": "\n", "COMP_LINE": line,
                        "COMP_POINT": str(len(line)), "COMP_TYPE": "9"}.items():
        monkeypatch.setenv(name, value)
    out = io.StringIO()
    with _fd9_hidden(), pytest.raises(_Done) as done:
        completion.complete(build_parser(), exit_method=_exit, output_stream=out)
    assert done.value.args == (0,)
    return [c.strip() for c in out.getvalue().split("\n") if c.strip()]


SEVERITIES = ["error", "warning", "info"]


@pytest.mark.parametrize(("line", "expected"), [
    ("sfcheck check --fail-on ", [*SEVERITIES, "none"]),
    ("sfcheck check --show ", SEVERITIES),
    ("sfcheck check --format ", "choices of --format"),
    ("sfcheck check --color ", ["auto", "always", "never"]),
    ("sfcheck check --profile ", list(PROFILE_NAMES)),
    ("sfcheck check --profile k", [p for p in PROFILE_NAMES if p.startswith("k")]),
    ("sfcheck profiles ", ["-h", "--help", *PROFILE_NAMES]),
    ("sfcheck profiles kernel glibc", ["glibc-2.42"]),
    ("sfcheck rules ", ["-h", "--help", *GROUPS]),
    ("sfcheck rules f", ["fde", "fre"]),
    ("sfcheck explain defect-ld", [r for r in RULES if r.startswith("defect-ld")]),
    ("sfcheck check --disable defect-ld", [r for r in RULES if r.startswith("defect-ld")]),
    ("sfcheck check --enable de", ["defect", *[r for r in RULES if r.startswith("de")]]),
    ("sfcheck check --enable ", [*GROUPS, *RULES]),
    ("sfcheck check --fo", ["--format"]),
    ("sfcheck pro", ["profiles", "proc"]),
    # `sfcheck FILE...` is `sfcheck check FILE...`: its options complete there too
    ("sfcheck --fail-on ", [*SEVERITIES, "none"]),
    ("sfcheck --fail-on=w", ["--fail-on=warning"]),
    ("sfcheck corpus/v3/libcorpus.so --show ", SEVERITIES),
    ("sfcheck corpus/v3/libcorpus.so --enable fd", ["fde", *[r for r in RULES
                                                               if r.startswith("fd")]]),
    ("sfcheck --ver", ["--version"]),
    ("sfcheck --fail", ["--fail-on"]),
    # numbers: no file names offered
    ("sfcheck check -j ", []),
    ("sfcheck dump --vma ", []),
    ("sfcheck proc ", ["-h", "--help", "--json"]),
])
def test_completes(line: str, expected: list[str] | str,
                   monkeypatch: pytest.MonkeyPatch) -> None:
    if isinstance(expected, str):  # a list other changes extend: the parser's own
        option = expected.removeprefix("choices of ")
        check = next(p for p in _subparsers(build_parser()) if p.prog.endswith(" check"))
        expected = next(list(a.choices) for a in check._actions if option in a.option_strings)
        assert len(expected) >= 4
    assert complete(line, monkeypatch) == expected


def _subparsers(parser: argparse.ArgumentParser) -> list[argparse.ArgumentParser]:
    return [sub for a in parser._actions if isinstance(a, argparse._SubParsersAction)
            for sub in a.choices.values()]


def test_first_word_is_a_command_or_a_file(tmp_path: Path,
                                           monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "libx.so").write_bytes(b"")
    (tmp_path / "pkg.deb").write_bytes(b"")
    got = complete("sfcheck ", monkeypatch, tmp_path)
    # commands first (in --help order), then check's files; no flood of check's options
    assert got[:11] == ["-h", "--help", "--version", "dump", "check", "rules", "explain",
                        "profiles", "unwind", "proc", "survey"]
    assert sorted(got[11:]) == ["libx.so", "pkg.deb"] and set(got[:11]) == {
        "-h", "--help", "--version", *SUBCOMMANDS}
    assert complete("sfcheck li", monkeypatch, tmp_path) == ["libx.so"]
    got = complete("sfcheck libx.so ", monkeypatch, tmp_path)  # as `check libx.so `
    assert {"libx.so", "pkg.deb", "--fail-on", "--profile"} <= set(got)
    assert not set(SUBCOMMANDS) & set(got)


def test_completion_as_the_shell_runs_it(tmp_path: Path) -> None:
    """The installed entry point, with the candidates on fd 8 as bash's hook reads them."""
    line = "sfcheck explain defect-ld-pl"
    env = {**os.environ, "_ARGCOMPLETE": "1", "_ARGCOMPLETE_IFS": "\n", "COMP_LINE": line,
           "COMP_POINT": str(len(line)), "COMP_TYPE": "9"}
    env.pop("_ARGCOMPLETE_STDOUT_FILENAME", None)
    # bash's hook: `"$1" 8>&1 9>&2 1>/dev/null 2>&1` (candidates on fd 8, nothing else)
    proc = subprocess.run(["/bin/sh", "-c", '"$0" -m sfcheck 8>&1 9>&2 1>/dev/null',
                           sys.executable], cwd=ROOT, env=env, capture_output=True,
                          text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == "defect-ld-plt-got-cfa "
