"""Bounded memory and time on hostile ELF inputs (issue 18 items 1, 3 and 6; issue 19
item 5): each row runs `sfcheck` in a subprocess under resource limits (RLIMIT_DATA for the
heap, RLIMIT_CPU for time) and reads the child's peak RSS from wait4: limits and a measured
peak, never a wall-clock timing.
"""

from __future__ import annotations

import json
import os
import resource
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest
from elfbuild import (
    SHF_ALLOC,
    SHF_EXECINSTR,
    SHT_GNU_SFRAME,
    SHT_PROGBITS,
    SHT_STRTAB,
    SHT_SYMTAB,
    Elf,
    Sec,
    symbol,
)

from sfcheck.checker import Options, check_elf
from sfcheck.elf.constants import MAX_SFRAME_SECTIONS
from sfcheck.elf.loader import load_elf
from sfcheck.result import CUT_MARK, MAX_TEXT, Severity

from helpers import CORPUS, ROOT

MB = 1 << 20
HEAP_LIMIT = 300 * MB  # the "< 300 MB RSS"
CPU_LIMIT = 10  # seconds: "< 10 s"

V3 = CORPUS / "v3" / "libcorpus.so"


def _limits() -> None:
    resource.setrlimit(resource.RLIMIT_DATA, (HEAP_LIMIT, HEAP_LIMIT))
    resource.setrlimit(resource.RLIMIT_CPU, (CPU_LIMIT, CPU_LIMIT))


def run_limited(*args: str | Path) -> tuple[int, str, str, int]:
    """(exit status, stdout, stderr, peak RSS in bytes) of `sfcheck ARGS` under the limits."""
    env = dict(os.environ)
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        proc = subprocess.Popen([sys.executable, "-m", "sfcheck", *map(str, args)], cwd=ROOT,
                                stdout=out, stderr=err, env=env, preexec_fn=_limits)
        _pid, status, usage = os.wait4(proc.pid, 0)  # this child's own peak, not a max
        proc.returncode = os.waitstatus_to_exitcode(status)
        out.seek(0)
        err.seek(0)
        return (proc.returncode, out.read().decode(errors="replace"),
                err.read().decode(errors="replace"), usage.ru_maxrss * 1024)


def _assert_bounded(status: int, peak: int, stderr: str) -> None:
    assert status in (0, 1, 2), stderr[-2000:]  # not killed by a limit, no crash status
    assert "Traceback" not in stderr
    assert peak < HEAP_LIMIT, f"peak RSS {peak / MB:.0f} MB"


def test_sparse_4gib_file(tmp_path: Path) -> None:
    big = tmp_path / "x"
    with open(big, "wb") as f:
        f.truncate(4 << 30)
    status, out, err, peak = run_limited("-j", "1", big)
    _assert_bounded(status, peak, err)
    assert status == 2 and "not an ELF file" in out + err


def _sframe_bytes() -> tuple[bytes, int]:
    sec = load_elf(V3).sections[0]
    return sec.data, sec.vma


def test_sparse_elf_with_a_huge_section_claim(tmp_path: Path) -> None:
    """A 4 GiB sparse ELF whose .sframe claims 3 GiB of the hole: refused, not read."""
    elf = Elf(e_type=1, sections=[Sec(".sframe", SHT_GNU_SFRAME, flags=SHF_ALLOC,
                                      offset=1 << 30, size=3 << 30)]).build()
    path = tmp_path / "sparse.o"
    with open(path, "wb") as f:
        f.write(elf)
        f.truncate(4 << 30)
    status, out, err, peak = run_limited("-j", "1", path)
    _assert_bounded(status, peak, err)
    assert status == 2 and "over sfcheck's bound" in out + err


def test_65000_sframe_sections(tmp_path: Path) -> None:
    data, vma = _sframe_bytes()
    header = bytearray(data[:28])
    header[8:28] = bytes(20)  # no FDEs, no FREs, offsets 0: a valid empty section
    secs = [Sec(".sframe", SHT_GNU_SFRAME, bytes(header), flags=SHF_ALLOC)
            for _ in range(65000)]
    path = tmp_path / "many.o"
    path.write_bytes(Elf(e_type=1, sections=secs, extended=True).build())
    info = load_elf(path)
    assert info.sframe_sections_total == 65000 and len(info.sections) == MAX_SFRAME_SECTIONS
    status, out, err, peak = run_limited("-j", "1", "--format", "json", path)
    _assert_bounded(status, peak, err)
    report = json.loads(out)
    (f,) = report["files"]
    capped = [x for x in f["findings"] if x["rule"] == "elf-sframe-sections-capped"]
    assert len(capped) == 1 and "65000 SFrame sections" in capped[0]["message"]


