"""`sfcheck unwind` on real aarch64 and s390x cores, against gdb-multiarch.

tests/unwind_progs is cross-compiled statically with -DTRAP (deepest faults) by the
Debian cross compilers, with each SFrame version their binutils can produce:

* aarch64 v1: gcc-aarch64-linux-gnu with bookworm's binutils 2.40;
* aarch64 v2: the same compiler with trixie's binutils 2.44 (.toolchains/bin-trixie-aarch64);
* aarch64 v3, s390x v3: the same compilers with binutils 2.47 from sid
  (.toolchains/bin-sid-aarch64, .toolchains/bin-sid-s390x).

The binutils are fetched by corpus/get-toolchains.sh. No Debian suite ships s390x
binutils 2.45/2.46, the only versions that write s390x SFrame v2 (2.44 has no s390x
SFrame, 2.47 writes v3): s390x v2 is not built.

qemu-user runs each program until it dies of SIGSEGV and writes the guest's core
(qemu_*.core: NT_PRSTATUS per thread, NT_AUXV, no NT_FILE, hence `--exe`);
gdb-multiarch reads the same core with the executable's DWARF CFI and prints every
thread's frames. Every frame gdb shows in code with SFrame must come out of our walk of
the same thread with the same PC, and the walk must stop at the first frame without
SFrame (static glibc has none) with "no FDE for PC".

gdb 13 (bookworm) hangs unwinding the handler's frame in qemu's aarch64 signal
trampoline, so the aarch64 signal cores are not compared with gdb: there the frames are
checked by their symbols (deepest, recurse..., handler, the signal frame, raise_it,
main, then libc). On s390x gdb reads the signal core (qemu's trampoline page holds
`svc 119`/`svc 173`) and the whole walk through the signal frame is compared.
"""

from __future__ import annotations

import glob
import json
import resource
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
GDB = shutil.which("gdb-multiarch")

# (arch, SFrame version) -> (compiler, -B directory or None, qemu)
PAIRS: dict[tuple[str, int], tuple[str, Path | None, str]] = {
    ("aarch64", 1): ("aarch64-linux-gnu-gcc", None, "qemu-aarch64"),
    ("aarch64", 2): ("aarch64-linux-gnu-gcc", TOOLCHAINS / "bin-trixie-aarch64",
                     "qemu-aarch64"),
    ("aarch64", 3): ("aarch64-linux-gnu-gcc", TOOLCHAINS / "bin-sid-aarch64", "qemu-aarch64"),
    ("s390x", 3): ("s390x-linux-gnu-gcc", TOOLCHAINS / "bin-sid-s390x", "qemu-s390x"),
}
OURS = {"deepest", "recurse", "callback", "with_alloca", "big_stack", "with_fp", "handler",
        "raise_it", "main", "shlib_bounce", "spin", "worker"}
UNAVAILABLE = "not enough registers or memory available to unwind further"
_builds: dict[tuple[str, ...] | tuple[str, int, str], Path] = {}


def _build(arch: str, version: int, opt: str, base: Path, *extra: str) -> Path:
    key = (arch, version, opt, *extra)
    if key in _builds:
        return _builds[key]
    cc, bdir, qemu = PAIRS[(arch, version)]
    for tool in (cc, qemu):
        if shutil.which(tool) is None:
            pytest.skip(f"{tool} is not installed (Debian: gcc-{arch}-linux-gnu, qemu-user)")
    if GDB is None:
        pytest.skip("gdb-multiarch is not installed (Debian package gdb-multiarch)")
    libc = {"aarch64": "arm64", "s390x": "s390x"}[arch]
    if not Path(f"/usr/{arch}-linux-gnu/include/stdio.h").exists():
        # gcc-*-linux-gnu only recommends the cross C library; without it the build fails
        pytest.skip(f"the {arch} C library headers are not installed (Debian: "
                    f"libc6-dev-{libc}-cross)")
    flags = []
    if bdir is not None:
        if not (bdir / "as").exists():
            pytest.skip(f"SFrame v{version} for {arch} needs binutils in {bdir} (not present; "
                        "corpus/get-toolchains.sh fetches them)")
        flags = [f"-B{bdir}/"]
    out = base / f"{arch}-v{version}{opt}{''.join(extra)}"
    out.mkdir(exist_ok=True)  # a failed build of the same key may have left it
    cmd = [cc, *flags, opt, *extra, "-static", "-DTRAP", "-Wa,--gsframe",
           "-fasynchronous-unwind-tables", "-pthread", "-o", str(out / "frames"),
           str(PROGS / "frames.c"), str(PROGS / "shlib.c")]
    res = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    assert res.returncode == 0, f"{' '.join(cmd)}\n{res.stderr}"
    secs = load_elf(out / "frames").sections
    assert secs and secs[0].data[2] == version, f"expected SFrame v{version}"
    _builds[key] = out
    return out


