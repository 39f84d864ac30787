"""sfcheck survey: the per-package engine, the repositories it reads, the report data."""

from __future__ import annotations

import gc
import glob
import gzip
import os
import shutil
import struct
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sfcheck.checker import (
    Options,
    Walked,
    check_elf,
    check_elf_consumers,
    consumer_options,
)
from sfcheck.effects import TAKES, verdict
from sfcheck.elf.loader import load_elf
from sfcheck.profiles import PROFILES
from sfcheck.report.json_report import _file
from sfcheck.survey import demo, work
from sfcheck.survey.data import report_data
from sfcheck.survey.db import SurveyDB
from sfcheck.survey.debrepo import Pkg, write_repo
from sfcheck.survey.elffacts import elf_facts
from sfcheck.survey.repo import RepoError, packages
from sfcheck.survey.run import run_survey
from sfcheck.survey.work import CONSUMERS, file_record, survey_package

from helpers import CORPUS

LINKED = sorted(p for p in glob.glob(str(CORPUS / "*" / "*")) + glob.glob(
    str(CORPUS / "*" / "v*" / "*"))
    if Path(p).is_file() and not p.endswith(".o") and Path(p).read_bytes()[:4] == b"\x7fELF")


@pytest.mark.parametrize("path", LINKED, ids=lambda p: os.path.relpath(p, CORPUS))
def test_profile_verdicts_equal_full_runs(path: str) -> None:
    """The shared strict run + consumer-rules-only runs give each profile the verdict a
    full check under that profile gives."""
    data = Path(path).read_bytes()
    rec = file_record("f", data)
    if not rec["sframe"]:
        assert rec["refused_by"] == []
        return
    full = [p for p in CONSUMERS
            if verdict(check_elf(data, path="f", options=Options(profile=p)))[0] != TAKES]
    assert rec["refused_by"] == full


def _consumer_runs_agree(data: bytes) -> None:
    """check_elf_consumers gives each profile what its own consumer-rules-only run gives,
    walking the file itself or taking the strict check's load and walk."""
    profiles = [PROFILES[p] for p in CONSUMERS]
    walked: list[Walked] = []
    check_elf(data, path="f", walked=walked)
    assert len(walked) <= 1
    alone = check_elf_consumers(data, profiles, "f")
    after_strict = check_elf_consumers(data, profiles, "f", walked[0] if walked else None)
    for p, got, got2 in zip(profiles, alone, after_strict, strict=True):
        want = check_elf(data, path="f", options=consumer_options(p))
        assert (got.error, _file(got, p.name)) == (want.error, _file(want, p.name)), p.name
        assert (got2.error, _file(got2, p.name)) == (want.error, _file(want, p.name)), p.name


ALL_ELF = LINKED + sorted(p for p in glob.glob(str(CORPUS / "*" / "*.o")))


@pytest.mark.parametrize("path", ALL_ELF, ids=lambda p: os.path.relpath(p, CORPUS))
def test_shared_consumer_runs_equal_separate_runs(path: str) -> None:
    _consumer_runs_agree(Path(path).read_bytes())


def _sframe_span(image: bytes) -> tuple[int, int]:
    sec = load_elf(image, name="f").sections[0]
    off = image.find(sec.data)
    return off, off + len(sec.data)


def _no_section_headers(image: bytes) -> bytes:
    """The SFrame bytes found through PT_GNU_SFRAME only (a segment some readers never read)."""
    raw = bytearray(image)
    struct.pack_into("<Q", raw, 0x28, 0)  # e_shoff
    struct.pack_into("<HH", raw, 0x3C, 0, 0)  # e_shnum, e_shstrndx
    return bytes(raw)


def _duplicate_start(image: bytes) -> bytes:
    """FDE 1 of a v3 section starting where FDE 0 does (its PC-relative field is 16 bytes on)."""
    raw = bytearray(image)
    off, _ = _sframe_span(image)
    fde0 = off + 28 + raw[off + 7] + struct.unpack_from("<I", raw, off + 20)[0]
    struct.pack_into("<q", raw, fde0 + 16, struct.unpack_from("<q", raw, fde0)[0] - 16)
    return bytes(raw)


