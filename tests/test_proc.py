"""`sfcheck proc PID` on processes the tests start: a PIE built with SFrame v3 by the
.toolchains binutils (as it runs, with its text split by mprotect, with its section changed
in memory) and one without SFrame; hostile ones: a shared object deleted, truncated or
rewritten in a loop under the process, SFrame pages that cannot be read, a process that
exits during the read, a zombie, a kernel thread. Races are made deterministic by doing the
hostile step from inside sfcheck's own read (a wrapped function), in a child process where
the old failure was a signal."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from sfcheck.cli import main
from sfcheck.elf.loader import load_elf
from sfcheck.proc import (
    AT_EXEC,
    BY_SYSCALL,
    Mapping,
    ObjectReport,
    ProcScan,
    _overlaps,
    _registrar,
    compare,
    examine,
    exit_status,
    parse_maps,
)
from sfcheck.procfs import exec_objects

ROOT = Path(__file__).resolve().parent.parent
SID = ROOT / ".toolchains" / "bin-sid"
PROG = Path(__file__).resolve().parent / "proc_progs" / "waiter.c"
SHLIB = Path(__file__).resolve().parent / "proc_progs" / "shlib.c"

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


def _build_lib(tmp: Path) -> Path:
    """tests/proc_progs/shlib.c as a shared object with SFrame v3 (the .toolchains binutils)."""
    out = tmp / "libshlib.so"
    res = subprocess.run(["gcc", "-O2", "-fPIC", "-shared", f"-B{SID}/", "-Wa,--gsframe",
                          "-o", str(out), str(SHLIB)], capture_output=True, text=True,
                         timeout=120)
    assert res.returncode == 0, res.stderr
    assert load_elf(out).sframe_segments
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
    return {"sframe": _build(tmp, True), "plain": _build(tmp, False), "lib": _build_lib(tmp)}


def _exe(reports: list[ObjectReport], exe: Path) -> ObjectReport:
    return next(r for r in reports if Path(r.path).resolve() == exe.resolve())


def test_pie_with_sframe_registers(progs, capsys) -> None:
    exe = progs["sframe"]
    with running(exe) as pid:
        reports = examine(pid).reports
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


def test_library_registers_only_through_stacktrace_setup(progs, tmp_path, capsys) -> None:
    """binfmt_elf registers the executable and its interpreter; a dlopen'ed library only
    when its loader calls the stacktrace_setup RFC's system call, which none does yet."""
    lib = _lib_copy(progs, tmp_path)
    with running(progs["sframe"], "dlopen", str(lib)) as pid:
        scan = examine(pid)
        assert main(["proc", str(pid)]) in (0, 1)
        out = capsys.readouterr().out
    exe, rep = _exe(scan.reports, progs["sframe"]), _rep(scan, lib)
    assert exe.registration == AT_EXEC and exe.registers
    assert rep.registration == BY_SYSCALL and rep.registers, rep
    interp = [r for r in scan.reports if Path(r.path).name.startswith("ld-")]
    assert interp and all(r.registration == AT_EXEC for r in interp)
    libc = [r for r in scan.reports if Path(r.path).name.startswith("libc.so")]
    assert libc and all(r.registration == BY_SYSCALL for r in libc)
    assert f"{lib}: SFrame v3, bias {rep.bias:#x}: would register through stacktrace_setup " \
        "(no loader calls it yet)\n" in out
    assert "2 would register (1 at exec, 1 only through stacktrace_setup)" in out


def test_registrar_and_exec_objects() -> None:
    m = [Mapping(0x7000, 0x8000, "r-xp", 0, "/lib/ld.so")]
    assert _registrar("/bin/x", m, "/bin/x", None) == AT_EXEC
    assert _registrar("/lib/ld.so", m, "/bin/x", 0x7000) == AT_EXEC
    assert _registrar("/lib/ld.so", m, "/bin/x", 0x6000) == BY_SYSCALL
    assert _registrar("/lib/libc.so", m, None, None) == AT_EXEC  # unknown: as before
    exe, base = exec_objects(os.getpid())  # this Python: dynamically linked
    assert exe == os.path.realpath(sys.executable)
    assert base is not None and any(
        mp.start == base for mp in parse_maps(Path("/proc/self/maps").read_text()))