def _core(build: Path, arch: str, scenario: str) -> Path:
    """Run the program under qemu-user until it dies; the guest core qemu wrote."""
    run = build / scenario
    run.mkdir()

    def limits() -> None:  # the guest core fits; qemu's own (host) core is cut short
        resource.setrlimit(resource.RLIMIT_CORE, (64 << 20, 64 << 20))

    qemu = {"aarch64": "qemu-aarch64", "s390x": "qemu-s390x"}[arch]
    res = subprocess.run([qemu, str(build / "frames"), scenario], capture_output=True,
                         text=True, timeout=60, cwd=run, preexec_fn=limits)
    cores = glob.glob(str(run / "qemu_*.core"))
    for other in run.glob("core*"):
        other.unlink()  # the host core of qemu itself, if the system wrote one
    if len(cores) != 1:
        pytest.fail(f"qemu wrote no guest core (status {res.returncode}): {res.stderr}")
    return Path(cores[0])


def _gdb(build: Path, core: Path) -> tuple[dict[int, list[tuple[int, int, str]]],
                                          dict[int, str]]:
    script = build / "frames.py"
    script.write_text(GDB_FRAMES_PY)
    res = subprocess.run([GDB or "gdb-multiarch", "-batch", "-nx", "-iex", "set auto-load off",
                          "-iex", "set backtrace past-main on",
                          str(build / "frames"), str(core), "-x", str(script)],
                         capture_output=True, text=True, timeout=120)
    frames: dict[int, list[tuple[int, int, str]]] = {}
    stops: dict[int, str] = {}
    for line in res.stdout.splitlines():
        if line.startswith("GDBSTOP "):
            _, lwp, reason = line.split(" ", 2)
            stops[int(lwp)] = reason
        if line.startswith("GDBFRAME "):
            _, lwp, level, pc, name = line.split(" ", 4)
            frames.setdefault(int(lwp), []).append((int(level), int(pc, 16), name))
    if not frames:
        pytest.fail(f"gdb-multiarch printed no frames:\n{res.stdout}\n{res.stderr}")
    return frames, stops


def _ours(core: Path, exe: Path, capsys: pytest.CaptureFixture[str]) -> tuple[int, Any]:
    capsys.readouterr()
    status = cli.main(["--core", str(core), "--exe", str(exe), "--json"])
    return status, json.loads(capsys.readouterr().out)


