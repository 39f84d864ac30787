"""Findings a one-line bug could lose or misplace (the survivors of issue 29's mutation audit):
each case asserts the rule and where it points (FDE index, section offset, PC), per version."""

from __future__ import annotations

import pytest
from elfbuild import SHF_ALLOC, SHT_GNU_SFRAME, Elf, Sec
from test_rules import build, fde

from sfcheck.checker import check_elf, check_section_bytes
from sfcheck.format import make_fre

HEADER = 28
V2_FDE, V3_INDEX, V3_ATTR = 20, 16, 5  # v2 FDE record, v3 index entry and attribute record


def _info_offset(version: int, nfdes: int, index: int) -> int:
    """Where FDE `index`'s info byte sits (v2: in the record; v3: in its attribute record,
    after num_fres u16; each FDE here has two one-byte-start FREs of one offset word)."""
    if version == 2:
        return HEADER + index * V2_FDE + 16
    return HEADER + nfdes * V3_INDEX + index * (V3_ATTR + 2 * 3) + 2


def _findings(data: bytes, rule: str) -> list[tuple[int | None, int | None, int | None]]:
    res = check_section_bytes(data)
    return [(f.location.fde, f.location.offset, f.location.pc)
            for f in res.findings if f.rule == rule]


@pytest.mark.parametrize("version", [2, 3])
@pytest.mark.parametrize("fre_type", [3, 15])
def test_fde_fre_type_fires_on_the_fde_that_has_it(version: int, fre_type: int) -> None:
    """FRE type 3 (libsframe asserts in sframe_fre_start_addr_size) on FDE 1 of 2."""
    data = bytearray(build([fde(), fde(start=0x200)], version=version))
    at = _info_offset(version, 2, 1)
    assert data[at] & 0x0F == 0  # ADDR1, as built
    data[at] |= fre_type
    rec = HEADER + (V2_FDE if version == 2 else V3_INDEX)
    got = _findings(bytes(data), "fde-fre-type")
    assert [(idx, off) for idx, off, _ in got] == [(1, rec)]
    assert {f.rule for f in check_section_bytes(bytes(data)).findings} == {"fde-fre-type"}


@pytest.mark.parametrize("version", [2, 3])
def test_fre_start_order_points_at_the_fre(version: int) -> None:
    data = build([fde(fres=(make_fre(0, [8]), make_fre(4, [16]), make_fre(4, [8])))],
                 version=version)
    res = check_section_bytes(data)
    (f,) = [f for f in res.findings if f.rule == "fre-start-order"]
    assert (f.location.fde, f.location.fre) == (0, 2)


def test_unsorted_fdes_in_a_relocatable_object_are_not_a_finding(tmp_path) -> None:
    """In a .o, function starts are relocated by the linker, which sorts the output: the order
    of the object's FDEs says nothing (the exemption a one-line bug can drop)."""
    data = build([fde(start=0x300), fde(start=0x100)])
    assert [idx for idx, _, _ in _findings(data, "fde-unsorted")] == [1]
    for e_type, fires in ((1, False), (3, True)):  # ET_REL, ET_DYN
        path = tmp_path / f"t{e_type}"
        sec = Sec(".sframe", SHT_GNU_SFRAME, data, flags=SHF_ALLOC, addr=0)
        path.write_bytes(Elf(e_type=e_type, sections=[sec]).build())
        rules = {f.rule for f in check_elf(str(path)).findings}
        assert ("fde-unsorted" in rules) is fires, (e_type, rules)
