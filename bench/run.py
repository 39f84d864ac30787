"""sfcheck against binutils, in the same run: `python bench/run.py [options]`.

Builds its inputs the way users' binaries are built (bench/cbuild.py: generated C of
1k..1M functions, gcc -O2, assembled with --gsframe by binutils 2.40 (v1), 2.44 (v2)
and 2.47 (v3), linked into shared libraries with their .eh_frame and symbols; the same
without .eh_frame FDEs, `.cfi_sections .sframe`; the corpus/ binaries; the sqlite3
shell; a directory of 6 copies each of sqlite3 and two libraries for the bulk scan),
then times, round after round so that load on the machine hits every tool alike, the
median of --reps runs of:

  sfcheck FILE              full strict check (default rules), a process started
                            from the venv's own bin/
  sfcheck structure only    --disable semantic --disable defect (compiled inputs)
  sfcheck dump FILE         objdump-style text, to /dev/null
  readelf --sframe FILE     the newest installed readelf that reads the version
  readelf --sframe --debug-dump=frames FILE   (files with .eh_frame)
  bulk: sfcheck -j 1 DIR    against a loop of readelf --sframe --debug-dump=frames

Without gcc or the toolchains, `--synthetic` sections from the project's encoder in a
minimal ELF wrapper stand in (structure only: no .eh_frame, no symbols).

and in-process: the decoder alone (every FDE and FRE decoded) and the unwinder
(frames/s of sfcheck.unwind.bench; PC lookups/s on the largest section). It
prints a table of ns/FRE, peak RSS and the sfcheck / readelf ratios, the cost
curve over the synthetic sizes (and a PNG of it when matplotlib is installed)
and, with --out, writes the same as Markdown.
"""

from __future__ import annotations

import argparse
import itertools
import os
import pickle
import platform
import random
import shlex
import shutil
import statistics
import subprocess
import sys
import tarfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.append(str(ROOT))  # last: an installed sfcheck wins over the checkout

from bench.cbuild import library  # noqa: E402
from bench.elfwrap import wrap_section  # noqa: E402
from bench.synth import check_tiling, encode_tiled, plan  # noqa: E402
from sfcheck.elf.loader import load_elf  # noqa: E402
from sfcheck.errors import ElfError  # noqa: E402
from sfcheck.format.decode import Decoder, decode_header  # noqa: E402

WORK = ROOT / "build" / "bench"
TC = ROOT / ".toolchains"
# Newest first: each input is read by the first of these that decodes it.
READELFS = [TC / "bin-sid" / "readelf", TC / "bin-trixie" / "readelf", Path("/usr/bin/readelf")]
SQLITE_SDIST = "sqlean-py==3.50.4.5"  # its sdist ships the sqlite3.c amalgamation + shell.c
SQLITE_TOOLCHAINS = {"v3": TC / "bin-sid", "v2": TC / "bin-trixie"}
# The binutils whose gas writes each SFrame version (Debian 12's own writes v1).
GAS = {1: Path("/usr/bin"), 2: TC / "bin-trixie", 3: TC / "bin-sid"}
STRUCTURE_ONLY = ("--disable", "semantic", "--disable", "defect")


def log(msg: str) -> None:
    print(f"[bench] {msg}", file=sys.stderr, flush=True)


# ---------------------------------------------------------------------------
# Processes: wall time and peak RSS of one run.

GNU_TIME = Path("/usr/bin/time")
# Children write .pyc files as an installed sfcheck would have them (this variable,
# when set in the caller's environment, would make every run compile from source).
CHILD_ENV = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
_RSS_FILE = WORK / "rss.txt"


def run_once(argv: Sequence[str]) -> tuple[float, int, int]:
    """(seconds, peak RSS in KiB, exit status) of one process, output discarded.

    The peak RSS comes from GNU time when installed: a child forked from this (large)
    Python process would otherwise report this process's RSS as its own high-water mark.
    """
    rss_via_time = GNU_TIME.exists()
    full = [str(GNU_TIME), "-f", "%M", "-o", str(_RSS_FILE), *argv] if rss_via_time else argv
    t0 = time.perf_counter()
    p = subprocess.Popen(full, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                         env=CHILD_ENV)
    _pid, status, usage = os.wait4(p.pid, 0)
    dt = time.perf_counter() - t0
    p.returncode = os.waitstatus_to_exitcode(status)
    rss = usage.ru_maxrss
    if rss_via_time:
        text = _RSS_FILE.read_text().split()
        rss = int(text[-1]) if text and text[-1].isdigit() else rss
    return dt, rss, p.returncode


def readelf_version(path: Path) -> str:
    out = subprocess.run([str(path), "--version"], capture_output=True, text=True).stdout
    first = out.splitlines()[0] if out else "?"
    return first.split()[-1]


