"""Harness `kernel` (differential): mutated sections through the model of the Linux V3-series
reader (sfcheck/readers/v3series.py; with full validation first, then without) and sfcheck's
reference table; see fuzz/reader_models.py for what is recorded.

    python fuzz/kernel.py [libFuzzer flags] [corpus dirs]
"""

from __future__ import annotations

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from fuzz import common  # noqa: E402

with common.instrumented_imports(__name__ == "__main__"):
    from sfcheck.readers import compare  # noqa: F401

from fuzz import mutator  # noqa: E402
from fuzz.libsframe import Recorder  # noqa: E402
from fuzz.reader_models import Harness  # noqa: E402

TARGET = "kernel"
test_one_input = Harness(TARGET, Recorder(os.environ.get("SFCHECK_FUZZ_FINDINGS"), TARGET))


def custom_mutator(data: bytes, max_size: int, seed: int) -> bytes:
    return mutator.mutate(data, max_size, seed)


if __name__ == "__main__":
    common.run(TARGET, test_one_input, custom_mutator)
