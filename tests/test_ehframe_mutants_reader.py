""".eh_frame's entries read by the Python reference (sfcheck.dwarf.ehframe with the C reader
switched off): CIE versions 1, 3 and 4, augmentation strings and data (LSB "Exception Frame"
and DWARF 5 section 6.4.1), 64-bit lengths, terminators, a CIE pointer that leads astray,
and the exact one-line errors with their section offsets.
"""

from __future__ import annotations

import struct

import pytest

from sfcheck.dwarf import callframe, ehframe
from sfcheck.dwarf.callframe import OFFSET
from sfcheck.dwarf.cursor import Cursor, EhFrameError
from sfcheck.dwarf.ehframe import _cie, _cie_at, read_eh_frame

from helpers import sleb, uleb

RA, FP = 16, 6
VMA = 0x4000
INIT = b"\x0c\x07\x08"  # CFA = r7 + 8


@pytest.fixture(autouse=True)
def pure_python(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(ehframe, "CFIRUN", None)


def entry(body: bytes, big: bool = False, wide: bool = False) -> bytes:
    o = ">" if big else "<"
    if wide:
        return struct.pack(o + "IQ", 0xFFFFFFFF, len(body)) + body
    return struct.pack(o + "I", len(body)) + body


def cie_body(aug: bytes = b"zR", aug_data: bytes = b"\x1b", version: int = 1,
             ra: bytes = bytes([RA]), caf: int = 1, big: bool = False, wide: bool = False,
             pre: bytes = b"", init: bytes = INIT) -> bytes:
    o = ">" if big else "<"
    ident = struct.pack(o + ("Q" if wide else "I"), 0)
    z = uleb(len(aug_data)) + aug_data if aug.startswith(b"z") else b""
    return (ident + bytes([version]) + aug + b"\0" + pre + uleb(caf) + sleb(-8) + ra + z
            + init)


def fde(at: int, cie_at: int, fields: bytes, program: bytes, big: bool = False,
        wide: bool = False) -> bytes:
    """The FDE entry at section offset `at` for the CIE at `cie_at`."""
    o = ">" if big else "<"
    hdr = 12 if wide else 4
    ptr = struct.pack(o + ("Q" if wide else "I"), at + hdr - cie_at)
    return entry(ptr + fields + program, big, wide)


def pcrel(at: int, target: int, size: int = 0x20) -> bytes:
    """pcrel sdata4 start (field at section offset `at`) and size, then no aug data."""
    return struct.pack("<iI", VMA + target - (VMA + at), size) + b"\0"


def read(data: bytes, big: bool = False, address_size: int = 8, **kw: object) -> list:
    return read_eh_frame(data, VMA, big, address_size, RA, FP, **kw)


def rows(data: bytes, **kw: object) -> list[list[tuple]]:
    return [[tuple(r) for r in f.rows] for f in read(data, **kw)]


def simple(cie: bytes, program: bytes = b"\x41\x0e\x10") -> bytes:
    """The CIE (its body) at 0 and one FDE for [VMA + 0x100, +0x20) using pcrel sdata4."""
    c = entry(cie)
    at = len(c)
    return c + fde(at, 0, pcrel(at + 8, 0x100), program)


WANT = [[(VMA + 0x100, (7, 8), None, None), (VMA + 0x101, (7, 16), None, None)]]


def test_the_plain_case() -> None:
    assert rows(simple(cie_body())) == WANT


@pytest.mark.parametrize(("version", "ra"), [
    (1, bytes([0x90])),  # version 1: a byte, not a LEB128 number
    (3, uleb(0x90)), (3, uleb(RA)), (1, bytes([RA]))])
def test_the_return_address_column_is_a_byte_in_version_1(version: int, ra: bytes) -> None:
    assert rows(simple(cie_body(version=version, ra=ra))) == WANT


def test_version_4_has_address_and_segment_sizes() -> None:
    assert rows(simple(cie_body(version=4, pre=b"\x08\x00"))) == WANT


@pytest.mark.parametrize("version", [0, 2, 5])
def test_other_versions_are_a_located_error(version: int) -> None:
    with pytest.raises(EhFrameError) as e:
        read(simple(cie_body(version=version)))
    assert str(e.value) == f"CIE version {version} (at .eh_frame+0x8)"


def test_eh_data_is_skipped() -> None:
    # "eh" (old g++): a pointer-sized word after the string; no "z", so absptr pointers
    body = cie_body(aug=b"eh", pre=(0x1234).to_bytes(8, "little"))
    c = entry(body)
    data = c + fde(len(c), 0, struct.pack("<QQ", VMA + 0x100, 0x20), b"\x41\x0e\x10")
    assert rows(data) == WANT
    with pytest.raises(EhFrameError, match="entry ends inside a field"):
        read(entry(cie_body(aug=b"eh", pre=b"\0" * 7, init=b"")[:-3]))


@pytest.mark.parametrize(("aug", "aug_data"), [
    (b"zPLR", b"\x9b" + struct.pack("<i", 0x10) + b"\x00\x1b"),  # indirect|pcrel|sdata4
    (b"zPLR", b"\x00" + bytes(8) + b"\x00\x1b"),  # absptr: the address size
    (b"zPLR", b"\x01" + uleb(0x12345) + b"\x00\x1b"),
    (b"zLRP", b"\x00\x1b\x0b" + bytes(4)),
    (b"zSR", b"\x1b"), (b"zBGR", b"\x1b"), (b"zRS", b"\x1b"),
])
def test_augmentations(aug: bytes, aug_data: bytes) -> None:
    assert rows(simple(cie_body(aug=aug, aug_data=aug_data))) == WANT


def test_an_unknown_augmentation_stops_the_augmentation_data() -> None:
    # 'X' is unknown: what follows in the string is not read; the FDEs' pointers stay absptr
    body = cie_body(aug=b"zXR", aug_data=b"\x1b\x1b")
    c = entry(body)
    data = c + fde(len(c), 0, struct.pack("<QQ", VMA + 0x100, 0x20) + b"\0", b"\x41\x0e\x10")
    assert rows(data) == WANT


def test_a_p_pointer_encoding_is_read_without_its_indirect_bit() -> None:
    bad = cie_body(aug=b"zPR", aug_data=b"\x8f\0\0\0\0\0\0\0\0\x1b")
    with pytest.raises(EhFrameError, match="pointer encoding 0xf not supported"):
        read(simple(bad))


@pytest.mark.parametrize(("aug", "aug_data", "at"), [
    (b"zR", b"", 0x10), (b"zPR", b"\x03\x00", 0x11), (b"zLR", b"\x00", 0x11)])
def test_augmentation_data_cut_short_is_located(aug: bytes, aug_data: bytes, at: int) -> None:
    # (at: where the reading stopped inside the CIE's augmentation data)
    with pytest.raises(EhFrameError) as e:
        read(simple(cie_body(aug=aug, aug_data=aug_data)))
    assert str(e.value) == f"entry ends inside a field (at .eh_frame+{at + len(aug) - 2:#x})"


def test_fde_augmentation_data_is_skipped_only_with_z() -> None:
    c = entry(cie_body())
    at = len(c)
    fields = struct.pack("<iI", VMA + 0x100 - (VMA + at + 8), 0x20) + b"\x02\x41\x41"
    assert rows(c + fde(at, 0, fields, b"\x41\x0e\x10")) == WANT
    fields = struct.pack("<iI", VMA + 0x100 - (VMA + at + 8), 0x20) + uleb(128) + b"\x41" * 128
    assert rows(c + fde(at, 0, fields, b"\x41\x0e\x10")) == WANT
    # "zR" without the z: an 'R' but the FDEs hold no augmentation length (absptr)
    c = entry(cie_body(aug=b"eR", pre=b""))
    data = c + fde(len(c), 0, struct.pack("<QQ", VMA + 0x100, 0x20), b"\x41\x0e\x10")
    assert rows(data) == [[(VMA + 0x100, (7, 8), None, None),
                           (VMA + 0x101, (7, 16), None, None)]]


@pytest.mark.parametrize("aug", [0x04, 0x0A, 0x7F])
def test_fde_augmentation_length_past_the_entry(aug: int) -> None:
    c = entry(cie_body())
    at = len(c)
    fields = struct.pack("<iI", 0, 0x20) + bytes([aug])
    with pytest.raises(EhFrameError) as e:
        read(c + fde(at, 0, fields, b"\x41\x0e\x10"))
    assert str(e.value) == f"entry ends inside a field (at .eh_frame+{at + 17:#x})"


def test_unterminated_augmentation_string() -> None:
    body = struct.pack("<I", 0) + b"\x01zR"
    data = entry(body) + entry(b"\x00" * 8)  # a NUL past the entry must not end it
    with pytest.raises(EhFrameError) as e:
        read(data)
    assert str(e.value) == "unterminated augmentation string (at .eh_frame+0x9)"


@pytest.mark.parametrize("program", [b"\x0e" + b"\x80" * 11 + b"\x01"])
def test_a_leb128_too_long_is_located(program: bytes) -> None:
    c = entry(cie_body())
    with pytest.raises(EhFrameError) as e:
        read(simple(cie_body(), b"\x41" + program))
    assert str(e.value) == f"LEB128 number too long (at .eh_frame+{len(c) + 17 + 13:#x})"


def test_a_leb128_cut_short_is_located() -> None:
    c = entry(cie_body())
    with pytest.raises(EhFrameError) as e:
        read(simple(cie_body(), b"\x41\x0e\x80"))
    assert str(e.value) == f"entry ends inside a field (at .eh_frame+{len(c) + 17 + 3:#x})"


def test_terminators_are_skipped_and_the_walk_goes_on() -> None:
    c = entry(cie_body())
    at = len(c) + 4
    data = c + bytes(4) + fde(at, 0, pcrel(at + 8, 0x100), b"\x41\x0e\x10") + bytes(4)
    assert rows(data) == WANT
    assert rows(data + b"\0\0\0") == WANT  # fewer than 4 bytes: no entry


def test_a_length_in_the_last_four_bytes_runs_past() -> None:
    data = simple(cie_body()) + b"\x10\0\0\0"
    with pytest.raises(EhFrameError) as e:
        read(data)
    assert str(e.value) == (
        f"entry of 0x10 bytes runs past the section (at .eh_frame+{len(data) - 4:#x})")


@pytest.mark.parametrize("big", [False, True])
def test_64_bit_lengths(big: bool) -> None:
    o = ">" if big else "<"
    c = entry(cie_body(big=big, wide=True), big, wide=True)
    at = len(c)
    # (a size whose low byte, where a 32-bit FDE's augmentation length is, is small)
    start = struct.pack(o + "iI", 0x100 - (at + 20), 0x200) + b"\0"
    data = c + fde(at, 0, start, b"\x41\x0e\x10", big, wide=True)
    got = read(data, big=big)
    assert [(f.offset, f.start, f.size) for f in got] == [(at, VMA + 0x100, 0x200)]
    assert [[tuple(r) for r in f.rows] for f in got] == WANT


def test_64_bit_length_cut_short() -> None:
    data = simple(cie_body())
    with pytest.raises(EhFrameError) as e:
        read(data + b"\xff\xff\xff\xff" + bytes(7))
    assert str(e.value) == f"64-bit length cut short (at .eh_frame+{len(data):#x})"
    with pytest.raises(EhFrameError) as e:  # 12 bytes: a length, of nothing
        read(data + b"\xff\xff\xff\xff" + bytes(8))
    assert str(e.value) == f"entry of 0x0 bytes runs past the section (at .eh_frame+{len(data):#x})"


@pytest.mark.parametrize(("length", "message"), [
    (3, "entry of 0x3 bytes runs past the section (at .eh_frame+0x0)"),
    (4, "entry ends inside a field (at .eh_frame+0x8)")])
def test_an_entry_shorter_than_its_id(length: int, message: str) -> None:
    with pytest.raises(EhFrameError) as e:
        read(struct.pack("<I", length) + bytes(8))
    assert str(e.value) == message


def test_a_forward_cie_pointer_leads_outside() -> None:
    c = entry(cie_body())
    at = len(c)
    # a pointer past the FDE's own offset leads before the section's start
    ptr = struct.pack("<i", -(at + 4))
    data = c + entry(ptr + pcrel(at + 8, 0x100) + b"\x41")
    with pytest.raises(EhFrameError) as e:
        read(data)
    assert "FDE's CIE pointer leads outside the section" in str(e.value)
    assert e.value.offset == at + 4


def test_a_cie_pointer_to_an_fde() -> None:
    c = entry(cie_body())
    at = len(c)
    data = c + fde(at, at, pcrel(at + 8, 0x100), b"\x41")  # its own start
    with pytest.raises(EhFrameError) as e:
        read(data)
    assert str(e.value) == f"FDE's CIE pointer leads to an FDE ({at:#x}) (at .eh_frame+{at + 4:#x})"


def test_a_cie_pointer_to_an_fde_big_endian() -> None:
    c = entry(cie_body(big=True), True)
    at = len(c)
    start = struct.pack(">iI", 0, 0x20) + b"\0"
    data = c + fde(at, at, start, b"\x41", big=True)
    with pytest.raises(EhFrameError) as e:
        read(data, big=True)
    assert str(e.value) == f"FDE's CIE pointer leads to an FDE ({at:#x}) (at .eh_frame+{at + 4:#x})"


@pytest.mark.parametrize("aug", [b"eh", b"zPR"])
def test_a_cie_the_walk_did_not_meet(aug: bytes) -> None:
    # CIE B hides inside CIE A's initial instructions; the FDE points at B
    if aug == b"eh":
        inner = cie_body(aug=b"eh", pre=bytes(8), caf=4)
    else:
        inner = cie_body(aug=b"zPR", aug_data=b"\x00" + bytes(8) + b"\x1b", caf=4)
    b = entry(inner)
    a = entry(cie_body(init=b))
    b_at = len(a) - len(b)
    at = len(a)
    fields = (struct.pack("<QQ", VMA + 0x100, 0x20) if aug == b"eh"
              else pcrel(at + 8, 0x100))
    got = rows(a + fde(at, b_at, fields, b"\x41\x0e\x10"))
    assert got == [[(VMA + 0x100, (7, 8), None, None), (VMA + 0x104, (7, 16), None, None)]]


def _cie_data() -> bytes:
    return entry(cie_body(aug=b"eh", pre=bytes(8)))


@pytest.mark.parametrize("pad", [0, 1])
def test_cie_at_the_first_and_last_places(pad: int) -> None:
    data = bytes(pad) + _cie_data()
    cies: dict = {}
    got = _cie_at(data, pad, 99, VMA, False, 8, cies)
    assert cies == {pad: got} and (got.code_align, got.data_align) == (1, -8)
    assert got.program == INIT and got.program_offset == len(data) - 3
    tail = data + struct.pack("<II", 4, 0)  # a CIE of only its id, in the last 8 bytes
    with pytest.raises(EhFrameError) as e:
        _cie_at(tail, len(data), 99, VMA, False, 8, {})
    assert str(e.value) == f"entry ends inside a field (at .eh_frame+{len(tail):#x})"
    for bad in (len(data) + 1, -1):
        with pytest.raises(EhFrameError) as e:
            _cie_at(tail, bad, 99, VMA, False, 8, {})
        assert str(e.value) == (f"FDE's CIE pointer leads outside the section ({bad:#x})"
                                " (at .eh_frame+0x63)")


@pytest.mark.parametrize(("length", "ok"), [(0, False), (0xFFFFFFFF, False), (12, True),
                                             (13, False), (1, None)])
def test_cie_at_length(length: int, ok: bool | None) -> None:
    data = struct.pack("<II", length, 0) + b"\x01\0\x01\x78\x10" + b"\0" * 3
    if ok:
        assert _cie_at(data, 0, 7, VMA, False, 8, {}).program == b"\0" * 3
        return
    with pytest.raises(EhFrameError) as e:
        _cie_at(data, 0, 7, VMA, False, 8, {})
    if ok is None:
        assert str(e.value) == "entry ends inside a field (at .eh_frame+0x4)"
    else:
        assert str(e.value) == "FDE's CIE pointer does not lead to a CIE (0x0) (at .eh_frame+0x7)"


@pytest.mark.parametrize("ident", [1, 0x100])
def test_cie_at_an_fde(ident: int) -> None:
    data = struct.pack("<II", 12, ident) + bytes(8)
    with pytest.raises(EhFrameError) as e:
        _cie_at(data, 0, 7, VMA, False, 8, {})
    assert str(e.value) == "FDE's CIE pointer leads to an FDE (0x0) (at .eh_frame+0x7)"


def test_cie_at_big_endian() -> None:
    data = struct.pack(">II", 12, 0) + b"\x01\0\x02\x78\x10" + b"\0" * 3
    assert _cie_at(data, 0, 7, VMA, True, 8, {}).code_align == 2


def test_cie_parser_directly() -> None:
    data = cie_body(aug=b"zPLR", aug_data=b"\x00" + bytes(4) + b"\x00\x1b", caf=2)
    c = Cursor(data, 4, len(data), False)
    got = _cie(c, VMA, 4)  # a 4-byte absptr P
    assert (got.code_align, got.data_align, got.fde_enc, got.has_z) == (2, -8, 0x1B, True)
    assert got.program == INIT and got.program_offset == len(data) - 3


def test_identical_fdes_share_their_rows() -> None:
    c = entry(cie_body())
    at = len(c)
    f1 = fde(at, 0, pcrel(at + 8, 0x100), b"\x41\x0e\x10")
    at2 = at + len(f1)
    f2 = fde(at2, 0, pcrel(at2 + 8, 0x200), b"\x41\x0e\x10")
    got = read(c + f1 + f2)
    assert got[0].rel is got[1].rel
    assert [f.start for f in got] == [VMA + 0x100, VMA + 0x200]


def test_a_bound_hit_is_not_shared(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(callframe, "MAX_FDE_ROWS", 2)
    c = entry(cie_body())
    at = len(c)
    f1 = fde(at, 0, pcrel(at + 8, 0x100), b"\x41\x41\x41")
    at2 = at + len(f1)
    f2 = fde(at2, 0, pcrel(at2 + 8, 0x200), b"\x41\x41\x41")
    got = read(c + f1 + f2)
    assert [(f.rel, f.limit) for f in got] == [((), "more than 2 CFI rows in one FDE")] * 2


def test_set_loc_pcrel_in_a_section_at_an_address() -> None:
    # set_loc's pcrel operand is relative to its own address: vma + its section offset
    c = entry(cie_body())
    at = len(c)
    field = at + 17 + 1  # the FDE's 17 bytes of fields, the set_loc opcode, its operand
    target = VMA + 0x110
    prog = b"\x01" + struct.pack("<i", target - (VMA + field)) + b"\x0e\x10"
    got = read(c + fde(at, 0, pcrel(at + 8, 0x100), prog))
    assert [tuple(r) for r in got[0].rows] == [(VMA + 0x100, (7, 8), None, None),
                                               (VMA + 0x110, (7, 16), None, None)]


def test_32_bit_big_endian_absptr() -> None:
    c = entry(cie_body(aug=b"zR", aug_data=b"\x00", big=True), True)
    at = len(c)
    data = c + fde(at, 0, struct.pack(">II", 0x100, 0x20) + b"\0", b"\x41", big=True)
    (f,) = read(data, big=True, address_size=4)
    assert (f.start, f.size) == (0x100, 0x20)


def test_read_eh_frame_passes_the_converter_on() -> None:
    def convert(cfa: object, ra: object, fp: object) -> tuple:
        return ("C", cfa), ra, fp

    assert [tuple(r) for r in read(simple(cie_body()), convert=convert)[0].rows] == [
        (VMA + 0x100, ("C", (7, 8)), None, None), (VMA + 0x101, ("C", (7, 16)), None, None)]


def test_the_ra_rule_reaches_the_rows() -> None:
    body = cie_body(init=INIT + bytes([0x80 | RA, 1]))
    assert rows(simple(body))[0][0] == (VMA + 0x100, (7, 8), (OFFSET, -8), None)


def test_two_cies_then_an_fde() -> None:
    # CIE A (8 bytes of nops longer than B), CIE B, and an FDE for B at twice A's length:
    # its CIE must be found from the FDE's own pointer field, not the section's first words
    b = entry(cie_body(caf=4))
    a = entry(cie_body(init=INIT + bytes(8)))
    assert len(a) == len(b) + 8
    at = 2 * (len(a) - 4)
    data = a + b
    assert len(data) == at
    got = rows(data + fde(at, len(a), pcrel(at + 8, 0x100), b"\x41\x0e\x10"))
    assert got == [[(VMA + 0x100, (7, 8), None, None), (VMA + 0x104, (7, 16), None, None)]]
