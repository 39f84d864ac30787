"""Repositories for the survey tests: the demo's two snapshots, and a larger one of
distinct packages (each a corpus ELF file with a package-specific note appended, so every
package has its own digest) for runs that must last long enough to be interrupted."""

from __future__ import annotations

import os
from pathlib import Path

from sfcheck.survey.debrepo import Pkg, write_repo

from helpers import CORPUS

ELF_FILES = ["v1/libcorpus.so", "v2/libcorpus.so", "v3/libcorpus.so", "v2/exe_pie",
             "v3/exe_pie_fp", "llvm/exe_pie", "bad/ld240_v2obj_exe", "v3/exe_static"]


def many_packages(n: int, salt: str = "") -> list[Pkg]:
    out = []
    for k in range(n):
        elf = (CORPUS / ELF_FILES[k % len(ELF_FILES)]).read_bytes()
        # Bytes after the ELF's last section: the file checks the same, its digest differs.
        out.append(Pkg(f"pkg{k:04d}", f"1.{k}-1", {
            f"usr/lib/libp{k}.so": elf + f"{salt}{k}".encode()}, source=f"src{k % 7}"))
    return out


def big_repo(root: Path, n: int) -> str:
    write_repo(str(root), {"stable": many_packages(n)})
    return str(root)


def comparable(data: dict) -> dict:
    """A report's data without what differs between two runs over the same bytes."""
    out = {k: v for k, v in data.items()
           if k not in ("generated", "snapshot", "previous", "diff")}
    return out


def files_in(root: str) -> int:
    return sum(len(f) for _, _, f in os.walk(root))
