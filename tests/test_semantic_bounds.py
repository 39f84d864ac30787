"""The .eh_frame reader and CFI interpreter bound their work per FDE and per file, and the
cross-check says so (`semantic-not-compared` with the reason), never silently.

The hostile case of the reliability issue, one `.eh_frame` FDE with six million
advance_loc rows, runs as `sfcheck FILE` in a child process under RLIMIT_AS and
RLIMIT_CPU; its peak RSS comes from wait4. Limits, not timings.
"""

from __future__ import annotations

import os
import resource
import struct
import subprocess
import sys
from pathlib import Path

import pytest

from sfcheck.checker import check_elf
from sfcheck.dwarf import callframe
from sfcheck.dwarf.ehframe import read_eh_frame
from sfcheck.format import constants as C
from sfcheck.format.encode import encode
from sfcheck.format.layout import build_section
from sfcheck.format.model import FDE, fde_info, make_fre

from helpers import uleb

TEXT, SFRAME, EH = 0x10000, 0x1000000, 0x1100000


def _cie() -> bytes:
    # version 1, "zR", code align 1, data align -8, RA column 16, pcrel sdata4 pointers;
    # CFA = rsp+8, RA at CFA-8
    body = (struct.pack("<I", 0) + b"\x01zR\0" + uleb(1) + b"\x78" + b"\x10" + uleb(1)
            + b"\x1b" + b"\x0c\x07\x08\x90\x01")
    body += b"\0" * (-(len(body) + 4) % 4)
    return struct.pack("<I", len(body)) + body


def _fde(at: int, cie_at: int, start: int, size: int, program: bytes) -> bytes:
    """An FDE at .eh_frame offset `at` for [start, start + size)."""
    body = struct.pack("<I", at + 4 - cie_at)
    body += struct.pack("<i", start - (EH + at + 8)) + struct.pack("<i", size) + uleb(0)
    body += program
    body += b"\0" * (-(len(body) + 4) % 4)
    return struct.pack("<I", len(body)) + body


def eh_frame(fdes: list[tuple[int, int, bytes]]) -> bytes:
    out = bytearray(_cie())
    for start, size, program in fdes:
        out += _fde(len(out), 0, start, size, program)
    return bytes(out + bytes(4))


def sframe(funcs: list[tuple[int, int]]) -> bytes:
    """v2 (SORTED, section-relative starts): CFA = SP+8 over each function."""
    fdes = [FDE(start - SFRAME, size, fde_info(C.FRE_TYPE_ADDR4),
                (make_fre(0, (8,)),)) for start, size in funcs]
    return encode(build_section(C.VERSION_2, C.ABI_AMD64_LE, fdes, flags=C.F_FDE_SORTED))


def elf(sf: bytes, eh: bytes, text_size: int) -> bytes:
    """ET_DYN x86-64: NOBITS .text at TEXT, .sframe (PT_GNU_SFRAME) and .eh_frame."""
    names = b"\0.text\0.sframe\0.eh_frame\0.shstrtab\0"
    sf_off = 0x1000
    eh_off = (sf_off + len(sf) + 0xFFF) & ~0xFFF
    str_off = eh_off + len(eh)
    sh_off = (str_off + len(names) + 7) & ~7
    phdrs = b"".join([
        struct.pack("<IIQQQQQQ", 1, 5, 0, TEXT, TEXT, 0, text_size, 0x1000),
        struct.pack("<IIQQQQQQ", 1, 4, sf_off, SFRAME, SFRAME, len(sf), len(sf), 0x1000),
        struct.pack("<IIQQQQQQ", 1, 4, eh_off, EH, EH, len(eh), len(eh), 0x1000),
        struct.pack("<IIQQQQQQ", 0x6474E554, 4, sf_off, SFRAME, SFRAME, len(sf), len(sf), 8),
    ])
    ehdr = struct.pack("<4sBBBBB7sHHIQQQIHHHHHH", b"\x7fELF", 2, 1, 1, 0, 0, b"", 3, 62, 1,
                       TEXT, 64, sh_off, 0, 64, 56, 4, 64, 5, 4)
    shdrs = b"".join([
        bytes(64),
        struct.pack("<IIQQQQIIQQ", 1, 8, 6, TEXT, 0x1000, text_size, 0, 0, 16, 0),
        struct.pack("<IIQQQQIIQQ", 7, 1, 2, SFRAME, sf_off, len(sf), 0, 0, 8, 0),
        struct.pack("<IIQQQQIIQQ", 15, 1, 2, EH, eh_off, len(eh), 0, 0, 8, 0),
        struct.pack("<IIQQQQIIQQ", 25, 3, 0, 0, str_off, len(names), 0, 0, 1, 0),
    ])
    out = bytearray(ehdr + phdrs)
    out += bytes(sf_off - len(out)) + sf
    out += bytes(eh_off - len(out)) + eh + names
    out += bytes(sh_off - len(out)) + shdrs
    return bytes(out)


