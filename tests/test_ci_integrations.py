"""The pre-commit hook (.pre-commit-hooks.yaml) run by the real pre-commit, and the GitHub
Action (action.yml) validated by check-jsonschema against GitHub's action schema, its
scripts run by bash as the runner would."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import urllib.request
from pathlib import Path

import pytest

from archives import BAD, LIB_V3
from helpers import ROOT

BIN = Path(sys.executable).parent
GIT = ["git", "-c", "user.name=sfcheck test", "-c", "user.email=test@sfcheck.invalid",
       "-c", "init.defaultBranch=main", "-c", "commit.gpgsign=false"]
# What building and installing the package needs (pre-commit pip-installs the hook repo).
PACKAGE_FILES = ("pyproject.toml", "setup.py", "MANIFEST.in", "LICENSE", "README.md",
                 ".pre-commit-hooks.yaml")


def tool(name: str) -> str:
    path = BIN / name
    if not path.exists():
        pytest.skip(f"{name} not installed (pip install -e '.[test]')")
    return str(path)


def git(cwd: Path, *argv: str) -> None:
    subprocess.run([*GIT, *argv], cwd=cwd, check=True, capture_output=True, timeout=60)


# --- pre-commit ------------------------------------------------------------------------

def _pypi_reachable() -> bool:
    try:
        with urllib.request.urlopen("https://pypi.org/simple/setuptools/", timeout=10):
            return True
    except OSError:
        return False


def _hook_repo(tmp_path: Path) -> Path:
    """A git repository holding this checkout's package and hook definition, committed."""
    repo = tmp_path / "hook-repo"
    repo.mkdir()
    for name in PACKAGE_FILES:
        shutil.copy(ROOT / name, repo / name)
    shutil.copytree(ROOT / "sfcheck", repo / "sfcheck",
                    ignore=shutil.ignore_patterns("__pycache__", "*.so", "*.pyc"))
    git(repo, "init", "-q")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "sfcheck")
    return repo


def test_pre_commit_hook_fails_broken_passes_clean(tmp_path: Path) -> None:
    pre_commit = tool("pre-commit")
    if shutil.which("git") is None:
        pytest.skip("git not installed (Debian: apt-get install git)")
    if not _pypi_reachable():
        pytest.skip("no network to PyPI: pre-commit installs the hook's package with pip")
    if not (ROOT / "setup.py").is_file():  # e.g. a distro build's copy of the tests
        pytest.skip(f"no package source beside the tests ({ROOT}): the hook builds it")
    hook_repo = _hook_repo(tmp_path)
    project = tmp_path / "project"
    (project / "lib").mkdir(parents=True)
    shutil.copy(LIB_V3, project / "lib" / "libclean.so.1")  # a warning only: passes
    shutil.copy(BAD, project / "lib" / "libbroken.so")  # errors: fails
    (project / "logo.png").write_bytes(b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR")  # binary, not ELF
    git(project, "init", "-q")
    git(project, "add", "-A")
    env = dict(os.environ, PRE_COMMIT_HOME=str(tmp_path / "cache"), NO_COLOR="1")

    def try_repo() -> subprocess.CompletedProcess[str]:
        return subprocess.run([pre_commit, "try-repo", str(hook_repo), "sfcheck",
                               "--all-files", "--color", "never"], cwd=project, env=env,
                              capture_output=True, text=True, timeout=900)

    proc = try_repo()
    out = proc.stdout + proc.stderr
    assert proc.returncode == 1, out
    assert "lib/libbroken.so: error: [elf-no-segment]" in out
    named = "".join(line for line in out.splitlines(keepends=True)  # the v2/v3 mix names it
                    if "[elf-mixed-versions]" not in line)
    assert "libclean" not in named.replace("lib/libclean.so.1: warning", "")  # no error of it
    assert "logo.png" not in out  # not named: a binary that is not ELF is not the hook's
    git(project, "rm", "-q", "-f", "lib/libbroken.so")
    proc = try_repo()
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "Passed" in proc.stdout


# --- GitHub Action ---------------------------------------------------------------------

def test_action_validates_against_github_action_schema(tmp_path: Path) -> None:
    checker = tool("check-jsonschema")
    cmd = [checker, "--builtin-schema", "vendor.github-actions"]
    proc = subprocess.run([*cmd, str(ROOT / "action.yml")], capture_output=True, text=True,
                          timeout=120)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    broken = tmp_path / "action.yml"  # the schema is not vacuous
    broken.write_text((ROOT / "action.yml").read_text().replace("using: composite",
                                                                "using: compound"))
    assert subprocess.run([*cmd, str(broken)], capture_output=True, timeout=120).returncode == 1


def _steps() -> dict[str, dict]:
    yaml = pytest.importorskip("yaml", reason="PyYAML (installed with pre-commit)")
    action = yaml.safe_load((ROOT / "action.yml").read_text())
    assert action["runs"]["using"] == "composite"
    return {step["name"]: step for step in action["runs"]["steps"]}


def test_action_runs_sfcheck_and_uploads_whatever_the_gate_says(tmp_path: Path) -> None:
    steps = _steps()
    upload = steps["Upload SARIF to code scanning"]
    assert upload["uses"].startswith("github/codeql-action/upload-sarif@")
    assert upload["if"].startswith("${{ always()")
    run = steps["Run sfcheck"]
    assert all("${{" not in line for line in run["run"].splitlines())  # inputs via env only
    work = tmp_path / "ws"
    work.mkdir()
    shutil.copy(BAD, work / "bad.so")
    shutil.copy(LIB_V3, work / "libv3.so")
    output = tmp_path / "github_output"
    env = dict(os.environ, SFCHECK=tool("sfcheck"), GITHUB_OUTPUT=str(output),
               PATHS="bad.so  lib*.so", PROFILE="", FAIL_ON="error", ARGS="-I --no-config",
               SARIF="out $(touch pwned).sarif")  # a hostile input value stays a file name
    proc = subprocess.run(["bash", "-e", "-c", run["run"]], cwd=work, env=env,
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr  # the step records the status, the gate fails
    assert output.read_text() == "exit-code=1\n"
    assert not (work / "pwned").exists()
    doc = json.loads((work / "out $(touch pwned).sarif").read_text())
    results = doc["runs"][0]["results"]
    uris = {r["locations"][0]["physicalLocation"]["artifactLocation"]["uri"] for r in results}
    assert uris == {"bad.so", "libv3.so"} and "note" in {r["level"] for r in results}
    gate = steps["Gate on sfcheck's exit status"]
    for status, expected in (("1", 1), ("0", 0), ("", 2)):
        done = subprocess.run(["bash", "-c", gate["run"]], env=dict(os.environ, STATUS=status),
                              timeout=60)
        assert done.returncode == expected