def pick_readelf(files: Sequence[Path]) -> Path | None:
    """The newest readelf that dumps the SFrame data of `files` without an error."""
    for re_path in READELFS:
        if not re_path.exists():
            continue
        p = subprocess.run([str(re_path), "--sframe", *map(str, files)], capture_output=True,
                           text=True)
        # A readelf that knows the format but not this version prints the header only
        # (2.44 with v1): the function index must be there too.
        if (p.returncode == 0 and "Error" not in p.stderr and "SFrame" in p.stdout
                and ("func idx [" in p.stdout or "Num FDEs: 0" in p.stdout)):
            return re_path
    return None


# ---------------------------------------------------------------------------
# Inputs.

@dataclass
class Input:
    name: str
    files: list[Path]
    kind: str  # "compiled", "synthetic", "real" or "bulk"
    fdes: int = 0
    fres: int = 0
    sframe_bytes: int = 0
    eh_frame: bool = False
    readelf: Path | None = None
    sections: list[tuple[bytes, int]] = field(default_factory=list)  # (data, vma)
    series: str = ""  # compiled/synthetic: the size series this input belongs to
    n: int = 0  # functions (compiled) or FDEs (synthetic) asked for

    def load(self) -> None:
        # A bulk input is one directory: its files are what is read.
        files = sorted(self.files[0].iterdir()) if self.kind == "bulk" else self.files
        for f in files:
            info = load_elf(f)
            for sec in info.sections:
                h = decode_header(sec.data)
                self.fdes += h.num_fdes
                self.fres += h.num_fres
                self.sframe_bytes += len(sec.data)
                self.sections.append((sec.data, sec.vma))
            self.eh_frame = self.eh_frame or _has_eh_frame(f)
        self.readelf = pick_readelf(files)


def _has_eh_frame(path: Path) -> bool:
    from elftools.elf.elffile import ELFFile

    with open(path, "rb") as f:
        sec = ELFFile(f).get_section_by_name(".eh_frame")
        return sec is not None and sec.data_size > 0


def synthetic(n: int, version: int) -> Input:
    path = WORK / f"synth-{n}-v{version}.elf"
    if not path.exists():
        t0 = time.perf_counter()
        lay = plan(n, version)
        data = encode_tiled(lay)
        path.write_bytes(wrap_section(data, lay.sframe_vma, lay.text_start, lay.text_end,
                                      version))
        log(f"built {path.name} ({len(data):,} bytes) in {time.perf_counter() - t0:.1f} s")
    return Input(f"synthetic {n // 1000}k FDEs v{version}", [path], "synthetic",
                 series=f"synthetic v{version}", n=n)


def compiled(n: int, version: int, eh_frame: bool = True, jobs: int = 2) -> Input | None:
    """A shared library of n generated functions, gas --gsframe for `version`."""
    path = library(WORK, n, GAS[version], f"v{version}", eh_frame, jobs)
    if path is None:
        return None
    series = f"v{version}" + ("" if eh_frame else " sframe-only")
    return Input(f"lib {_k(n)} fns {series}", [path], "compiled", series=series, n=n)


def _k(n: int) -> str:
    return f"{n // 1_000_000}M" if n >= 1_000_000 else f"{n // 1000}k"


def bulk_input(sqlite: Path | None, libs: Sequence[Path], copies: int = 6) -> Input | None:
    """A directory of `copies` copies of sqlite3 and each library (a gate's package tree)."""
    d = WORK / "bulk"
    srcs = ([sqlite] if sqlite else []) + list(libs)
    if not srcs:
        return None
    if d.exists():
        shutil.rmtree(d)
    d.mkdir(parents=True)
    for src in srcs:
        for k in range(copies):
            shutil.copyfile(src, d / f"{src.name}.{k}")
    names = ", ".join(s.name for s in srcs)
    return Input(f"bulk: {copies} x ({names})", [d], "bulk")


def corpus_inputs() -> list[Input]:
    """corpus/{v1,v2,v3,llvm}: every ELF with SFrame data, one input per directory."""
    out = []
    for sub in ("v1", "v2", "v3", "llvm"):
        files = []
        for f in sorted((ROOT / "corpus" / sub).glob("*")):
            if not f.is_file() or f.suffix not in ("", ".o", ".so"):
                continue
            try:
                if load_elf(f).sections:
                    files.append(f)
            except ElfError:
                continue
        if files:
            out.append(Input(f"corpus/{sub} ({len(files)} files)", files, "real"))
    return out