@pytest.mark.parametrize("make,profile,rule", [
    (_no_section_headers, "llvm-22", "header-version-unsupported"),  # an error made a warning
    (_duplicate_start, "kernel-v13", "fde-start-duplicate"),  # reads the walk's ranges
])
def test_shared_consumer_runs_on_segments_and_ranges(make, profile: str, rule: str) -> None:
    data = make((CORPUS / "v3" / "exe_pie").read_bytes())
    alone = check_elf(data, path="f", options=consumer_options(PROFILES[profile]))
    assert rule in {f.rule for f in alone.findings}
    _consumer_runs_agree(data)


@pytest.mark.parametrize("name", ["v1/libcorpus.so", "v3/libcorpus.so", "v2/exe_pie"])
@given(st.data())
@settings(max_examples=40, deadline=None, suppress_health_check=list(HealthCheck))
def test_shared_consumer_runs_equal_separate_runs_on_damaged_sections(name: str,
                                                                       data: st.DataObject
                                                                       ) -> None:
    raw = bytearray((CORPUS / name).read_bytes())
    lo, hi = _sframe_span(bytes(raw))
    for _ in range(data.draw(st.integers(1, 6))):
        at = data.draw(st.integers(lo, hi - 1))
        raw[at] = data.draw(st.one_of(st.integers(0, 255), st.just(raw[at] ^ 0x80)))
    _consumer_runs_agree(bytes(raw))


def test_file_record_figures() -> None:
    rec = file_record("lib", (CORPUS / "v3/libcorpus.so").read_bytes())
    assert rec["sframe"] and rec["version"] == 3
    assert rec["flags"] == "FDE_SORTED|FDE_FUNC_START_PCREL"
    assert rec["fdes"] == 18
    assert 0 < rec["text_bytes_covered"] < rec["text_bytes"]
    strict = check_elf(CORPUS / "v3/libcorpus.so")
    assert rec["sframe_bytes"] == strict.sections[0].size
    assert rec["eh_frame_bytes"] > 0 and rec["producer"].startswith("GCC: ")
    # The program-header total (files without SFrame) is the coverage rule's total.
    assert elf_facts((CORPUS / "v3/libcorpus.so").read_bytes()).text_bytes == rec["text_bytes"]
    assert elf_facts((CORPUS / "v3/lib.o").read_bytes()).text_bytes == 0  # no segments
    assert Counter({(r, s): n for r, s, n in rec["findings"]}) == Counter(
        (f.rule, str(f.severity)) for f in strict.findings)


def test_file_record_pauses_the_collector_and_restores_it(monkeypatch) -> None:
    """The cyclic collector is off while a file is checked (its collections cost ~5 % of a
    survey and freed nothing), back on after, and a file's leftover cycles are freed by
    the next collection: nothing builds up across files."""
    seen = []
    real = work.check_elf

    def spy(*args, **kw):
        seen.append(gc.isenabled())
        return real(*args, **kw)

    monkeypatch.setattr(work, "check_elf", spy)
    data = (CORPUS / "v3/libcorpus.so").read_bytes()
    assert gc.isenabled()
    first = file_record("lib", data)
    assert seen and not any(seen) and gc.isenabled()
    gc.disable()  # a caller's setting is kept
    try:
        assert file_record("lib", data) == first
        assert not gc.isenabled()
    finally:
        gc.enable()
    gc.collect()
    before = len(gc.get_objects())
    for _ in range(20):
        file_record("lib", data)
    gc.collect()
    assert len(gc.get_objects()) - before < 50


def test_coverage_matches_the_rule_message() -> None:
    """The recorded uncovered bytes are the elf-text-coverage finding's."""
    path = CORPUS / "v2/libcorpus.so"
    rec = file_record("lib", path.read_bytes())
    msg = next(f.message for f in check_elf(path).findings if f.rule == "elf-text-coverage")
    missing = int(msg.split("): ")[1].split(" of ")[0])
    assert rec["text_bytes"] - rec["text_bytes_covered"] == missing


@pytest.fixture(scope="module")
def demo_repos(tmp_path_factory: pytest.TempPathFactory) -> tuple[str, str]:
    if shutil.which("objcopy") is None:
        pytest.skip("objcopy (binutils) is not installed: the demo strips .sframe with it")
    return demo.build(str(tmp_path_factory.mktemp("demo")), CORPUS)


