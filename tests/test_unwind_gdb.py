"""`sfcheck unwind --core` against gdb's own backtrace of the same process.

Small programs (tests/unwind_progs) are built with `-Wa,--gsframe` by each
available toolchain (bookworm's gas: SFrame v1; .toolchains/bin-trixie: v2;
.toolchains/bin-sid: v3) at -O0 and -O2, as PIE and static. gdb stops them
inside `deepest` (or in a PLT stub), writes a core with `gcore` and prints the
frames of every thread (`thread apply all bt`); every frame gdb shows in code
with SFrame (and the signal trampoline, which we step through as gdb does)
must come out of our walk of the same thread with the same PC, and the walk
must stop at the first frame without SFrame (glibc here has none) with "no FDE
for PC".

The expected frames come from gdb, never from this file.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

from sfcheck.cli import unwind as cli
from sfcheck.elf.loader import load_elf

from unwind_build import GDB_FRAMES_PY, SIGTRAMP

ROOT = Path(__file__).resolve().parents[1]
PROGS = Path(__file__).resolve().parent / "unwind_progs"
TOOLCHAINS = ROOT / ".toolchains"

# SFrame version -> gcc -B directory (None: the system's binutils).
VERSIONS: dict[int, Path | None] = {1: None, 2: TOOLCHAINS / "bin-trixie",
                                    3: TOOLCHAINS / "bin-sid"}
# Functions of ours that have SFrame data; gdb names PLT stubs "sym@plt".
OURS = {"deepest", "recurse", "callback", "with_alloca", "big_stack", "with_fp", "handler",
        "raise_it", "main", "shlib_bounce", "shlib_bounce@plt", "spin", "worker"}
# (scenario, gdb breakpoint, the fewest frames gdb must show in our code, thread 1)
SCENARIOS = {
    "plain": ("deepest", 11),
    "signal": ("deepest", 9),
    "plt": ("*'shlib_bounce@plt'", 5),
    "threads": ("deepest", 11),
}

GCC, GDB = shutil.which("gcc"), shutil.which("gdb")
_builds: dict[tuple[int, str, bool], Path] = {}


def _toolchain(version: int) -> list[str]:
    if GCC is None or GDB is None:
        pytest.skip("gcc and gdb are needed for the ground-truth tests")
    bdir = VERSIONS[version]
    if bdir is None:
        return []
    if not (bdir / "as").exists() or not (bdir / "ld").exists():
        pytest.skip(f"SFrame v{version} needs binutils in {bdir} (not present)")
    return [f"-B{bdir}/"]


def _build(version: int, opt: str, base: Path, static: bool = False) -> Path:
    key = (version, opt, static)
    if key in _builds:
        return _builds[key]
    flags = _toolchain(version)
    out = base / f"v{version}{opt}{'-static' if static else ''}"
    out.mkdir()
    common = ["gcc", *flags, opt, "-Wa,--gsframe", "-fasynchronous-unwind-tables", "-pthread"]
    if static:  # no shared object: shlib.c is linked in, shlib_bounce is a direct call
        cmds = [[*common, "-static", "-o", str(out / "frames"), str(PROGS / "frames.c"),
                 str(PROGS / "shlib.c")]]
        names = ["frames"]
    else:
        cmds = [[*common, "-shared", "-fPIC", "-o", str(out / "libshlib.so"),
                 str(PROGS / "shlib.c")],
                [*common, "-o", str(out / "frames"), str(PROGS / "frames.c"), f"-L{out}",
                 "-lshlib", "-Wl,-rpath,$ORIGIN"]]
        names = ["frames", "libshlib.so"]
    for cmd in cmds:
        res = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
        assert res.returncode == 0, f"{' '.join(cmd)}\n{res.stderr}"
    # The toolchain must really have produced the version this case is about.
    for name in names:
        secs = load_elf(out / name).sections
        assert secs and secs[0].data[2] == version, f"{name}: expected SFrame v{version}"
    _builds[key] = out
    return out


GdbFrames = dict[int, list[tuple[int, int, str]]]  # LWP -> (level, pc, name), innermost first


def _gdb(build: Path, scenario: str) -> tuple[Path, GdbFrames, list[str]]:
    bp, _ = SCENARIOS[scenario]
    core = build / f"core.{scenario}"
    script = build / "frames.py"
    script.write_text(GDB_FRAMES_PY)
    cmd = [GDB or "gdb", "-batch", "-nx", "-ex", "set backtrace past-main on",
           "-ex", "handle SIGSEGV nostop noprint pass", "-ex", f"break {bp}", "-ex", "run",
           "-ex", f"gcore {core}", "-ex", "bt", "-x", str(script),
           "--args", str(build / "frames"), scenario]
    res = subprocess.run(cmd, capture_output=True, text=True, timeout=120, cwd=build)
    frames: GdbFrames = {}
    for m in re.finditer(r"^GDBFRAME (\d+) (\d+) (0x[0-9a-f]+) (.+)$", res.stdout, re.M):
        frames.setdefault(int(m[1]), []).append((int(m[2]), int(m[3], 16), m[4]))
    if not core.exists() or not frames:
        pytest.fail(f"gdb did not stop and dump a core:\n{res.stdout}\n{res.stderr}")
    bt = [line for line in res.stdout.splitlines() if line.startswith("#")]
    return core, frames, bt


def _first_uncovered(frames: list[tuple[int, int, str]]) -> int:
    return next((i for i, (_, _, name) in enumerate(frames)
                 if name not in OURS and name != SIGTRAMP), len(frames))


def _compare_threads(gdb_frames: GdbFrames, out: dict[str, Any]) -> None:
    """Every thread of the core, walked by us, equals gdb's frames of the same LWP up to
    the first frame without SFrame, where our walk stops with "no FDE for PC"."""
    ours = {t["pid"]: t for t in out["threads"]}
    assert sorted(ours) == sorted(gdb_frames)
    for lwp, frames in gdb_frames.items():
        cut = _first_uncovered(frames)
        assert cut < len(frames), f"LWP {lwp}: expected a libc frame at the end"
        got = ours[lwp]
        assert [hex(f["pc"]) for f in got["frames"]] == [hex(pc) for _, pc, _ in
                                                        frames[:cut + 1]], lwp
        assert got["stop"]["reason"] == "no FDE for PC" and got["stop"]["pc"] == frames[cut][1]
        for f, (_, _, name) in zip(got["frames"], frames[:cut], strict=False):
            assert f["signal"] == (name == SIGTRAMP), (f, name)
            if name != SIGTRAMP:  # symbols: .symtab/.dynsym, PLT stubs synthesised as gdb
                assert f["symbol"] == name, (f, name)
    assert out["summary"]["walked"] == len(gdb_frames)
    assert out["summary"]["no_sframe"] == len(gdb_frames)


def _ours(core: Path, capsys: pytest.CaptureFixture[str], *extra: str) -> tuple[int, Any]:
    capsys.readouterr()
    status = cli.main(["--core", str(core), "--json", *extra])
    return status, json.loads(capsys.readouterr().out)


@pytest.mark.parametrize("scenario", sorted(SCENARIOS))
@pytest.mark.parametrize("opt", ["-O0", "-O2"])
@pytest.mark.parametrize("version", sorted(VERSIONS))
def test_walk_matches_gdb(version: int, opt: str, scenario: str,
                          tmp_path_factory: pytest.TempPathFactory,
                          capsys: pytest.CaptureFixture[str]) -> None:
    build = _build(version, opt, tmp_path_factory.getbasetemp())
    core, gdb_frames, bt = _gdb(build, scenario)
    main_lwp = min(gdb_frames)  # the main thread's LWP is the process id, the lowest

    # gdb's `bt` prints caller PCs as return addresses, the same values as
    # Frame.pc() in its Python API; check that before relying on the latter.
    for line in bt:
        m = re.match(r"#(\d+)\s+(0x[0-9a-f]+) in ", line)
        if m:
            assert gdb_frames[main_lwp][int(m[1])][1] == int(m[2], 16), line
    # The program ran as designed.
    assert _first_uncovered(gdb_frames[main_lwp]) >= SCENARIOS[scenario][1], gdb_frames
    assert len(gdb_frames) == (2 if scenario == "threads" else 1)
    if scenario == "signal":
        assert SIGTRAMP in [name for _, _, name in gdb_frames[main_lwp]]

    status, out = _ours(core, capsys)
    assert status == 0
    _compare_threads(gdb_frames, out)
    if scenario == "threads":  # --thread N: that thread alone
        second = next(t for t in out["threads"] if t["pid"] != main_lwp)
        _, one = _ours(core, capsys, "--thread", str(second["number"]))
        assert [t["pid"] for t in one["threads"]] == [second["pid"]]
        assert one["threads"][0]["frames"] == second["frames"]


@pytest.mark.parametrize("scenario", ["threads", "signal"])
@pytest.mark.parametrize("opt", ["-O0", "-O2"])
@pytest.mark.parametrize("version", sorted(VERSIONS))
def test_static_walk_matches_gdb(version: int, opt: str, scenario: str,
                                 tmp_path_factory: pytest.TempPathFactory,
                                 capsys: pytest.CaptureFixture[str]) -> None:
    """Static executables: libc's code is in the executable, without SFrame."""
    if not Path("/usr/lib/x86_64-linux-gnu/libc.a").exists():
        pytest.skip("static glibc (libc6-dev) is not installed")
    build = _build(version, opt, tmp_path_factory.getbasetemp(), static=True)
    core, gdb_frames, _ = _gdb(build, scenario)
    status, out = _ours(core, capsys)
    assert status == 0
    _compare_threads(gdb_frames, out)


