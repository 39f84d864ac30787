"""CI tests the installed wheel (SFCHECK_TEST_INSTALLED=1, see .ci/run): the sfcheck this
run and its child processes import is not the checkout's, and the wheel's man page and bash
completion are installed where man and bash-completion look."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import sfcheck
import sfcheck.cli  # noqa: F401  (a submodule for the test below to find)

from helpers import ROOT, in_checkout, installed_run

pytestmark = pytest.mark.skipif(not installed_run(),
                                reason="SFCHECK_TEST_INSTALLED=1 only (CI's run on the wheel)")


def test_this_process_tests_the_installed_package() -> None:
    modules = {name: m.__file__ for name, m in sys.modules.items()
               if (name == "sfcheck" or name.startswith("sfcheck.")) and m.__file__}
    assert "sfcheck.cli" in modules
    assert not [f for f in modules.values() if in_checkout(f)], sfcheck.__file__


def test_children_started_in_the_checkout_import_the_installed_package() -> None:
    """How tests start sfcheck: sys.executable, cwd=ROOT, the inherited environment."""
    proc = subprocess.run([sys.executable, "-c", "import sfcheck; print(sfcheck.__file__)"],
                          cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0 and not in_checkout(proc.stdout.strip()), proc
    # `python -m sfcheck`: -v names the file each module was loaded from.
    proc = subprocess.run([sys.executable, "-v", "-m", "sfcheck", "--version"], cwd=ROOT,
                          capture_output=True, text=True, timeout=60)
    loaded = re.findall(r"(/\S*/sfcheck/__init__\.py)", proc.stderr)
    assert proc.returncode == 0 and loaded, proc.stderr[-2000:]
    assert not [f for f in loaded if in_checkout(f)], loaded


def _data_file(*parts: str) -> Path:
    path = Path(sys.prefix, "share", *parts)
    assert path.is_file(), f"the wheel did not install {path}"
    return path


def test_the_man_page_is_installed() -> None:
    page = _data_file("man", "man1", "sfcheck.1")
    if shutil.which("lexgrog") is None:
        pytest.skip("lexgrog not installed (Debian package man-db)")
    proc = subprocess.run(["lexgrog", str(page)], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0 and "sfcheck - " in proc.stdout, proc.stdout + proc.stderr


def test_the_bash_completion_is_installed_and_completes() -> None:
    """bash-completion sources completions/sfcheck when `sfcheck` is completed; here it is
    sourced by hand and its function asked, as bash would, for `sfcheck prof<TAB>`."""
    hook = _data_file("bash-completion", "completions", "sfcheck")
    pytest.importorskip("argcomplete", reason="pip install argcomplete (completion extra)")
    script = (f"source {hook}\n"
              "fn=$(complete -p sfcheck | sed -n 's/.*-F \\([^ ]*\\).*/\\1/p')\n"
              "COMP_LINE='sfcheck prof'; COMP_POINT=${#COMP_LINE}; COMP_TYPE=9\n"
              "COMP_WORDS=(sfcheck prof); COMP_CWORD=1\n"
              '"$fn" sfcheck prof sfcheck\nprintf "%s\\n" "${COMPREPLY[@]}"\n')
    env = dict(os.environ, PATH=f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}")
    proc = subprocess.run(["bash", "-c", script], capture_output=True, text=True, env=env,
                          timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert [c.strip() for c in proc.stdout.split()] == ["profiles"], proc.stdout