@pytest.mark.parametrize("scenario", ["plain", "signal", "threads"])
@pytest.mark.parametrize("opt", ["-O0", "-O2"])
@pytest.mark.parametrize(("arch", "version"), sorted(PAIRS))
def test_cross_walk_matches_gdb(arch: str, version: int, opt: str, scenario: str,
                                tmp_path_factory: pytest.TempPathFactory,
                                capsys: pytest.CaptureFixture[str]) -> None:
    build = _build(arch, version, opt, tmp_path_factory.getbasetemp())
    core = _core(build, arch, scenario)
    status, out = _ours(core, build / "frames", capsys)
    assert out["abi"] == {"aarch64": "aarch64-le", "s390x": "s390x"}[arch]
    ours = {t["pid"]: t for t in out["threads"]}
    assert len(ours) == (2 if scenario == "threads" else 1)
    if arch == "aarch64" and scenario == "signal":  # no gdb here (see the docstring)
        (thread,) = ours.values()
        walked = thread["frames"]
        names = [f["symbol"] for f in walked]
        k = names.index("handler")
        assert names[0] == "deepest" and set(names[1:k]) == {"recurse"} and k >= 4
        assert walked[k + 1]["signal"] and names[k + 2:k + 4] == ["raise_it", "main"]
        assert len(walked) == k + 5 and thread["stop"]["reason"] == "no FDE for PC"
        assert status == 0
        return
    gdb_frames, gdb_stops = _gdb(build, core)
    assert sorted(ours) == sorted(gdb_frames)
    unavailable = False
    for lwp, frames in gdb_frames.items():
        names = [name for _, _, name in frames]
        walked = ours[lwp]["frames"]
        if gdb_stops.get(lwp) == UNAVAILABLE and set(names) <= OURS:
            # s390x -O0 keeps the caller's FP in a floating-point register, which qemu's
            # cores do not hold (no NT_PRFPREG): gdb stops where the FP is needed, so must we.
            assert [hex(f["pc"]) for f in walked] == [hex(pc) for _, pc, _ in frames]
            assert ours[lwp]["stop"]["reason"] == "register unavailable"
            assert "FP" in ours[lwp]["stop"]["detail"]
            unavailable = True
            continue
        cut = next((i for i, n in enumerate(names) if n not in OURS and n != SIGTRAMP),
                   len(names))
        assert cut >= (6 if lwp == min(gdb_frames) else 2), frames  # ran as designed
        assert cut < len(frames), f"LWP {lwp}: expected a libc frame at the end: {frames}"
        assert [hex(f["pc"]) for f in walked] == [hex(pc) for _, pc, _ in frames[:cut + 1]]
        assert ours[lwp]["stop"]["reason"] == "no FDE for PC"
        assert [SIGTRAMP if f["signal"] else f["symbol"] for f in walked[:cut]] == names[:cut]
    assert status == (1 if unavailable else 0)


PLAIN_FRAMES = ["deepest", "recurse", "recurse", "recurse", "recurse", "callback",
                "shlib_bounce", "with_alloca", "big_stack", "with_fp", "main"]


@pytest.mark.parametrize("version", [1, 3])
def test_aarch64_pac_signed_return_addresses(version: int,
                                             tmp_path_factory: pytest.TempPathFactory,
                                             capsys: pytest.CaptureFixture[str]) -> None:
    """-mbranch-protection=pac-ret: qemu's `max` CPU signs the saved return addresses, and
    the FREs say so (mangled RA). qemu's cores have no NT_ARM_PAC_MASK, so gdb cannot strip
    the signature and stops at the first signed RA; we clear the bits above a 48-bit
    address, note the mangled RAs, and reach libc like the unsigned build."""
    build = _build("aarch64", version, "-O2", tmp_path_factory.getbasetemp(),
                   "-mbranch-protection=pac-ret")
    core = _core(build, "aarch64", "plain")
    gdb_frames, _ = _gdb(build, core)
    status, out = _ours(core, build / "frames", capsys)
    (thread,) = out["threads"]
    walked = thread["frames"]
    (gdb_main,) = gdb_frames.values()
    n = min(len(gdb_main), 2)  # gdb's frames, before it meets the first signed RA
    assert n >= 1 and [f["pc"] for f in walked[:n]] == [pc for _, pc, _ in gdb_main[:n]]
    assert [f["symbol"] for f in walked[:-1]] == PLAIN_FRAMES
    assert all(f["pc"] < 1 << 48 for f in walked)
    assert any(f["ra_mangled"] for f in walked)
    assert thread["stop"]["reason"] == "no FDE for PC" and status == 0