def test_small_file_is_compared() -> None:
    """The builder makes files the cross-check reads: no bound, no finding."""
    data = elf(sframe([(TEXT, 64)]), eh_frame([(TEXT, 64, b"\x41" * 8)]), 64)
    res = check_elf(data)
    assert res.error is None
    assert not [f for f in res.findings if f.rule.startswith("semantic")], res.findings


def test_row_bound_per_fde_is_reported() -> None:
    n = callframe.MAX_FDE_ROWS + 10
    eh = eh_frame([(TEXT, n, b"\x41" * n), (TEXT + n, 64, b"\x41" * 8)])
    fdes = read_eh_frame(eh, EH, False, 8, 16, 6)
    assert fdes[0].limit and "CFI rows" in fdes[0].limit and fdes[0].rel == ()
    assert fdes[1].limit is None and len(fdes[1].rel) == 9
    res = check_elf(elf(sframe([(TEXT, n), (TEXT + n, 64)]), eh, n + 64))
    opaque = [f for f in res.findings if f.rule == "semantic-not-compared"]
    assert any("CFI rows" in f.message and f.location.fde == 0 for f in opaque), opaque
    assert not [f for f in res.findings if f.rule.startswith("semantic-")
                and f.rule != "semantic-not-compared"], res.findings


def test_an_advance_by_zero_replaces_the_row() -> None:
    # def_cfa_offset 16; advance_loc 0; def_cfa_offset 24: one row at pc 0, CFA = rsp+24
    (fde,) = read_eh_frame(eh_frame([(TEXT, 64, b"\x0e\x10\x40\x0e\x18")]), EH, False, 8,
                           16, 6)
    assert [(r.pc, r.cfa) for r in fde.rel] == [(0, (7, 24))]


def test_the_row_bound_counts_advances_not_the_last_row(monkeypatch) -> None:
    monkeypatch.setattr(callframe, "MAX_FDE_ROWS", 8)
    for advances, rows in ((8, 9), (9, 0)):
        (fde,) = read_eh_frame(eh_frame([(TEXT, 64, b"\x41" * advances)]), EH, False, 8, 16, 6)
        assert len(fde.rel) == rows and (fde.limit is None) == (rows > 0), fde


def test_file_bound_marks_every_later_fde(monkeypatch) -> None:
    monkeypatch.setattr(callframe, "MAX_FILE_OPS", 100)
    progs = [bytes([0x41, 0x0E, 16 + k % 64, 0x41]) * 10 for k in range(10)]  # 40 bytes each
    fdes = read_eh_frame(eh_frame([(TEXT + 64 * k, 64, p) for k, p in enumerate(progs)]),
                         EH, False, 8, 16, 6)
    ran = [f.limit is None for f in fdes]
    assert ran[:2] == [True, True] and not any(ran[3:])
    assert all("per-file" in f.limit for f in fdes[3:])


@pytest.mark.skipif(not hasattr(os, "wait4"), reason="needs wait4 for the child's peak RSS")
def test_six_million_advance_loc_rows_bounded(tmp_path: Path) -> None:
    """Issue 18's row: one FDE, 6M advance_loc rows (was 62 s and 1.7 GB RSS)."""
    n = 6_000_000
    path = tmp_path / "rows.so"
    path.write_bytes(elf(sframe([(TEXT, n)]), eh_frame([(TEXT, n, b"\x41" * n)]), n))
    p = subprocess.Popen([sys.executable, "-m", "sfcheck", str(path)], stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True,
                         preexec_fn=lambda: (resource.setrlimit(resource.RLIMIT_AS,
                                                                (1 << 30, 1 << 30)),
                                             resource.setrlimit(resource.RLIMIT_CPU, (10, 10))))
    out = p.stdout.read() + p.stderr.read()  # type: ignore[union-attr]
    _pid, status, usage = os.wait4(p.pid, 0)
    code = os.waitstatus_to_exitcode(status)
    assert code in (0, 1), (code, out[-2000:])  # RLIMIT_CPU kills with SIGXCPU
    assert usage.ru_maxrss < 300 * 1024, f"peak RSS {usage.ru_maxrss} KiB"
    assert "semantic-not-compared" in out and "CFI rows" in out, out
    assert "Traceback" not in out
