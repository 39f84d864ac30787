"""The gate on packages built the way distros build them (issue 13 item 6).

From corpus binaries: a runtime package (stripped shared library and program, docs), a
dbgsym/-debuginfo package (the `objcopy --only-keep-debug` files, a doc symlink) and a
-dev/-devel package (a static library of .o files, the .so symlink), as .deb (dpkg-deb)
and .rpm (rpmbuild). The gate runs with every profile and every format; the exact
findings per file are asserted from the JSON report, and SARIF and JUnit must carry the
same findings (info included).
"""

from __future__ import annotations

import json
import subprocess
import xml.etree.ElementTree as ET
from collections import Counter
from pathlib import Path

import pytest

from sfcheck.cli import main
from sfcheck.profiles import LISTED

from archives import dpkg_deb, need, rpmbuild
from helpers import CORPUS

V3 = CORPUS / "v3"
LIB = "usr/lib/x86_64-linux-gnu/"
FORMATS = ("text", "json", "sarif", "junit")

# What each shipped file gets: (basename) -> {(rule, severity): count}, per profile.
PLT_GOT = ("defect-ld-plt-got-cfa", "warning")  # GNU ld's .plt.got FDE (a known ld defect)
START = ("semantic-no-sframe-fde", "info")  # crt1's _start has no SFrame FDE (by design)
DEBUG = {("elf-no-sframe-data", "info"): 1}  # a separate debug file: nothing to check
COVERAGE = ("elf-text-coverage", "info")  # the text no FDE covers (PLT0, padding, _start)
LINKED = {"prog": {PLT_GOT: 1, START: 1, COVERAGE: 1}, "libcorpus.so.1": {PLT_GOT: 1, COVERAGE: 1}}
OBJECTS = ("lib.o", "lib_O0.o")
ZIG = ("elf-sframe-reloc-type", "info")  # v3 x86-64 .o: R_X86_64_PC64, which zig cannot link


def expected(profile: str) -> dict[str, dict[tuple[str, str], int]]:
    want: dict[str, dict[tuple[str, str], int]] = {"lib.debug": DEBUG, "prog.debug": DEBUG}
    for name, base in LINKED.items():
        want[name] = dict(base)
    for name in OBJECTS:
        want[name] = {ZIG: 1}
    if profile == "kernel-v13":  # the V3 walker reads registers other than SP/FP only in the
        # topmost frame: the two DRAP-style rows (CFA in r10, rbx) end deeper walks
        want["libcorpus.so.1"][("fre-reader-walk-stops", "warning")] = 2
    if profile in ("glibc-2.42", "llvm-22", "kernel-rfc-2023", "libsframe-2.40"):
        # readers of v2 (v1) only
        for name in LINKED:
            want[name][("header-version-unsupported", "error")] = 1
    if profile in ("glibc-2.42", "kernel-rfc-2023"):  # runtime readers: a .o is asked what
        # ld will make of it
        for name in OBJECTS:
            want[name] = {("object-version-unsupported", "warning"): 1, ZIG: 1}
    if profile in ("llvm-22", "libsframe-2.40"):  # dumpers read the .o itself (2.40: v1 only)
        for name in OBJECTS:
            want[name] = {("header-version-unsupported", "error"): 1, ZIG: 1}
    return want


def _run(*argv: str | Path) -> None:
    subprocess.run([str(a) for a in argv], check=True, capture_output=True)


