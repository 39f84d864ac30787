"""What sfcheck finds on the corpus, per toolchain: a rule x toolchain table for maintainers.

    .venv/bin/python corpus/toolchain_report.py > reports/toolchains.md

Each column is one corpus directory (one assembler/linker pair, see corpus/VERSIONS); each
cell counts the files of that toolchain on which the rule fired (files with the rule / files
checked). Only warning- and error-level rules, and the defect group, are tabulated; info-level
coverage notes are summarised per toolchain below the table.
"""

from __future__ import annotations

import sys
from collections import Counter, defaultdict
from pathlib import Path

from sfcheck.checker import check_elf
from sfcheck.result import Severity
from sfcheck.rules import RULES

CORPUS = Path(__file__).resolve().parent
COLUMNS = [  # (directory, label)
    ("v1", "gas/ld 2.40 (x86-64, v1)"),
    ("v2", "gas/ld 2.44 (x86-64, v2)"),
    ("v3", "gas/ld 2.47.50 (x86-64, v3)"),
    ("llvm", "clang/lld 22.1.8 (x86-64, v2)"),
    ("aarch64/v1", "gas/ld 2.40 (aarch64, v1)"),
    ("aarch64/v3", "gas/ld 2.47.50 (aarch64, v3)"),
    ("s390x/v3", "gas/ld 2.47.50 (s390x, v3)"),
    ("bad", "mismatched pairs (bad/)"),
    ("defects", "gas/ld 2.40-2.47.50 defect inputs (defects/)"),
]


def elf_files(directory: Path) -> list[Path]:
    return sorted(p for p in directory.iterdir()
                  if p.is_file() and p.read_bytes()[:4] == b"\x7fELF")


def main() -> int:
    hits: dict[str, Counter] = defaultdict(Counter)  # rule -> column -> files
    totals: Counter = Counter()
    infos: dict[str, Counter] = defaultdict(Counter)  # column -> info rule -> findings
    for directory, _label in COLUMNS:
        for path in elf_files(CORPUS / directory):
            res = check_elf(path, path=str(path.relative_to(CORPUS)))
            totals[directory] += 1
            for rule_id in {f.rule for f in res.findings
                            if f.severity >= Severity.WARNING or f.rule.startswith("defect")}:
                hits[rule_id][directory] += 1
            for f in res.findings:
                if f.severity == Severity.INFO:
                    infos[directory][f.rule] += 1
    out = sys.stdout
    out.write("# sfcheck findings per toolchain\n\n")
    out.write("Produced by `.venv/bin/python corpus/toolchain_report.py > reports/toolchains.md`"
              " from the binaries in `corpus/` (tool versions in `corpus/VERSIONS`). Default "
              "profile (strict), all rules on. A cell is *files with the finding / files "
              "checked*.\n\n")
    out.write("| rule | severity | " + " | ".join(label for _d, label in COLUMNS) + " |\n")
    out.write("|---|---|" + "---|" * len(COLUMNS) + "\n")
    order = sorted(hits, key=lambda r: (RULES[r].group != "defect", -RULES[r].severity, r))
    for rule_id in order:
        cells = [f"{hits[rule_id][d]}/{totals[d]}" if hits[rule_id][d] else ""
                 for d, _l in COLUMNS]
        out.write(f"| `{rule_id}` | {RULES[rule_id].severity} | " + " | ".join(cells) + " |\n")
    out.write("\n## Info-level findings (coverage and layout notes), counted per finding\n\n")
    for directory, label in COLUMNS:
        notes = ", ".join(f"`{r}` x{n}" for r, n in sorted(infos[directory].items()))
        out.write(f"- **{label}** ({totals[directory]} files): {notes or 'none'}\n")
    out.write("\n## Reading it\n\n")
    for rule_id in order:
        if RULES[rule_id].group == "defect":
            out.write(f"- `{rule_id}`: {RULES[rule_id].title}. `sfcheck explain {rule_id}` "
                      "gives producer, versions, consequence and how to confirm.\n")
    out.write("\nThe `bad/` column holds links built to be wrong (mixed SFrame versions, "
              "lld concatenation, discarded inputs); see `corpus/bad/README.md`.\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
