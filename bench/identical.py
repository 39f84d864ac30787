"""Are sfcheck's findings the same at two revisions? (issue 16: a speed-up changes no finding)

    python bench/identical.py BASE [NEW]      (NEW defaults to the working tree)

Runs both revisions' `sfcheck --format json` under every consumer profile on:
- every file of corpus/ (ELF files and the rest: a scan reads what it can),
- the fuzz regression corpus (corpus/regressions/*/*.bin, bare sections),
- ../shared/testdata/upstream: binutils' section blobs (bz2 or plain) and the
  simple-frame-rs cases (their `content` bytes at their `section_base`),
and prints each (input set, profile) pair whose JSON differs, with the first differing
lines; exit 1 when any does. BASE is checked out into a temporary git worktree; the
two runs use the same interpreter and the revisions' own sources (PYTHONPATH).
"""

from __future__ import annotations

import bz2
import difflib
import json
import os
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
UPSTREAM = ROOT.parent / "shared" / "testdata" / "upstream"
PROFILES = ("strict", "kernel", "kernel-rfc-2023", "glibc-2.42", "libsframe-2.46", "llvm-22")


def upstream_inputs(out: Path) -> Iterator[tuple[Path, int | None]]:
    """(file, its section's address) for the regression corpus and upstream blobs, which
    are bare sections; None for the upstream ELF objects (binutils' .bz2 files)."""
    yield from ((p, 0) for p in sorted((ROOT / "corpus" / "regressions").glob("*/*.bin")))
    for p in sorted((UPSTREAM / "binutils").glob("*")):
        if p.suffix == ".dump" or "README" in p.name:  # objdump's text, the notes
            continue
        dest = out / (p.name.removesuffix(".bz2") + ".bin")
        dest.write_bytes(bz2.decompress(p.read_bytes()) if p.suffix == ".bz2"
                         else p.read_bytes())
        yield dest, (None if dest.read_bytes()[:4] == b"\x7fELF" else 0)
    for p in sorted((UPSTREAM / "simple-frame-rs").glob("*.json")):
        case = json.loads(p.read_text())
        dest = out / (p.stem + ".bin")
        dest.write_bytes(bytes(case["content"]))
        yield dest, case["section_base"]


def run(src: Path, args: list[str]) -> str:
    """One sfcheck JSON report from the sources at `src`, paths made relative."""
    env = dict(os.environ, PYTHONPATH=str(src))
    # -P: `-m` would put the current directory (this checkout) ahead of PYTHONPATH.
    p = subprocess.run([sys.executable, "-P", "-m", "sfcheck", "--format", "json", "--fail-on",
                        "none", *args], capture_output=True, text=True, env=env, cwd=ROOT)
    if p.returncode not in (0, 1):
        return f"exit {p.returncode}\n{p.stderr[-2000:]}"
    return p.stdout


def reports(src: Path, extra: list[tuple[Path, int | None]]) -> dict[str, str]:
    out = {}
    for prof in PROFILES:
        out[f"corpus/ --profile {prof}"] = run(src, ["-j", "2", "--profile", prof, "corpus"])
        for path, vma in extra:
            raw = [] if vma is None else ["--raw", "--vma", hex(vma)]
            out[f"{path.name} --profile {prof}"] = run(src, [*raw, "--profile", prof,
                                                             str(path)])
    return out


def main(argv: list[str]) -> int:
    if not argv or len(argv) > 2:
        print(__doc__, file=sys.stderr)
        return 2
    base, new = argv[0], (argv[1] if len(argv) > 1 else None)
    with tempfile.TemporaryDirectory(prefix="sfcheck-identical-") as tmp:
        t = Path(tmp)
        (t / "raw").mkdir()
        extra = list(upstream_inputs(t / "raw"))
        trees = []
        for rev in (base, new):
            if rev is None:
                trees.append(ROOT)
                continue
            wt = t / f"rev-{len(trees)}"
            subprocess.run(["git", "worktree", "add", "-q", "--detach", str(wt), rev],
                           cwd=ROOT, check=True)
            trees.append(wt)
        try:
            a, b = (reports(tree, extra) for tree in trees)
        finally:
            for tree in trees:
                if tree != ROOT:
                    subprocess.run(["git", "worktree", "remove", "--force", str(tree)],
                                   cwd=ROOT, check=False)
    differ = [k for k in a if a[k] != b[k]]
    findings = sum(r.count('"rule":') for r in b.values())
    print(f"{len(a)} reports ({len(extra)} upstream/regression inputs and corpus/, {len(PROFILES)} "
          f"profiles, {findings} findings at {new or 'the working tree'}): "
          f"{len(differ)} differ from {base}")
    for k in differ:
        print(f"--- {k}")
        diff = difflib.unified_diff(a[k].splitlines(), b[k].splitlines(), lineterm="", n=1)
        print("\n".join(list(diff)[:40]))
    return 1 if differ else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
