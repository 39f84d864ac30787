"""ELF rules on real corpus binaries with one header field patched.

Each patch must add exactly the expected rule to what the untouched file gets
(the "and only the rules that should" half), and the untouched file must not
get it (the "stays silent on valid input" half).
"""

from __future__ import annotations

import struct
from pathlib import Path

import pytest
from elftools.elf.elffile import ELFFile

from sfcheck.checker import Options, check_elf
from sfcheck.elf.constants import PT_GNU_SFRAME, SHT_GNU_SFRAME
from sfcheck.result import Severity

from helpers import CORPUS

V3 = CORPUS / "v3" / "libcorpus.so"
V2 = CORPUS / "v2" / "libcorpus.so"


def rules(data: bytes | Path, **opts) -> dict[str, Severity]:
    res = check_elf(data, options=Options(**opts))
    assert res.error is None
    return {f.rule: f.severity for f in res.findings}


def shdr_field(path: Path, name: str, field: str) -> tuple[int, str]:
    """File offset and struct code of a section header field (ELF64 LE)."""
    with open(path, "rb") as f:
        elf = ELFFile(f)
        index = next(i for i, s in enumerate(elf.iter_sections()) if s.name == name)
        base = elf["e_shoff"] + index * elf["e_shentsize"]
    return base + {"sh_name": 0, "sh_type": 4, "sh_flags": 8}[field], \
        {"sh_name": "I", "sh_type": "I", "sh_flags": "Q"}[field]


def phdr_field(path: Path, p_type: int, field: str) -> tuple[int, str]:
    with open(path, "rb") as f:
        elf = ELFFile(f)
        index = next(i for i, s in enumerate(elf.iter_segments())
                     if s.header.p_type in (p_type, "PT_GNU_SFRAME"))
        base = elf["e_phoff"] + index * elf["e_phentsize"]
    offs = {"p_type": (0, "I"), "p_offset": (8, "Q"), "p_vaddr": (16, "Q")}
    return base + offs[field][0], offs[field][1]


def section_offset(path: Path, name: str = ".sframe") -> int:
    with open(path, "rb") as f:
        return ELFFile(f).get_section_by_name(name)["sh_offset"]


def put(path: Path, where: tuple[int, str], value: int) -> bytes:
    data = bytearray(path.read_bytes())
    off, code = where
    struct.pack_into("<" + code, data, off, value)
    return bytes(data)


def get(path: Path, where: tuple[int, str]) -> int:
    off, code = where
    return struct.unpack_from("<" + code, path.read_bytes(), off)[0]


def rename(path: Path, old: bytes, new: bytes) -> bytes:
    data = path.read_bytes()
    assert data.count(old + b"\0") == 1
    return data.replace(old + b"\0", new + b"\0")


def sframe_byte(path: Path, offset: int, value: int) -> bytes:
    data = bytearray(path.read_bytes())
    data[section_offset(path) + offset] = value
    return bytes(data)


CASES = {
    "elf-section-type": (V3, lambda p: put(p, shdr_field(p, ".sframe", "sh_type"), 1),
                         Severity.WARNING),
    "elf-no-segment": (V3, lambda p: put(p, phdr_field(p, PT_GNU_SFRAME, "p_type"), 0),
                       Severity.ERROR),
    "elf-segment-mismatch": (V3, lambda p: put(p, phdr_field(p, PT_GNU_SFRAME, "p_offset"),
                                               get(p, phdr_field(p, PT_GNU_SFRAME,
                                                                 "p_offset")) + 8),
                             Severity.ERROR),
    "elf-not-alloc": (V3, lambda p: put(p, shdr_field(p, ".sframe", "sh_flags"), 0),
                      Severity.ERROR),
    # abi byte: AMD64 (3) -> aarch64 LE (2), same byte order, so only the machine disagrees
    "elf-abi-machine": (V3, lambda p: sframe_byte(p, 4, 2), Severity.ERROR),
    # flags byte: drop SORTED, keep PCREL
    "elf-not-sorted": (V3, lambda p: sframe_byte(p, 3, 0x04), Severity.ERROR),
    "elf-not-pcrel": (V3, lambda p: sframe_byte(p, 3, 0x01), Severity.WARNING),
}

