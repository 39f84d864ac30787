"""The real rpmlint 2 running sfcheck's check (sfcheck/integrations/) on RPMs built here by
rpmbuild: tags, levels, Filters, [Scoring], --explain and the [SFrame] options.

rpmlint needs the rpm bindings of Debian's python3-rpm, so it lives in its own venv made
from /usr/bin/python3 (.ci/rpmlint-env.sh); $SFCHECK_RPMLINT_PYTHON names another such
interpreter. Without one, or without rpmbuild, the tests skip with the reason.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest
from elftools.elf.elffile import ELFFile

from sfcheck.rules import RULES

from archives import rpmbuild
from helpers import CORPUS, ROOT

STATIC = CORPUS / "v3" / "exe_static"  # no warning or error under the default profile
PIE = CORPUS / "v3" / "exe_pie"  # one warning: defect-ld-plt-got-cfa
# "pkg.arch: E: tag (Badness: N) details": rpmlint's line (rpmlint/filter.py add_info).
LINE = re.compile(r"^(?P<pkg>\S+): (?P<level>[EWI]): (?P<tag>\S+)(?: \(Badness: "
                  r"(?P<badness>\d+)\))?(?: (?P<details>.*))?$")


def _rpmlint_python() -> str:
    python = os.environ.get("SFCHECK_RPMLINT_PYTHON") or str(ROOT / ".venv-rpmlint" / "bin"
                                                               / "python")
    if not Path(python).exists():
        pytest.skip(f"no rpmlint interpreter at {python} (run .ci/rpmlint-env.sh, or set "
                    "SFCHECK_RPMLINT_PYTHON)")
    probe = subprocess.run([python, "-c", "import rpm, rpmlint.lint"], capture_output=True,
                           text=True)
    if probe.returncode:
        pytest.skip(f"{python} cannot import rpmlint and the rpm bindings: "
                    f"{probe.stderr.strip().splitlines()[-1:]}")
    return python


@pytest.fixture(scope="module")
def python() -> str:
    return _rpmlint_python()


def _flip_magic(src: Path, dest: Path) -> Path:
    """`src` with the first byte of its .sframe section's magic changed."""
    data = bytearray(src.read_bytes())
    with src.open("rb") as fh:
        offset = ELFFile(fh).get_section_by_name(".sframe")["sh_offset"]
    data[offset] ^= 0xFF
    dest.write_bytes(data)
    return dest


