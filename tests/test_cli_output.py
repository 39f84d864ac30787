"""What users see: the display threshold, ordering, colour, hostile names, report writing
failures, signals, closed pipes and the last-resort handler (sfcheck.cli, sfcheck.report)."""

from __future__ import annotations

import errno
import io
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path
from urllib.parse import unquote_to_bytes

import pytest
from junitparser import JUnitXml

from sfcheck import report as report_pkg
from sfcheck.cli import EXIT_INTERNAL, main
from sfcheck.cli.output import use_colour
from sfcheck.elf.loader import load_elf
from sfcheck.report.escape import escape
from sfcheck.result import Severity

from archives import BAD, EXE_V2, LIB_V3, ar_bytes, deb_bytes, tar_bytes
from helpers import CORPUS, ROOT

LINE = re.compile(r"^\S.*: (error|warning|info): \[[a-z0-9-]+\] .+$")
SEVERITY = re.compile(r": (error|warning|info): \[")


def no_sframe_elf() -> Path:
    """A system ELF file without SFrame (what most of a distro is today)."""
    true = shutil.which("true")
    if true is None:
        pytest.skip("no `true` binary")
    path = Path(os.path.realpath(true))
    if load_elf(path).sections:
        pytest.skip(f"{path} has SFrame data")
    return path


def severities(out: str) -> list[str]:
    return [m.group(1) for line in out.splitlines() if (m := SEVERITY.search(line))]


def test_single_file_shows_everything_sorted(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["check", "-j", "1", str(EXE_V2)]) == 0
    out = capsys.readouterr().out
    sev = severities(out)
    assert "info" in sev and "warning" in sev  # one file: the lint use lists infos too
    rank = {"error": 2, "warning": 1, "info": 0}
    assert [rank[s] for s in sev] == sorted((rank[s] for s in sev), reverse=True)
    assert "sfcheck summary" not in out


def test_single_file_show_threshold_hint(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["check", "-j", "1", "--show", "warning", str(EXE_V2)]) == 0
    out = capsys.readouterr().out
    assert set(severities(out)) == {"warning"}
    (hint,) = [line for line in out.splitlines() if line.startswith("sfcheck: ")]
    assert re.fullmatch(r"sfcheck: \d+ findings? below --show warning not listed; "
                        r"-I lists them", hint)


