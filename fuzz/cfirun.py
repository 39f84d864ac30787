"""Harness `cfirun`: bytes -> an .eh_frame section -> the C reader and the Python one.

The property (an AssertionError is a finding): ehframe.read_columns with
sfcheck.dwarf._cfirun and without it (ehframe._read_columns, callframe.run: the reference)
give the same columns and rows, or the same error. The input's first byte picks the byte
order, address size and shape: the bytes as a whole section, or a toolchain-like CIE
followed by FDEs whose programs are the input (split at 0xFF 0xFE), so most inputs reach
the interpreter. tests/test_cfirun.py runs generated sections through the same comparison
under hypothesis.

With SFCHECK_CFIRUN_SO=path/to/_cfirun*.so the harness loads that build (the ASan one of
fuzz/build-cfirun-asan.sh) instead of the installed module.

    python fuzz/cfirun.py [libFuzzer flags] [corpus dirs]
"""

from __future__ import annotations

import os
import struct
import sys
from types import ModuleType

# Last, after site-packages: an installed sfcheck (the one CI tests) wins over the checkout.
sys.path.append(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from fuzz import common  # noqa: E402

with common.instrumented_imports(__name__ == "__main__", dataflow=False):
    from sfcheck.dwarf import ehframe

# CIE bodies after the length: id 0, version 1, "zR", code 1, data -8, RA 16, aug data
# (the FDE encoding), initial instructions (def_cfa rsp+8, RA at cfa-8); and "zPLR".
_CIES = (b"\0\0\0\0\x01zR\0\x01\x78\x10\x01\x1b\x0c\x07\x08\x90\x01",
         b"\0\0\0\0\x01zPLR\0\x01\x78\x10\x07\x9b\0\0\0\0\x1b\x1b\x0c\x07\x08\x90\x01",
         b"\0\0\0\0\x03zR\0\x04\x7c\x1e\x01\x1b\x0c\x1f\x00")


def load_cfirun() -> ModuleType | None:
    """The C reader: the build named by SFCHECK_CFIRUN_SO, else the installed one."""
    return common.load_extension("SFCHECK_CFIRUN_SO", "sfcheck.dwarf._cfirun") or ehframe.CFIRUN


CFIRUN = load_cfirun() if __name__ == "__main__" else ehframe.CFIRUN


def make_section(data: bytes) -> tuple[bytes, bool, int]:
    """(section, big-endian?, address size) from a fuzzer's bytes."""
    if not data:
        return b"", False, 8
    mode, rest = data[0], data[1:]
    big, asz = bool(mode & 1), 4 if mode & 2 else 8
    if mode & 0xC == 0:
        return rest, big, asz
    o = ">" if big else "<"
    cie = _CIES[(mode >> 4) % len(_CIES)]
    out = struct.pack(o + "I", len(cie)) + cie
    for k, prog in enumerate(rest.split(b"\xff\xfe")[:64]):
        at = len(out)
        body = struct.pack(o + "Iii", at + 4, 0x100 * k, 0x40 + len(prog)) + b"\0" + prog
        out += struct.pack(o + "I", len(body)) + body
    return out, big, asz


def both(section: bytes, big: bool, asz: int, cfirun: ModuleType | None) -> list[object]:
    out: list[object] = []
    saved = ehframe.CFIRUN  # the process's switch: put back, or every later read is Python's
    try:
        for mode in (cfirun, None):
            ehframe.CFIRUN = mode
            try:
                c = ehframe.read_columns(section, 0x1000, big, asz, 16, 6)
                out.append((list(c.offsets), list(c.starts), list(c.sizes), c.rels, c.limits))
            except ehframe.EhFrameError as exc:
                out.append(("EhFrameError", str(exc)))
    finally:
        ehframe.CFIRUN = saved
    return out


def test_one_input(data: bytes) -> None:
    assert CFIRUN is not None
    section, big, asz = make_section(data)
    fast, ref = both(section, big, asz, CFIRUN)
    assert fast == ref, (data, fast, ref)


if __name__ == "__main__":
    if CFIRUN is None:
        sys.exit("sfcheck.dwarf._cfirun is not built (pip install -e . with a C compiler)")
    common.run("cfirun", test_one_input)
