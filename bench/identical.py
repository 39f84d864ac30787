"""Are sfcheck's findings the same at two revisions? (issue 16: a speed-up changes no finding)

    python bench/identical.py BASE [NEW]      (NEW defaults to the working tree)

Runs both revisions' `sfcheck --format json` under every consumer profile on:
- every file of corpus/ (ELF files and the rest: a scan reads what it can),
- the fuzz regression corpus (corpus/regressions/*/*.bin, bare sections),
- ../shared/testdata/upstream: binutils' section blobs (bz2 or plain) and the
  simple-frame-rs cases (their `content` bytes at their `section_base`),
and prints each (input set, profile) pair whose JSON differs, with the first differing
lines; exit 1 when any does. BASE (and NEW, when given) is checked out into a temporary git
worktree, where its optional C FRE walk is built unless SFCHECK_PURE_PYTHON is set (the
working tree must have it built already); the two runs use the same interpreter and the
revisions' own sources (PYTHONPATH). Run it with and without SFCHECK_PURE_PYTHON=1.

What is compared is what the reports find, not their format (the JSON schema grew since
the revisions this was written for: finding effects, verdicts, byte totals): each file's
path, error and findings (rule, severity, message, location, waived), the scan-level
findings, and the summary's per-rule rows (rule, severity, count, files, waived). Those
rows are ordered by count, then catalogue order (`sfcheck rules`), which moves when rules
move between groups, so rows with equal counts are compared as a set (each equal-count
run sorted by rule ID); a finding's `group` is not compared either, for the same reason.
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


def build_walk(tree: Path) -> str:
    """Build the revision's C FRE walk in place (unless SFCHECK_PURE_PYTHON is set): which
    walk its runs use."""
    if "SFCHECK_PURE_PYTHON" in os.environ:
        return "pure Python"
    if tree != ROOT:
        subprocess.run([sys.executable, "setup.py", "-q", "build_ext", "--inplace"], cwd=tree,
                       check=True, capture_output=True)
    built = sorted(p.relative_to(tree) for p in (tree / "sfcheck").rglob("_frewalk*.so"))
    if not built:
        raise SystemExit(f"{tree}: no compiled FRE walk (python setup.py build_ext --inplace)")
    return f"C walk {built[0]}"


FINDING_FIELDS = ("rule", "severity", "message", "location", "waived")
RULE_ROW_FIELDS = ("rule", "severity", "count", "files", "waived")


def normalised(report: str) -> str:
    """The findings of a JSON report, as text to compare and diff (see the module
    docstring); the text unchanged when it is not a JSON report (an exit status and
    stderr)."""
    try:
        doc = json.loads(report)
    except json.JSONDecodeError:
        return report

    def findings(items: list[dict]) -> list[dict]:
        return [{k: f.get(k) for k in FINDING_FIELDS} for f in items]

    rows = [{k: r.get(k) for k in RULE_ROW_FIELDS} for r in doc["summary"]["rules"]]
    view = {"files": [{"path": f["path"], "error": f["error"],
                       "findings": findings(f["findings"])} for f in doc["files"]],
            "findings": findings(doc.get("findings", [])),
            "rules": sorted(rows, key=lambda r: (-r["count"], r["rule"]))}
    return json.dumps(view, indent=1)


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
    if argv and argv[0] in ("-h", "--help"):
        print(__doc__)
        return 0
    if not argv or len(argv) > 2 or any(a.startswith("-") for a in argv):
        print(__doc__, file=sys.stderr)  # (a revision never starts with "-")
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
            for rev, tree in zip((base, new or "the working tree"), trees, strict=True):
                print(f"{rev}: {build_walk(tree)}")
            a, b = (reports(tree, extra) for tree in trees)
        finally:
            for tree in trees:
                if tree != ROOT:
                    subprocess.run(["git", "worktree", "remove", "--force", str(tree)],
                                   cwd=ROOT, check=False)
    a = {k: normalised(v) for k, v in a.items()}
    b = {k: normalised(v) for k, v in b.items()}
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
