"""Waivers before the per-file cap (issue 27.4): a file with over 1,000 findings of a waived
rule and one unwaived error fails the gate, in every format, and reports that error."""

from __future__ import annotations

import json
import pickle
from pathlib import Path

import pytest
from elfbuild import SHF_ALLOC, SHF_EXECINSTR, SHT_GNU_SFRAME, SHT_PROGBITS, Elf, Sec

from sfcheck.checker import MAX_PER_FILE, check_elf
from sfcheck.cli import main
from sfcheck.elf.constants import MAX_SFRAME_SECTIONS
from sfcheck.elf.loader import load_elf
from sfcheck.scan import ScanConfig
from sfcheck.waivers import apply_waivers, parse_waivers

from helpers import CORPUS

WAIVERS = """[[waiver]]
rule = "elf-fde-outside-text"
path = "*"
reason = "accepted"
"""


def flood(tmp_path: Path) -> Path:
    """64 SFrame sections whose FDEs all lie outside the 16-byte .text (thousands of
    elf-fde-outside-text errors); the last one's header has an unknown flag as well
    (header-flags-unknown, one error, found last)."""
    sec = load_elf(CORPUS / "v3" / "libcorpus.so").sections[0]
    bad = bytearray(sec.data)
    bad[3] |= 0x80
    secs = [Sec(".text", SHT_PROGBITS, b"\xc3" * 16, flags=SHF_ALLOC | SHF_EXECINSTR)]
    secs += [Sec(".sframe", SHT_GNU_SFRAME, sec.data, flags=SHF_ALLOC, addr=sec.vma)
             for _ in range(MAX_SFRAME_SECTIONS - 1)]
    secs.append(Sec(".sframe", SHT_GNU_SFRAME, bytes(bad), flags=SHF_ALLOC, addr=sec.vma))
    path = tmp_path / "flood.o"
    path.write_bytes(Elf(e_type=1, sections=secs).build())
    return path


def test_unwaived_error_survives_the_cap(tmp_path: Path) -> None:
    path = flood(tmp_path)
    waivers = parse_waivers(WAIVERS)
    res = check_elf(path, waivers=waivers)
    rules = [f.rule for f in res.findings if f.waived is None]
    assert "header-flags-unknown" in rules
    assert len(res.findings) == MAX_PER_FILE + 1  # the cap counts what is reported
    (capped,) = [f for f in res.findings if f.rule == "elf-findings-capped"]
    dropped = int(capped.message.split()[0])
    assert dropped > 0 and f"{dropped} of them waived" in capped.message
    # The waiver covered findings (kept and dropped): not listed as unused.
    assert apply_waivers([res], waivers) == []
    # A waiver whose findings the cap all left out still counts as used.
    both = parse_waivers(WAIVERS + WAIVERS.replace("elf-fde-outside-text",
                                                   "header-flags-unknown"))
    res = check_elf(path, waivers=both)
    assert all(f.rule != "header-flags-unknown" for f in res.findings)
    assert res.waivers_used == {1, 2} and apply_waivers([res], both) == []
    # Without waivers the same file keeps errors by severity only (the flag error may go).
    assert len(check_elf(path).findings) == MAX_PER_FILE + 1


@pytest.mark.parametrize("fmt", ["text", "json", "sarif", "junit"])
def test_gate_fails_on_the_unwaived_error_in_every_format(tmp_path: Path, fmt: str) -> None:
    path = flood(tmp_path)
    (tmp_path / "w.toml").write_text(WAIVERS)
    out = tmp_path / f"report.{fmt}"
    status = main(["check", "-j", "1", "--fail-on", "error", "--waivers",
                   str(tmp_path / "w.toml"), "--format", fmt, "-o", str(out), str(path)])
    assert status == 1
    report = out.read_text()
    assert "header-flags-unknown" in report
    if fmt == "json":
        findings = json.loads(report)["files"][0]["findings"]
        assert len(findings) == MAX_PER_FILE + 1
        assert json.loads(report)["unused_waivers"] == []


def test_waivers_reach_pool_workers() -> None:
    """Workers get the waivers through pickled initargs (spawn/forkserver pickle them)."""
    config = ScanConfig(jobs=2, waivers=parse_waivers(WAIVERS))
    again = pickle.loads(pickle.dumps(config))
    assert again.waivers == config.waivers
    assert again.waivers[0].covers_rule("elf-fde-outside-text")
