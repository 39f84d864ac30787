"""Harness `kernel_rfc2023` (differential): mutated sections through the model of the 2023
RFC kernel reader (sfcheck/readers/rfc2023.py) and sfcheck's reference table; see
fuzz/reader_models.py for what is recorded.

    python fuzz/kernel_rfc2023.py [libFuzzer flags] [corpus dirs]
"""

from __future__ import annotations

import os
import sys

# Last, after site-packages: an installed sfcheck (the one CI tests) wins over the checkout.
sys.path.append(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from fuzz.reader_models import harness  # noqa: E402

test_one_input, custom_mutator, run = harness("kernel_rfc2023", __name__ == "__main__")

if __name__ == "__main__":
    run()
