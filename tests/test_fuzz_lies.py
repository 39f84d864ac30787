"""The fuzz harnesses' new lies (issue 27.7): the archive mutator's tar header lies reach
the reader's new refusals, and the ELF harness's truncate-while-reading mode holds its
property on every cut of a corpus file."""

from __future__ import annotations

import io
import random
import tarfile
from collections import Counter

from fuzz import archive, common, tarlies  # conftest makes fuzz/ importable, not the checkout
from sfcheck.inputs import ArchiveError, Limits
from sfcheck.inputs.expand import stream_members
from sfcheck.result import Skipped

REFUSALS = ("invalid tar header", "negative size", "impossible size", "pax header of",
            "GNU long name or link of", "is not a size", "truncated header")


def _refusal(data: bytes, kind: str) -> str | None:
    try:
        for _m in stream_members(io.BytesIO(data), "x", kind, Limits(max_bytes=64 << 20),
                                 Skipped()):
            pass
    except ArchiveError as exc:
        return str(exc)
    return None


def test_tar_lies_reach_every_new_refusal_and_keep_the_harness_property() -> None:
    seeds = dict(common.archive_seeds())
    seen: Counter[str] = Counter()
    for name in ("tar", "tgz", "txz", "deb", "nested"):
        for k in range(150):
            out = tarlies.mutate(seeds[name], random.Random(k))
            if out is None:
                continue
            archive.test_one_input(out)  # only ArchiveError escapes, no file left behind
            msg = _refusal(out, "deb" if name == "deb" else "tar")
            for words in REFUSALS:
                if msg is not None and words in msg:
                    seen[words] += 1
    assert set(seen) == set(REFUSALS), seen


def test_lies_are_deterministic_and_the_checksum_is_right() -> None:
    seed = dict(common.archive_seeds())["tar"]
    for k in range(40):
        assert tarlies.mutate(seed, random.Random(k)) == tarlies.mutate(seed, random.Random(k))
    block = tarlies.header(b"x", -1, b"0")
    assert tarfile.TarInfo.frombuf(block, "utf-8", "strict").size == -1  # valid but lying


def test_elf_harness_truncation_mode_on_every_cut() -> None:
    from fuzz import elf as harness

    assert harness.seeds()
    for k in range(16):
        # Seed 0, mode 0 (the .sframe bytes as they are), bit 2: cut at k/16 of the file.
        mode = 4 | k << 3
        body = harness.seeds()[0].data[harness.seeds()[0].sframe_off:][:64]
        harness.test_one_input(bytes((0, mode)) + body)
