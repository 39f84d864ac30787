"""`sfcheck proc PID` on processes the tests start: a PIE built with SFrame v3 by the
.toolchains binutils (as it runs, with its text split by mprotect, with its section changed
in memory) and one without SFrame."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from sfcheck.cli import main
from sfcheck.elf import load_elf
from sfcheck.proc import ObjectReport, _overlaps, examine, parse_maps

ROOT = Path(__file__).resolve().parent.parent
SID = ROOT / ".toolchains" / "bin-sid"
PROG = Path(__file__).resolve().parent / "proc_progs" / "waiter.c"

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="Linux /proc")


def _build(tmp: Path, sframe: bool) -> Path:
    if shutil.which("gcc") is None:
        pytest.skip("gcc is needed to build the test program")
    flags = []
    if sframe:
        if not (SID / "as").exists():
            pytest.skip(f"SFrame v3 needs binutils in {SID} (corpus/get-toolchains.sh)")
        flags = [f"-B{SID}/", "-Wa,--gsframe"]
    out = tmp / ("waiter-sframe" if sframe else "waiter-plain")
    res = subprocess.run(["gcc", "-O2", "-fPIE", "-pie", *flags, "-o", str(out), str(PROG)],
                         capture_output=True, text=True, timeout=120)
    assert res.returncode == 0, res.stderr
    assert bool(load_elf(out).sframe_segments) == sframe
    return out


@contextmanager
def running(exe: Path, *args: str) -> Iterator[int]:
    proc = subprocess.Popen([str(exe), *args], stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    try:
        assert proc.stdout is not None and proc.stdout.readline() == b"ready\n"
        yield proc.pid
    finally:
        proc.kill()
        proc.wait()


@pytest.fixture(scope="module")
def progs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    tmp = tmp_path_factory.mktemp("proc")
    return {"sframe": _build(tmp, True), "plain": _build(tmp, False)}


def _exe(reports: list[ObjectReport], exe: Path) -> ObjectReport:
    return next(r for r in reports if Path(r.path).resolve() == exe.resolve())


def test_pie_with_sframe_registers(progs, capsys) -> None:
    exe = progs["sframe"]
    with running(exe) as pid:
        reports = examine(pid)
        rep = _exe(reports, exe)
        assert rep.sframe and rep.version == 3
        assert rep.registers, rep.problems
        assert rep.memory == "same as file"
        seg = load_elf(exe).sframe_segments[0]
        assert rep.sframe_range == (rep.bias + seg.vaddr, rep.bias + seg.vaddr + seg.memsz)
        assert rep.bias != 0 and rep.texts  # a PIE, loaded somewhere
        assert main(["proc", str(pid), "--json"]) in (0, 1)
        doc = json.loads(capsys.readouterr().out)
    assert doc["pid"] == pid
    assert any(o["path"] == rep.path and o["registers"] for o in doc["objects"])


def test_pie_without_sframe(progs, capsys) -> None:
    with running(progs["plain"]) as pid:
        assert main(["proc", str(pid)]) == 0
        out = capsys.readouterr().out
    assert f"{progs['plain']}: no SFrame" in out
    assert f"process {pid}:" in out and "0 with SFrame" in out


def test_mprotect_split_breaks_registration(progs) -> None:
    exe = progs["sframe"]
    with running(exe, "split") as pid:
        rep = _exe(examine(pid), exe)
    assert not rep.registers
    assert any("exactly one executable mapping" in p for p in rep.problems)


def test_section_changed_in_memory_is_reported(progs) -> None:
    exe = progs["sframe"]
    with running(exe, "poke") as pid:
        rep = _exe(examine(pid), exe)
    assert rep.memory.startswith("differs from the file in 1 byte(s), first at section "
                                 "offset 0x28"), rep.memory


def test_unreadable_process_is_exit_2(capsys) -> None:
    assert main(["proc", "999999999"]) == 2
    assert "sfcheck proc: no process" in capsys.readouterr().err


def test_touching_text_ranges_collide() -> None:
    a, b, c = (ObjectReport(p, sframe=True) for p in ("/a", "/b", "/c"))
    a.texts, b.texts, c.texts = [(0x1000, 0x2000)], [(0x2000, 0x3000)], [(0x4000, 0x5000)]
    _overlaps([a, b, c])
    assert not a.problems and not c.problems
    assert len(b.problems) == 1 and "touches" in b.problems[0]


def test_parse_maps() -> None:
    maps = parse_maps("5555-6666 r-xp 00001000 08:01 42   /usr/bin/x\n"
                      "7000-8000 rw-p 00000000 00:00 0 \nbad line\n")
    assert [(m.start, m.end, m.executable, m.offset, m.path) for m in maps] == [
        (0x5555, 0x6666, True, 0x1000, "/usr/bin/x"), (0x7000, 0x8000, False, 0, "")]


@pytest.mark.skipif(not hasattr(os, "geteuid") or os.geteuid() != 0,
                    reason="needs root to drop to another user")
def test_process_of_another_user_is_a_clear_error(progs) -> None:
    """As `nobody`, a root-owned process cannot be read: one line on stderr, exit 2."""
    with running(progs["sframe"]) as pid:
        # Everything is imported before dropping to nobody (root's home may be 0700).
        # (argparse itself would import gettext lazily: cmd_proc is called directly.)
        code = ("import os, sys, argparse, sfcheck.proc as P; os.setgid(65534); "
                "os.setuid(65534); "
                f"sys.exit(P.cmd_proc(argparse.Namespace(pid={pid}, json=False)))")
        res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                             timeout=60, cwd="/", env={"PATH": "/usr/bin"})
    assert res.returncode == 2, res.stderr
    assert res.stderr.startswith("sfcheck proc: cannot read"), res.stderr
    assert len(res.stderr.strip().splitlines()) == 1 and "Traceback" not in res.stderr
