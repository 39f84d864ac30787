"""rules/header.read_header's findings whole (rule, severity, message, offset) and its None on
each way a header cannot be read: no bytes, one byte, a bad magic at two and three bytes (the
two-byte cut between too short and bad magic), a good magic but a cut header at 2 and 27
bytes against a clean 28, version bytes 0 and 4 against 1..3, an auxiliary header past the
end (the mutation run's survivors: the message and offset were unasserted)."""

from __future__ import annotations

import struct

import pytest

from sfcheck.format import constants as C
from sfcheck.result import Severity
from sfcheck.rules.header import read_header
from sfcheck.walk.context import SectionContext

ERR = Severity.ERROR
MAGIC_HINT = "(expected 0xdee2 in either byte order)"


def header(version: int = C.VERSION_3, aux_len: int = 0) -> bytes:
    return struct.pack("<HBBBbbBIIIII", 0xDEE2, version, 0, C.ABI_AMD64_LE, 0, -8, aux_len,
                       0, 0, 0, 0, 0)


def run(data: bytes) -> tuple[object, list[tuple]]:
    ctx = SectionContext("f", ".sframe", 0, data)
    h = read_header(ctx)
    return h, [(f.rule, f.severity, f.message, f.location.offset) for f in ctx.findings]


@pytest.mark.parametrize(("data", "found"), [
    (b"", ("header-too-short", "section of 0 bytes is too short for the SFrame magic")),
    (b"\xe2", ("header-too-short", "section of 1 byte is too short for the SFrame magic")),
    (b"\0\0", ("header-bad-magic", f"bad magic 0x0000 {MAGIC_HINT}")),
    (b"\xe2\xdf\0", ("header-bad-magic", f"bad magic 0xe2df {MAGIC_HINT}")),
])
def test_no_magic(data: bytes, found: tuple[str, str]) -> None:
    assert run(data) == (None, [(found[0], ERR, found[1], 0)])


@pytest.mark.parametrize("size", [2, 27])
def test_a_cut_header(size: int) -> None:
    assert run(header()[:size]) == (
        None, [("header-too-short", ERR, f"{size} bytes; the header alone needs 28", 0)])


@pytest.mark.parametrize("version", [C.VERSION_1, C.VERSION_2, C.VERSION_3])
def test_a_whole_header(version: int) -> None:
    h, found = run(header(version))
    assert (h.version, h.abi, h.fixed_ra, found) == (version, C.ABI_AMD64_LE, -8, [])


@pytest.mark.parametrize("version", [0, 4])
def test_unknown_versions(version: int) -> None:
    assert run(header(version)) == (
        None, [("header-version-unknown", ERR, f"version byte is {version}", 2)])


def test_an_auxiliary_header_past_the_end() -> None:
    assert run(header(aux_len=4) + b"\0\0\0") == (None, [(
        "header-too-short", ERR, "4 bytes needed at offset 0x1c but the section has 0x1f bytes",
        7)])
