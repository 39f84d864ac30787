"""The man page (sfcheck/manpage.py): whatis can index it, man renders it without warnings,
it holds every command and option of the parser and the CLI's exit statuses, and every
example in it runs and exits as it says."""

from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import pytest

import sfcheck
from sfcheck import cli, manpage
from sfcheck.waivers import _KEYS, parse_waivers

from helpers import CORPUS

LIBRARY = CORPUS / "v3" / "libcorpus.so"  # one warning (defect-ld-plt-got-cfa), some info


@pytest.fixture(scope="module")
def page() -> str:
    return manpage.render()


@pytest.fixture
def page_file(page: str, tmp_path: Path) -> Path:
    path = tmp_path / "sfcheck.1"
    path.write_text(page)
    return path


def _tool(name: str) -> str:
    path = shutil.which(name)
    if path is None:
        pytest.skip(f"{name} not installed (Debian package man-db)")
    return path


def section(page: str, name: str) -> str:
    """The roff of one .SH section."""
    match = re.search(rf'^\.SH "?{name}"?\n(.*?)(?=^\.SH |\Z)', page, re.S | re.M)
    assert match, f"no section {name}"
    return match.group(1)


def unroff(line: str) -> str:
    """A verbatim line as the user reads it (manpage.literal's escapes undone)."""
    return (line.replace("\\(aq", "'").replace("\\-", "-").replace("\\&", "")
            .replace("\\e", "\\"))


def tagged(roff: str) -> list[str]:
    """The tags of a section's .TP list, escapes undone."""
    return [re.sub(r"\\f[BIR]", "", unroff(tag)) for tag in re.findall(r"^\.TP\n(.*)$", roff,
                                                                      re.M)]


def examples(page: str) -> list[tuple[int, str]]:
    """(exit status, command) of each example: the status the sentence before it states."""
    found = re.findall(r"\(exit status (\d+)\):\n\.PP\n\.RS 4\n\.EX\n\$ (.*)\n\.EE",
                       section(page, "EXAMPLES"))
    return [(int(status), unroff(command)) for status, command in found]


def waiver_example(page: str) -> str:
    block = re.search(r"^\.EX\n(.*?)^\.EE", section(page, "WAIVER FILE"), re.S | re.M)
    assert block
    return "\n".join(unroff(line) for line in block.group(1).splitlines()) + "\n"


def test_whatis_can_index_it(page_file: Path) -> None:
    proc = subprocess.run([_tool("lexgrog"), str(page_file)], capture_output=True, text=True,
                          timeout=60)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert f'"sfcheck - {manpage.SUMMARY}"' in proc.stdout


def test_man_renders_it_without_warnings(page_file: Path) -> None:
    proc = subprocess.run([_tool("man"), "--warnings", "-l", str(page_file)],
                          capture_output=True, text=True, timeout=60,
                          env=dict(os.environ, LC_ALL="C.UTF-8", MANWIDTH="80"))
    assert proc.returncode == 0 and proc.stderr == "", proc.stderr
    assert "EXIT STATUS" in proc.stdout and "Generated" not in proc.stdout


def test_every_command_and_option_is_there(page: str) -> None:
    commands = manpage._subparsers(cli.build_parser())
    assert set(commands) == set(cli.SUBCOMMANDS)
    body = section(page, "COMMANDS")
    for name, parser in commands.items():
        block = re.search(rf'^\.SS "{name}"\n(.*?)(?=^\.SS |\Z)', body, re.S | re.M)
        assert block, name
        options = {o for a in parser._actions for o in a.option_strings
                   if not isinstance(a, type(parser._actions[0]))}  # -h is in every one
        assert options <= {o.split()[0] for t in tagged(block.group(1))
                           for o in t.split(", ")}, name


def test_exit_statuses_are_the_clis(page: str) -> None:
    codes = {v for k, v in vars(cli).items() if k.startswith("EXIT_")}
    codes.add(128 + signal.SIGTERM)  # scan._terminated: SIGTERM ends a scan as the shell would
    assert sorted(int(t) for t in tagged(section(page, "EXIT STATUS"))) == sorted(codes)


def test_waiver_format(page: str) -> None:
    keys = tagged(section(page, "WAIVER FILE"))
    assert set(keys) == _KEYS
    waivers = parse_waivers(waiver_example(page))
    assert len(waivers) == 1 and waivers[0].reason


def test_every_environment_variable_read_is_documented(page: str) -> None:
    source = "\n".join(p.read_text() for p in Path(sfcheck.__file__).parent.rglob("*.py")
                       if p.name != "manpage.py")  # its SOURCE_DATE_EPOCH is the build's
    read = set(re.findall(r"os\.environ(?:\.get\(|\[)\"(\w+)\"", source))
    read |= set(re.findall(r"\"(\w+)\" (?:not )?in os\.environ", source))
    assert read - {"_ARGCOMPLETE"}, "no variable found: the pattern is stale"
    assert read - {"_ARGCOMPLETE"} <= set(tagged(section(page, "ENVIRONMENT")))


def _sandbox(tmp_path: Path, page: str) -> dict[str, str]:
    """The directory the examples run in (see manpage.EXAMPLES), and their environment:
    `sfcheck` on PATH is this interpreter's."""
    shutil.copy(LIBRARY, tmp_path / "libfoo.so")
    lib = tmp_path / "root" / "usr" / "lib" / "x86_64-linux-gnu"
    lib.mkdir(parents=True)
    shutil.copy(LIBRARY, lib / "libfoo.so.1")
    (tmp_path / "waivers.toml").write_text(waiver_example(page))
    shim = tmp_path / "bin"
    shim.mkdir()
    (shim / "sfcheck").write_text(f'#!/bin/sh\nexec "{sys.executable}" -m sfcheck "$@"\n')
    (shim / "sfcheck").chmod(0o755)
    return dict(os.environ, PATH=f"{shim}{os.pathsep}{os.environ['PATH']}", NO_COLOR="1")


def test_every_example_runs_with_the_status_it_states(page: str, tmp_path: Path) -> None:
    found = examples(page)
    assert len(found) == len(manpage.EXAMPLES)
    env = _sandbox(tmp_path, page)
    for status, command in found:
        proc = subprocess.run(["bash", "-c", command], cwd=tmp_path, env=env,
                              capture_output=True, text=True, timeout=120)
        assert proc.returncode == status, (command, proc.stdout[-1000:], proc.stderr[-1000:])
        assert "Traceback" not in proc.stderr and "internal error" not in proc.stderr, command


def test_examples_read_as_they_run(page: str, page_file: Path) -> None:
    """What man shows is what runs. Debian's groff maps - and ' to ASCII anyway; others
    print a hyphen and a closing quote unless the roff says \\- and \\(aq."""
    verbatim = re.findall(r"^\.EX\n(.*?)^\.EE", page, re.S | re.M)
    assert verbatim and not any(re.search(r"(?<!\\)[-']", v) for v in verbatim)
    proc = subprocess.run([_tool("man"), "-l", str(page_file)], capture_output=True,
                          text=True, timeout=60,
                          env=dict(os.environ, LC_ALL="C.UTF-8", MANWIDTH="200"))
    shown = re.sub(r".\x08", "", proc.stdout)  # overstrike bold, when man does not strip it
    commands = [line.strip()[2:] for line in shown.split("\nEXAMPLES\n", 1)[1].splitlines()
                if line.strip().startswith("$ ")]
    assert commands == [command for _, command in examples(page)]