def test_text_output_and_frame_cap(tmp_path_factory: pytest.TempPathFactory,
                                   capsys: pytest.CaptureFixture[str]) -> None:
    build = _build(1, "-O2", tmp_path_factory.getbasetemp())
    core, by_lwp, _ = _gdb(build, "plain")
    (lwp, gdb_frames), = by_lwp.items()
    capsys.readouterr()
    assert cli.main(["--core", str(core)]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == f"Thread 1 (LWP {lwp}):"
    frame_lines = [ln for ln in lines if ln.startswith("#")]
    assert frame_lines[0].startswith(f"#0  {gdb_frames[0][1]:#018x} in deepest")
    assert f"({build / 'frames'})" in frame_lines[0]
    assert "(" + str(build / "libshlib.so") + ")" in next(ln for ln in frame_lines
                                                          if "shlib_bounce" in ln)
    stop = next(ln for ln in lines if ln.startswith("Stopped"))
    libc_pc = gdb_frames[len(frame_lines) - 1][1]
    # The stop names the address and the module it is in.
    assert re.match(rf"Stopped at frame #{len(frame_lines) - 1} \({libc_pc:#x} in /\S+libc"
                    r"[^)]*\): no FDE for PC", stop), stop
    assert lines[-1].startswith(f"Summary: 1 thread walked, {len(frame_lines)} frames; "
                                "0 reached their outermost frame, 1 stopped in code without "
                                "SFrame (/"), lines[-1]

    status, out = _ours(core, capsys, "--max-frames", "3")
    assert status == 0
    (thread,) = out["threads"]
    assert [f["pc"] for f in thread["frames"]] == [pc for _, pc, _ in gdb_frames[:3]]
    assert thread["stop"]["reason"] == "frame cap"


def test_exe_override_and_sysroot(tmp_path_factory: pytest.TempPathFactory,
                                  capsys: pytest.CaptureFixture[str]) -> None:
    """With the files moved under a sysroot, the walk is the same; without them it
    stops in the first frame, in code it cannot find."""
    build = _build(1, "-O0", tmp_path_factory.getbasetemp())
    core, gdb_frames, _ = _gdb(build, "plain")
    _, full = _ours(core, capsys)
    root = tmp_path_factory.mktemp("sysroot")
    dest = root / str(build).lstrip("/")
    dest.mkdir(parents=True)
    shutil.copy(build / "libshlib.so", dest / "libshlib.so")
    exe = root / "renamed-exe"
    shutil.copy(build / "frames", exe)
    moved = build.parent / (build.name + "-moved")
    build.rename(moved)
    try:
        status, out = _ours(moved / core.name, capsys, "--sysroot", str(root), "--exe", str(exe))
        assert status == 0
        assert [f["pc"] for f in out["threads"][0]["frames"]] == \
            [f["pc"] for f in full["threads"][0]["frames"]]
        status, out = _ours(moved / core.name, capsys)
        (thread,) = out["threads"]
        assert len(thread["frames"]) == 1 and thread["stop"]["reason"] == "no FDE for PC"
        assert "file not found" in thread["stop"]["detail"]
    finally:
        moved.rename(build)


def test_bad_input_is_a_message_not_a_traceback(tmp_path: Path,
                                                capsys: pytest.CaptureFixture[str]) -> None:
    junk = tmp_path / "junk"
    junk.write_bytes(b"\x7fELF" + b"\xff" * 60)
    for args in (["--core", str(tmp_path / "missing")], ["--core", str(junk)],
                 ["--core", str(PROGS / "frames.c")]):
        assert cli.main(args) == 2
        err = capsys.readouterr().err
        assert "error:" in err and "Traceback" not in err
    with pytest.raises(SystemExit) as exc:
        cli.main(["--core", str(junk), "--thread", "0"])
    assert exc.value.code == 2


def test_core_reads_undumped_file_mappings_from_the_file(
        tmp_path_factory: pytest.TempPathFactory) -> None:
    """gcore leaves read-only file mappings out of the core: reads there go to the file."""
    from sfcheck.unwind.core import CoreFile

    build = _build(1, "-O2", tmp_path_factory.getbasetemp())
    core_path, _, _ = _gdb(build, "plain")
    core = CoreFile.open(str(core_path))
    lib = str(build / "libshlib.so")
    blob = (build / "libshlib.so").read_bytes()
    undumped = [m for m in core.mappings if m.path == lib and not any(
        s.vaddr <= m.start < s.vaddr + s.filesz for s in core.loads)]
    assert undumped, "expected gcore to leave a mapping of libshlib.so out"
    m = undumped[0]
    assert core.read(m.start, 16) == blob[m.file_offset:m.file_offset + 16]
    assert core.read(m.end - 8, 16) is None  # runs off the mapping
    blind = CoreFile.open(str(core_path), lambda p: None)
    assert blind.read(m.start, 16) is None