def test_demo_survey_rerun_and_diff(demo_repos: tuple[str, str], tmp_path: Path) -> None:
    v1, v2 = demo_repos
    db = SurveyDB(str(tmp_path / "s.db"))
    first = run_survey([v1], db, label="one", jobs=2)
    assert (first.packages, first.checked, first.reused) == (6, 6, 0)
    again = run_survey([v1], db, label="one-again")
    assert (again.checked, again.reused) == (0, 6)  # nothing checked again
    second = run_survey([v2], db, label="two")
    # Only what changed (3 rebuilt, 1 new) is checked; the rest is reused.
    assert (second.checked, second.reused) == (4, 2)
    db.close()
    data = report_data(str(tmp_path / "s.db"), "two", "one")
    d = data["diff"]
    assert d["changed_packages"] == sorted(demo.CHANGED)
    assert d["lost_sframe"] == ["corpus-tools/amd64"]
    assert d["added_packages"] == ["new-lib/amd64"]
    assert d["removed_packages"] == ["old-lib/amd64"]
    assert [c["package"] for c in d["coverage_drops"]] == ["libcorpus1/amd64"]
    pkgs = {p["name"]: p for p in data["packages"]}
    assert pkgs["corpus-doc"]["elf_files"] == 0
    assert pkgs["plain-tool"]["profiles"] == {p: "no-sframe" for p in CONSUMERS}
    assert pkgs["libcorpus1"]["source"] == "corpus" and pkgs["libcorpus1"]["version"] == "1.0-2"
    t = data["totals"]
    assert t["packages"] == 6 and t["elf_files"] == sum(p["elf_files"] for p in pkgs.values())
    assert sum(b["files"] for b in data["coverage_histogram"]) == t["elf_files_with_sframe"]
    assert same_data(report_data(str(tmp_path / "s.db"), "one-again"),
                     report_data(str(tmp_path / "s.db"), "one"))


def same_data(a: dict, b: dict) -> bool:
    drop = ("generated", "snapshot", "previous", "diff")
    return {k: v for k, v in a.items() if k not in drop} == \
        {k: v for k, v in b.items() if k not in drop}


def test_suites_stay_apart(tmp_path: Path) -> None:
    elf = (CORPUS / "v3/libcorpus.so").read_bytes()
    same = Pkg("libx", "1", {"usr/lib/libx.so": elf})
    write_repo(str(tmp_path / "r"), {"stable": [same],
                                      "testing": [same, Pkg("liby", "2", {"y": elf + b"y"})]})
    refs = list(packages(str(tmp_path / "r")))
    assert sorted((r.suite, r.name) for r in refs) == [
        ("stable", "libx"), ("testing", "libx"), ("testing", "liby")]
    db = SurveyDB(str(tmp_path / "s.db"))
    s = run_survey([str(tmp_path / "r")], db)
    assert s.checked == 2  # libx's bytes once, linked from both suites
    db.close()
    data = report_data(str(tmp_path / "s.db"))
    assert sorted((p["suite"], p["name"]) for p in data["packages"]) == [
        ("stable", "libx"), ("testing", "libx"), ("testing", "liby")]
    assert len({p["id"] for p in data["packages"]}) == 3


def _index(root: Path, text: bytes, name: str = "Packages") -> str:
    d = root / "dists" / "stable" / "main" / "binary-amd64"
    d.mkdir(parents=True)
    (d / name).write_bytes(text)
    return str(root)


@pytest.mark.parametrize("text,name,expect", [
    (b"Package: a\nVersion: 1\n", "Packages", "has no Filename field"),
    (b"Package: a\nFilename: ../../etc/passwd\n", "Packages", "outside the repository"),
    (b"Package: a\nFilename: /etc/passwd\n", "Packages", "outside the repository"),
    (b"garbage without colon\n", "Packages", "not a 'Field: value' line"),
    (b" continuation\n", "Packages", "continuation line before any field"),
    (b"Package: a\nFilename: p.deb\nSHA256: zz\n", "Packages", "bad SHA256"),
    (b"not gzip at all", "Packages.gz", "cannot read index"),
])
def test_hostile_index_is_one_line_error(tmp_path: Path, text: bytes, name: str,
                                         expect: str) -> None:
    repo = _index(tmp_path / "r", text, name)
    with pytest.raises(RepoError, match=expect):
        list(packages(repo))
    cli = subprocess.run([sys.executable, "-m", "sfcheck", "survey", "--db",
                          str(tmp_path / "s.db"), repo], capture_output=True, text=True)
    assert cli.returncode == 2
    assert cli.stderr.count("\n") == 1 and expect in cli.stderr, cli.stderr


