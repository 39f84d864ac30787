"""`sfcheck dump` against objdump's own output for real sections."""

from __future__ import annotations

import bz2
import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from sfcheck.cli import main
from sfcheck.dump.json_out import dump_json
from sfcheck.dump.objdump import dump_text
from sfcheck.format import decode_header

from helpers import file_id, upstream_files, upstream_path

CASES = upstream_files("simple-frame-rs", "*.json")


def render(data: bytes, vma: int) -> str:
    text = "\n".join(dump_text(data, vma))
    return text + "\n" if text else ""


def expected_text(groundtruth: str) -> str:
    """objdump's text from `Contents of the SFrame section` on (empty: no section printed)."""
    i = groundtruth.find("Contents of the SFrame section")
    return groundtruth[i:] if i >= 0 else ""


def modernise_240(text: str, fixed_ra: int) -> str:
    """objdump 2.40 differs from 2.41+ in two known ways; apply them to its text.

    It omits the `CFA fixed RA offset` line and prints a fixed RA as `u`, not `f`.
    """
    if not fixed_ra:
        return text
    out = []
    for line in text.split("\n"):
        if line.startswith("    Num FDEs:"):
            out.append(f"    CFA fixed RA offset: {fixed_ra}")
        m = re.match(r"^(    [0-9a-f]{16}  \S+\s+\S+\s+)u(\s*)$", line)
        out.append(m.group(1) + "f" + m.group(2) if m else line)
    return "\n".join(out)


@pytest.mark.parametrize("case", CASES, ids=file_id)
def test_matches_objdump_groundtruth(case: Path) -> None:
    d = json.loads(case.read_text())
    data = bytes(d["content"])
    expected = expected_text(d["groundtruth"])
    if case.stem.endswith("-2.40"):
        expected = modernise_240(expected, decode_header(data).fixed_ra)
    assert render(data, d["section_base"]) == expected


def test_upstream_cases_present() -> None:
    upstream_path("simple-frame-rs")
    assert len(CASES) > 50


def test_240_normalisation_is_needed() -> None:
    """The 2.40 cases must really differ before normalisation (else the helper hides nothing)."""
    case = upstream_path("simple-frame-rs", "test-x86_64-2.40.json")
    d = json.loads(case.read_text())
    data = bytes(d["content"])
    raw = expected_text(d["groundtruth"])
    assert render(data, d["section_base"]) != raw
    assert render(data, d["section_base"]) == modernise_240(raw, -8)


def regexp_match(patterns: list[str], lines: list[str]) -> None:
    """binutils' regexp_diff: each expected line is a regex matching one output line."""
    assert len(lines) == len(patterns), (lines, patterns)
    for pat, line in zip(patterns, lines, strict=True):
        assert re.fullmatch(pat, line), (pat, line)


@pytest.mark.parametrize("kind", ["EXEC", "REL"])
def test_binutils_elf_dump_files(kind: str, tmp_path: Path, capsys) -> None:
    blob = upstream_path("binutils", f"x86-64-test-v2-ET_{kind}.sframe.bz2")
    expected = upstream_path("binutils", f"x86-64-test-v2-ET_{kind}.sframe.dump")
    elf = tmp_path / f"test-{kind}.elf"
    elf.write_bytes(bz2.decompress(blob.read_bytes()))
    assert main(["dump", str(elf)]) == 0
    out = capsys.readouterr().out
    got = out[out.index("Contents of the SFrame section"):].rstrip("\n").split("\n")
    patterns = [p for p in expected.read_text().rstrip("\n").split("\n") if p != "#..."]
    regexp_match(patterns, got)


@pytest.mark.parametrize("name", ["DATA1", "DATA2", "DATA-V2", "DATA-BE"])
def test_binutils_raw_blobs_dump(name: str, capsys) -> None:
    blob = upstream_path("binutils", name)
    h = decode_header(blob.read_bytes())
    assert main(["dump", "--raw", "--vma", "0x1000", str(blob)]) == 0
    out = capsys.readouterr().out
    assert f"Num FDEs: {h.num_fdes}" in out
    assert out.count("func idx [") == h.num_fdes
    # every FRE row is printed: rows are the lines starting with a 16-digit address
    rows = [ln for ln in out.splitlines() if re.match(r"^    [0-9a-f]{16}  ", ln)]
    assert len(rows) == h.num_fres


def test_data2_function_pc(capsys) -> None:
    """sframe-format.md 1.9: with section vma 0x1000, DATA2's function 0 is at 0x3e."""
    blob = upstream_path("binutils", "DATA2")
    assert main(["dump", "--raw", "--vma", "4096", str(blob)]) == 0
    assert "func idx [0]: pc = 0x3e, size = 27 bytes" in capsys.readouterr().out


def test_json_agrees_with_text() -> None:
    upstream_path("simple-frame-rs")  # skips with the reason rather than passing on no case
    for case in CASES[:40]:
        d = json.loads(case.read_text())
        data = bytes(d["content"])
        if not data:
            continue
        doc = dump_json(data, d["section_base"])
        text = render(data, d["section_base"])
        assert doc["error"] is None
        pcs = [int(m) for m in re.findall(r"func idx \[\d+\]: pc = 0x([0-9a-f]+)", text)
               for m in [int(m, 16)]]
        assert [f["pc"] for f in doc["fdes"]] == pcs
        starts = [int(s, 16) for s in re.findall(r"^    ([0-9a-f]{16})  ", text, re.M)]
        assert [r["pc"] for f in doc["fdes"] for r in f["fres"]] == starts


def test_cli_json_output(capsys) -> None:
    blob = upstream_path("binutils", "DATA-BE")
    assert main(["dump", "--json", "--raw", str(blob)]) == 0
    doc = json.loads(capsys.readouterr().out)
    sec = doc["files"][0]["sections"][0]
    assert sec["header"]["abi_name"] == "aarch64-be" and sec["header"]["big_endian"]
    assert len(sec["fdes"][0]["fres"]) == sec["header"]["num_fres"]


def test_truncated_section_prints_prefix_then_error(tmp_path: Path, capsys) -> None:
    blob = upstream_path("binutils", "DATA-V2").read_bytes()
    cut = tmp_path / "cut.sframe"
    cut.write_bytes(blob[:60])
    assert main(["dump", "--raw", str(cut)]) == 1
    cap = capsys.readouterr()
    assert "Version: SFRAME_VERSION_2" in cap.out
    assert "SFrame decode failure" in cap.err and "offset" in cap.err
    assert "Traceback" not in cap.err


def test_not_elf_is_usage_error(tmp_path: Path, capsys) -> None:
    junk = tmp_path / "junk.bin"
    junk.write_bytes(b"hello, world\n")
    assert main(["dump", str(junk), str(tmp_path / "missing")]) == 2
    err = capsys.readouterr().err
    assert "not an ELF file" in err and "cannot read file" in err


def test_vma_needs_raw_and_parses_hex(capsys) -> None:
    with pytest.raises(SystemExit) as exc:
        main(["dump", "--vma", "0x10", "x"])
    assert exc.value.code == 2
    with pytest.raises(SystemExit):
        main(["dump", "--raw", "--vma", "zz", "x"])
    assert "not an address" in capsys.readouterr().err


def test_console_script_runs() -> None:
    blob = upstream_path("binutils", "DATA1")
    proc = subprocess.run([sys.executable, "-m", "sfcheck", "dump", "--raw", str(blob)],
                          capture_output=True, text=True, check=False)
    assert proc.returncode == 0, proc.stderr
    assert "Contents of the SFrame section .sframe:" in proc.stdout