@pytest.fixture(scope="module")
def shipped(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    tmp = tmp_path_factory.mktemp("ship")
    ar = need("ar")  # binutils: strip and objcopy live beside it
    strip, objcopy = str(Path(ar).with_name("strip")), str(Path(ar).with_name("objcopy"))
    _run(strip, "--strip-unneeded", "-o", tmp / "libcorpus.so.1", V3 / "libcorpus.so")
    _run(strip, "-o", tmp / "prog", V3 / "exe_pie")
    _run(objcopy, "--only-keep-debug", V3 / "libcorpus.so", tmp / "lib.debug")
    _run(objcopy, "--only-keep-debug", V3 / "exe_pie", tmp / "prog.debug")
    _run(ar, "rcs", tmp / "libcorpus.a", V3 / "lib.o", V3 / "lib_O0.o")
    return {p.name: p for p in tmp.iterdir()} | {"tmp": tmp}


def _debs(f: dict[str, Path]) -> list[Path]:
    tmp = f["tmp"] / "debs"
    tmp.mkdir(exist_ok=True)
    return [
        dpkg_deb(tmp, {LIB + "libcorpus.so.1": f["libcorpus.so.1"], "usr/bin/prog": f["prog"],
                       "usr/share/doc/libcorpus1/copyright": b"MIT\n"}, name="libcorpus1"),
        dpkg_deb(tmp, {"usr/lib/debug/.build-id/ab/cdef.debug": f["lib.debug"],
                       "usr/lib/debug/.build-id/12/3456.debug": f["prog.debug"]},
                 links={"usr/share/doc/libcorpus1-dbgsym": "libcorpus1"},
                 name="libcorpus1-dbgsym"),
        dpkg_deb(tmp, {LIB + "libcorpus.a": f["libcorpus.a"]},
                 links={LIB + "libcorpus.so": "libcorpus.so.1"}, name="libcorpus-dev"),
    ]


def _rpms(f: dict[str, Path]) -> list[Path]:
    tmp = f["tmp"] / "rpms"
    tmp.mkdir(exist_ok=True)
    lib = "usr/lib64/"
    return [
        rpmbuild(tmp, {lib + "libcorpus.so.1": f["libcorpus.so.1"], "usr/bin/prog": f["prog"],
                       "usr/share/licenses/libcorpus/COPYING": b"MIT\n"}, name="libcorpus"),
        rpmbuild(tmp, {"usr/lib/debug/" + lib + "libcorpus.so.1-1.0-1.x86_64.debug":
                       f["lib.debug"],
                       "usr/lib/debug/usr/bin/prog-1.0-1.x86_64.debug": f["prog.debug"]},
                 links={"usr/lib/debug/.build-id/ab/cdef.debug":
                        "../../../../" + lib + "libcorpus.so.1"},
                 name="libcorpus-debuginfo"),
        rpmbuild(tmp, {lib + "libcorpus.a": f["libcorpus.a"]},
                 links={lib + "libcorpus.so": "libcorpus.so.1"}, name="libcorpus-devel"),
    ]


@pytest.fixture(scope="module", params=["deb", "rpm"])
def packages(request: pytest.FixtureRequest, shipped: dict[str, Path]) -> list[Path]:
    return _debs(shipped) if request.param == "deb" else _rpms(shipped)


# Debug files as the .deb (build-id) and the .rpm (NAME-VERSION-RELEASE.ARCH) name them.
_DEBUG_NAMES = {"cdef.debug": "lib.debug", "3456.debug": "prog.debug",
                "libcorpus.so.1-1.0-1.x86_64.debug": "lib.debug",
                "prog-1.0-1.x86_64.debug": "prog.debug"}


def _basename(entry: dict) -> str:
    name = (entry.get("member") or entry["path"]).rsplit(":", 1)[-1].rsplit("/", 1)[-1]
    return _DEBUG_NAMES.get(name, name)


@pytest.mark.parametrize("profile", [p.name for p in LISTED])  # aliases once
def test_gate_on_packages(packages: list[Path], profile: str, tmp_path: Path) -> None:
    reports = {}
    statuses = {}
    for fmt in FORMATS:
        out = tmp_path / f"report.{fmt}"
        show = ["-I"] if fmt == "sarif" else []  # SARIF lists warnings and up by default
        statuses[fmt] = main(["check", "-j", "1", "--profile", profile, "--format", fmt,
                              *show, "-o", str(out), *map(str, packages)])
        reports[fmt] = out.read_text(encoding="utf-8")
    report = json.loads(reports["json"])
    got: dict[str, Counter] = {}
    for entry in report["files"]:
        assert entry["error"] is None, entry
        got[_basename(entry)] = Counter((f["rule"], f["severity"]) for f in entry["findings"])
    assert got == {k: Counter(v) for k, v in expected(profile).items()}
    # The two debug files are counted as such, not as files with SFrame data.
    summary = report["summary"]
    assert (summary["debug_only"], summary["with_sframe"]) == (2, len(LINKED) + len(OBJECTS))
    worst_error = any(sev == "error" for c in got.values() for (_r, sev) in c)
    assert set(statuses.values()) == {1 if worst_error else 0}
    # SARIF and JUnit carry the same findings, info included.
    all_rules = Counter(r for c in got.values() for (r, _s), n in c.items() for _ in range(n))
    sarif = json.loads(reports["sarif"])
    assert Counter(r["ruleId"] for run in sarif["runs"] for r in run["results"]) == all_rules
    junit = ET.fromstring(reports["junit"])
    text = "".join(junit.itertext())
    assert Counter({r: text.count(f"[{r}]") for r in all_rules}) == all_rules
