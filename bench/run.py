"""sfcheck against binutils, in the same run: `python bench/run.py [options]`.

Builds its inputs (synthetic sections of 1k..1M FDEs from the project's encoder,
wrapped in minimal ELF files; the corpus/ binaries; the sqlite3 shell compiled
with -Wa,--gsframe by the private binutils in .toolchains/), then times, round
after round so that load on the machine hits every tool alike, the median of
--reps runs of:

  sfcheck FILE              full strict check (default rules), a process started
                            from the venv's own bin/
  sfcheck dump FILE         objdump-style text, to /dev/null
  readelf --sframe FILE     the newest installed readelf that reads the version
  readelf --sframe --debug-dump=frames FILE   (files with .eh_frame)

and in-process: the decoder alone (every FDE and FRE decoded) and the unwinder
(frames/s of sfcheck.unwind.bench; PC lookups/s on the largest section). It
prints a table of ns/FRE, peak RSS and the sfcheck / readelf ratios, the cost
curve over the synthetic sizes (and a PNG of it when matplotlib is installed)
and, with --out, writes the same as Markdown.
"""

from __future__ import annotations

import argparse
import os
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
sys.path.insert(0, str(ROOT))

from bench.elfwrap import wrap_section  # noqa: E402
from bench.synth import check_tiling, encode_tiled, plan  # noqa: E402
from sfcheck.elf import ElfError, load_elf  # noqa: E402
from sfcheck.format.decode import Decoder, decode_header  # noqa: E402

WORK = ROOT / "build" / "bench"
TC = ROOT / ".toolchains"
# Newest first: each input is read by the first of these that decodes it.
READELFS = [TC / "bin-sid" / "readelf", TC / "bin-trixie" / "readelf", Path("/usr/bin/readelf")]
SQLITE_SDIST = "sqlean-py==3.50.4.5"  # its sdist ships the sqlite3.c amalgamation + shell.c
SQLITE_TOOLCHAINS = {"v3": TC / "bin-sid", "v2": TC / "bin-trixie"}


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
        if p.returncode == 0 and "Error" not in p.stderr and "SFrame" in p.stdout:
            return re_path
    return None


# ---------------------------------------------------------------------------
# Inputs.

@dataclass
class Input:
    name: str
    files: list[Path]
    kind: str  # "synthetic" or "real"
    fdes: int = 0
    fres: int = 0
    sframe_bytes: int = 0
    eh_frame: bool = False
    readelf: Path | None = None
    sections: list[tuple[bytes, int]] = field(default_factory=list)  # (data, vma)

    def load(self) -> None:
        for f in self.files:
            info = load_elf(f)
            for sec in info.sections:
                h = decode_header(sec.data)
                self.fdes += h.num_fdes
                self.fres += h.num_fres
                self.sframe_bytes += len(sec.data)
                self.sections.append((sec.data, sec.vma))
            self.eh_frame = self.eh_frame or _has_eh_frame(f)
        self.readelf = pick_readelf(self.files)


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
    return Input(f"synthetic {n // 1000}k FDEs v{version}", [path], "synthetic")


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


def measure(inp: Input, sfcheck: Path, reps: int, dump: bool) -> list[Timing]:
    files = list(map(str, inp.files))
    cmds: dict[str, list[str]] = {"sfcheck": [str(sfcheck), *files]}
    if dump:
        cmds["sfcheck dump"] = [str(sfcheck), "dump", *files]
    if inp.readelf:
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