def test_pie_without_sframe(progs, capsys) -> None:
    with running(progs["plain"]) as pid:
        assert main(["proc", str(pid)]) == 0
        out = capsys.readouterr().out
    assert f"{progs['plain']}: no SFrame: the kernel's unwinder falls back to frame " \
        "pointers in it (stacks through it are right only where it keeps frame pointers)\n" \
        in out
    assert "frame pointers only" not in out
    assert f"process {pid}:" in out and "0 with SFrame" in out


def test_mprotect_split_breaks_registration(progs) -> None:
    exe = progs["sframe"]
    with running(exe, "split") as pid:
        rep = _exe(examine(pid).reports, exe)
    assert not rep.registers
    assert any("exactly one executable mapping" in p for p in rep.problems)


def test_section_changed_in_memory_is_reported(progs) -> None:
    exe = progs["sframe"]
    with running(exe, "poke") as pid:
        rep = _exe(examine(pid).reports, exe)
    assert rep.memory.startswith("differs from the file in 1 byte, first at section "
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
        # (argparse itself would import gettext lazily: the command's run is called directly.)
        code = ("import os, sys, argparse, sfcheck.proc, sfcheck.cli.proc as P; "
                "os.setgid(65534); os.setuid(65534); "
                f"sys.exit(P.run(argparse.Namespace(pid={pid}, json=False)))")
        res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                             timeout=60, cwd="/", env={"PATH": "/usr/bin"})
    assert res.returncode == 2, res.stderr
    assert res.stderr.startswith("sfcheck proc: cannot read"), res.stderr
    assert len(res.stderr.strip().splitlines()) == 1 and "Traceback" not in res.stderr


def _lib_copy(progs: dict[str, Path], tmp: Path, name: str = "libcopy.so") -> Path:
    """A private copy of the test library: the tests delete, truncate and rewrite it."""
    lib = tmp / name
    shutil.copyfile(progs["lib"], lib)
    return lib


def _rep(scan: ProcScan, path: Path) -> ObjectReport:
    return next(r for r in scan.reports if r.path == str(path))


def _child_proc(pid: int, prelude: str = "") -> subprocess.CompletedProcess[str]:
    """`sfcheck proc PID` in a child process (a signal there does not kill the tests), after
    `prelude` (Python run first: wraps a function to make a race happen at a chosen point)."""
    code = (f"import sys\n{prelude}\nfrom sfcheck.cli import main\n"
            f"sys.exit(main(['proc', '{pid}']))\n")
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=120, cwd=ROOT)


def test_file_truncated_during_the_read_is_no_sigbus(progs, tmp_path) -> None:
    """The target's library is cut to one page just after sfcheck took the file and before
    it parsed it (issue 27: SIGBUS, exit 135). The copy sfcheck reads is its own: the object
    is read whole; the library's pages past the new end are gone from the process too, and
    that is what the report says, with exit status 1."""
    lib = _lib_copy(progs, tmp_path)
    prelude = ("import os, sfcheck.proc as P\n_load = P.load_elf\n"
               "def cut(data, name=None):\n"
               f"    if name == {str(lib)!r}: os.truncate({str(lib)!r}, 4096)\n"
               "    return _load(data, name=name)\nP.load_elf = cut\n")
    with running(progs["sframe"], "dlopen", str(lib)) as pid:
        res = _child_proc(pid, prelude)
    assert res.returncode == 1, (res.returncode, res.stderr)
    assert f"{lib}: SFrame (version unknown: memory unreadable)" in res.stdout, res.stdout
    assert "memory unreadable at 0x" in res.stdout and "Traceback" not in res.stderr


def test_file_shrinking_and_regrowing_in_a_loop(progs, tmp_path) -> None:
    """The target truncates and rewrites its library as fast as it can while sfcheck reads it:
    every run ends with an exit status of its own and says what it met for that object."""
    lib = _lib_copy(progs, tmp_path)
    with running(progs["sframe"], "churn", str(lib)) as pid:
        runs = [_child_proc(pid) for _ in range(3)]
    for res in runs:
        assert res.returncode in (0, 1), (res.returncode, res.stderr)
        line = next(x for x in res.stdout.splitlines() if x.startswith(f"{lib}"))
        assert any(what in line for what in (
            "SFrame v3", "changed size while being read", "was written to while being read",
            "memory unreadable", "the file is not ELF now", "cannot parse ELF")), line