def test_scan_default_hides_info_and_no_sframe_files(tmp_path: Path,
                                                     capsys: pytest.CaptureFixture[str]) -> None:
    shutil.copy(EXE_V2, tmp_path / "exe")
    shutil.copy(no_sframe_elf(), tmp_path / "plain")
    assert main(["check", "-j", "1", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "info" not in severities(out)
    assert f"{tmp_path}/plain" not in out  # nothing to show: no line at all
    assert re.search(r"without SFrame\s+1\b", out)
    assert re.search(r"\(\d+ below --show warning not listed; -I lists them\)", out)
    assert main(["check", "-j", "1", "-I", str(tmp_path)]) == 0
    out_i = capsys.readouterr().out
    assert "info" in severities(out_i)
    assert f"{tmp_path}/plain" not in out_i  # elf-no-sframe is counted, never listed
    assert main(["check", "-j", "1", "--require-sframe", str(tmp_path)]) == 1
    assert f"{tmp_path}/plain: error: [elf-no-sframe]" in capsys.readouterr().out


def test_scan_says_a_producer_defect_once(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["check", "-j", "1", "--format", "json", str(CORPUS / "v2")]) == 0
    doc = json.loads(capsys.readouterr().out)
    files = {f["path"] for f in doc["files"]
             if any(x["rule"] == "defect-ld-plt-got-cfa" for x in f["findings"])}
    assert len(files) > 1
    assert main(["check", "-j", "1", str(CORPUS / "v2")]) == 0
    out = capsys.readouterr().out
    assert "[defect-ld-plt-got-cfa]" not in "\n".join(x for x in out.splitlines()
                                                     if LINE.match(x))
    assert f"ld defect [defect-ld-plt-got-cfa] in {len(files)} files" in out
    assert main(["check", "-j", "1", "-I", str(CORPUS / "v2")]) == 0
    listed = [x for x in capsys.readouterr().out.splitlines()
              if "[defect-ld-plt-got-cfa]" in x and LINE.match(x)]
    assert {x.split(": warning:")[0] for x in listed} == files


def test_machine_formats_carry_info_whatever_show_says(tmp_path: Path) -> None:
    out = tmp_path / "r.json"
    assert main(["check", "-j", "1", "--show", "error", "--format", "json", "-o", str(out),
                 str(CORPUS / "v2")]) == 0
    doc = json.loads(out.read_text())
    assert any(f["severity"] == "info" for x in doc["files"] for f in x["findings"])


class _Tty(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_colour_choice(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
                       ) -> None:
    monkeypatch.delenv("NO_COLOR", raising=False)
    assert use_colour("auto", _Tty()) and not use_colour("auto", io.StringIO())
    assert use_colour("always", io.StringIO()) and not use_colour("never", _Tty())
    monkeypatch.setenv("NO_COLOR", "1")
    assert not use_colour("auto", _Tty()) and use_colour("always", _Tty())
    assert main(["check", "-j", "1", "--color", "always", str(BAD)]) == 1
    assert "\033[31merror\033[0m" in capsys.readouterr().out
    assert main(["check", "-j", "1", "--no-color", str(BAD)]) == 1
    assert "\033[" not in capsys.readouterr().out


def test_did_you_mean(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                      capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["dupm", str(EXE_V2)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "did you mean `dump`?" in err
    monkeypatch.chdir(tmp_path)
    shutil.copy(EXE_V2, tmp_path / "dupm")  # a file of that name is a file
    assert main(["-j", "1", "dupm"]) == 0
    assert "did you mean" not in capsys.readouterr().err


def test_top_level_help_promises_only_real_commands(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        main(["--help"])
    assert "fuzz" not in capsys.readouterr().out


def test_dump_takes_what_check_takes(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "d").mkdir()
    shutil.copy(EXE_V2, tmp_path / "d" / "exe")
    (tmp_path / "d" / "README").write_text("not ELF")
    (tmp_path / "p.deb").write_bytes(deb_bytes(tar_bytes([("./usr/lib/libv3.so",
                                                           LIB_V3.read_bytes())])))
    (tmp_path / "l.a").write_bytes(ar_bytes([("x.o", BAD.read_bytes())]))
    assert main(["dump", str(tmp_path / "d"), str(tmp_path / "p.deb"), str(tmp_path / "l.a")]) == 0
    out = capsys.readouterr().out
    for label in (f"{tmp_path}/d/exe", f"{tmp_path}/p.deb:./usr/lib/libv3.so",
                  f"{tmp_path}/l.a:x.o"):
        assert f"\n{label}:     file format elf64-x86-64\n" in out
    assert "README" not in out
    assert main(["dump", "--json", str(tmp_path / "p.deb")]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert [f["path"] for f in doc["files"]] == [f"{tmp_path}/p.deb:./usr/lib/libv3.so"]


def test_dump_raw_on_elf_says_drop_raw(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["dump", "--raw", str(EXE_V2)]) == 2
    assert capsys.readouterr().err == f"{EXE_V2}: error: this is an ELF file; drop --raw\n"


# --- hostile names -------------------------------------------------------------------

HOSTILE = b"lib\xff\nx: error: [forged] pwn\x1b[31m.so"


@pytest.fixture
def hostile(tmp_path: Path) -> Path:
    root = tmp_path / "tree"
    root.mkdir()
    try:
        (root / os.fsdecode(HOSTILE)).write_bytes(BAD.read_bytes())
    except OSError as exc:
        pytest.skip(f"file system refuses the name: {exc}")
    (root / "pkg.a").write_bytes(ar_bytes([("a:b.o", BAD.read_bytes())]))
    return root


def test_text_escapes_names_and_reasons(hostile: Path, tmp_path: Path,
                                        capsys: pytest.CaptureFixture[str]) -> None:
    waivers = tmp_path / "w.toml"
    waivers.write_text('[[waiver]]\nrule = "elf-no-segment"\npath = "*"\n'
                       'reason = "ok\\nfake: error: [forged] line"\n')
    assert main(["check", "-j", "1", "-I", "--waivers", str(waivers), str(hostile)]) == 1
    out = capsys.readouterr().out
    body = out[:out.index("\nsfcheck summary")].splitlines()
    assert body and all(LINE.match(x) for x in body)
    assert not any(x.startswith(("fake:", "x:")) for x in out.splitlines())
    name = f"{hostile}/lib\\xff\\x0ax: error: [forged] pwn\\x1b[31m.so"
    assert any(x.startswith(name + ": ") for x in body)
    assert "(waived: ok\\x0afake: error: [forged] line)" in out
    assert "\x1b" not in out


def test_escape_is_lossless_and_line_safe() -> None:
    from hypothesis import given
    from hypothesis import strategies as st

    def unescape(text: str) -> bytes:
        """The documented rule backwards: \\\\, \\xNN (< 80: ASCII, >= 80: a raw byte), \\uNNNN."""
        out, i = bytearray(), 0
        while i < len(text):
            if text.startswith("\\\\", i):
                out += b"\\"
                i += 2
            elif text.startswith("\\x", i):
                out.append(int(text[i + 2:i + 4], 16))
                i += 4
            elif text.startswith("\\u", i):
                out += os.fsencode(chr(int(text[i + 2:i + 6], 16)))
                i += 6
            else:
                out += os.fsencode(text[i])
                i += 1
        return bytes(out)

    @given(st.binary(max_size=40))
    def check(raw: bytes) -> None:
        name = os.fsdecode(raw)
        text = escape(name)
        assert not any(ord(c) < 0x20 or 0x7f <= ord(c) <= 0x9f for c in text)
        assert unescape(text) == raw

    check()


def test_machine_formats_keep_names_losslessly(hostile: Path, tmp_path: Path) -> None:
    reports = {}
    for fmt in ("json", "sarif", "junit"):
        out = tmp_path / f"r.{fmt}"
        assert main(["check", "-j", "1", "--format", fmt, "-o", str(out), str(hostile)]) == 1
        reports[fmt] = out
    doc = json.loads(reports["json"].read_text())
    raw = {os.fsencode(f["path"]) for f in doc["files"]}
    assert os.fsencode(hostile) + b"/" + HOSTILE in raw
    member = next(f for f in doc["files"] if f["member"] == "a:b.o")
    assert member["package"] == f"{hostile}/pkg.a"
    sarif = json.loads(reports["sarif"].read_text())["runs"][0]
    uris = [unquote_to_bytes(a["location"]["uri"]) for a in sarif["artifacts"]]
    assert any(u.endswith(b"/" + HOSTILE) for u in uris)
    (inner,) = [a for a in sarif["artifacts"] if "parentIndex" in a]  # a:b.o not split on ':'
    assert unquote_to_bytes(inner["location"]["uri"]) == b"a:b.o"
    assert sarif["artifacts"][inner["parentIndex"]]["location"]["uri"].endswith("/pkg.a")
    suites = [s.name for s in JUnitXml.fromfile(str(reports["junit"]))]
    assert escape(os.fsdecode(os.fsencode(hostile) + b"/" + HOSTILE)) in suites


# --- writing the report --------------------------------------------------------------

def test_disk_full_is_one_line_exit_2(capsys: pytest.CaptureFixture[str]) -> None:
    if not os.path.exists("/dev/full"):
        pytest.skip("no /dev/full")
    for fmt in ("text", "json", "sarif", "junit"):
        assert main(["check", "-j", "1", "--format", fmt, "-o", "/dev/full", str(BAD)]) == 2
        err = capsys.readouterr().err
        assert err == "sfcheck: error: cannot write /dev/full: No space left on device\n"
    with open("/dev/full", "w") as full:  # `sfcheck FILE > /dev/full`: stdout itself fails
        proc = subprocess.run([sys.executable, "-m", "sfcheck", "-j", "1", str(BAD)], cwd=ROOT,
                              stdout=full, stderr=subprocess.PIPE, timeout=60)
    assert proc.returncode == 2
    assert proc.stderr == (b"sfcheck: error: cannot write the report to stdout: "
                           b"No space left on device\n")


def test_failed_write_leaves_the_old_report(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                            capsys: pytest.CaptureFixture[str]) -> None:
    target = tmp_path / "report.json"
    target.write_text("previous report\n")

    def half(fmt: str, result: object, out: io.TextIOBase, opts: object) -> None:
        out.write('{"half": ')
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(report_pkg, "render", half)
    assert main(["check", "-j", "1", "--format", "json", "-o", str(target), str(BAD)]) == 2
    assert target.read_text() == "previous report\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["report.json"]  # no temp file left
    assert capsys.readouterr().err.count("\n") == 1
    monkeypatch.undo()
    assert main(["check", "-j", "1", "--format", "json", "-o", str(target), str(BAD)]) == 1
    assert json.loads(target.read_text())["exit_status"] == 1


def _run(*args: str, **kw: object) -> subprocess.Popen[bytes]:
    return subprocess.Popen([sys.executable, "-m", "sfcheck", *args], cwd=ROOT,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, **kw)


def test_closed_pipe_keeps_the_findings_status() -> None:
    # `sfcheck --fail-on warning DIR | head -1`: the reader is gone before the report.
    proc = _run("-j", "1", "-I", "--fail-on", "warning", str(CORPUS / "v2"))
    assert proc.stdout is not None
    proc.stdout.close()
    _, err = proc.communicate(timeout=120)
    assert proc.returncode == 1 and err == b""


def test_interrupt_and_bug_are_one_line(monkeypatch: pytest.MonkeyPatch,
                                        capsys: pytest.CaptureFixture[str]) -> None:
    import sfcheck.scan

    def interrupted(*_: object) -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr(sfcheck.scan, "scan", interrupted)
    assert main(["check", str(BAD)]) == 130
    assert capsys.readouterr().err == "sfcheck: interrupted\n"

    def bug(*_: object) -> None:
        raise RuntimeError("boom\nsecond line")

    monkeypatch.setattr(sfcheck.scan, "scan", bug)
    assert main(["check", str(BAD)]) == EXIT_INTERNAL not in (0, 1, 2)
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "internal error" in err and "RuntimeError: boom" in err
    assert str(BAD) in err

    def bug_in_member(*_: object) -> None:
        exc = RuntimeError("boom")
        exc.add_note("input: pkg.deb:./usr/lib/libx.so")  # how a reading layer names it
        raise exc

    monkeypatch.setattr(sfcheck.scan, "scan", bug_in_member)
    assert main(["check", str(BAD)]) == EXIT_INTERNAL
    assert "input pkg.deb:./usr/lib/libx.so]" in capsys.readouterr().err


def test_sigint_ends_in_one_line(tmp_path: Path) -> None:
    import signal

    # The path list comes from a FIFO: opening it for writing returns only once sfcheck has
    # opened it for reading, i.e. is inside main, past start-up; it then blocks reading the
    # list, which never comes, so the signal always finds it running. No sleep, no timing.
    fifo = tmp_path / "list"
    os.mkfifo(fifo)
    proc = _run("--from-file", str(fifo))
    with open(fifo, "wb"):
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=300)
    assert proc.returncode == 130 and err == b"sfcheck: interrupted\n"


def test_last_resort_never_reached_on_corpus_and_regressions(
        capsys: pytest.CaptureFixture[str]) -> None:
    runs = [["check", "-j", "1", "-q", str(CORPUS)], ["dump", str(CORPUS / "v3")]]
    regressions = ROOT / "corpus" / "regressions"
    runs += [["check", "-j", "1", "--raw", str(p)]
             for p in sorted(regressions.glob("*/*.bin")) if p.parent.name != "elf"]
    runs += [["check", "-j", "1", str(p)] for p in sorted(regressions.glob("elf/*.bin"))]
    runs += [["dump", "--raw", str(p)] for p in sorted(regressions.glob("section/*.bin"))]
    assert len(runs) > 2
    for argv in runs:
        status = main(argv)
        assert status in (0, 1, 2), argv
        assert "internal error" not in capsys.readouterr().err, argv


def test_show_default_is_a_severity() -> None:
    assert report_pkg.ReportOptions().show is Severity.INFO
    assert set(report_pkg.RENDERERS) == {"text", "json", "sarif", "junit", "github", "gitlab"}


# --- completion (from the parser; the man page: test_manpage.py) -----------------------

def _complete(line: str, tmp_path: Path) -> list[str]:
    pytest.importorskip("argcomplete", reason="pip install argcomplete (completion extra)")
    out = tmp_path / "candidates"
    env = {**os.environ, "_ARGCOMPLETE": "1", "_ARGCOMPLETE_IFS": "\n", "COMP_LINE": line,
           "COMP_POINT": str(len(line)), "COMP_TYPE": "9",
           "_ARGCOMPLETE_STDOUT_FILENAME": str(out)}
    proc = subprocess.run([sys.executable, "-m", "sfcheck"], cwd=ROOT, env=env,
                          capture_output=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    return [c.strip() for c in out.read_text().split("\n") if c.strip()]


def test_shell_completion(tmp_path: Path) -> None:
    assert _complete("sfcheck prof", tmp_path) == ["profiles"]
    assert _complete("sfcheck pro", tmp_path) == ["profiles", "proc"]
    assert _complete("sfcheck check --fo", tmp_path) == ["--format"]
    assert set(_complete("sfcheck check --show ", tmp_path)) == {"error", "warning", "info"}


def test_a_normal_run_never_imports_the_completion_library() -> None:
    code = ("import sys\nfrom sfcheck.cli import main\nmain(['rules'])\n"
            "print('argcomplete' in sys.modules, 'build_manpages' in sys.modules)")
    proc = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True,
                          text=True, timeout=60)
    assert proc.stdout.splitlines()[-1] == "False False"


def test_dump_escapes_names(hostile: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["dump", str(hostile)]) == 0
    out = capsys.readouterr().out
    assert f"\n{hostile}/lib\\xff\\x0ax: error: [forged] pwn\\x1b[31m.so:     file format" in out
    assert "\x1b" not in out and not any(x.startswith("x: error") for x in out.splitlines())


# Bidirectional controls and line/paragraph separators: printable to Python, but they
# reorder or break what the terminal shows ("Trojan Source"): escaped like controls.
BIDI = "\u200e\u200f\u2028\u2029\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069"


def test_escape_bidi_controls_and_separators() -> None:
    from hypothesis import given
    from hypothesis import strategies as st

    assert escape("a\u202eb\u2028c") == "a\\u202eb\\u2028c"
    assert escape(BIDI) == "".join(f"\\u{ord(c):04x}" for c in BIDI)
    assert escape("caf\u00e9 \u202f\u2030") == "caf\u00e9 \u202f\u2030"  # neighbours kept
    # Any character UTF-8 can encode (no surrogates); hypothesis before 6.73 (Debian 12's
    # 6.67) has no characters(codec=...).
    encodable = st.characters().filter(lambda c: not 0xD800 <= ord(c) <= 0xDFFF)

    @given(st.text(alphabet=encodable | st.sampled_from(BIDI)))
    def check(text: str) -> None:
        assert not set(escape(text)) & set(BIDI)

    check()


def test_check_report_escapes_bidi_in_names(tmp_path: Path,
                                            capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "lib\u202ecod.exe\u2028x: error: [forged].so"
    path.write_bytes(BAD.read_bytes())
    assert main(["check", "-j", "1", str(path)]) == 1
    out = capsys.readouterr().out
    assert not set(out) & set(BIDI)
    assert f"{tmp_path}/lib\\u202ecod.exe\\u2028x: error: [forged].so: " in out


def test_dump_escapes_section_names(tmp_path: Path,
                                    capsys: pytest.CaptureFixture[str]) -> None:
    """A section name comes from the file: `Contents of the SFrame section NAME:` must not
    carry its newline, ESC or bidi override."""
    from elfbuild import SHT_GNU_SFRAME, Elf, Sec

    data = load_elf(LIB_V3).sections[0].data
    name = ".sframe\n\x1b[31m\u202eevil"
    path = tmp_path / "named.so"
    path.write_bytes(Elf(sections=[Sec(name, SHT_GNU_SFRAME, data, flags=2)]).build())
    assert main(["dump", str(path)]) == 0
    out = capsys.readouterr().out
    assert "Contents of the SFrame section .sframe\\x0a\\x1b[31m\\u202eevil:\n" in out
    assert "\x1b" not in out and not set(out) & set(BIDI)
