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


# Issue 16: what start-up itself imported for nothing. Each is absent after a plain check
# (text report, one ELF file); see sfcheck/record.py and cli.build_parser.
NOT_FOR_START_UP = [
    "dataclasses", "inspect", "ast", "tokenize", "dis", "typing",  # sfcheck.record instead
    "shutil", "bz2", "lzma", "tempfile", "random",  # argparse's formatter, -o, spilling
    "threading",  # scan: signal.signal itself says whether this is the main thread
    "difflib", "sfcheck.waivers",  # a mistyped command, --waivers
    "sfcheck.unwind", "sfcheck.proc", "sfcheck.cli.dump", "sfcheck.cli.unwind",  # other
    "sfcheck.cli.proc", "sfcheck.cli.catalogue",  # commands and their parsers
    "sfcheck.report.junit",  # other renderers (json, sarif: above)
]


def test_plain_check_keeps_heavy_modules_unloaded() -> None:
    loaded = _modules_after([str(CORPUS / "v3" / "libcorpus.so")])
    assert "sfcheck.rules.semantic" in loaded  # the check itself ran, cross-check included
    heavy = [m for m in NOT_FOR_A_PLAIN_CHECK + NOT_FOR_START_UP
             if m in loaded or any(x.startswith(m + ".") for x in loaded)]
    assert heavy == []


def test_checks_that_need_them_still_load_them(tmp_path) -> None:
    """The lazy imports are where they are needed: -o (tempfile), --format json, --waivers."""
    waivers = tmp_path / "w.toml"
    waivers.write_text('[[waiver]]\nrule = "elf-text-coverage"\npath = "*"\nreason = "r"\n')
    loaded = _modules_after(["--format", "json", "-o", str(tmp_path / "r.json"),
                             "--waivers", str(waivers), str(CORPUS / "v3" / "libcorpus.so")])
    assert {"tempfile", "json", "sfcheck.report.json_report", "sfcheck.waivers"} <= loaded
    assert '"waiver_reason": "r"' in (tmp_path / "r.json").read_text()


def test_token_patterns_match_the_plain_construction() -> None:
    """fre_blocks writes its byte classes raw and its runs as `.{n}` (faster to compile);
    the language is the one of the plain \\xNN / n-dots construction, checked here."""
    import random
    import re

    from sfcheck.format import constants as C
    from sfcheck.format.fre_blocks import token_pattern

    def plain(asz: int) -> re.Pattern[bytes]:
        by_len: dict[int, list[int]] = {}
        for info in range(256):
            if (info >> 5) & 3 != 3:
                width = C.WORD_SIZE[(info >> 5) & 3]
                by_len.setdefault(((info >> 1) & 0xF) * width, []).append(info)
        alts = [b"[" + b"".join(b"\\x%02x" % i for i in infos) + b"]" + b"." * k
                for k, infos in sorted(by_len.items(), key=lambda kv: (kv[0] == 0, kv[0]))]
        return re.compile(b"(" + b"." * asz + b")(" + b"|".join(alts) + b")|.", re.DOTALL)

    rnd = random.Random(16)
    for asz in C.FRE_ADDR_SIZE.values():
        ref, got = plain(asz), token_pattern(asz)
        for _ in range(200):
            data = rnd.randbytes(rnd.randrange(1, 300))
            start = rnd.randrange(len(data))
            assert got.findall(data, start) == ref.findall(data, start)


def test_dump_and_archives_still_load_what_they_need(tmp_path) -> None:
    loaded = _modules_after(["dump", str(CORPUS / "v3" / "libcorpus.so")])
    assert "sfcheck.dump.objdump" in loaded
    # The dump needs neither the rule catalogue nor the profiles (nor the checker).
    assert not {"sfcheck.profiles", "sfcheck.rules", "sfcheck.checker"} & loaded
    # Nor, for an ELF file, the archive readers (arpy imports dataclasses) or typing.
    assert not {"sfcheck.inputs.expand", "tarfile", "arpy", "zstandard", "dataclasses",
                "typing", "shutil"} & loaded
    import tarfile
    tar = tmp_path / "x.tar"
    with tarfile.open(tar, "w") as tf:
        tf.add(CORPUS / "v3" / "libcorpus.so", arcname="libcorpus.so")
    assert "sfcheck.inputs.expand" in _modules_after([str(tar)])


def test_unwind_parser_default_matches_the_unwinder() -> None:
    from sfcheck.cli.unwind import DEFAULT_MAX_FRAMES as CLI_DEFAULT
    from sfcheck.unwind import DEFAULT_MAX_FRAMES
    assert CLI_DEFAULT == DEFAULT_MAX_FRAMES
