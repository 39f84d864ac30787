"""Harness `rows`: bytes -> an SFrame section -> format/_rows.c against its Python reference.

The property (an AssertionError is a finding): for every FDE index of the section (and a
few past it), Decoder.fde_rows and Decoder.fde(with_fres=False) give the same record, FRE
starts and rows with the C reader as with decode.ROWS = None (the reference), and the same
DecodeError where the reference raises (the C reader declines there). Half the inputs are
the fuzzer's bytes as they are, half a valid generated section damaged by a few edits of
the fuzzer's choosing (tests/strategies.py's idea: near-valid inputs reach the FRE loop).
tests/test_rows_c.py runs the same comparison under hypothesis.

With SFCHECK_ROWS_SO=path/to/_rows*.so the harness loads that build (the ASan one of
fuzz/build-rows-asan.sh) instead of the installed module.

    python fuzz/rows.py [libFuzzer flags] [corpus dirs]
"""

from __future__ import annotations

import importlib
import importlib.util
import os
import sys
from types import ModuleType

# Last, after site-packages: an installed sfcheck (the one CI tests) wins over the checkout.
sys.path.append(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from fuzz import common  # noqa: E402

with common.instrumented_imports(__name__ == "__main__", dataflow=False):
    from sfcheck.errors import DecodeError
    from sfcheck.format.decode import Decoder

decode_mod = importlib.import_module("sfcheck.format.decode")


def load_rows() -> ModuleType | None:
    """The C reader: the build named by SFCHECK_ROWS_SO, else the installed one."""
    path = os.environ.get("SFCHECK_ROWS_SO")
    if path:
        spec = importlib.util.spec_from_file_location("sfcheck.format._rows", path)
        assert spec is not None and spec.loader is not None
        mod = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(mod)
        return mod
    try:
        from sfcheck.format import _rows
    except ImportError:
        return None
    return _rows


def _valid(seed: int) -> bytes:
    """A small valid v3 or v2 section, both byte orders, FRE types 0-2, chosen by `seed`."""
    from sfcheck.format import build_section, encode, fde_info, make_fre
    from sfcheck.format import constants as C
    from sfcheck.format.model import FDE

    version = (3, 2)[seed & 1]
    fres = tuple(make_fre(k * 3, [8 + k, -16][: 1 + (k + seed) % 2]) for k in range(seed % 5))
    fdes = [FDE(start=0x40 * k, size=0x30, info=fde_info((seed >> 2) % 3), fres=fres)
            for k in range(1 + seed % 3)]
    sec = build_section(version, C.ABI_AMD64_LE, fdes, fixed_ra=-8)
    data = encode(sec)
    if seed & 2:  # the other byte order: re-encode with the header's magic swapped
        from sfcheck.record import replace
        data = encode(replace(sec, header=replace(sec.header, big_endian=True)))
    return data


def section_of(data: bytes) -> bytes:
    """The fuzzer's bytes as a section, or a valid one edited as they say."""
    if not data or data[0] & 1:
        return data[1:]
    out = bytearray(_valid(data[0] >> 1))
    for k in range(1, len(data) - 1, 2):  # (position, value) edits
        if out:
            out[data[k] % len(out)] = data[k + 1]
    if len(data) > 1 and data[-1] & 0x80:
        del out[len(out) - (data[-1] & 0xF):]
    return bytes(out)


def _read(data: bytes, index: int, with_rows: bool, rows: ModuleType | None) -> object:
    saved = decode_mod.ROWS
    decode_mod.ROWS = rows
    try:
        dec = Decoder(data)
        return dec.fde_rows(index) if with_rows else dec.fde(index, with_fres=False)
    except DecodeError as exc:
        return ("error", exc.message, exc.offset, exc.structure, exc.field)
    finally:
        decode_mod.ROWS = saved


ROWS = load_rows() if __name__ == "__main__" else None


def test_one_input(data: bytes, rows: ModuleType | None = None) -> None:
    rows = rows or ROWS
    assert rows is not None
    section = section_of(data)
    try:
        n = Decoder(section).header.num_fdes
    except DecodeError:
        return
    for index in [*range(min(n, 16)), n, n + 1]:
        for with_rows in (True, False):
            fast = _read(section, index, with_rows, rows)
            ref = _read(section, index, with_rows, None)
            assert fast == ref, f"FDE {index}: C {fast!r} != reference {ref!r}"


if __name__ == "__main__":
    if ROWS is None:
        sys.exit("sfcheck.format._rows is not built (pip install -e . with a C compiler)")
    common.run("rows", test_one_input)