def test_symlink_out_of_the_repository_is_refused(tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "x.deb").write_bytes(b"!<arch>\n")
    repo = _index(tmp_path / "r", b"Package: a\nFilename: pool/x.deb\n")
    (tmp_path / "r" / "pool").symlink_to(outside)
    with pytest.raises(RepoError, match="resolves outside"):
        list(packages(repo))


def test_gz_index_and_digest_mismatch(tmp_path: Path) -> None:
    root = tmp_path / "r"
    (root / "pool").mkdir(parents=True)
    (root / "pool" / "a.deb").write_bytes(b"!<arch>\n")
    repo = _index(root, gzip.compress(b"Package: a\nFilename: pool/a.deb\nSHA256: "
                                      + b"0" * 64 + b"\n"), "Packages.gz")
    ref, = packages(repo)
    rec = survey_package(ref.abspath, ref.digest)
    assert "does not match the index" in rec["error"] and rec["files"] == []


def test_rpm_repository_survey(tmp_path: Path) -> None:
    """A real .rpm (rpmbuild) in a repodata repository: metadata from primary.xml, the
    ELF file inside checked."""
    import hashlib

    from archives import LIB_V3, rpmbuild

    built = rpmbuild(tmp_path / "build", {"usr/lib64/libcorpus.so.1": LIB_V3}, name="libc1")
    root = tmp_path / "r"
    (root / "repodata").mkdir(parents=True)
    (root / "Packages").mkdir()
    shutil.copy(built, root / "Packages" / built.name)
    digest = hashlib.sha256(built.read_bytes()).hexdigest()
    primary = (
        '<?xml version="1.0"?><metadata xmlns="http://linux.duke.edu/metadata/common" '
        'xmlns:rpm="http://linux.duke.edu/metadata/rpm" packages="1"><package type="rpm">'
        '<name>libc1</name><arch>x86_64</arch><version epoch="0" ver="1.0" rel="1"/>'
        f'<checksum type="sha256" pkgid="YES">{digest}</checksum>'
        f'<location href="Packages/{built.name}"/><format>'
        '<rpm:sourcerpm>libc1-1.0-1.src.rpm</rpm:sourcerpm></format></package></metadata>')
    (root / "repodata" / "primary.xml").write_text(primary)
    (root / "repodata" / "repomd.xml").write_text(
        '<?xml version="1.0"?><repomd xmlns="http://linux.duke.edu/metadata/repo">'
        '<data type="primary"><location href="repodata/primary.xml"/></data></repomd>')
    db = SurveyDB(str(tmp_path / "s.db"))
    run_survey([str(root)], db)
    db.close()
    p, = report_data(str(tmp_path / "s.db"))["packages"]
    assert (p["name"], p["version"], p["source"], p["architecture"]) == (
        "libc1", "1.0-1", "libc1", "x86_64")
    f, = p["files"]
    assert f["path"].endswith("usr/lib64/libcorpus.so.1") and f["version"] == 3


def test_rpm_repository_metadata(tmp_path: Path) -> None:
    root = tmp_path / "r"
    (root / "repodata").mkdir(parents=True)
    (root / "Packages").mkdir()
    (root / "Packages" / "foo-1.0-2.x86_64.rpm").write_bytes(
        (CORPUS / "v3/libcorpus.so").read_bytes())
    primary = (
        '<?xml version="1.0"?><metadata xmlns="http://linux.duke.edu/metadata/common" '
        'xmlns:rpm="http://linux.duke.edu/metadata/rpm" packages="1"><package type="rpm">'
        '<name>foo</name><arch>x86_64</arch><version epoch="1" ver="1.0" rel="2"/>'
        '<location href="Packages/foo-1.0-2.x86_64.rpm"/><format>'
        '<rpm:sourcerpm>foo-src-1.0-2.src.rpm</rpm:sourcerpm></format></package></metadata>')
    (root / "repodata" / "primary.xml.gz").write_bytes(gzip.compress(primary.encode()))
    (root / "repodata" / "repomd.xml").write_text(
        '<?xml version="1.0"?><repomd xmlns="http://linux.duke.edu/metadata/repo">'
        '<data type="primary"><location href="repodata/primary.xml.gz"/></data></repomd>')
    ref, = packages(str(root))
    assert (ref.name, ref.version, ref.source, ref.architecture) == (
        "foo", "1:1.0-2", "foo-src", "x86_64")
    (root / "repodata" / "repomd.xml").write_text(
        '<!DOCTYPE x [<!ENTITY a "aaaa">]><repomd>&a;</repomd>')
    with pytest.raises(RepoError, match="DTD"):
        list(packages(str(root)))