def _sqlite_sources() -> Path | None:
    src = WORK / "sqlite-src"
    if (src / "sqlite3.c").exists() and (src / "init.h").exists():
        return src
    dl = WORK / "sdist"
    dl.mkdir(parents=True, exist_ok=True)
    p = subprocess.run([sys.executable, "-m", "pip", "download", "-q", "--no-deps",
                        "--no-binary", ":all:", SQLITE_SDIST, "-d", str(dl)],
                       capture_output=True, text=True)
    tars = list(dl.glob("*.tar.gz"))
    if p.returncode or not tars:
        log(f"cannot download {SQLITE_SDIST}: {p.stderr.strip()[-200:]}")
        return None
    src.mkdir(exist_ok=True)
    with tarfile.open(tars[0]) as tar:
        for m in tar.getmembers():
            if m.name.endswith(("/sqlite/sqlite3.c", "/sqlite/shell.c", "/sqlite/sqlite3.h",
                                "/sqlite/sqlite3ext.h", "/sqlite/init.h")):
                m.name = os.path.basename(m.name)
                tar.extract(m, src, filter="data")
    # sqlean's amalgamation calls its extension bundle's init: stub it out.
    (src / "stub.c").write_text("int sqlite3_sqlean_init(void *db, char **err, const void *api)"
                                " { (void)db; (void)err; (void)api; return 0; }\n")
    return src


def sqlite_inputs() -> list[Input]:
    """The sqlite3 shell (sqlite3.c + shell.c, -O2) built with each private binutils."""
    if not shutil.which("gcc"):
        log("no gcc: sqlite3 skipped")
        return []
    out = []
    src = None
    for tag, bindir in SQLITE_TOOLCHAINS.items():
        exe = WORK / f"sqlite3-{tag}"
        if not exe.exists():
            if not (bindir / "as").exists():
                log(f"{bindir} missing (corpus/get-toolchains.sh fetches it): sqlite3 {tag} "
                    "skipped")
                continue
            src = src or _sqlite_sources()
            if src is None:
                return out
            log(f"compiling sqlite3 with {bindir.name} (about a minute per object)")
            cc = ["gcc", f"-B{bindir}/", "-O2", "-Wa,--gsframe", "-DSQLITE_THREADSAFE=0",
                  "-DSQLITE_OMIT_LOAD_EXTENSION"]
            objs = []
            procs = []
            for c in ("sqlite3.c", "shell.c", "stub.c"):
                obj = WORK / f"{tag}-{c[:-2]}.o"
                objs.append(str(obj))
                procs.append(subprocess.Popen([*cc, "-c", "-o", str(obj), str(src / c)],
                                              stderr=subprocess.PIPE))
            errors = [p.communicate()[1] for p in procs]
            if any(p.returncode for p in procs):
                log(f"sqlite3 {tag} did not compile: {b''.join(errors)[-300:]!r}")
                continue
            link = subprocess.run(["gcc", f"-B{bindir}/", "-o", str(exe), *objs, "-lm"],
                                  capture_output=True, text=True)
            if link.returncode:
                log(f"sqlite3 {tag} did not link: {link.stderr[-300:]}")
                continue
        out.append(Input(f"sqlite3 shell ({tag}, gcc -O2)", [exe], "real"))
    return out


# ---------------------------------------------------------------------------
# Measurements.

@dataclass
class Timing:
    tool: str
    seconds: float
    rss_kib: int
    status: int


# (input, process timings, (decoder ns/FRE or None, FRE-walk ns/FRE, libsframe ns/FRE or None))
Result = tuple[Input, list[Timing], tuple[float | None, float, float | None]]


BULK_SFCHECK, BULK_READELF = "sfcheck -j 1 DIR", "readelf --sframe --debug-dump=frames loop"
FRAMES = "readelf --sframe --debug-dump=frames"


def measure(inp: Input, sfcheck: Path, reps: int, dump: bool) -> list[Timing]:
    files = list(map(str, inp.files))
    cmds: dict[str, list[str]] = {"sfcheck": [str(sfcheck), *files]}
    if inp.kind == "bulk":
        cmds = {BULK_SFCHECK: [str(sfcheck), "-j", "1", *files]}
        if inp.readelf:
            cmds[BULK_READELF] = ["sh", "-c", 'for f in "$1"/*; do "$0" --sframe '
                                  '--debug-dump=frames "$f" || exit 1; done', str(inp.readelf),
                                  files[0]]
        dump = False
    elif inp.kind == "compiled":
        cmds["sfcheck structure only"] = [str(sfcheck), *STRUCTURE_ONLY, *files]
    if dump:
        cmds["sfcheck dump"] = [str(sfcheck), "dump", *files]
    if inp.readelf and inp.kind != "bulk":
        cmds["readelf --sframe"] = [str(inp.readelf), "--sframe", *files]
        if inp.eh_frame:
            cmds["readelf --sframe --debug-dump=frames"] = [
                str(inp.readelf), "--sframe", "--debug-dump=frames", *files]
    for argv in cmds.values():  # warm the page cache and the .pyc files
        run_once(argv)
    runs: dict[str, list[tuple[float, int, int]]] = {k: [] for k in cmds}
    for _ in range(reps):
        for tool, argv in cmds.items():
            runs[tool].append(run_once(argv))
    return [Timing(tool, statistics.median(r[0] for r in rs), max(r[1] for r in rs),
                   rs[-1][2]) for tool, rs in runs.items()]


