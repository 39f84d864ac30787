"""`sfcheck dump` equals the readelf text recorded when the corpus was built."""

from __future__ import annotations

from pathlib import Path

import pytest

from sfcheck.cli import main
from sfcheck.elf.loader import load_elf
from sfcheck.format import decode_header

from helpers import CORPUS
from test_dump import modernise_240

# Directories whose plain `.readelf` recordings come from readelf 2.40/2.44, which neither
# apply .rela.sframe nor (2.44) decode v1; `.readelf-2.47` recordings come from 2.47.
OLD_READELF = {"v1", "v2", "aarch64/v1"}
RECORDINGS = sorted([*CORPUS.glob("**/*.readelf"), *CORPUS.glob("**/*.readelf-2.47")])


def _elf_of(rec: Path) -> Path:
    return rec.with_name(rec.name.rsplit(".readelf", 1)[0])


def _oracle(text: str) -> str | None:
    """The recorded text from `Contents of` on; None where readelf could not decode."""
    i = text.find("Contents of the SFrame section")
    if "No further information can be displayed" in text:
        return None
    return text[i:] if i >= 0 else ""


@pytest.mark.parametrize("rec", RECORDINGS, ids=lambda p: str(p.relative_to(CORPUS)))
def test_dump_matches_recorded_readelf(rec: Path, capsys) -> None:
    elf = _elf_of(rec)
    expected = _oracle(rec.read_text())
    info = load_elf(elf)
    data = [s.data for s in info.sections if s.data]
    if expected is None or (expected == "" and data):
        pytest.skip(f"{rec.name}: that readelf cannot decode this version; not an oracle")
    rel = str(rec.parent.relative_to(CORPUS))
    old = rec.suffix == ".readelf" and rel in OLD_READELF
    args = ["dump", str(elf)] + (["--no-relocs"] if old else [])
    status = main(args)
    out = capsys.readouterr().out
    i = out.find("Contents of the SFrame section")
    got = out[i:] if i >= 0 else ""
    # Only readelf 2.40 decodes v1, so a v1 recording is always 2.40's text.
    if data and decode_header(data[0]).version == 1:
        expected = modernise_240(expected, decode_header(data[0]).fixed_ra)
    assert status == 0
    assert got == expected


def test_corpus_has_every_version() -> None:
    versions = set()
    for rec in RECORDINGS:
        info = load_elf(_elf_of(rec))
        versions |= {decode_header(s.data).version for s in info.sections if s.data}
    assert versions == {1, 2, 3}