def test_unreadable_sframe_memory_is_an_outcome(progs, tmp_path, capsys) -> None:
    """The pages of the library's PT_GNU_SFRAME read EIO (an empty file is mapped over them):
    not "SFrame vNone ... registers" and exit 0, but memory unreadable at its address."""
    lib, empty = _lib_copy(progs, tmp_path), tmp_path / "empty"
    empty.write_bytes(b"")
    with running(progs["sframe"], "hole", str(lib), str(empty)) as pid:
        status = main(["proc", str(pid)])
        out = capsys.readouterr().out
        scan = examine(pid)
    rep = _rep(scan, lib)
    assert status == 1, out
    assert rep.version is None and not rep.registers and not rep.findings
    assert rep.sframe_range is not None
    assert rep.memory == f"unreadable at {rep.sframe_range[0]:#x} (Input/output error)"
    assert any(p.startswith(f"memory unreadable at {rep.sframe_range[0]:#x}")
               for p in rep.problems)
    assert f"{lib}: SFrame (version unknown: memory unreadable)" in out


@pytest.mark.skipif(os.geteuid() != 0, reason="/proc/PID/map_files needs root")
def test_deleted_library_is_read_and_counted(progs, tmp_path, capsys) -> None:
    """A library deleted under the running process (an upgrade under a daemon): read through
    /proc/PID/map_files, reported as deleted, counted; it still registers."""
    lib = _lib_copy(progs, tmp_path)
    with running(progs["sframe"], "dlopen", str(lib)) as pid:
        lib.unlink()
        status = main(["proc", str(pid)])
        out = capsys.readouterr().out
        rep = _rep(examine(pid), lib)
    assert rep.deleted and rep.sframe and rep.version == 3, rep
    assert rep.registers and rep.memory == "same as file", rep
    assert f"{lib} (deleted since mapped): SFrame v3" in out
    summary = out.strip().splitlines()[-1]
    assert "3 with SFrame" not in summary and ", 1 deleted since mapped" in summary, summary
    assert status in (0, 1)  # decided by the other objects (the executable's profile)


def test_replaced_library_is_not_read_by_its_path(progs, tmp_path) -> None:
    """As root the very inode is read through map_files; the file now at the path (an
    upgrade: other bytes) must not be taken for it."""
    lib = _lib_copy(progs, tmp_path)
    with running(progs["sframe"], "dlopen", str(lib)) as pid:
        lib.unlink()
        lib.write_bytes(b"\x7fELF" + bytes(60))  # the "new version" at the same path
        rep = _rep(examine(pid), lib)
    if os.geteuid() == 0:
        assert rep.deleted and rep.version == 3 and not rep.error, rep
    else:
        assert "replaced since it was mapped" in rep.error, rep


def test_object_that_cannot_be_loaded_exits_1(progs, tmp_path, capsys) -> None:
    bad = tmp_path / "broken.so"
    bad.write_bytes(b"\x7fELF" + b"\xff" * 60)
    with running(progs["sframe"], "map", str(bad)) as pid:
        status = main(["proc", str(pid)])
    out = capsys.readouterr().out
    assert status == 1
    assert f"{bad}: error: " in out and "1 that could not be examined" in out


@pytest.mark.parametrize("where", ["mapped_file", "read_mem"])
def test_process_exiting_during_the_read(progs, monkeypatch, capsys, where) -> None:
    """The target is killed (and reaped) at a chosen point of the read: its own outcome and
    exit status 3, not exit 1 with the memory it no longer has read as "shorter"."""
    import sfcheck.proc as P

    proc = subprocess.Popen([str(progs["sframe"])], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE)
    assert proc.stdout is not None and proc.stdout.readline() == b"ready\n"
    real = getattr(P, where)

    def kill_first(*args, **kw):
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        return real(*args, **kw)

    monkeypatch.setattr(P, where, kill_first)
    try:
        status = main(["proc", str(proc.pid)])
    finally:
        proc.kill()
        proc.wait()
    out = capsys.readouterr().out
    assert status == 3, out
    assert out.rstrip().endswith(f"process {proc.pid} exited during the read: the results "
                                 "above are incomplete")
    assert "shorter than the file" not in out