def decoder_ns_per_fre(inp: Input, reps: int) -> float:
    """Every FDE and FRE of every section decoded into the model (Decoder.iter_fdes)."""
    def once() -> None:
        for data, _vma in inp.sections:
            for _fde in Decoder(data).iter_fdes():
                pass
    return _best_of(once, reps) / max(inp.fres, 1) * 1e9


def walk_ns_per_fre(inp: Input, reps: int) -> float:
    """Every FRE split into start / info + data words (format.fre_blocks, what the dump and
    the cross-check walk), no model objects: the nearest thing to libsframe's walk."""
    from sfcheck.format.fre_blocks import FreBlocks

    def once() -> None:
        for data, _vma in inp.sections:
            dec = Decoder(data)
            FreBlocks(dec).run(0, dec.header.num_fdes, lambda *a: None, lambda *a: None)
    return _best_of(once, reps) / max(inp.fres, 1) * 1e9


LIBSFRAME = TC / "root-bin-sid" / "usr" / "lib" / "x86_64-linux-gnu" / "libsframe.so.3"


def libsframe_ns_per_fre(inp: Input, reps: int) -> float | None:
    """libsframe 2.47's C decode-and-walk of every FRE (bench/libsframe_walk.c), when gcc
    and the private binutils are here; None otherwise."""
    exe = WORK / "libsframe_walk"
    if not exe.exists():
        if not shutil.which("gcc"):
            return None
        subprocess.run(["gcc", "-O2", "-o", str(exe), str(ROOT / "bench" / "libsframe_walk.c"),
                        "-ldl"], check=True)
    if not LIBSFRAME.exists() or len(inp.sections) != 1:
        return None
    section = WORK / (inp.files[0].name + ".sframe")
    section.write_bytes(inp.sections[0][0])
    p = subprocess.run([str(exe), str(LIBSFRAME), str(section), str(max(reps, 3))],
                       capture_output=True, text=True)
    if p.returncode:
        log(f"libsframe walk of {inp.name}: {p.stderr.strip()}")
        return None
    ns, fres = p.stdout.split()
    return float(ns) if int(fres) == inp.fres else None


TINY = ROOT / "corpus" / "v3" / "libcorpus.so"  # 2 KB of SFrame: the check itself is ~1 ms


def interpreter_floor(reps: int) -> tuple[float, float]:
    """Median seconds of `python -c pass` from this venv (what any Python tool pays), and
    what `sfcheck FILE` on a tiny file adds to it (its imports, nearly all), alternating."""
    py = str(Path(sys.prefix) / "bin" / "python")
    bare, imp = [py, "-c", "pass"], [str(Path(sys.prefix) / "bin" / "sfcheck"), str(TINY)]
    run_once(bare)
    run_once(imp)
    a, b = [], []
    for _ in range(max(reps, 5)):
        a.append(run_once(bare)[0])
        b.append(run_once(imp)[0])
    return statistics.median(a), max(0.0, statistics.median(b) - statistics.median(a))


def _best_of(fn: Callable[[], object], reps: int) -> float:
    times = []
    for _ in range(max(1, reps)):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def unwinder_rates(inp: Input | None) -> dict[str, float]:
    from sfcheck.unwind.bench import run as unwind_bench
    from sfcheck.unwind.table import SFrameTable

    out = {"frames_per_s": unwind_bench(depth=500, runs=40)["frames_per_s"]}
    if inp is not None and inp.sections:
        data, vma = inp.sections[0]
        t0 = time.perf_counter()
        table = SFrameTable(data, vma=vma)
        out["table_build_s"] = time.perf_counter() - t0
        lo, hi = table.text_ranges[0]
        rng = random.Random(1)
        pcs = [rng.randrange(lo, hi) for _ in range(20000)]
        t0 = time.perf_counter()
        for pc in pcs:
            table.lookup(pc)
        out["lookups_per_s"] = len(pcs) / (time.perf_counter() - t0)
        out["lookup_table"] = inp.name  # type: ignore[assignment]
    return out


# ---------------------------------------------------------------------------
# Report.

def _secs(x: float) -> str:
    """Seconds with three decimals, or three significant digits below 0.1 s."""
    return f"{x:.3f}" if x >= 0.1 else f"{x:.3g}"


def _mb(kib: int) -> float:
    return kib / 1024


def _vs(ns: float, lib_ns: float | None) -> str:
    return f"{ns / lib_ns:.2f} x libsframe's C walk" if lib_ns else ""


