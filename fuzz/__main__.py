"""`python -m fuzz`: fuzz campaigns over the sfcheck harnesses.

    python -m fuzz run --targets section,unwind --duration 1800 --jobs 1 --seed 1
    python -m fuzz run --targets libsframe --libsframe /usr/lib/x86_64-linux-gnu/libsframe.so.0
    python -m fuzz report fuzz/out/RUN            # re-render the report of a finished run
    python -m fuzz bench section --runs 20000     # exec/s on seed-sized inputs
    python -m fuzz minimize section FILE          # shrink one failing input
    python -m fuzz seeds section DIR              # write a harness's seed inputs
    python -m fuzz list                           # the harnesses (OSS-Fuzz build)
    python -m fuzz compare-mutator --duration 600 # what the structure-aware mutator adds

`run` exits 1 when the campaign found anything not already in corpus/regressions/
(or, for libsframe, not already in the run's known list), 0 otherwise.
"""

from __future__ import annotations

import argparse
import os
import shlex
import sys
import time
from pathlib import Path

from . import common

HARNESSES = ("section", "elf", "unwind", "archive", "libsframe", "kernel_rfc2023", "kernel",
             "glibc")
# Reader-model harnesses and the SFrame versions their readers take (seed inputs).
MODEL_SEEDS = {"kernel_rfc2023": {1}, "kernel": {3}}


def _targets(text: str) -> list[str]:
    names = [t for t in text.split(",") if t]
    for t in names:
        if t not in HARNESSES:
            raise argparse.ArgumentTypeError(f"unknown target {t!r} (one of {HARNESSES})")
    return names


def cmd_run(args: argparse.Namespace) -> int:
    from .findings import process
    from .report import write_reports
    from .runner import Campaign
    stamp = time.strftime("%Y%m%d-%H%M%S")
    labels = [Path(lib).name for lib in args.libsframe] if "libsframe" in args.targets else []
    name = "-".join(args.targets + labels) + f"-{stamp}-{os.getpid()}"
    out = Path(args.out or common.FUZZ_DIR / "out" / name)
    out.mkdir(parents=True, exist_ok=True)
    camp = Campaign(out.resolve(), args.duration, args.seed, args.max_len,
                    mutator=not args.no_mutator)
    for target in args.targets:
        if target == "libsframe":
            from .libsframe import lib_label, seed_versions
            if not args.libsframe:
                print("libsframe target: give --libsframe PATH (one per library)",
                      file=sys.stderr)
                return 2
            for lib in map(os.path.abspath, args.libsframe):  # jobs run elsewhere
                camp.add(target, 1, lib_label(lib), extra=[f"--libsframe={lib}"],
                         seeds_from=seed_versions(lib))
        elif target == "glibc":
            if not args.glibc:
                print("glibc target: give --glibc PATH (sh fuzz/get-glibc-sframe.sh builds it)",
                      file=sys.stderr)
                return 2
            lib = os.path.abspath(args.glibc)
            # libglibc-2.43-sframe.so -> "2.43"
            label = Path(lib).name.removeprefix("libglibc-").split("-sframe")[0]
            camp.add(target, 1, label,
                     extra=[f"--glibc={lib}"], seeds_from={2})
        else:
            camp.add(target, args.jobs, seeds_from=MODEL_SEEDS.get(target))
    print(f"campaign in {out}: {len(camp.jobs)} job(s), {args.duration}s each", flush=True)
    camp.command = "python -m fuzz " + " ".join(shlex.quote(a) for a in sys.argv[1:])
    camp.run(progress_every=args.progress)
    camp.save()
    new = process(camp, budget=args.minimize_budget, save=not args.no_save)
    camp.bench = _bench_all(camp, args.bench_runs)
    camp.save()
    for path in write_reports(camp, camp.command, Path(args.report_dir), args.title,
                              camp.bench):
        print(f"report: {path}")
    print(f"new findings: {new}")
    return 1 if new else 0


def _bench_all(camp, runs: int) -> dict[str, dict]:  # type: ignore[no-untyped-def]
    """`bench` of every non-libsframe target of the campaign (runs == 0: none)."""
    from .bench import bench
    out = {}
    for target in sorted({j.target for j in camp.jobs} - {"libsframe", "glibc"}) if runs else []:
        out[target] = bench(target, runs) | {"asked": runs, "load": os.getloadavg()[0]}
        print(f"bench {target}: {out[target]['exec_s']:.0f} exec/s on seed-sized inputs")
    return out


def cmd_report(args: argparse.Namespace) -> int:
    from .findings import process
    from .report import write_reports
    from .runner import Campaign
    camp = Campaign.load(Path(args.run))
    if not camp.results:
        process(camp, budget=args.minimize_budget, save=False)
    bench = _bench_all(camp, args.bench_runs) if args.bench_runs else camp.bench
    for path in write_reports(camp, args.command or camp.command, Path(args.report_dir),
                              args.title, bench):
        print(f"report: {path}")
    return 0