def _named_symbols_elf(count: int, name_len: int) -> bytes:
    """An object whose FDEs all lie outside its tiny .text (so every one gets a finding with a
    PC), with `count` function symbols covering them, every name pointing at the start of one
    `name_len`-byte string without a NUL."""
    data, vma = _sframe_bytes()
    strtab = b"\0" + b"A" * name_len  # offset 1 onwards: no NUL to the end
    syms = bytes(24) + b"".join(symbol(1, vma - 0x1000 + i, 0x10000, 1) for i in range(count))
    return Elf(e_type=1, sections=[
        Sec(".text", SHT_PROGBITS, b"\xc3" * 16, flags=SHF_ALLOC | SHF_EXECINSTR),
        Sec(".sframe", SHT_GNU_SFRAME, data, flags=SHF_ALLOC, addr=vma),
        Sec(".symtab", SHT_SYMTAB, syms, link=4, info=1, entsize=24),
        Sec(".strtab", SHT_STRTAB, strtab),
    ]).build()


def test_1000_symbols_sharing_a_4mb_name_without_nul(tmp_path: Path) -> None:
    path = tmp_path / "names.o"
    path.write_bytes(_named_symbols_elf(1000, 4 * MB))
    res = check_elf(path)
    named = [f for f in res.findings if f.location.function]
    assert named, "the test needs findings named by the symbols"
    assert all(f.location.function.endswith(CUT_MARK) for f in named)
    assert all(len(f.location.function) <= MAX_TEXT + len(CUT_MARK) for f in named)
    status, out, err, peak = run_limited("-j", "1", "--format", "json", path)
    _assert_bounded(status, peak, err)
    report = json.loads(out)
    assert len(out) < MB
    assert any(x["location"].get("function") for x in report["files"][0]["findings"])


@pytest.mark.parametrize("fmt", ["text", "json", "sarif"])
def test_hostile_symtab_offset_same_result_in_every_format(tmp_path: Path, fmt: str) -> None:
    """.symtab at offset 2^63: the findings are those of the file without a symbol table,
    in every format (it was 'internal error: OverflowError' for json/sarif)."""
    elf = bytearray(_named_symbols_elf(4, 8))
    plain = check_elf(bytes(elf))
    assert any(f.location.function for f in plain.findings)
    shoff = int.from_bytes(elf[0x28:0x30], "little")
    symtab_hdr = shoff + 3 * 64
    elf[symtab_hdr + 0x18:symtab_hdr + 0x20] = (1 << 63).to_bytes(8, "little")
    res = check_elf(bytes(elf))
    assert res.error is None
    assert [(f.rule, f.location.pc) for f in res.findings] == \
        [(f.rule, f.location.pc) for f in plain.findings]
    assert not any(f.location.function for f in res.findings)
    path = tmp_path / "hostile.o"
    path.write_bytes(elf)
    status, out, err, peak = run_limited("-j", "1", "--format", fmt, path)
    _assert_bounded(status, peak, err)
    assert "internal error" not in out + err
    want = 1 if res.worst() == Severity.ERROR else 0
    assert status == want


def test_section_names_are_cut(tmp_path: Path) -> None:
    data, vma = _sframe_bytes()
    name = "." + "s" * 5000
    elf = Elf(e_type=1, sections=[Sec(name, SHT_GNU_SFRAME, data, flags=SHF_ALLOC, addr=vma)])
    res = check_elf(elf.build(), options=Options(disable={"semantic", "defect"}))
    assert res.sections and len(res.sections[0].name) == MAX_TEXT + len(CUT_MARK)
    assert all(len(f.location.section or "") <= MAX_TEXT + len(CUT_MARK) for f in res.findings)


def test_findings_per_file_are_capped_in_every_format(tmp_path: Path) -> None:
    """64 copies of a section whose every FDE lies outside the tiny .text: over 1,000
    findings; the file keeps MAX_PER_FILE of them (the worst) and says how many it left."""
    from sfcheck.checker import MAX_PER_FILE
    from sfcheck.cli import main

    data, vma = _sframe_bytes()
    secs = [Sec(".text", SHT_PROGBITS, b"\xc3" * 16, flags=SHF_ALLOC | SHF_EXECINSTR)]
    secs += [Sec(".sframe", SHT_GNU_SFRAME, data, flags=SHF_ALLOC, addr=vma)
             for _ in range(MAX_SFRAME_SECTIONS)]
    path = tmp_path / "flood.o"
    path.write_bytes(Elf(e_type=1, sections=secs).build())
    res = check_elf(path)
    assert len(res.findings) == MAX_PER_FILE + 1
    capped = [f for f in res.findings if f.rule == "elf-findings-capped"]
    assert len(capped) == 1 and "more finding" in capped[0].message
    # The worst are kept: every error survives the cap.
    assert sum(f.severity == Severity.ERROR for f in res.findings) == MAX_PER_FILE
    for fmt in ("json", "sarif"):
        out = tmp_path / f"r.{fmt}"
        assert main(["check", "-j", "1", "--format", fmt, "-I", "-o", str(out),
                     str(path)]) == 1  # -I: the count is an info, SARIF lists warnings up
        report = json.loads(out.read_text())
        n = len(report["files"][0]["findings"]) if fmt == "json" else \
            len(report["runs"][0]["results"])
        assert n == MAX_PER_FILE + 1