def table_rows(results: list[Result]) -> list[str]:
    head = ("| input | FDEs | FREs | .sframe bytes | tool | median s | ns/FRE | peak RSS MB | "
            "RSS bound MB | ratio vs readelf |")
    lines = [head, "|" + "---|" * 10]
    for inp, timings, in_process in results:
        ref = {t.tool: t.seconds for t in timings}
        bound = 100 + 10 * inp.sframe_bytes / 2**20
        for t in timings:
            ratio = ""
            if t.tool == "sfcheck" and "readelf --sframe" in ref:
                ratio = f"{t.seconds / ref['readelf --sframe']:.2f} x readelf --sframe"
                if "readelf --sframe --debug-dump=frames" in ref:
                    ratio += (f"; {t.seconds / ref['readelf --sframe --debug-dump=frames']:.2f}"
                              " x --debug-dump=frames")
            elif t.tool == BULK_SFCHECK and BULK_READELF in ref:
                ratio = f"{t.seconds / ref[BULK_READELF]:.2f} x the readelf loop"
            elif t.tool in ("sfcheck dump", "sfcheck structure only") and (
                    "readelf --sframe" in ref):
                ratio = f"{t.seconds / ref['readelf --sframe']:.2f} x readelf --sframe"
            rss_bound = f"{bound:.0f}" if t.tool.startswith("sfcheck") else ""
            lines.append(f"| {inp.name} | {inp.fdes:,} | {inp.fres:,} | {inp.sframe_bytes:,} | "
                         f"{t.tool} | {_secs(t.seconds)} | "
                         f"{t.seconds / max(inp.fres, 1) * 1e9:,.0f} | {_mb(t.rss_kib):.0f} | "
                         f"{rss_bound} | {ratio} |")
        dec_ns, walk_ns, lib_ns = in_process
        if dec_ns is not None:
            lines.append(f"| {inp.name} | {inp.fdes:,} | {inp.fres:,} | {inp.sframe_bytes:,} | "
                         f"decoder alone (in-process) | {_secs(dec_ns * inp.fres / 1e9)} | "
                         f"{dec_ns:,.0f} |  |  | {_vs(dec_ns, lib_ns)} |")
        lines.append(f"| {inp.name} | {inp.fdes:,} | {inp.fres:,} | {inp.sframe_bytes:,} | "
                     f"FRE walk, fre_blocks (in-process) | {_secs(walk_ns * inp.fres / 1e9)} | "
                     f"{walk_ns:,.0f} |  |  | {_vs(walk_ns, lib_ns)} |")
        if lib_ns is not None:
            lines.append(f"| {inp.name} | {inp.fdes:,} | {inp.fres:,} | {inp.sframe_bytes:,} | "
                         f"libsframe 2.47 decode + get_fre walk (C) | "
                         f"{_secs(lib_ns * inp.fres / 1e9)} | {lib_ns:,.0f} |  |  |  |")
    return lines


def _series(results: list[Result]) -> dict[str, list[tuple[Input, dict[str, Timing]]]]:
    out: dict[str, list[tuple[Input, dict[str, Timing]]]] = {}
    for inp, ts, _ in results:
        if inp.series:
            out.setdefault(inp.series, []).append((inp, {t.tool: t for t in ts}))
    for v in out.values():
        v.sort(key=lambda x: x[0].n)
    return out


def curve_rows(results: list[Result]) -> list[str]:
    series = _series(results)
    if not series:
        return []
    lines = ["| input | FREs | sfcheck ns/FRE | structure only ns/FRE | readelf ns/FRE | "
             "readelf -wf ns/FRE | sfcheck / readelf (-wf when .eh_frame) |", "|" + "---|" * 7]
    for _name, pts in series.items():
        for inp, ts in pts:
            def ns(tool: str, inp: Input = inp, ts: dict = ts) -> str:
                return f"{ts[tool].seconds / max(inp.fres, 1) * 1e9:,.0f}" if tool in ts else ""
            ref = ts.get(FRAMES) or ts.get("readelf --sframe")
            ratio = f"{ts['sfcheck'].seconds / ref.seconds:.2f}" if ref else ""
            lines.append(f"| {inp.name} | {inp.fres:,} | {ns('sfcheck')} | "
                         f"{ns('sfcheck structure only')} | {ns('readelf --sframe')} | "
                         f"{ns(FRAMES)} | {ratio} |")
    return lines


def _spread(vals: list[float]) -> tuple[float, float, bool]:
    """(-x %, +y %) around the median, and whether both are within 30 %."""
    mid = statistics.median(vals)
    lo, hi = 100 * (min(vals) / mid - 1), 100 * (max(vals) / mid - 1)
    return lo, hi, lo >= -30 and hi <= 30