def test_zombie_says_what_it_is(capsys) -> None:
    proc = subprocess.Popen(["true"])
    try:
        for _ in range(500):
            with open(f"/proc/{proc.pid}/stat") as fh:
                if fh.read().rpartition(")")[2].split()[0] == "Z":
                    break
            time.sleep(0.01)
        assert main(["proc", str(proc.pid)]) == 2
        err = capsys.readouterr().err
    finally:
        proc.wait()
    assert err == (f"sfcheck proc: process {proc.pid} is a zombie (it has exited; its parent "
                   "has not reaped it yet): it has no memory left to read\n")


def _kernel_thread() -> int | None:
    from sfcheck.procfs import PF_KTHREAD, task

    for name in sorted(os.listdir("/proc"), key=lambda n: (len(n), n)):
        if name.isdigit() and (t := task(int(name))) is not None and t.flags & PF_KTHREAD:
            return int(name)
    return None


def test_kernel_thread_says_what_it_is(capsys) -> None:
    pid = _kernel_thread()
    if pid is None:
        pytest.skip("no kernel thread is visible in this PID namespace")
    assert main(["proc", str(pid)]) == 2
    assert capsys.readouterr().err == (f"sfcheck proc: process {pid} is a kernel thread: it "
                                       "has no user memory, so no objects and no SFrame\n")


def test_compare_counts_in_constant_memory() -> None:
    import tracemalloc

    a = bytes(8 << 20)
    b = bytearray(a)
    b[5:] = b"\x01" * (len(b) - 5 - 3)  + bytes(3)
    tracemalloc.start()
    try:
        got = compare(a, b)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert got == (len(a) - 8, 5)
    assert peak < 1 << 20, peak
    assert compare(a, a) == (0, None) and compare(b"ab", b"abc") == (0, None)


def test_exit_status_counts_objects_that_failed() -> None:
    ok = ObjectReport("/a", sframe=True, registers=True)
    assert exit_status(ProcScan(1, [ok])) == 0
    assert exit_status(ProcScan(1, [ok, ObjectReport("/b", error="x")])) == 1
    assert exit_status(ProcScan(1, [ok], exited=True)) == 3
    # a kernel-profile error counts unless the kernel never reads what it is about
    unread = ObjectReport("/c", sframe=True, registers=True, findings=[
        {"rule": "elf-abi-machine", "severity": "error", "message": "m", "effect": "nothing"}])
    assert unread.errors == 0 and exit_status(ProcScan(1, [ok, unread])) == 0
    read = ObjectReport("/d", sframe=True, registers=True, findings=[
        {"rule": "fre-start-order", "severity": "error", "message": "m", "effect": "skips"}])
    assert read.errors == 1 and exit_status(ProcScan(1, [ok, read])) == 1


def test_overwritten_64_mib_section_stays_small(progs, tmp_path) -> None:
    """A 64 MiB PT_GNU_SFRAME every byte of which the process changed: the comparison holds
    no list of offsets (it cost 2.9 GB), so the whole run stays under 300 MB."""
    from elfbuild import Elf, Phdr

    size = 64 << 20
    obj = tmp_path / "big.so"
    head = Elf(phdrs=[Phdr(1, 0, 0, 4096 + size, 4096 + size),
                      Phdr(0x6474E554, 4096, 4096, size, size)]).build()
    with open(obj, "wb") as f:
        f.write(head)
        f.truncate(4096 + size)  # sparse: the section reads as zeros
    with running(progs["sframe"], "mapflip", str(obj)) as pid:
        code = ("import resource, sys\nfrom sfcheck.cli import main\n"
                f"status = main(['proc', '--json', '{pid}'])\n"
                # VmHWM, not ru_maxrss: that also keeps the peak of the address space exec
                # replaced (pytest's, when it forked this child).
                "hwm = [l for l in open('/proc/self/status') if l.startswith('VmHWM')]\n"
                "print('MAXRSS', hwm[0].split()[1], file=sys.stderr)\nsys.exit(status)\n")
        res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                             timeout=300, cwd=ROOT)
    rss = [int(x.split()[1]) << 10 for x in res.stderr.splitlines() if x.startswith("MAXRSS")]
    assert res.returncode == 1, res.stderr[-2000:]
    doc = json.loads(res.stdout)
    rep = next(o for o in doc["objects"] if o["path"] == str(obj))
    assert rep["memory"] == f"differs from the file in {size} bytes, first at section " \
        "offset 0x0" and rep["differs"]
    assert rss and rss[0] < 300 << 20, rss
    print(f"64 MiB overwritten section: peak RSS {rss[0] >> 20} MiB")


