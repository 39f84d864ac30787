"""Where the format layer says things are: a DecodeError's message, offset, structure and
field for FRE data cut short and for aliasing FRE blocks; FDE record offsets; function
starts with and without fdeoff (libsframe locates a PC-relative start field ignoring
fdeoff, sframe_decoder_get_funcdesc_v2); FRE-block ends for offsets past 2**31 and in
big-endian tables."""

from __future__ import annotations

import struct

import pytest

from sfcheck.errors import DecodeError
from sfcheck.format import Decoder
from sfcheck.format import constants as C
from sfcheck.format.decode import decode
from sfcheck.format.encode import encode
from sfcheck.format.fde_table import block_ends_distinct
from sfcheck.format.fre_blocks import FreBlocks
from sfcheck.format.layout import build_section
from sfcheck.format.model import FDE, Header, fde_info, make_fre


def _section(words: tuple[int, ...], fdeoff: int = 0, n: int = 1) -> bytes:
    fres = (make_fre(0, (8,)), make_fre(4, words, size_code=2))
    fdes = [FDE(0x100 * k, 0x40, fde_info(C.FRE_TYPE_ADDR1), fres) for k in range(n)]
    return encode(build_section(C.VERSION_2, C.ABI_AMD64_LE, fdes, flags=C.F_FDE_SORTED,
                                fdeoff=fdeoff))


def test_data_words_past_the_fre_subsection() -> None:
    data = bytearray(_section((16, -8, -16)))
    h = decode(bytes(data)).header
    # one byte less FRE data: FRE 1's three 4-byte words run past the end
    struct.pack_into("<I", data, 16, h.fre_len - 1)
    data = data[:-1]
    with pytest.raises(DecodeError) as exc:
        decode(bytes(data))
    e = exc.value
    # FRE 1 starts after FRE 0 (1-byte start, info, one 1-byte word): at fres_start + 3;
    # its words follow its start byte and info byte.
    assert (e.offset, e.structure, e.field) == (h.fres_start + 3 + 2, "FDE[0].FRE[1]",
                                                "data words")
    assert e.message == (f"FDE[0]: FRE 1's 3 data words of 4 bytes run past the FRE "
                         f"sub-section end {h.fres_start + h.fre_len - 1:#x}")


def test_one_data_word_message() -> None:
    data = bytearray(_section((16,)))
    h = decode(bytes(data)).header
    struct.pack_into("<I", data, 16, h.fre_len - 1)
    with pytest.raises(DecodeError) as exc:
        decode(bytes(data[:-1]))
    assert exc.value.message.startswith("FDE[0]: FRE 1's 1 data word of 4 bytes run past")


def test_aliasing_blocks_are_located_at_the_fde() -> None:
    """Every FDE pointing at FDE 0's block: the walk charges each block, and the FDE that
    takes it past the FRE sub-section's size gets the error, at its block's start."""
    data = bytearray(_section((16,), n=3))
    h = decode(bytes(data)).header
    for k in (1, 2):  # sfde_func_start_fre_off of FDEs 1 and 2 -> 0
        struct.pack_into("<I", data, h.fdes_start + k * h.fde_size + 8, 0)
    struct.pack_into("<I", data, 16, h.fre_len // 3 * 1)  # FRE data: one block's worth
    data = data[:h.fres_start + h.fre_len // 3]
    dec = Decoder(bytes(data))
    blocks = FreBlocks(dec)
    with pytest.raises(DecodeError) as exc:
        blocks.run(0, 3, lambda *a: None, lambda *a: None)
    e = exc.value
    assert (e.offset, e.structure, e.field) == (dec.header.fres_start, "FDE[1]",
                                                "start_fre_off")
    assert e.message.startswith("FDE[1]: FRE blocks of the FDEs so far use more than the ")


@pytest.mark.parametrize("fdeoff", [0, 0x10])
def test_fde_offsets_and_function_starts(fdeoff: int) -> None:
    data = _section((16,), fdeoff=fdeoff, n=3)
    sec = decode(data)
    h, dec = sec.header, Decoder(data)
    assert [dec.fde_offset(k) for k in range(3)] == [h.fdes_start + k * h.fde_size
                                                     for k in range(3)]
    assert h.fdes_start == h.size + fdeoff
    # not PC-relative: the stored start plus the section's address
    assert [sec.func_start(k) for k in range(3)] == [0, 0x100, 0x200]
    assert sec.func_start(2, 0x5000) == 0x5200
    pcrel = Header(C.VERSION_2, C.F_FDE_FUNC_START_PCREL, C.ABI_AMD64_LE, 0, -8, 3, 0, 0,
                   fdeoff, 0, False)
    sec2 = type(sec)(pcrel, sec.fdes)
    assert sec2.func_start(1) == 0x100 + h.size + fdeoff + h.fde_size
    assert sec2.func_start(1, 0x5000, honour_fdeoff=False) == 0x5000 + 0x100 + h.size \
        + h.fde_size


def _table(offs: list[int], big: bool) -> tuple[bytes, Header]:
    n = len(offs)
    h = Header(C.VERSION_2, C.F_FDE_SORTED, C.ABI_AMD64_LE, 0, 0, n, 0, 0, 0, n * 20, big)
    o = ">" if big else "<"
    recs = b"".join(bytes(8) + struct.pack(o + "I", x) + bytes(h.fde_size - 12) for x in offs)
    return bytes(h.size) + recs, h


@pytest.mark.parametrize("big", [False, True])
def test_block_ends_unsigned_and_in_byte_order(big: bool) -> None:
    """FRE offsets are unsigned 32-bit fields: 0x80000000 sorts after 0x10."""
    data, h = _table([0x80000000, 0x10, 0], big)
    ends, distinct = block_ends_distinct(data, h, 3, h.fres_start + 0x90000000)
    assert distinct
    assert list(ends) == [h.fres_start + 0x90000000, h.fres_start + 0x80000000,
                          h.fres_start + 0x10]