def marginal_row(name: str, flat: list[tuple[Input, dict[str, Timing]]]) -> str:
    """The cost of each added FRE between consecutive sizes: the whole-process figure
    spreads the fixed start-up (interpreter, imports, ELF headers) over the FREs, so it
    falls with size even when the work per FRE does not change; the slope does not."""
    slopes = [(b.fres - a.fres, (tb["sfcheck"].seconds - ta["sfcheck"].seconds)
               / (b.fres - a.fres) * 1e9, f"{_k(a.n)}-{_k(b.n)}")
              for (a, ta), (b, tb) in itertools.pairwise(flat) if b.fres > a.fres]
    shown = ", ".join(f"{s:,.0f} ({span})" for _d, s, span in slopes)
    if len(slopes) < 2:
        return (f"| (marginal cost per added FRE, {name}) | {shown} ns/FRE "
                "(one interval: nothing to compare) | |")
    lo, hi, ok = _spread([s for _d, s, _span in slopes])
    return (f"| marginal cost per added FRE flat (+-30 %) ({name}): time difference / FRE "
            f"difference between sizes | {shown} ns/FRE, {lo:+.0f} % / {hi:+.0f} % | "
            f"{'yes' if ok else '**no**'} |")


def targets_rows(results: list[Result], floor: float, imports: float) -> list[str]:
    """Issue 16's targets, each with what this run measured (ratios within this run)."""
    rows = ["| target | measured | met? |", "|---|---|---|"]

    def yes(ok: bool, stretch: bool = False) -> str:
        return ("yes (stretch too)" if stretch else "yes") if ok else "**no**"

    series = _series(results)
    for name, pts in series.items():
        for inp, ts in pts:
            if "sframe-only" not in name or inp.n != 100_000 or "readelf --sframe" not in ts:
                continue
            ref = ts["readelf --sframe"].seconds
            r = ts["sfcheck"].seconds / ref
            st = ts.get("sfcheck structure only")
            floor_note = (f"; structure only {st.seconds / ref:.2f} x" if st else "")
            rows.append(f"| A: {inp.name} (no .eh_frame FDEs): `sfcheck FILE` <= 1.0 x "
                        f"`readelf --sframe` | {r:.2f} x ({ts['sfcheck'].seconds:.3f} s vs "
                        f"{ref:.3f} s{floor_note}) | {yes(r <= 1.0)} |")
    for inp, ts, _ in results:
        t = {x.tool: x for x in ts}
        if inp.kind == "real" and FRAMES in t and "sqlite" in inp.name:
            r = t["sfcheck"].seconds / t[FRAMES].seconds
            rows.append(f"| sqlite3 whole process, {inp.name}: <= 4 x `{FRAMES}` (stretch 2 x)"
                        f" | {r:.2f} x ({t['sfcheck'].seconds:.3f} s vs {t[FRAMES].seconds:.3f}"
                        f" s; `python -c pass` alone is {floor / t[FRAMES].seconds:.1f} x, "
                        f"sfcheck's imports {imports / t[FRAMES].seconds:.1f} x) | "
                        f"{yes(r <= 4, r <= 2)} |")
        if inp.kind == "bulk" and BULK_READELF in t:
            r = t[BULK_SFCHECK].seconds / t[BULK_READELF].seconds
            rows.append(f"| bulk, {inp.name}: `sfcheck -j 1 DIR` <= 2 x the readelf loop "
                        f"(stretch 1 x) | {r:.2f} x ({t[BULK_SFCHECK].seconds:.2f} s vs "
                        f"{t[BULK_READELF].seconds:.2f} s) | {yes(r <= 2, r <= 1)} |")
    big = [(inp, ts) for name, pts in series.items() if "sframe-only" not in name
           and not name.startswith("synthetic") for inp, ts in pts if FRAMES in ts]
    top = max((inp.n for inp, _ in big), default=0)
    for inp, ts in big:
        if inp.n == top and top >= 100_000:
            r = ts["sfcheck"].seconds / ts[FRAMES].seconds
            what = "1M functions" if top >= 1_000_000 else f"{_k(top)} functions (1M not built)"
            rows.append(f"| {what} with .eh_frame, {inp.name}: <= 1.5 x `{FRAMES}` | {r:.2f} x "
                        f"({ts['sfcheck'].seconds:.2f} s vs {ts[FRAMES].seconds:.2f} s) | "
                        f"{yes(r <= 1.5)} |")
    for name, pts in series.items():
        flat = [(inp, ts) for inp, ts in pts if inp.n >= 10_000]
        if len(flat) < 2:
            continue
        vals = [ts["sfcheck"].seconds / max(inp.fres, 1) * 1e9 for inp, ts in flat]
        lo, hi, ok = _spread(vals)
        rows.append(f"| cost per FRE flat (+-30 %) from {_k(flat[0][0].n)} to "
                    f"{_k(flat[-1][0].n)} ({name}), whole process | {min(vals):,.0f}-"
                    f"{max(vals):,.0f} ns/FRE, {lo:+.0f} % / {hi:+.0f} % | {yes(ok)} |")
        rows.append(marginal_row(name, flat))
    worst = max(((t.rss_kib / 1024) / (100 + 10 * inp.sframe_bytes / 2**20), inp.name, t.tool)
                for inp, ts, _ in results for t in ts if t.tool.startswith("sfcheck"))
    rows.append(f"| peak RSS <= 100 MB + 10 x .sframe size | worst {100 * worst[0]:.0f} % of "
                f"the bound ({worst[2]}, {worst[1]}) | {yes(worst[0] <= 1.0)} |")
    rows.append(f"| start-up: imports of `sfcheck FILE` < 40 ms | {1000 * imports:.0f} ms "
                f"(`sfcheck {TINY.relative_to(ROOT)}` minus `python -c pass`: imports and a "
                f"2 KB check) | {yes(imports < 0.040)} |")
    rows.append(f"| (interpreter floor) | `python -c pass` from this venv: {floor:.3f} s | |")
    return rows