def test_directory_of_packages(demo_repos: tuple[str, str], tmp_path: Path) -> None:
    """A directory of .debs: names from the file names, the same files as through the
    index."""
    pool = os.path.join(demo_repos[0], "pool")
    refs = sorted(packages(pool), key=lambda r: r.name)
    assert [r.name for r in refs][:2] == ["corpus-doc", "corpus-tools"]
    assert refs[1].version == "1.0-1" and refs[1].architecture == "amd64"
    db = SurveyDB(str(tmp_path / "s.db"))
    run_survey([pool], db, label="dir")
    run_survey([demo_repos[0]], db, label="index")
    db.close()
    by_dir = {p["name"]: p["files"] for p in report_data(str(tmp_path / "s.db"), "dir")["packages"]}
    by_index = {p["name"]: p["files"]
                for p in report_data(str(tmp_path / "s.db"), "index")["packages"]}
    assert by_dir == by_index


def test_cli_queries(demo_repos: tuple[str, str], tmp_path: Path) -> None:
    db = str(tmp_path / "s.db")

    def sf(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, "-m", "sfcheck", "survey", "--db", db, *args],
                              capture_output=True, text=True)

    assert sf("--label", "one", "-j", "1", demo_repos[0]).returncode == 0
    r = sf("--label", "two", demo_repos[1])
    assert r.returncode == 0 and "4 checked, 2 already" in r.stdout
    top = sf("top-rules").stdout.splitlines()
    assert top[0].split() == ["rule", "severity", "findings", "files", "packages"]
    assert sf("coverage", "--by", "source").stdout.splitlines()[1].startswith("corpus ")
    assert "(all)" in sf("size").stdout
    diff = sf("diff", "one", "two").stdout
    assert {line.split()[1] for line in diff.splitlines() if line.startswith("changed")} \
        == set(demo.CHANGED)
    assert sf("diff", "one").returncode == 2
    assert sf("report").returncode == 2
    out = tmp_path / "r.json"
    assert sf("report", "--json", str(out)).returncode == 0 and out.stat().st_size > 1000
    assert all(p in PROFILES for p in CONSUMERS)


def test_profile_subset(demo_repos: tuple[str, str], tmp_path: Path) -> None:
    """--profile asks only those readers; such results are not reused by a survey that
    asks every profile (the rule-set key differs)."""
    path = str(tmp_path / "s.db")
    db = SurveyDB(path)
    run_survey([demo_repos[0]], db, label="k", profiles=["kernel", "glibc-2.42"])
    full = run_survey([demo_repos[0]], db, label="all")
    db.close()
    assert full.reused == 0
    k = report_data(path, "k")
    # "kernel" is the alias of kernel-v13: recorded under the profile's own name
    assert [p["profile"] for p in k["profiles"]] == ["kernel-v13", "glibc-2.42"]
    every = {p["name"]: p for p in report_data(path, "all")["packages"]}
    for p in k["packages"]:
        assert set(p["profiles"]) == {"kernel-v13", "glibc-2.42"}
        assert p["profiles"] == {n: every[p["name"]]["profiles"][n] for n in p["profiles"]}


def _pkg(name: str, coverage: float | None, errors: int = 0, sframe: int = 1) -> dict:
    rules = {"fde-x": errors} if errors else {}
    files = [{"findings": [{"rule": "fde-x", "severity": "error", "count": errors}]
              if errors else []}]
    return {"name": name, "architecture": "amd64", "suite": "s", "coverage": coverage,
            "elf_files_with_sframe": sframe, "rules": rules, "files": files,
            "findings": {"error": errors, "warning": 0, "info": 0}}


