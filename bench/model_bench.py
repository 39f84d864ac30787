"""CPU time of the reader-model comparisons and of one survey file record, per call:

    python bench/model_bench.py LIBDIR [--toolchains DIR] [--reps N] [--json]

LIBDIR holds survey_bench's compiled libraries (20/60/120/200 functions; built there on
first use: v1 with the system binutils, v3 with TOOLCHAINS/bin-sid when it runs, with the
v3 repository's 16 distinct images as image-NN). Prints, for
the revision on PYTHONPATH, the best of N process-CPU times of: compare.run_v3 and
compare.run_rfc2023 on each library's .sframe (with the text ranges the checker passes),
and survey.work.file_record per library. To compare two revisions on a shared machine, run
this alternately with each revision's sources on PYTHONPATH (process CPU, not wall).
"""

from __future__ import annotations

import argparse
import gc
import json
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

# after PYTHONPATH: the revision under test's sfcheck comes first, bench/ from this tree
sys.path.append(str(Path(__file__).resolve().parents[1]))

from bench import survey_bench  # noqa: E402

SIZES = (20, 60, 120, 200)


def build(libdir: Path, toolchains: Path) -> list[Path]:
    """The SFrame libraries in LIBDIR (v1 and, if bin-sid runs, v3), built when missing."""
    libdir.mkdir(parents=True, exist_ok=True)
    out: list[Path] = []
    sid = survey_bench.sid_binutils(toolchains)
    for tag, binutils in (("v1", None), ("v3", sid)):
        if tag == "v3" and binutils is None:
            print(f"no runnable {toolchains}/bin-sid: v1 libraries only", file=sys.stderr)
            continue
        names = [libdir / f"{tag}-{n}.so" for n in SIZES]
        if not all(p.exists() for p in names):
            with tempfile.TemporaryDirectory() as tmp:
                objects = survey_bench.build_objects(Path(tmp), binutils=binutils)
                for k, p in enumerate(names):
                    p.write_bytes((Path(tmp) / f"l{k}s.so").read_bytes())
                if tag == "v3":
                    for k, image in enumerate(objects):
                        (libdir / f"image-{k:02d}").write_bytes(image)
        out += names
    return out


def sections(image: bytes) -> dict[str, tuple]:
    """The arguments the checker passes to each model for `image`, captured from one
    file_record run (the same data, vma and text ranges)."""
    from sfcheck.readers import compare
    from sfcheck.survey.work import file_record
    got: dict[str, tuple] = {}
    real_v3, real_rfc = compare.run_v3, compare.run_rfc2023

    def v3(*a: Any, **k: Any) -> Any:
        got.setdefault("run_v3", a)
        return real_v3(*a, **k)

    def rfc(*a: Any, **k: Any) -> Any:
        got.setdefault("run_rfc2023", a)
        return real_rfc(*a, **k)
    compare.run_v3, compare.run_rfc2023 = v3, rfc
    try:
        file_record("lib.so", image)
    finally:
        compare.run_v3, compare.run_rfc2023 = real_v3, real_rfc
    return got


def best(fn: Callable[[], object], reps: int) -> float:
    times = []
    for _ in range(reps):
        gc.collect()
        t = time.process_time()
        fn()
        times.append(time.process_time() - t)
    return min(times)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("libdir", type=Path)
    ap.add_argument("--toolchains", type=Path, default=survey_bench.ROOT / ".toolchains")
    ap.add_argument("--reps", type=int, default=15)
    ap.add_argument("--json", action="store_true", help="one JSON object, times in ms")
    args = ap.parse_args()
    from sfcheck.readers import compare
    from sfcheck.survey.work import file_record
    res: dict[str, float] = {}
    for lib in build(args.libdir, args.toolchains):
        image = lib.read_bytes()
        for name, a in sections(image).items():
            fn = getattr(compare, name)
            res[f"{name} {lib.stem}"] = best(lambda fn=fn, a=a: list(fn(*a)), args.reps) * 1e3
        res[f"file_record {lib.stem}"] = best(lambda image=image: file_record("lib.so", image),
                                              args.reps) * 1e3
    # survey_bench's v3 repository draws its files from these images (the compiled ones
    # with and without SFrame, and corpus/): their summed file_record is a package mix.
    images = sorted(p for p in args.libdir.glob("image-*"))
    if images:
        total = 0.0
        for p in images:
            image = p.read_bytes()
            total += best(lambda image=image: file_record("lib.so", image), args.reps)
        res[f"file_record sum of {len(images)} survey images"] = total * 1e3
    if args.json:
        print(json.dumps(res))
    else:
        for k, v in res.items():
            print(f"{k:32} {v:8.2f} ms")
    return 0


if __name__ == "__main__":
    sys.exit(main())