def plot(results: list[Result], path: Path) -> str:
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return "(no plot: matplotlib is not installed; `pip install matplotlib`)"
    fig, ax = plt.subplots(figsize=(7, 4.5))
    lines: dict[str, list[tuple[int, float]]] = {}
    series = _series(results)
    newest = max((n.split()[0] for n in series), default="")  # one version: readable plot
    for name, pts in series.items():
        if name.split()[0] != newest:
            continue
        for inp, ts in pts:
            for tool in ("sfcheck", "sfcheck structure only", "readelf --sframe", FRAMES):
                if tool in ts:
                    lines.setdefault(f"{tool} ({name})", []).append(
                        (inp.n, ts[tool].seconds / max(inp.fres, 1) * 1e9))
    for label, pts in sorted(lines.items()):
        pts.sort()
        ax.plot([p[0] for p in pts], [p[1] for p in pts], marker="o", label=label,
                linestyle="--" if "sframe-only" in label else "-")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("functions (compiled) or FDEs (synthetic)")
    ax.set_ylabel("ns per FRE (whole process, median)")
    ax.set_title("Cost per FRE: sfcheck vs readelf")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    return f"![cost curve]({path.name})"


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python bench/run.py", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--sizes", default="1000,10000,100000,1000000",
                   help="library sizes in functions (synthetic: FDEs), comma-separated")
    p.add_argument("--versions", default="3,2,1", help="SFrame versions (gas 2.47, 2.44, 2.40)")
    p.add_argument("--sframe-only-min", type=int, default=10_000,
                   help="also build the no-.eh_frame variant of sizes from this one up")
    p.add_argument("--synthetic", action="store_true",
                   help="encoder-built sections in a minimal ELF wrapper instead of compiled "
                   "libraries (structure only; the fallback without gcc or .toolchains)")
    p.add_argument("--reps", type=int, default=5, help="runs per tool and input (median)")
    p.add_argument("--jobs", type=int, default=2, help="parallel gcc/as while building")
    p.add_argument("--no-real", action="store_true", help="skip corpus/, sqlite3 and bulk")
    p.add_argument("--no-sqlite", action="store_true", help="skip building sqlite3")
    p.add_argument("--dump-max", type=int, default=1_000_000,
                   help="time `sfcheck dump` only up to this many FDEs")
    p.add_argument("--notes", type=Path, help="Markdown appended to the report (analysis)")
    p.add_argument("--save", type=Path, help="also keep the measurements here (pickle)")
    p.add_argument("--rerender", type=Path, metavar="SAVED",
                   help="no measuring: write the report of a --save'd run (e.g. with --notes)")
    p.add_argument("--out", type=Path, help="write the report as Markdown here (+ a PNG)")
    a = p.parse_args(argv)
    WORK.mkdir(parents=True, exist_ok=True)
    sfcheck = Path(sys.prefix) / "bin" / "sfcheck"
    if not sfcheck.exists():
        print(f"bench: {sfcheck} not found (pip install -e . in this venv)", file=sys.stderr)
        return 2
    if a.rerender:
        with open(a.rerender, "rb") as f:
            return render(a, **pickle.load(f))
    # Users' installs carry .pyc files (pip compiles on install); with PYTHONDONTWRITEBYTECODE
    # set (as in some CI shells) an editable install would recompile every module on every
    # run and the start-up figures would measure the compiler.
    import compileall
    compileall.compile_dir(str(ROOT / "sfcheck"), quiet=1)
    load_before = os.getloadavg()
    uptime_before = _uptime()
    inputs: list[Input] = []
    sizes = [int(s) for s in a.sizes.split(",") if s]
    by_name: dict[str, Input] = {}
    for v in (int(x) for x in a.versions.split(",") if x):
        for n in sizes:
            got = None if a.synthetic else compiled(n, v, jobs=a.jobs)
            if got is None:
                if not a.synthetic:
                    log(f"compiled {n} v{v} unavailable: the synthetic section stands in")
                check_tiling()
                got = synthetic(n, v)
            inputs.append(got)
            by_name[got.name] = got
            if n >= a.sframe_only_min and not a.synthetic:
                only = compiled(n, v, eh_frame=False, jobs=a.jobs)
                if only is not None:
                    inputs.append(only)
    if not a.no_real:
        inputs += corpus_inputs()
        sqlite = [] if a.no_sqlite else sqlite_inputs()
        inputs += sqlite
        libs = [library(WORK, n, GAS[3], "v3", jobs=a.jobs) for n in (10_000, 1000)]
        bulk = bulk_input(next((i.files[0] for i in sqlite if "v3" in i.name), None),
                          [p for p in libs if p is not None])
        if bulk is not None:
            inputs.append(bulk)
    results = []
    for inp in inputs:
        inp.load()
        log(f"{inp.name}: {inp.fdes:,} FDEs, {inp.fres:,} FREs, readelf "
            f"{readelf_version(inp.readelf) if inp.readelf else 'none that reads it'}")
        timings = measure(inp, sfcheck, a.reps, dump=inp.fdes <= a.dump_max)
        single = inp.kind in ("synthetic", "compiled")
        dec = (decoder_ns_per_fre(inp, min(a.reps, 3))
               if inp.fdes <= 100_000 and inp.kind != "bulk" else None)
        walk = walk_ns_per_fre(inp, min(a.reps, 3))
        lib = libsframe_ns_per_fre(inp, a.reps) if single else None
        results.append((inp, timings, (dec, walk, lib)))
    biggest = max((i for i in inputs if i.kind in ("synthetic", "compiled")),
                  key=lambda i: i.fdes, default=None)
    unwind = unwinder_rates(biggest)
    floor, imports = interpreter_floor(a.reps)
    for inp in inputs:
        inp.sections = []  # bytes: not kept
    saved = {"results": results, "unwind": unwind, "floor": floor, "imports": imports,
             "load": (load_before, os.getloadavg()), "uptime": (uptime_before, _uptime()),
             "cmd": "python bench/run.py " + " ".join(shlex.quote(x)
                                                      for x in (argv or sys.argv[1:]))}
    if a.save:
        with open(a.save, "wb") as f:
            pickle.dump(saved, f)
    return render(a, **saved)