def test_diff_names_exactly_the_changed_packages() -> None:
    from sfcheck.survey.data import diff

    old = [_pkg("same", 0.5), _pkg("cov", 0.8), _pkg("err", 0.5), _pkg("lost", 0.5),
           _pkg("gone", 0.1)]
    new = [_pkg("same", 0.5), _pkg("cov", 0.7), _pkg("err", 0.5, errors=2),
           _pkg("lost", None, sframe=0), _pkg("added", 0.9)]
    d = diff(old, new, {"id": 1, "label": "old"})
    assert d["changed_packages"] == ["cov/amd64", "err/amd64", "lost/amd64"]
    assert d["coverage_drops"] == [{"package": "cov/amd64", "before": 0.8, "after": 0.7}]
    assert d["new_errors"] == [{"package": "err/amd64", "rule": "fde-x", "before": 0,
                                "after": 2}]
    assert d["lost_sframe"] == ["lost/amd64"] and d["gained_sframe"] == []
    assert (d["added_packages"], d["removed_packages"]) == (["added/amd64"], ["gone/amd64"])


def test_report_follows_the_contract(demo_repos: tuple[str, str], tmp_path: Path) -> None:
    """report --json against the contract's JSON Schema (the one the package ships), and
    the HTML page written beside it."""
    import json

    import jsonschema

    import sfcheck.survey as pkg

    schema = Path(pkg.__file__).parent / "survey-report.schema.json"
    path = str(tmp_path / "s.db")
    db = SurveyDB(path)
    run_survey([demo_repos[0]], db, label="one")
    run_survey([demo_repos[1]], db, label="two")
    db.close()
    out = tmp_path / "r.json"
    page = tmp_path / "r.html"
    args = [sys.executable, "-m", "sfcheck", "survey", "--db", path, "report", "--json", str(out),
            "-o", str(page)]
    r = subprocess.run(args, capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    data = json.loads(out.read_text())
    assert data["schema"] == "sfcheck-survey-report/1" and data["diff"]["against"]["label"] \
        == "one"
    assert page.read_text().startswith("<!DOCTYPE html>")
    jsonschema.Draft202012Validator(json.loads(schema.read_text())).validate(data)


def test_missing_package_file_is_an_error_finding(tmp_path: Path) -> None:
    root = tmp_path / "r"
    (root / "pool").mkdir(parents=True)
    repo = _index(root, b"Package: ghost\nVersion: 1\nArchitecture: amd64\n"
                        b"Filename: pool/ghost.deb\n")
    db = SurveyDB(str(tmp_path / "s.db"))
    first = run_survey([repo], db)
    again = run_survey([repo], db)
    db.close()
    assert (first.checked, again.checked) == (1, 1)  # an unreadable file is never reused
    ghost, = report_data(str(tmp_path / "s.db"))["packages"]
    assert ghost["findings"]["error"] == 1 and ghost["rules"] == {"input-unreadable": 1}


def test_scheduler_without_dask_is_one_line(demo_repos: tuple[str, str], tmp_path: Path,
                                            monkeypatch: pytest.MonkeyPatch,
                                            capsys: pytest.CaptureFixture[str]) -> None:
    from sfcheck.cli import main

    monkeypatch.setitem(sys.modules, "distributed", None)  # `import distributed` fails
    assert main(["survey", "--db", str(tmp_path / "s.db"), "--scheduler",
                 "tcp://127.0.0.1:1", demo_repos[0]]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "pip install 'sfcheck[survey]'" in err
    assert not (tmp_path / "s.db").exists()  # refused before anything is written


def test_archive_limits_refuse_and_key_the_result(demo_repos: tuple[str, str],
                                                  tmp_path: Path) -> None:
    """The gate's archive limits bound each worker; a package refused under small limits
    is checked again under larger ones (the limits are part of the result key)."""
    from sfcheck.inputs.limits import Limits

    path = str(tmp_path / "s.db")
    db = SurveyDB(path)
    small = run_survey([demo_repos[0]], db, label="small", limits=Limits(max_bytes=4096))
    big = run_survey([demo_repos[0]], db, label="big")
    db.close()
    assert (small.checked, big.checked, big.reused) == (6, 6, 0)
    refused = [p for p in report_data(path, "small")["packages"]
               if p["rules"].get("input-unreadable")]
    assert refused and all(p["findings"]["error"] >= 1 for p in refused)
    assert not any(p["rules"].get("input-unreadable")
                   for p in report_data(path, "big")["packages"])