def test_mapped_names_are_escaped(progs, tmp_path, capsys) -> None:
    """/proc/PID/maps escapes only a newline in a path: ESC and bidi overrides in a mapped
    file's name must not reach the terminal."""
    bad = tmp_path / "lib\x1b[31m\u202eos.so"
    bad.write_bytes(b"\x7fELF" + b"\xff" * 60)
    with running(progs["sframe"], "map", str(bad)) as pid:
        assert main(["proc", str(pid)]) == 1
    out = capsys.readouterr().out
    assert f"{tmp_path}/lib\\x1b[31m\\u202eos.so: error: " in out
    assert "\x1b" not in out and "\u202e" not in out


def test_process_turning_zombie_before_the_memory_is_opened(monkeypatch, capsys) -> None:
    """The target exits between the state check and the open of /proc/PID/mem (ESRCH): the
    error says it is a zombie, not that permission is missing."""
    import sfcheck.procfs as F

    proc = subprocess.Popen(["sleep", "60"])
    real = F.os.open

    def exit_first(path, *args, **kw):
        if str(path).endswith("/mem") and proc.poll() is None:
            os.kill(proc.pid, 9)
            while (t := F.task(proc.pid)) is not None and t.state != "Z":
                time.sleep(0.01)
        return real(path, *args, **kw)

    monkeypatch.setattr(F.os, "open", exit_first)
    try:
        status = main(["proc", str(proc.pid)])
    finally:
        monkeypatch.undo()
        proc.wait()
    err = capsys.readouterr().err
    assert status == 2 and "is a zombie" in err and "ptrace" not in err, err


def test_files_mapped_as_data_are_counted_not_read(progs, tmp_path, capsys) -> None:
    """A 4 GiB file mapped read-only (a database's cache, shared memory) is no object: the
    kernel registers nothing for it; it is counted, neither copied nor an error."""
    big = tmp_path / "cache.db"
    with open(big, "wb") as f:
        f.truncate(4 << 30)
    with running(progs["plain"], "mapdata", str(big)) as pid:
        assert main(["proc", str(pid)]) == 0
    out = capsys.readouterr().out
    assert str(big) not in out
    assert out.rstrip().endswith(", 1 file mapped as data only, not counted"), out


def test_library_refusal_goes_through_the_syscall_model(monkeypatch) -> None:
    """A library's registration is stacktrace_setup's: its ranges are checked first, then
    sframe_add_section's header read refuses what binfmt's would (a v2 section here)."""
    from sfcheck.proc import _profile

    v2 = load_elf(ROOT / "corpus" / "v2" / "libcorpus.so").sections[0].data
    rep = ObjectReport("/lib/x.so", sframe=True, registration=BY_SYSCALL,
                       sframe_range=(0x1000, 0x1000 + len(v2)), texts=[(0x4000, 0x5000)])
    _profile(rep, bytearray(v2), 0x1000, "kernel")
    assert any("refuses to register the section (-EINVAL): bad/unsupported sframe header: "
               "version 2" in p for p in rep.problems), rep.problems
    zero = ObjectReport("/lib/y.so", sframe=True, registration=BY_SYSCALL,
                        sframe_range=(0x1000, 0x1000 + len(v2)), texts=[(0, 0x1000)])
    _profile(zero, bytearray(v2), 0x1000, "kernel")
    assert any("zero-length sframe/text address" in p for p in zero.problems), zero.problems
    assert not any("version 2" in p for p in zero.problems)  # -EINVAL before the header