@pytest.fixture(scope="module")
def rpms(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    tmp = tmp_path_factory.mktemp("rpmlint")
    broken = _flip_magic(STATIC, tmp / "broken")
    objcopy = shutil.which("objcopy")
    if objcopy is None:
        pytest.skip("objcopy not installed (Debian: apt-get install binutils)")
    debug = tmp / "prog.debug"
    subprocess.run([objcopy, "--only-keep-debug", str(STATIC), str(debug)], check=True)
    bare = tmp / "bare"  # an ELF file without SFrame
    subprocess.run([objcopy, "--remove-section", ".sframe", str(STATIC), str(bare)], check=True)
    return {
        "clean": rpmbuild(tmp, {"usr/bin/prog": STATIC}, name="clean"),
        "broken": rpmbuild(tmp, {"usr/bin/prog": broken, "usr/bin/pie": PIE,
                                 "usr/share/doc/broken/README": b"not ELF\n",
                                 "usr/lib64/libcut.so": STATIC.read_bytes()[:40]},
                           name="broken"),
        "debuginfo": rpmbuild(tmp, {"usr/lib/debug/usr/bin/prog-1.0-1.x86_64.debug": debug},
                              name="clean-debuginfo"),
        "bare": rpmbuild(tmp, {"usr/bin/prog": bare}, name="bare"),
    }


BROKEN = [("E", "sframe-header-bad-magic", "/usr/bin/prog"),
          ("W", "sframe-defect-ld-plt-got-cfa", "/usr/bin/pie"),
          ("W", "sframe-unreadable-elf", "/usr/lib64/libcut.so")]


class Run:
    def __init__(self, proc: subprocess.CompletedProcess[str]) -> None:
        self.rc, self.out, self.err = proc.returncode, proc.stdout, proc.stderr
        self.issues = [m.groupdict() for m in map(LINE.match, self.out.splitlines()) if m]

    def tags(self, prefix: str = "sframe-") -> list[tuple[str, str, str]]:
        """(level, tag, first word of the details: the file) of sfcheck's issues."""
        return sorted((i["level"], i["tag"], (i["details"] or "").split(" ")[0])
                      for i in self.issues if i["tag"].startswith(prefix))


def rpmlint(python: str, tmp: Path, *args: str | Path, config: str = "",
            only_sframe: bool = True) -> Run:
    """The real rpmlint via sfcheck's launcher, its configuration isolated from the host's
    (XDG_CONFIG_HOME) and from pytest-xdist's switch that turns XDG loading off."""
    cfg = tmp / "sframe-test.toml"
    cfg.write_text(config)
    env = {k: v for k, v in os.environ.items()
           if k not in ("PYTEST_XDIST_TESTRUNUID", "CONFIG_DISABLE_AUTOLOADING")}
    env.update(XDG_CONFIG_HOME=str(tmp / "xdg-home"), XDG_CONFIG_DIRS=str(tmp / "xdg-none"),
               PYTHONPATH=str(ROOT))  # this checkout's sfcheck, whatever the venv holds
    cmd = [python, "-m", "sfcheck.integrations.rpmlint_run", "-c", str(cfg),
           *(["--checks", "SFrameCheck"] if only_sframe else []), *map(str, args)]
    return Run(subprocess.run(cmd, capture_output=True, text=True, env=env, cwd=tmp,
                              timeout=300))


def test_clean_rpm_gives_no_sframe_tag(python: str, rpms: dict[str, Path],
                                       tmp_path: Path) -> None:
    run = rpmlint(python, tmp_path, rpms["clean"])
    assert run.tags() == [], run.out
    assert "1 packages and 0 specfiles checked; 0 errors, 0 warnings" in run.out
    assert run.rc == 0, run.out + run.err


def test_broken_rpm_tags_and_levels(python: str, rpms: dict[str, Path], tmp_path: Path) -> None:
    run = rpmlint(python, tmp_path, rpms["broken"])
    # The flipped magic is an error on /usr/bin/prog, ld's .plt.got defect a warning on
    # /usr/bin/pie, an ELF file cut inside its header a warning; the README gives nothing.
    assert run.tags() == BROKEN, run.out
    (bad,) = [i for i in run.issues if i["tag"] == "sframe-header-bad-magic"]
    assert bad["pkg"] == "broken.x86_64"
    assert bad["details"].startswith("/usr/bin/prog .sframe+0x0: bad magic"), bad
    assert run.rc == 64  # rpmlint: errors were printed


def test_filter_silences_a_tag(python: str, rpms: dict[str, Path], tmp_path: Path) -> None:
    run = rpmlint(python, tmp_path, rpms["broken"],
                  config='Filters = ["sframe-defect-ld-plt-got-cfa"]\n')
    assert run.tags() == [BROKEN[0], BROKEN[2]], run.out
    assert "1 errors, 1 warnings, 1 filtered" in run.out
    # The same through an rpmlintrc (what OBS packages carry), with a regex on the detail.
    rc = tmp_path / "broken.rpmlintrc"
    rc.write_text('addFilter("sframe-unreadable-elf /usr/lib64/libcut\\.so")\n')
    run = rpmlint(python, tmp_path, "-r", rc, rpms["broken"])
    assert run.tags() == BROKEN[:2], run.out
    assert "unused-rpmlintrc-filter" not in run.out


def test_scoring_makes_a_warning_an_error_with_badness(python: str, rpms: dict[str, Path],
                                                      tmp_path: Path) -> None:
    run = rpmlint(python, tmp_path, rpms["broken"], config=(
        "BadnessThreshold = 20\n[Scoring]\nsframe-defect-ld-plt-got-cfa = 30\n"))
    (pie,) = [i for i in run.issues if i["tag"] == "sframe-defect-ld-plt-got-cfa"]
    assert (pie["level"], pie["badness"]) == ("E", "30"), run.out
    assert "Badness 31 exceeds threshold 20" in run.out  # 30 + the bad magic's default 1
    assert run.rc == 66


def test_explain_shows_the_catalogue(python: str, tmp_path: Path) -> None:
    run = rpmlint(python, tmp_path, "--explain", "sframe-header-bad-magic",
                  "sframe-unreadable-elf")
    text = " ".join(run.out.split())
    assert text.startswith("sframe-header-bad-magic: bad magic number. "), run.out
    assert " ".join(RULES["header-bad-magic"].explanation.split()) in text
    assert "Fix: " + RULES["header-bad-magic"].hint in text
    assert "sframe-unreadable-elf: The file starts like an ELF file" in text
    assert "Unknown message" not in text
    # A [Descriptions] entry replaces a tag's description, as for rpmlint's own tags.
    run = rpmlint(python, tmp_path, "--explain", "sframe-header-bad-magic", config=(
        '[Descriptions]\nsframe-header-bad-magic = "Ask the toolchain team."\n'))
    assert run.out.split("\n")[:2] == ["sframe-header-bad-magic:", "Ask the toolchain team."]


def test_profile_and_disable(python: str, rpms: dict[str, Path], tmp_path: Path) -> None:
    # glibc 2.42 reads only v2: the clean v3 binary is an error under its profile.
    run = rpmlint(python, tmp_path, rpms["clean"], config='[SFrame]\nprofile = "glibc-2.42"\n')
    assert run.tags() == [("E", "sframe-header-version-unsupported", "/usr/bin/prog")], run.out
    run = rpmlint(python, tmp_path, rpms["broken"], config='[SFrame]\ndisable = ["defect"]\n')
    assert run.tags() == [BROKEN[0], BROKEN[2]], run.out


def test_debuginfo_rpm(python: str, rpms: dict[str, Path], tmp_path: Path) -> None:
    # A separate debug file has NOBITS sections: an info finding, hidden unless asked for.
    run = rpmlint(python, tmp_path, rpms["debuginfo"])
    assert run.tags() == [] and run.rc == 0, run.out
    run = rpmlint(python, tmp_path, rpms["debuginfo"], config='[SFrame]\nshow = "info"\n')
    assert run.tags() == [("I", "sframe-elf-no-sframe-data",
                           "/usr/lib/debug/usr/bin/prog-1.0-1.x86_64.debug")], run.out


def test_require_sframe(python: str, rpms: dict[str, Path], tmp_path: Path) -> None:
    assert rpmlint(python, tmp_path, rpms["bare"]).tags() == []
    run = rpmlint(python, tmp_path, rpms["bare"], config="[SFrame]\nrequire-sframe = true\n")
    assert run.tags() == [("E", "sframe-elf-no-sframe", "/usr/bin/prog")], run.out


def test_bad_config_is_one_line(python: str, rpms: dict[str, Path], tmp_path: Path) -> None:
    run = rpmlint(python, tmp_path, rpms["clean"], config='[SFrame]\nprofile = "nope"\n')
    assert run.rc == 2
    assert "Traceback" not in run.err
    assert "(none): E: [SFrame] profile 'nope' unknown (one of strict, " in run.err, run.err


def test_with_rpmlints_own_checks(python: str, rpms: dict[str, Path], tmp_path: Path) -> None:
    # The default check list plus SFrameCheck (from the launcher's sframe.toml): sfcheck's
    # tags sit among rpmlint's own, one run.
    run = rpmlint(python, tmp_path, rpms["broken"], only_sframe=False)
    assert ("E", "sframe-header-bad-magic", "/usr/bin/prog") in run.tags(), run.out
    assert run.tags("no-signature")  # rpmlint's own SignatureCheck ran too


def test_plain_rpmlint_with_the_shim(python: str, rpms: dict[str, Path], tmp_path: Path) -> None:
    # The plain `rpmlint` command, as a distribution would run it: the shim module in
    # rpmlint's checks folder and sframe.toml in an XDG config folder (rpmlint_shim.py).
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    where = subprocess.run([python, "-c", "import rpmlint.checks as c; print(*c.__path__)"],
                           env=env, capture_output=True, text=True, check=True).stdout.strip()
    if not (Path(where) / "SFrameCheck.py").exists():
        pytest.skip(f"the shim is not in {where} (.ci/rpmlint-env.sh installs it: python -m "
                    "sfcheck.integrations.rpmlint_shim)")
    script = shutil.which("rpmlint", path=str(Path(python).parent))
    cmd = [script] if script else [python, "-c", "from rpmlint.cli import lint; lint()"]
    xdg = tmp_path / "xdg" / "rpmlint"
    xdg.mkdir(parents=True)
    shutil.copyfile(ROOT / "sfcheck" / "integrations" / "xdg" / "rpmlint" / "sframe.toml",
                    xdg / "sframe.toml")
    env.pop("PYTEST_XDIST_TESTRUNUID", None)
    env.pop("CONFIG_DISABLE_AUTOLOADING", None)
    env.update(XDG_CONFIG_HOME=str(tmp_path / "home"), XDG_CONFIG_DIRS=str(xdg.parent))
    run = Run(subprocess.run([*cmd, "--checks", "SFrameCheck", str(rpms["broken"])], env=env,
                             capture_output=True, text=True, cwd=tmp_path, timeout=300))
    assert run.tags() == BROKEN, run.out + run.err


def test_sfcheck_failure_is_a_tag_not_a_fatal_error(python: str, rpms: dict[str, Path],
                                                    tmp_path: Path) -> None:
    # A bug in sfcheck (here: check_elf raising) is reported per file and the run goes on;
    # unhandled, rpmlint would end with "fatal error while reading" and status 3.
    code = ("import sys; from sfcheck.integrations import rpmlint_run as r; r.install(); "
            "from sfcheck.integrations import rpmlint_check as c\n"
            "def boom(*a, **k): raise ZeroDivisionError('injected')\n"
            "c.check_elf = boom; sys.argv[0] = 'rpmlint'; from rpmlint.cli import lint; lint()")
    env = {k: v for k, v in os.environ.items()
           if k not in ("PYTEST_XDIST_TESTRUNUID", "CONFIG_DISABLE_AUTOLOADING")}
    env.update(XDG_CONFIG_HOME=str(tmp_path / "home"), PYTHONPATH=str(ROOT))
    run = Run(subprocess.run([python, "-c", code, "--checks", "SFrameCheck", str(rpms["broken"])],
                             env=env, capture_output=True, text=True, cwd=tmp_path, timeout=300))
    assert run.tags() == [("E", "sframe-check-failed", p) for p in
                          ("/usr/bin/pie", "/usr/bin/prog", "/usr/lib64/libcut.so")], run.out
    (one,) = [i for i in run.issues if i["details"].startswith("/usr/bin/pie ")]
    assert one["details"] == "/usr/bin/pie ZeroDivisionError: injected"
    assert "Traceback" not in run.err and run.rc == 64
