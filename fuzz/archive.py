"""Harness `archive`: the package reader (.deb, .rpm, .a, tar, nested) on mutated archives.

Input: the archive's bytes (the seeds are small real archives holding corpus ELF files:
ar, tar, compressed tar, .deb with a static library inside, an RPM when rpmbuild is
installed). The reader runs with small limits (16 MiB expanded, 4,096 members, members
above 64 KiB spilled to a temporary directory) and, as a fuzzer, under RLIMIT_AS, so a
size field that drives an allocation shows up as a MemoryError finding (or libFuzzer's
-rss_limit_mb), a loop as a timeout.

The custom mutator (fuzz/tarlies.py) tells one tar header lie a third of the time (a
bad checksum mid-stream, a negative or impossible size, a huge pax or GNU long-name
body, a pax size record that is not a size, a cut), checksums made right so the lie
reaches the reader; libFuzzer's byte mutation otherwise.

Properties: only ArchiveError escapes; every member is within the limits (its bytes, in
memory or spilled, count against the byte cap), carries its package in its label, and
no temporary file outlives the read.

    python fuzz/archive.py [libFuzzer flags] [corpus dirs]
"""

from __future__ import annotations

import io
import os
import random
import resource
import sys

# Last, after site-packages: an installed sfcheck (the one CI tests) wins over the checkout.
sys.path.append(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from fuzz import common, tarlies  # noqa: E402

with common.instrumented_imports(__name__ == "__main__"):
    from sfcheck.inputs import ArchiveError, Limits, classify
    from sfcheck.inputs.expand import stream_members
    from sfcheck.inputs.spill import SpillDir
    from sfcheck.result import Skipped

LIMITS = Limits(max_bytes=16 << 20, max_members=4096, spill_bytes=64 << 10)
ADDRESS_SPACE = 3 << 30  # as a fuzzer: an allocation past this is a MemoryError finding


def test_one_input(data: bytes) -> None:
    kind = classify(data[:512], "")
    if kind not in ("deb", "rpm", "ar"):
        kind = "tar"  # tar (plain or compressed) is what is left to try
    skipped = Skipped()
    total = 0
    with SpillDir() as spill:
        try:
            for m in stream_members(io.BytesIO(data), "in.pkg", kind, LIMITS, skipped,
                                    spill):
                assert m.label == f"in.pkg:{m.member}", m.label
                if m.error is not None:
                    continue
                size = len(m.data) if m.data is not None else os.path.getsize(m.spill or "")
                assert (m.data is None) == (size > LIMITS.spill_bytes), size
                total += size
                assert total <= LIMITS.max_bytes, f"members hold {total} bytes, over the cap"
                if m.spill is not None:
                    spill.remove(m.spill)  # the caller's to remove, as the scan does
        except ArchiveError:
            pass
        # Copies of nested archives and half-written members are the reader's to remove.
        left = os.listdir(spill.path) if spill.path else []
        assert not left, f"temporary files left behind: {left}"


def custom_mutator(data: bytes, max_size: int, seed: int) -> bytes:
    """A tar header lie (tarlies) a third of the time, libFuzzer's byte mutation else."""
    rng = random.Random(seed)
    if rng.random() < 1 / 3:
        out = tarlies.mutate(data, rng)
        if out is not None and len(out) <= max_size:
            return out
    import atheris

    return atheris.Mutate(data, max_size)


if __name__ == "__main__":
    resource.setrlimit(resource.RLIMIT_AS, (ADDRESS_SPACE, ADDRESS_SPACE))
    common.run("archive", test_one_input, custom_mutator)
