"""`sfcheck survey` against the pipeline a distribution scripts by hand, in the same run:
`python bench/survey_bench.py [--packages N] [--pipeline-sample M] [--out FILE]`.

Builds a synthetic Debian repository of N packages (sfcheck.survey.debrepo) from real
compiled objects: small C libraries of 20..200 functions built by gcc -O2 with symbols
and .eh_frame, half assembled with `-Wa,--gsframe` (binutils' SFrame), half without,
plus the corpus/ binaries; each package holds 1-3 of them with a package-specific
trailer, so every package has its own digest. Then times:

  survey -j 1   a fresh database, one worker process (inline)
  survey -j 2   a fresh database, two worker processes
  rerun         `-j 2` again over the unchanged repository into the -j 2 database
  pipeline      per package `dpkg-deb -x` into a temporary directory, then
                `readelf --sframe` on each ELF file in it (on M packages, scaled)

and prints (and with --out writes as Markdown) packages/s per core and the ratios the
issue sets as targets. Wall time: survey runs are whole `sfcheck survey` processes.
"""

from __future__ import annotations

import argparse
import os
import random
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from sfcheck.survey.debrepo import Pkg, write_repo

ROOT = Path(__file__).resolve().parents[1]
CORPUS_FILES = ["v1/libcorpus.so", "v2/libcorpus.so", "v3/libcorpus.so", "v2/exe_pie",
                "v3/exe_pie_fp", "llvm/exe_pie", "v3/exe_static", "v2/libcorpus_O0.so"]


def c_source(n: int, seed: int) -> str:
    rnd = random.Random(seed)
    out = ["#include <string.h>", "int sink;"]
    for k in range(n):
        op = rnd.choice(["+", "*", "^", "-"])
        out.append(f"int f{k}(int a, int b) {{ char buf[{16 + 8 * (k % 5)}]; "
                   f"memset(buf, a, sizeof buf); sink += buf[b & 7]; "
                   f"return (a {op} b) + {k} + (a > b ? f{max(k - 1, 0)}(b, a - 1) : 0); }}")
    return "\n".join(out) + "\n"


def build_objects(tmp: Path) -> list[bytes]:
    """Shared libraries compiled here (with and without SFrame) and the corpus files."""
    out = [(ROOT / "corpus" / f).read_bytes() for f in CORPUS_FILES]
    gcc = shutil.which("gcc")
    if gcc is None:
        print("gcc not found: corpus files only", file=sys.stderr)
        return out
    for k, n in enumerate((20, 60, 120, 200)):
        src = tmp / f"l{k}.c"
        src.write_text(c_source(n, k))
        for sframe in (True, False):
            so = tmp / f"l{k}{'s' if sframe else ''}.so"
            cmd = [gcc, "-O2", "-g0", "-fPIC", "-shared", "-o", str(so), str(src)]
            if sframe:
                cmd.insert(1, "-Wa,--gsframe")
            subprocess.run(cmd, check=True, capture_output=True)
            out.append(so.read_bytes())
    return out


def build_repo(root: Path, n: int, objects: list[bytes]) -> None:
    rnd = random.Random(1)
    pkgs = []
    for k in range(n):
        files = {f"usr/lib/libp{k}-{j}.so": rnd.choice(objects) + f"{k}.{j}".encode()
                 for j in range(rnd.choice((1, 1, 2, 3)))}
        pkgs.append(Pkg(f"pkg{k:05d}", f"1.{k}-1", files, source=f"src{k % 97}"))
    write_repo(str(root), {"stable": pkgs})


def timed(cmd: list[str], **kw: object) -> float:
    t = time.perf_counter()
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL, **kw)  # type: ignore[arg-type]
    return time.perf_counter() - t


def pipeline(debs: list[Path], tmp: Path) -> float:
    t = time.perf_counter()
    for deb in debs:
        d = tempfile.mkdtemp(dir=tmp)
        subprocess.run(["dpkg-deb", "-x", str(deb), d], check=True)
        for dirpath, _, files in os.walk(d):
            for f in files:
                p = os.path.join(dirpath, f)
                with open(p, "rb") as fh:
                    if fh.read(4) != b"\x7fELF":
                        continue
                subprocess.run(["readelf", "--sframe", p], stdout=subprocess.DEVNULL,
                               stderr=subprocess.DEVNULL)
        shutil.rmtree(d)
    return time.perf_counter() - t


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--packages", type=int, default=1000)
    ap.add_argument("--pipeline-sample", type=int, default=200)
    ap.add_argument("--out", type=Path)
    args = ap.parse_args()
    sfcheck = [sys.executable, "-m", "sfcheck", "survey"]
    with tempfile.TemporaryDirectory() as t:
        tmp = Path(t)
        t0 = time.perf_counter()
        objects = build_objects(tmp)
        build_repo(tmp / "repo", args.packages, objects)
        built = time.perf_counter() - t0
        repo = str(tmp / "repo")
        j1 = timed(sfcheck + ["--db", str(tmp / "j1.db"), "-j", "1", repo])
        j2 = timed(sfcheck + ["--db", str(tmp / "j2.db"), "-j", "2", repo])
        rerun = timed(sfcheck + ["--db", str(tmp / "j2.db"), "-j", "2", repo])
        debs = sorted((tmp / "repo" / "pool").rglob("*.deb"))
        sample = debs[:: max(1, len(debs) // args.pipeline_sample)][:args.pipeline_sample]
        pipe = pipeline(sample, tmp)
    n = args.packages
    rows = [
        ("survey -j 1", j1, n / j1, n / j1),
        ("survey -j 2", j2, n / j2, n / j2 / 2),
        ("rerun -j 2 (unchanged)", rerun, n / rerun, n / rerun / 2),
        (f"dpkg-deb -x + readelf --sframe ({len(sample)} packages)", pipe,
         len(sample) / pipe, len(sample) / pipe),
    ]
    speed = (n / j1) / (len(sample) / pipe)
    lines = [
        f"Repository: {n} packages, {len(objects)} distinct ELF images "
        f"({len(objects) - len(CORPUS_FILES)} compiled here by gcc, the rest from corpus/), "
        f"built in {built:.1f} s. Machine: {os.cpu_count()} CPUs (shared).", "",
        "| run | wall s | packages/s | packages/s per core |", "|---|---|---|---|",
        *[f"| {name} | {w:.2f} | {r:.1f} | {c:.1f} |" for name, w, r, c in rows], "",
        f"- survey -j 1 vs pipeline, per package per core: {speed:.2f}x (target >= 1)",
        f"- speed-up -j 1 -> -j 2: {j1 / j2:.2f}x (target >= 1.8)",
        f"- rerun / first run (-j 2): {100 * rerun / j2:.1f} % (target <= 5 %)",
    ]
    text = "\n".join(lines)
    print(text)
    if args.out:
        args.out.write_text(f"# Survey benchmark\n\n`python bench/survey_bench.py "
                            f"--packages {n} --pipeline-sample {args.pipeline_sample}`\n\n"
                            + text + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
