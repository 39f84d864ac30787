"""Scanning: same report whatever -j, inputs from trees and lists, errors and skips counted."""

from __future__ import annotations

import io
import json
import shutil
import sys
from dataclasses import asdict
from pathlib import Path

import pytest
from elftools.elf.elffile import ELFFile

from sfcheck.cli import main
from sfcheck.scan import ScanConfig, _Progress, default_jobs, progress_stream, scan

from archives import BAD, EXE_V2, LIB_V1, LIB_V3, OBJ_V3, ar_bytes, deb_bytes, tar_bytes


@pytest.fixture(scope="module")
def tree(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("scan")
    srcs = [BAD, LIB_V1, LIB_V3, EXE_V2, OBJ_V3]
    for i in range(60):  # enough for several batches per worker
        d = root / f"d{i % 7}"
        d.mkdir(exist_ok=True)
        shutil.copy(srcs[i % len(srcs)], d / f"f{i:03d}.so")
    (root / "d0" / "notes.txt").write_text("x")
    (root / "d1" / "link.so").symlink_to(root / "d0" / "f000.so")
    (root / "d2" / "pkg.deb").write_bytes(deb_bytes(tar_bytes(
        [(f"./usr/lib/m{i}.so", srcs[i % len(srcs)].read_bytes()) for i in range(20)])))
    (root / "d3" / "lib.a").write_bytes(ar_bytes([("a.o", OBJ_V3.read_bytes())]))
    (root / "d4" / "bad.tar").write_bytes(tar_bytes([("a.so", LIB_V3.read_bytes()),
                                                     ("/abs.so", LIB_V3.read_bytes())]))
    return root


def as_data(result) -> list[dict]:  # noqa: ANN001
    return [asdict(f) for f in result.files]


def test_same_result_whatever_jobs(tree: Path) -> None:
    one = scan([str(tree)], ScanConfig(jobs=1))
    two = scan([str(tree)], ScanConfig(jobs=2))
    three = scan([str(tree)], ScanConfig(jobs=3))
    assert as_data(one) == as_data(two) == as_data(three)
    assert one.skipped == two.skipped
    assert (one.skipped.non_elf, one.skipped.links) == (1, 1)
    # 60 files + 20 package members + 1 library member + 1 tar member + the tar's error
    assert len(one.files) == 83
    labels = [f.path.removeprefix(str(tree) + "/") for f in one.files]
    assert labels[:3] == ["d0/f000.so", "d0/f007.so", "d0/f014.so"]  # sorted walk
    pkg = [x for x in labels if x.startswith("d2/pkg.deb:")]
    assert pkg == [f"d2/pkg.deb:./usr/lib/m{i}.so" for i in range(20)]  # archive order
    i = labels.index("d4/bad.tar:a.so")
    assert labels[i + 1] == "d4/bad.tar" and "absolute path" in (one.files[i + 1].error or "")


def test_cli_json_identical_for_j1_and_j2(tree: Path, tmp_path: Path) -> None:
    outs = []
    for jobs in ("1", "2"):
        out = tmp_path / f"j{jobs}.json"
        assert main(["check", "-j", jobs, "--format", "json", "-o", str(out), str(tree)]) == 2
        outs.append(out.read_text())
    assert outs[0] == outs[1]


def test_explicit_inputs_errors(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    text = tmp_path / "a.txt"
    text.write_text("x")
    assert main(["check", "-j", "1", str(text), str(tmp_path / "missing")]) == 2
    out = capsys.readouterr().out
    assert f"{text}: error: not an ELF file" in out
    assert f"{tmp_path / 'missing'}: error: cannot read file: No such file or directory" in out
    # The same non-ELF file inside a tree is skipped quietly: nothing to check, status 0.
    assert main(["check", "-j", "1", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert ": error:" not in out and "skipped: not ELF" in out


def test_from_file_stdin(monkeypatch: pytest.MonkeyPatch, tmp_path: Path,
                         capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setattr(sys, "stdin", io.StringIO(f"{LIB_V3}\n{EXE_V2}\n"))
    out = tmp_path / "r.json"
    assert main(["check", "--from-file", "-", "--format", "json", "-o", str(out)]) == 0
    assert [f["path"] for f in json.loads(out.read_text())["files"]] == [str(LIB_V3), str(EXE_V2)]
    assert main(["check", "--from-file", str(tmp_path / "none")]) == 2
    assert "cannot read" in capsys.readouterr().err


def test_no_inputs_is_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["check"]) == 2
    assert "no input files" in capsys.readouterr().err


def test_help_documents_exit_codes(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        main(["check", "--help"])
    out = capsys.readouterr().out
    assert "exit status:" in out and "0  nothing" in out and "1  findings" in out \
        and "2  usage error" in out and "--waivers" in out and "-j N" in out


def test_raw_sections_still_checked(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    junk = tmp_path / "junk.sframe"
    junk.write_bytes(b"\x00" * 8)
    assert main(["check", "--raw", "-j", "1", str(junk)]) == 1
    assert "[header-bad-magic]" in capsys.readouterr().out


def test_function_names_come_from_the_symbol_table() -> None:
    res = scan([str(LIB_V1)], ScanConfig()).files[0]
    with LIB_V1.open("rb") as f:
        syms = {s["st_value"]: s.name for s in ELFFile(f).get_section_by_name(".symtab")
                .iter_symbols() if s["st_info"]["type"] == "STT_FUNC" and s["st_size"]}
    named = [f.location for f in res.findings if f.location.function]
    assert named and all(syms.get(loc.pc) == loc.function for loc in named)


def test_progress_line_only_on_request() -> None:
    assert progress_stream(quiet=True) is None
    assert progress_stream(quiet=False) is None  # pytest's stderr is not a terminal
    buf = io.StringIO()
    p = _Progress(buf, total_inputs=4)
    p.update(1, 10)  # too early: short scans draw nothing
    assert buf.getvalue() == ""
    p.update(2, 20, force=True)
    assert "[###############...............] 2/4 inputs, 20 ELF files checked" in buf.getvalue()
    p.close()
    assert buf.getvalue().endswith("\r\033[K")


def test_default_jobs_positive() -> None:
    assert default_jobs() >= 1


def test_bench_script_runs(capsys: pytest.CaptureFixture[str]) -> None:
    from bench import scan_bench

    assert scan_bench.main(["--files", "12", "--repeat", "1"]) == 0
    out = capsys.readouterr().out
    assert "-j 1: 12 files" in out and "-j 2 / -j 1:" in out


def test_internal_error_is_reported_on_the_file(monkeypatch: pytest.MonkeyPatch,
                                                capsys: pytest.CaptureFixture[str]) -> None:
    import sfcheck.scan_worker

    def broken(*args: object, **kwargs: object) -> None:
        raise RuntimeError("boom")

    monkeypatch.setattr(sfcheck.scan_worker, "check_elf", broken)
    # Exit 70, not 2: a gate tells "sfcheck has a bug" from "this package is unreadable".
    assert main(["check", "-j", "1", str(LIB_V3), str(EXE_V2)]) == 70
    out = capsys.readouterr().out
    assert f"{LIB_V3}: error: sfcheck internal error: RuntimeError: boom" in out
    assert f"{EXE_V2}: error: sfcheck internal error" in out  # the scan went on


def test_raw_on_an_elf_file_is_refused(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["check", "--raw", "-j", "1", str(LIB_V3)]) == 2
    assert f"{LIB_V3}: error: this is an ELF file; drop --raw" in capsys.readouterr().out


def test_thin_archives_skipped_in_trees_refused_by_name(tmp_path: Path,
                                                        capsys: pytest.CaptureFixture[str]) -> None:
    thin = tmp_path / "built-in.a"
    thin.write_bytes(b"!<thin>\n")
    assert main(["check", "-j", "1", str(tmp_path)]) == 0
    assert main(["check", "-j", "1", str(thin)]) == 2
    assert "thin archive" in capsys.readouterr().out


def test_cli_bomb_is_a_clean_input_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]
                                         ) -> None:
    import lzma

    bomb = tmp_path / "bomb.tar.xz"
    bomb.write_bytes(lzma.compress(tar_bytes([("zeros", bytes(8 << 20))])))
    assert main(["check", "-j", "1", "--max-archive-bytes", str(1 << 20), str(bomb)]) == 2
    captured = capsys.readouterr()
    assert f"{bomb}: error: tar archive refused: archive expands to more than 1048576 bytes " \
           "(decompression bomb?)" in captured.out
    assert "Traceback" not in captured.err