# Damage that cannot be done without other rules noticing, listed per case.
ALSO = {
    "elf-segment-mismatch": {"elf-segment-padded"},
    # aarch64 has no fixed RA offset; AMD64's -8 is then wrong too.
    "elf-abi-machine": {"header-fixed-ra"},
    "elf-not-sorted": set(),
    # A v3 section without PCREL: every start moves, so the cross-check and text checks fire.
    "elf-not-pcrel": {"elf-fde-outside-text", "semantic-no-eh-frame-fde", "defect-ld-raw-copy",
                      "semantic-no-sframe-fde", "semantic-cfa-mismatch", "fde-overlap",
                      "defect-gas-skipped-fde", "fde-unsorted"},
}


@pytest.mark.parametrize("rule", sorted(CASES))
def test_elf_rule_fires_on_patched_file(rule: str) -> None:
    path, patch, severity = CASES[rule]
    # Reading x86 code as aarch64 rows makes the cross-check disagree everywhere: structure only.
    opts = {"disable": {"semantic", "defect"}} if rule == "elf-abi-machine" else {}
    before = rules(path, **opts)
    assert rule not in before
    after = rules(patch(path), **opts)
    assert after.get(rule) == severity
    assert set(after) - set(before) <= {rule} | ALSO.get(rule, set())


def test_not_pcrel_is_real_output_for_v2() -> None:
    """ld 2.44 writes v2 without PCREL: a warning, and nothing worse from the ELF rules."""
    got = rules(V2)
    assert got["elf-not-pcrel"] == Severity.WARNING
    assert got["elf-segment-padded"] == Severity.INFO


def test_no_sframe_section() -> None:
    renamed = rename(V2, b".sframe", b".sfram_")  # v2 uses SHT_PROGBITS: the name is all
    # PT_GNU_SFRAME still leads the kernel to the bytes: they are checked as the segment.
    got = rules(renamed)
    assert got["elf-segment-unlisted"] == Severity.INFO and "elf-no-sframe" not in got
    where = phdr_field(V2, PT_GNU_SFRAME, "p_type")
    data = bytearray(renamed)
    struct.pack_into("<I", data, where[0], 0)  # PT_NULL: no way to the bytes is left
    assert rules(bytes(data)) == {"elf-no-sframe": Severity.INFO}
    assert rules(bytes(data), require_sframe=True) == {"elf-no-sframe": Severity.ERROR}


def test_v3_sframe_found_by_type_not_name() -> None:
    data = rename(V3, b".sframe", b".sfram_")
    assert get(V3, shdr_field(V3, ".sframe", "sh_type")) == SHT_GNU_SFRAME
    assert "elf-no-sframe" not in rules(data)


def test_no_eh_frame_skips_the_cross_check() -> None:
    data = rename(V3, b".eh_frame", b".eh_fram_")
    got = rules(data)
    assert got["semantic-no-eh-frame"] == Severity.INFO
    assert not {r for r in got if r.startswith("semantic-") and r != "semantic-no-eh-frame"}


def test_undecodable_eh_frame_is_a_warning() -> None:
    data = bytearray(V3.read_bytes())
    off = section_offset(V3, ".eh_frame")
    struct.pack_into("<I", data, off + 8, 0xDEAD)  # CIE version 0xad, augmentation garbage
    data[off + 8] = 0x7F
    got = check_elf(bytes(data))
    hits = [f for f in got.findings if f.rule == "semantic-no-eh-frame"]
    if hits:  # pyelftools refused it: reported, not raised
        assert hits[0].severity == Severity.WARNING
        assert "cannot be decoded" in hits[0].message
    else:  # or it decoded something: then it was still compared without raising
        assert got.error is None
