"""What `sfcheck FILE` imports: start-up is most of a small file's check (issue 7), so
the heavy modules a plain ELF check does not need must stay unloaded."""

from __future__ import annotations

import json
import subprocess
import sys

from helpers import CORPUS, ROOT

# Each costs 5-50 ms of imports; none is needed to check one linked ELF file.
NOT_FOR_A_PLAIN_CHECK = [
    "elftools",  # ELF header by hand; DWARF expressions by sfcheck.dwarf.expr
    "tarfile", "zstandard", "arpy", "rpmfile", "sfcheck.inputs.expand",  # archives
    "concurrent.futures.process",  # the worker pool (-j, many files)
    "sfcheck.unwind.core", "sfcheck.unwind.unwinder",  # `sfcheck unwind`
    "sfcheck.dump.objdump",  # `sfcheck dump`
    "tomllib",  # --waivers
    "xml.etree", "sfcheck.report.sarif", "sfcheck.report.json_report",  # other --format
]


def _modules_after(argv: list[str]) -> set[str]:
    code = ("import json, sys\nfrom sfcheck.cli import main\n"
            f"status = main({argv!r})\n"
            "print(json.dumps([status, sorted(sys.modules)]), file=sys.stderr)\n")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          cwd=ROOT, timeout=120)
    status, modules = json.loads(proc.stderr.strip().splitlines()[-1])
    assert status in (0, 1), proc.stderr
    return set(modules)


def test_plain_check_keeps_heavy_modules_unloaded() -> None:
    loaded = _modules_after([str(CORPUS / "v3" / "libcorpus.so")])
    assert "sfcheck.rules.semantic" in loaded  # the check itself ran, cross-check included
    heavy = [m for m in NOT_FOR_A_PLAIN_CHECK
             if m in loaded or any(x.startswith(m + ".") for x in loaded)]
    assert heavy == []


def test_dump_and_archives_still_load_what_they_need(tmp_path) -> None:
    loaded = _modules_after(["dump", str(CORPUS / "v3" / "libcorpus.so")])
    assert "sfcheck.dump.objdump" in loaded
    # The dump needs neither the rule catalogue nor the profiles (nor the checker).
    assert not {"sfcheck.profiles", "sfcheck.rules", "sfcheck.checker"} & loaded
    import tarfile
    tar = tmp_path / "x.tar"
    with tarfile.open(tar, "w") as tf:
        tf.add(CORPUS / "v3" / "libcorpus.so", arcname="libcorpus.so")
    assert "sfcheck.inputs.expand" in _modules_after([str(tar)])


def test_unwind_parser_default_matches_the_unwinder() -> None:
    from sfcheck.unwind import DEFAULT_MAX_FRAMES
    from sfcheck.unwind.cli import DEFAULT_MAX_FRAMES as CLI_DEFAULT
    assert CLI_DEFAULT == DEFAULT_MAX_FRAMES