def interpreter_floor(reps: int) -> float:
    """Median seconds of `python -c pass` from this venv: what any Python tool pays."""
    argv = [str(Path(sys.prefix) / "bin" / "python"), "-c", "pass"]
    run_once(argv)
    return statistics.median(run_once(argv)[0] for _ in range(max(reps, 5)))


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
            elif t.tool == "sfcheck dump" and "readelf --sframe" in ref:
                ratio = f"{t.seconds / ref['readelf --sframe']:.2f} x readelf --sframe"
            rss_bound = f"{bound:.0f}" if t.tool.startswith("sfcheck") else ""
            lines.append(f"| {inp.name} | {inp.fdes:,} | {inp.fres:,} | {inp.sframe_bytes:,} | "
                         f"{t.tool} | {t.seconds:.3f} | {t.seconds / max(inp.fres, 1) * 1e9:,.0f}"
                         f" | {_mb(t.rss_kib):.0f} | {rss_bound} | {ratio} |")
        dec_ns, walk_ns, lib_ns = in_process
        if dec_ns is not None:
            lines.append(f"| {inp.name} | {inp.fdes:,} | {inp.fres:,} | {inp.sframe_bytes:,} | "
                         f"decoder alone (in-process) | {dec_ns * inp.fres / 1e9:.3f} | "
                         f"{dec_ns:,.0f} |  |  | {_vs(dec_ns, lib_ns)} |")
        lines.append(f"| {inp.name} | {inp.fdes:,} | {inp.fres:,} | {inp.sframe_bytes:,} | "
                     f"FRE walk, fre_blocks (in-process) | {walk_ns * inp.fres / 1e9:.3f} | "
                     f"{walk_ns:,.0f} |  |  | {_vs(walk_ns, lib_ns)} |")
        if lib_ns is not None:
            lines.append(f"| {inp.name} | {inp.fdes:,} | {inp.fres:,} | {inp.sframe_bytes:,} | "
                         f"libsframe 2.47 decode + get_fre walk (C) | "
                         f"{lib_ns * inp.fres / 1e9:.3f} | {lib_ns:,.0f} |  |  |  |")
    return lines


def curve_rows(results: list[Result]) -> list[str]:
    synth = [(inp, {t.tool: t for t in ts}) for inp, ts, _ in results if inp.kind == "synthetic"]
    if not synth:
        return []
    lines = ["| input | FREs | sfcheck ns/FRE | sfcheck dump ns/FRE | readelf ns/FRE | "
             "sfcheck / readelf |", "|" + "---|" * 6]
    for inp, ts in synth:
        def ns(tool: str, inp: Input = inp, ts: dict = ts) -> str:
            return f"{ts[tool].seconds / inp.fres * 1e9:,.0f}" if tool in ts else ""
        ratio = (f"{ts['sfcheck'].seconds / ts['readelf --sframe'].seconds:.2f}"
                 if "readelf --sframe" in ts else "")
        lines.append(f"| {inp.name} | {inp.fres:,} | {ns('sfcheck')} | {ns('sfcheck dump')} | "
                     f"{ns('readelf --sframe')} | {ratio} |")
    big = [(inp, ts) for inp, ts in synth if inp.fdes >= 10000]
    by_version: dict[str, list[float]] = {}
    for inp, ts in big:
        by_version.setdefault(inp.name.split()[-1], []).append(
            ts["sfcheck"].seconds / inp.fres * 1e9)
    for v, vals in by_version.items():
        if len(vals) > 1:
            mid = statistics.median(vals)
            lines.append("")
            lines.append(f"Flatness {v}, 10k FDEs and up: sfcheck ns/FRE from {min(vals):,.0f} "
                         f"to {max(vals):,.0f}, {100 * (min(vals) / mid - 1):+.0f}% / "
                         f"{100 * (max(vals) / mid - 1):+.0f}% around the median {mid:,.0f}.")
    return lines


def _spread(vals: list[float]) -> tuple[float, float, bool]:
    """(-x %, +y %) around the median, and whether both are within 30 %."""
    mid = statistics.median(vals)
    lo, hi = 100 * (min(vals) / mid - 1), 100 * (max(vals) / mid - 1)
    return lo, hi, lo >= -30 and hi <= 30


