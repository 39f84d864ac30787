"""Survey records of a v1 and a v3 repository, as one JSON dump to compare across revisions
(a speed-up of the survey changes no record):

    python bench/survey_records.py [--packages N] [--toolchains DIR] OUT.json

Builds survey_bench.py's inputs twice, deterministically: once with the system binutils
(SFrame v1) and once with TOOLCHAINS/bin-sid (v3; skipped with a note when it does not run),
N packages each (default 80), then writes every package's record (work.survey_package:
files, findings, refusals per profile) without its timing. Run it with each revision's
sources first on PYTHONPATH and `cmp` the two dumps.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path

# after PYTHONPATH: the revision under test's sfcheck comes first, bench/ from this tree
sys.path.append(str(Path(__file__).resolve().parents[1]))

import sfcheck  # noqa: E402
from bench import survey_bench  # noqa: E402
from sfcheck.survey.work import survey_package  # noqa: E402


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("out", type=Path)
    ap.add_argument("--packages", type=int, default=80)
    ap.add_argument("--toolchains", type=Path, default=survey_bench.ROOT / ".toolchains")
    args = ap.parse_args()
    sid = survey_bench.sid_binutils(args.toolchains)
    if sid is None:
        print(f"no runnable {args.toolchains}/bin-sid: v1 repository only", file=sys.stderr)
    records: dict[str, dict] = {}
    with tempfile.TemporaryDirectory() as tmp:
        for tag, binutils in (("v1", None), ("v3", sid)):
            if tag == "v3" and sid is None:
                continue
            work, repo = Path(tmp) / f"build-{tag}", Path(tmp) / tag
            work.mkdir()
            survey_bench.build_repo(repo, args.packages,
                                    survey_bench.build_objects(work, binutils=binutils))
            for deb in sorted(repo.rglob("*.deb")):
                rec = survey_package(str(deb))
                rec.pop("seconds", None)
                records[f"{tag}/{deb.relative_to(repo)}"] = rec
    args.out.write_text(json.dumps(records, sort_keys=True, indent=0, default=str) + "\n")
    print(f"{len(records)} packages -> {args.out} (sfcheck from {sfcheck.__file__})",
          file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
