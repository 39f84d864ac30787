"""Gate inputs a one-line bug could let through (survivors of issue 29's mutation audit):
the .deb format version, a waiver's pc type, the FRE sub-section's claimed length."""

from __future__ import annotations

import io
import struct

import pytest
from test_rules import build, fde

from sfcheck.checker import check_section_bytes
from sfcheck.inputs import ArchiveError, Limits
from sfcheck.inputs.deb import deb_entries
from sfcheck.inputs.limits import Budget
from sfcheck.waivers import WaiverError, parse_waivers

from archives import LIB_V3, ar_bytes, tar_bytes


def _deb(version: bytes) -> bytes:
    data = tar_bytes([("./usr/lib/libx.so", LIB_V3.read_bytes())])
    control = tar_bytes([("./control", b"Package: t\nVersion: 1\nArchitecture: amd64\n")])
    return ar_bytes([("debian-binary", version), ("control.tar", control), ("data.tar", data)])


@pytest.mark.parametrize("version", [b"2.0\n", b"2.1\n"])
def test_deb_format_2_is_read(version: bytes) -> None:
    names = [e.name for e in deb_entries(io.BytesIO(_deb(version)), Budget(Limits()))]
    assert names == ["./usr/lib/libx.so"] or names == ["usr/lib/libx.so"]


@pytest.mark.parametrize("version", [b"3.0\n", b"1.0\n", b"0.939000\n", b"\n", b"20\n"])
def test_deb_other_format_versions_are_refused(version: bytes) -> None:
    with pytest.raises(ArchiveError, match="unsupported .deb format version"):
        list(deb_entries(io.BytesIO(_deb(version)), Budget(Limits())))


@pytest.mark.parametrize("value", ["true", "false", "-1", "\"0x1000\"", "1.5"])
def test_waiver_pc_must_be_a_non_negative_integer(value: str) -> None:
    text = f'[[waiver]]\nrule = "fde-unsorted"\npath = "*"\npc = {value}\nreason = "x"\n'
    with pytest.raises(WaiverError, match="`pc` must be a non-negative integer"):
        parse_waivers(text)
    ok = parse_waivers('[[waiver]]\nrule = "fde-unsorted"\npath = "*"\npc = 0x1000\nreason = "x"\n')
    assert ok[0].pc == 0x1000


@pytest.mark.parametrize("version", [2, 3])
@pytest.mark.parametrize("delta", [1, 4])
def test_fre_len_claiming_more_than_the_fres_use_is_found(version: int, delta: int) -> None:
    """sfh_fre_len claiming bytes the FREs do not use. (Claiming fewer, the last FRE runs
    past the sub-section's end: layout-fde-fres-bounds, tested with the layout rules.)"""
    data = bytearray(build([fde(), fde(start=0x200)], version=version))
    (fre_len,) = struct.unpack_from("<I", data, 0x10)
    struct.pack_into("<I", data, 0x10, fre_len + delta)
    data += bytes(max(delta, 0))  # the claimed bytes exist: only the length is wrong
    res = check_section_bytes(bytes(data))
    got = [(f.location.offset, f.message) for f in res.findings if f.rule == "layout-fre-len"]
    assert got == [(0x10, f"FRE blocks use {fre_len:#x} bytes, sfh_fre_len is "
                          f"{fre_len + delta:#x}")]


def test_waiver_describes_itself_by_every_condition_it_has() -> None:
    """How an unused waiver is named to the user: rule, path, and package/function/pc when set."""
    full, bare = parse_waivers(
        '[[waiver]]\nrule = "fde-unsorted"\npath = "usr/lib/*"\npackage = "libfoo*"\n'
        'function = "main"\npc = 0x1000\nreason = "x"\n'
        '[[waiver]]\nrule = "defect"\npath = "*"\nreason = "y"\n')
    assert full.describe() == ("waiver #1 (fde-unsorted on usr/lib/* in libfoo*, function main,"
                               " pc 0x1000)")
    assert bare.describe() == "waiver #2 (defect on *)"
    zero = parse_waivers('[[waiver]]\nrule = "fde"\npath = "*"\npc = 0\nreason = "z"\n')[0]
    assert zero.describe() == "waiver #1 (fde on *, pc 0x0)"  # pc 0 is a pc, not "none"
