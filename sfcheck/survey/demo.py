"""A small Debian repository in two snapshots, from the ELF files in the source tree's
corpus/ (the README's survey example, and the tests'):

    python -m sfcheck.survey.demo DIR    # writes DIR/v1 and DIR/v2

v2 changes three packages of v1 (libcorpus1 goes from SFrame v3 to v1, corpus-tools
loses its SFrame, llvm-tool is rebuilt with GNU tools), removes one and adds one;
`sfcheck survey diff` names exactly those. Files without SFrame are corpus files with
the section removed by objcopy (binutils).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from .debrepo import Pkg, write_repo

# ./corpus when run from a checkout (or a directory linking one), else the source tree's.
CORPUS = Path("corpus") if Path("corpus/v3").is_dir() else \
    Path(__file__).resolve().parents[2] / "corpus"
CHANGED = ("libcorpus1/amd64", "corpus-tools/amd64", "llvm-tool/amd64")


class DemoError(Exception):
    pass


def corpus_file(rel: str, corpus: Path | None = None) -> bytes:
    path = (corpus or CORPUS) / rel
    if not path.is_file():
        raise DemoError(f"{path}: not found (the demo needs the source tree's corpus/)")
    return path.read_bytes()


def without_sframe(rel: str, corpus: Path | None = None) -> bytes:
    """A corpus file with .sframe removed: an ELF file as built without SFrame."""
    objcopy = shutil.which("objcopy")
    if objcopy is None:
        raise DemoError("objcopy (binutils) is needed to make files without SFrame")
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "out")
        src = corpus_file(rel, corpus)  # (a missing corpus is a DemoError)
        Path(tmp, "in").write_bytes(src)
        subprocess.run([objcopy, "--remove-section=.sframe", os.path.join(tmp, "in"), out],
                       check=True, capture_output=True)
        return Path(out).read_bytes()


def snapshots(corpus: Path | None = None) -> tuple[list[Pkg], list[Pkg]]:
    def c(rel: str) -> bytes:
        return corpus_file(rel, corpus)

    def bare(rel: str) -> bytes:
        return without_sframe(rel, corpus)

    docs = Pkg("corpus-doc", "1.0-1", {"usr/share/doc/corpus-doc/README": b"no ELF here\n"},
               arch="all")
    plain = Pkg("plain-tool", "2.1-1", {"usr/bin/plain": bare("v3/exe_pie")})
    gone = Pkg("old-lib", "0.9-1", {"usr/lib/libold.so.0": c("bad/ld240_v2obj_exe")})
    v1 = [
        Pkg("libcorpus1", "1.0-1", {"usr/lib/x86_64-linux-gnu/libcorpus.so.1":
                                    c("v3/libcorpus.so")}, source="corpus"),
        Pkg("corpus-tools", "1.0-1", {"usr/bin/corpus-pie": c("v2/exe_pie"),
                                      "usr/bin/corpus-static": c("v2/exe_static")},
            source="corpus"),
        Pkg("llvm-tool", "3.0-1", {"usr/bin/llvm-tool": c("llvm/exe_pie")}),
        docs, plain, gone,
    ]
    v2 = [
        Pkg("libcorpus1", "1.0-2", {"usr/lib/x86_64-linux-gnu/libcorpus.so.1":
                                    c("v1/libcorpus.so")}, source="corpus"),
        Pkg("corpus-tools", "1.0-2", {"usr/bin/corpus-pie": bare("v2/exe_pie"),
                                      "usr/bin/corpus-static": bare("v2/exe_static")},
            source="corpus"),
        Pkg("llvm-tool", "3.0-2", {"usr/bin/llvm-tool": c("v3/exe_pie_fp")}),
        docs, plain,
        Pkg("new-lib", "1.0-1", {"usr/lib/libnew.so.1": c("v3/libcorpus_fp.so")}),
    ]
    return v1, v2


def build(root: str, corpus: Path | None = None) -> tuple[str, str]:
    """DIR/v1 and DIR/v2 (replaced if present); returns their paths."""
    v1, v2 = snapshots(corpus)
    out = []
    for name, pkgs in (("v1", v1), ("v2", v2)):
        path = os.path.join(root, name)
        shutil.rmtree(path, ignore_errors=True)
        write_repo(path, {"stable": pkgs})
        out.append(path)
    return out[0], out[1]


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 1:
        print("usage: python -m sfcheck.survey.demo DIR", file=sys.stderr)
        return 2
    try:
        a, b = build(args[0])
    except DemoError as exc:
        print(f"sfcheck.survey.demo: error: {exc}", file=sys.stderr)
        return 2
    print(f"{a}\n{b}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