def cmd_bench(args: argparse.Namespace) -> int:
    from .bench import bench
    res = bench(args.target, args.runs, args.seed, libs=args.libsframe)
    print(f"{args.target}: {res['runs']} runs in {res['seconds']:.1f} s = "
          f"{res['exec_s']:.0f} exec/s on seed-sized inputs (max_len {res['max_len']}); "
          f"{res['exec_cpu_s']:.0f} per CPU second, load average {os.getloadavg()[0]:.2f}")
    return 0


def cmd_minimize(args: argparse.Namespace) -> int:
    import importlib

    from .minimize import minimize, same_failure
    mod = importlib.import_module(f"fuzz.{args.target}")
    data = Path(args.file).read_bytes()
    try:
        mod.test_one_input(data)
    except common.sfcheck_errors():
        print("the harness accepts this input (sfcheck error only): nothing to minimise")
        return 1
    except Exception as exc:  # noqa: BLE001
        sig = common.signature(exc)
    else:
        print("the harness accepts this input: nothing to minimise")
        return 1
    small = minimize(data, same_failure(mod.test_one_input, sig), args.budget)
    out = Path(args.output or args.file + ".min")
    out.write_bytes(small)
    print(f"{sig}: {len(data)} -> {len(small)} bytes: {out}")
    return 0


def cmd_seeds(args: argparse.Namespace) -> int:
    n = common.write_seeds(args.target, Path(args.dir), versions=MODEL_SEEDS.get(args.target))
    print(f"{n} seed(s) in {args.dir}")
    return 0


def cmd_list(args: argparse.Namespace) -> int:
    for h in HARNESSES:
        if not (args.standalone and h in ("libsframe", "glibc")):  # these need a library
            print(h)
    return 0


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m fuzz", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="cmd", required=True)
    r = sub.add_parser("run", help="run a campaign and write its report")
    r.add_argument("--targets", type=_targets, default=["section"])
    r.add_argument("--duration", type=int, default=60, help="seconds per job")
    r.add_argument("--jobs", type=int, default=1, help="processes per target")
    r.add_argument("--seed", type=int, default=1)
    r.add_argument("--max-len", type=int, default=4096)
    r.add_argument("--out", help="run directory (default fuzz/out/<targets>-<time>)")
    r.add_argument("--report-dir", default=str(common.ROOT / "reports"))
    r.add_argument("--title", default="", help="label in the report file name")
    r.add_argument("--libsframe", action="append", default=[], help="libsframe.so path")
    r.add_argument("--glibc", help="glibc SFrame reader built by fuzz/get-glibc-sframe.sh")
    r.add_argument("--no-mutator", action="store_true", help="plain byte mutation only")
    r.add_argument("--no-save", action="store_true",
                   help="do not add new findings to corpus/regressions/")
    r.add_argument("--minimize-budget", type=float, default=60.0, help="seconds per finding")
    r.add_argument("--progress", type=float, default=30.0, help="seconds between lines")
    r.add_argument("--bench-runs", type=int, default=0,
                   help="after the campaign, also measure exec/s on seed-sized inputs")
    r.set_defaults(fn=cmd_run)
    rep = sub.add_parser("report", help="re-render the report of a finished run")
    rep.add_argument("run")
    rep.add_argument("--report-dir", default=str(common.ROOT / "reports"))
    rep.add_argument("--title", default="")
    rep.add_argument("--command", default="")
    rep.add_argument("--minimize-budget", type=float, default=30.0)
    rep.add_argument("--bench-runs", type=int, default=0)
    rep.set_defaults(fn=cmd_report)
    b = sub.add_parser("bench", help="exec/s of a harness on seed-sized inputs")
    b.add_argument("target", choices=HARNESSES)
    b.add_argument("--runs", type=int, default=20000)
    b.add_argument("--seed", type=int, default=1)
    b.add_argument("--libsframe", action="append", default=[])
    b.set_defaults(fn=cmd_bench)
    m = sub.add_parser("minimize", help="shrink one failing input")
    m.add_argument("target", choices=HARNESSES)
    m.add_argument("file")
    m.add_argument("-o", "--output")
    m.add_argument("--budget", type=float, default=60.0)
    m.set_defaults(fn=cmd_minimize)
    s = sub.add_parser("seeds", help="write a harness's seed inputs to DIR")
    s.add_argument("target", choices=HARNESSES)
    s.add_argument("dir")
    s.set_defaults(fn=cmd_seeds)
    c = sub.add_parser("compare-mutator", help="the same campaign with and without the "
                       "structure-aware mutator, side by side")
    c.add_argument("--target", choices=("section", "elf"), default="section")
    c.add_argument("--duration", type=int, default=600)
    c.add_argument("--seed", type=int, default=1)
    c.add_argument("--max-len", type=int, default=4096)
    c.add_argument("--out")
    c.add_argument("--report-dir", default=str(common.ROOT / "reports"))
    c.add_argument("--render", metavar="RUN", help="only re-render the report of a finished run")
    c.set_defaults(fn=lambda a: __import__("fuzz.compare", fromlist=["main"]).main(a))
    lst = sub.add_parser("list", help="list the harnesses")
    lst.add_argument("--standalone", action="store_true",
                     help="only those that need nothing outside the project (OSS-Fuzz)")
    lst.set_defaults(fn=cmd_list)
    args = p.parse_args(argv)
    return args.fn(args)


if __name__ == "__main__":
    sys.exit(main())
