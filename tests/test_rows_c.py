"""The C reader of clean FDEs (sfcheck/format/_rows.c) against its Python reference
(format/decode.Decoder.fde_rows and fde(with_fres=False) with decode_mod.ROWS = None): the same
record, FRE starts and rows, and where the reference raises, the same DecodeError (the C
reader declines and the reference runs). Over generated and damaged sections and every
corpus and upstream section."""

from __future__ import annotations

import importlib
import os
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sfcheck.errors import DecodeError
from sfcheck.format import encode
from sfcheck.format.decode import Decoder

from strategies import mutated_sections, sections

# The module, not the package's decode() function of the same name.
decode_mod = importlib.import_module("sfcheck.format.decode")
rows_c = pytest.importorskip("sfcheck.format._rows", reason="the C reader was not built")

ROOT = Path(__file__).resolve().parent.parent
UPSTREAM = ROOT.parent / "shared" / "testdata" / "upstream"


def _read(data: bytes, index: int, with_rows: bool, c: bool) -> object:
    """What the decoder gives for FDE `index` (or its DecodeError's text and location),
    with the C reader on or off."""
    saved = decode_mod.ROWS
    decode_mod.ROWS = rows_c if c else None
    try:
        dec = Decoder(data)
        got = dec.fde_rows(index) if with_rows else dec.fde(index, with_fres=False)
    except DecodeError as exc:
        return ("error", str(exc), exc.offset, exc.structure, exc.field)
    finally:
        decode_mod.ROWS = saved
    return got


def _same_everywhere(data: bytes) -> None:
    try:
        n = Decoder(data).header.num_fdes
    except DecodeError:
        return
    for index in [*range(min(n, 64)), n, n + 1, -1, 1 << 41]:
        for with_rows in (True, False):
            assert _read(data, index, with_rows, True) == _read(data, index, with_rows, False), \
                (index, with_rows)


@settings(max_examples=300, deadline=None, suppress_health_check=list(HealthCheck))
@given(mutated_sections())
def test_damaged_sections_read_alike(data: bytes) -> None:
    _same_everywhere(data)


@settings(max_examples=150, deadline=None, suppress_health_check=list(HealthCheck))
@given(sections())
def test_valid_sections_read_alike_and_c_reads_them(section) -> None:
    data = encode(section)
    _same_everywhere(data)
    dec = Decoder(data)
    for i in range(dec.header.num_fdes):  # a valid FDE is the C reader's: it never declines
        assert rows_c.rows(dec.data, i, *dec._c_args, True) is not None


@settings(max_examples=100, deadline=None, suppress_health_check=list(HealthCheck))
@given(sections(), st.integers(1, 6), st.booleans())
def test_sections_cut_short_read_alike(section, cut: int, by_fre_len: bool) -> None:
    # The last bytes gone (or fre_len claiming fewer): the last FREs end just past the
    # limit, where each bound is off by one or not.
    data = encode(section)
    if by_fre_len:
        order = "big" if data[:2] == b"\xde\xe2" else "little"
        fre_len = int.from_bytes(data[16:20], order)
        data = data[:16] + max(0, fre_len - cut).to_bytes(4, order) + data[20:]
    else:
        data = data[:max(0, len(data) - cut)]
    _same_everywhere(data)


@settings(max_examples=200, deadline=None, suppress_health_check=list(HealthCheck))
@given(st.binary(min_size=0, max_size=200), st.integers(0, 8))
def test_random_bytes_behind_a_header_read_alike(tail: bytes, index: int) -> None:
    # A v3 and a v2 header over random FDE and FRE bytes: most reads fail somewhere.
    for head in (b"\xe2\xde\x03\x02\x02\x00\xf0\x00", b"\xe2\xde\x02\x02\x03\x00\xf0\x00"):
        counts = (3).to_bytes(4, "little") + (5).to_bytes(4, "little")
        fre_len = max(0, len(tail) - 48).to_bytes(4, "little")
        data = head + counts + fre_len + (0).to_bytes(4, "little") \
            + (48).to_bytes(4, "little") + tail
        for with_rows in (True, False):
            assert _read(data, index, with_rows, True) == _read(data, index, with_rows, False)


def _sframe_sections() -> Iterator[tuple[str, bytes]]:
    from sfcheck.elf.loader import load_elf

    roots = [ROOT / "corpus"] + ([UPSTREAM] if UPSTREAM.is_dir() else [])
    for root in roots:
        for dirpath, _dirs, files in os.walk(root):
            for name in sorted(files):
                path = Path(dirpath) / name
                raw = path.read_bytes()
                if raw[:4] != b"\x7fELF":
                    if raw[:2] in (b"\xe2\xde", b"\xde\xe2"):
                        yield str(path), raw
                    continue
                try:
                    info = load_elf(raw)
                except Exception:  # noqa: BLE001 - not an ELF this test can use
                    continue
                for sec in info.sections:
                    if sec.data:
                        yield f"{path}:{sec.name}", bytes(sec.data)


def test_corpus_and_upstream_sections_read_alike() -> None:
    seen = 0
    for _where, data in _sframe_sections():
        _same_everywhere(data)
        seen += 1
    assert seen, "no SFrame section found under corpus/"