def targets_rows(results: list[Result], floor: float) -> list[str]:
    """Issue 7's targets, each with what this run measured."""
    rows = ["| target | measured | met? |", "|---|---|---|"]

    def yes(ok: bool) -> str:
        return "yes" if ok else "**no**"

    synth = [(inp, {t.tool: t for t in ts}, ip) for inp, ts, ip in results
             if inp.kind == "synthetic"]
    for inp, ts, _ip in synth:
        if inp.fdes != 100_000 or "readelf --sframe" not in ts:
            continue
        ref = ts["readelf --sframe"].seconds
        r = ts["sfcheck"].seconds / ref
        rows.append(f"| full strict check, {inp.name}: <= 1.0 x `readelf --sframe` (stretch "
                    f"0.5 x) | {r:.2f} x ({ts['sfcheck'].seconds:.3f} s vs {ref:.3f} s) | "
                    f"{yes(r <= 1.0)}{' (stretch too)' if r <= 0.5 else ''} |")
        if "sfcheck dump" in ts:
            d = ts["sfcheck dump"].seconds / ref
            rows.append(f"| `sfcheck dump`, {inp.name}: <= 2.0 x `readelf --sframe` | "
                        f"{d:.2f} x | {yes(d <= 2.0)} |")
    frames = "readelf --sframe --debug-dump=frames"
    for inp, ts, _ip in results:
        t = {x.tool: x for x in ts}
        if inp.kind == "real" and frames in t and "sqlite" in inp.name:
            r = t["sfcheck"].seconds / t[frames].seconds
            rows.append(f"| cross-check on, {inp.name}: <= 1.0 x `{frames}` | {r:.2f} x "
                        f"({t['sfcheck'].seconds:.3f} s vs {t[frames].seconds:.3f} s; "
                        f"`python -c pass` alone is {floor / t[frames].seconds:.2f} x) | "
                        f"{yes(r <= 1.0)} |")
    for v in sorted({inp.name.split()[-1] for inp, _, _ in synth}):
        series = sorted(((inp, ts) for inp, ts, _ in synth if inp.name.endswith(v)),
                        key=lambda x: x[0].fdes)
        big = [(inp, ts) for inp, ts in series if inp.fdes >= 10_000]
        if len(big) < 2:
            continue
        whole = [ts["sfcheck"].seconds / inp.fres * 1e9 for inp, ts in big]
        lo, hi, ok = _spread(whole)
        rows.append(f"| cost per FRE flat +-30 % from 10k to 1M FDEs ({v}), whole process | "
                    f"{min(whole):,.0f}-{max(whole):,.0f} ns/FRE, {lo:+.0f} % / {hi:+.0f} % | "
                    f"{yes(ok)} |")
        base_inp, base_ts = series[0]
        if base_inp.fdes < big[0][0].fdes:
            marg = [(ts["sfcheck"].seconds - base_ts["sfcheck"].seconds)
                    / (inp.fres - base_inp.fres) * 1e9 for inp, ts in big]
            lo, hi, ok = _spread(marg)
            rows.append(f"| ... marginal cost over the {base_inp.fdes // 1000}k run, "
                        f"(t_N - t_1k) / (FREs_N - FREs_1k) ({v}) | {min(marg):,.0f}-"
                        f"{max(marg):,.0f} ns/FRE, {lo:+.0f} % / {hi:+.0f} % | {yes(ok)} |")
    worst = max(((t.rss_kib / 1024) / (100 + 10 * inp.sframe_bytes / 2**20), inp.name, t.tool)
                for inp, ts, _ in results for t in ts if t.tool.startswith("sfcheck"))
    rows.append(f"| peak RSS <= 100 MB + 10 x .sframe size | worst {100 * worst[0]:.0f} % of "
                f"the bound ({worst[2]}, {worst[1]}) | {yes(worst[0] <= 1.0)} |")
    for inp, _ts, (dec, walk, lib) in results:
        if inp.kind == "synthetic" and inp.fdes == 100_000:
            if lib is None:
                rows.append(f"| decoder <= 3 x libsframe's C decode-and-walk | {inp.name}: "
                            f"model objects {dec:,.0f} ns/FRE, FRE walk {walk:,.0f} ns/FRE; "
                            "libsframe not measured (no gcc or .toolchains) | not measured |")
                continue
            rows.append(f"| decoder <= 3 x libsframe's C decode-and-walk, {inp.name} | "
                        f"FRE walk (fre_blocks: what dump and cross-check use) {walk / lib:.2f}"
                        f" x ({walk:,.0f} vs {lib:,.0f} ns/FRE) | {yes(walk <= 3 * lib)} |")
            rows.append(f"| ... the model decoder (Decoder.iter_fdes: FDE/FRE objects) | "
                        f"{dec / lib:.1f} x ({dec:,.0f} ns/FRE) | {yes(dec <= 3 * lib)} |")
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
    series: dict[str, list[tuple[int, float]]] = {}
    for inp, ts, _ in results:
        if inp.kind != "synthetic":
            continue
        v = inp.name.split()[-1]
        for t in ts:
            if t.tool in ("sfcheck", "sfcheck dump", "readelf --sframe"):
                series.setdefault(f"{t.tool} ({v})", []).append(
                    (inp.fdes, t.seconds / inp.fres * 1e9))
    for label, pts in sorted(series.items()):
        pts.sort()
        ax.plot([p[0] for p in pts], [p[1] for p in pts], marker="o", label=label)
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("FDEs in the section (synthetic)")
    ax.set_ylabel("ns per FRE (whole process, median)")
    ax.set_title("Cost per FRE: sfcheck vs readelf")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    return f"![cost curve]({path.name})"


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python bench/run.py", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--sizes", default="1000,10000,100000,1000000",
                   help="synthetic sizes in FDEs (comma-separated)")
    p.add_argument("--versions", default="3,2", help="SFrame versions of the synthetic sections")
    p.add_argument("--reps", type=int, default=5, help="runs per tool and input (median)")
    p.add_argument("--no-real", action="store_true", help="skip corpus/ and sqlite3")
    p.add_argument("--no-sqlite", action="store_true", help="skip building sqlite3")
    p.add_argument("--dump-max", type=int, default=1_000_000,
                   help="time `sfcheck dump` only up to this many FDEs")
    p.add_argument("--out", type=Path, help="write the report as Markdown here (+ a PNG)")
    a = p.parse_args(argv)
    WORK.mkdir(parents=True, exist_ok=True)
    sfcheck = Path(sys.prefix) / "bin" / "sfcheck"
    if not sfcheck.exists():
        print(f"bench: {sfcheck} not found (pip install -e . in this venv)", file=sys.stderr)
        return 2
    check_tiling()
    load_before = os.getloadavg()
    inputs: list[Input] = []
    sizes = [int(s) for s in a.sizes.split(",") if s]
    for v in (int(x) for x in a.versions.split(",") if x):
        for n in sizes:
            inputs.append(synthetic(n, v))
    if not a.no_real:
        inputs += corpus_inputs()
        if not a.no_sqlite:
            inputs += sqlite_inputs()
    results = []
    for inp in inputs:
        inp.load()
        log(f"{inp.name}: {inp.fdes:,} FDEs, {inp.fres:,} FREs, readelf "
            f"{readelf_version(inp.readelf) if inp.readelf else 'none that reads it'}")
        timings = measure(inp, sfcheck, a.reps, dump=inp.fdes <= a.dump_max)
        dec = decoder_ns_per_fre(inp, min(a.reps, 3)) if inp.fdes <= 100_000 else None
        walk = walk_ns_per_fre(inp, min(a.reps, 3))
        lib = libsframe_ns_per_fre(inp, a.reps) if inp.kind == "synthetic" else None
        results.append((inp, timings, (dec, walk, lib)))
    biggest = max((i for i in inputs if i.kind == "synthetic"), key=lambda i: i.fdes,
                  default=None)
    unwind = unwinder_rates(biggest)
    floor = interpreter_floor(a.reps)
    load_after = os.getloadavg()

    cmd = "python bench/run.py " + " ".join(shlex.quote(x) for x in (argv or sys.argv[1:]))
    readelfs = sorted({f"{r} ({readelf_version(r)})" for r in READELFS if r.exists()})
    out = [f"# sfcheck benchmark, {time.strftime('%Y-%m-%d')}", "", f"Command: `{cmd}`", "",
           f"Machine: {os.cpu_count()} cores, {platform.python_implementation()} "
           f"{platform.python_version()}, load average {load_before[0]:.2f} before / "
           f"{load_after[0]:.2f} after. readelf: {', '.join(readelfs)}.",
           "Times are wall-clock medians of alternating runs (each process started from "
           "scratch: interpreter start-up and imports included); ns/FRE divides by the "
           "header's FRE count. RSS bound = 100 MB + 10 x .sframe size"
           + (" (peak RSS by GNU time)." if GNU_TIME.exists() else
              " (peak RSS from wait4: includes this Python's, GNU time not installed)."), ""]
    out += ["## Targets (issue 7)", ""] + targets_rows(results, floor)
    out += ["", "## All measurements", ""] + table_rows(results)
    out += ["", "## Cost curve (synthetic sections)", ""] + curve_rows(results)
    out += ["", "## Unwinder", "",
            f"- {unwind['frames_per_s']:,.0f} frames/s (sfcheck.unwind.bench: 500-frame "
            "stack, warm FDE cache)"]
    if "lookups_per_s" in unwind:
        out.append(f"- {unwind['lookups_per_s']:,.0f} PC lookups/s, cold, on "
                   f"{unwind['lookup_table']} (index built in {unwind['table_build_s']:.2f} s)")
    if a.out:
        a.out.parent.mkdir(parents=True, exist_ok=True)
        out += ["", plot(results, a.out.with_suffix(".png"))]
        a.out.write_text("\n".join(out) + "\n")
    print("\n".join(out))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