def render(a: argparse.Namespace, results: list[Result], unwind: dict, floor: float,
           imports: float, load: tuple, uptime: tuple, cmd: str) -> int:
    (load_before, load_after), (uptime_before, uptime_after) = load, uptime
    readelfs = sorted({f"{r} ({readelf_version(r)})" for r in READELFS if r.exists()})
    out = [f"# sfcheck benchmark, {time.strftime('%Y-%m-%d')}", "", f"Command: `{cmd}`", "",
           f"Machine: {os.cpu_count()} cores, {platform.python_implementation()} "
           f"{platform.python_version()}, load average {load_before[0]:.2f} before / "
           f"{load_after[0]:.2f} after (`uptime` before: {uptime_before}; after: {uptime_after})."
           f" readelf: {', '.join(readelfs)}.",
           "The machine is shared: only ratios taken in this run count, never absolute times. "
           "Times are wall-clock medians of alternating runs (each process started from "
           "scratch: interpreter start-up and imports included); ns/FRE divides by the "
           "header's FRE count. RSS bound = 100 MB + 10 x .sframe size"
           + (" (peak RSS by GNU time)." if GNU_TIME.exists() else
              " (peak RSS from wait4: includes this Python's, GNU time not installed)."), ""]
    out += ["## Targets (issue 16)", ""] + targets_rows(results, floor, imports)
    out += ["", "## All measurements", ""] + table_rows(results)
    out += ["", "## Cost curve", ""] + curve_rows(results)
    out += ["", "## Unwinder", "",
            f"- {unwind['frames_per_s']:,.0f} frames/s (sfcheck.unwind.bench: 500-frame "
            "stack, warm FDE cache)"]
    if "lookups_per_s" in unwind:
        out.append(f"- {unwind['lookups_per_s']:,.0f} PC lookups/s, cold, on "
                   f"{unwind['lookup_table']} (index built in {unwind['table_build_s']:.2f} s)")
    if a.notes:
        out += ["", a.notes.read_text().rstrip()]
    if a.out:
        a.out.parent.mkdir(parents=True, exist_ok=True)
        out += ["", plot(results, a.out.with_suffix(".png"))]
        a.out.write_text("\n".join(out) + "\n")
    print("\n".join(out))
    return 0


def _uptime() -> str:
    p = subprocess.run(["uptime"], capture_output=True, text=True)
    return p.stdout.strip() or "?"


if __name__ == "__main__":
    raise SystemExit(main())
