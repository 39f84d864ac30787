"""format/fre_blocks.FreBlocks.run against the decoder: the FREs its tokens stand for are the
decoder's, FDE by FDE, in v2 and v3, both byte orders, every FRE type; and a valid section in
table order is split by the regex walk for every FDE (the module's point), never handed to
the decoder. tests/test_fre_blocks_nexts.py compares run() with itself (two ways of giving
block ends), so a change inside run() shows only here."""

from __future__ import annotations

import pytest

from sfcheck.format import Decoder
from sfcheck.format import constants as C
from sfcheck.format.decode import decode
from sfcheck.format.encode import encode
from sfcheck.format.fre_blocks import FreBlocks, starts_of, token_fre
from sfcheck.format.layout import build_section
from sfcheck.format.model import FDE, FRE, fde_info, make_fre


def _section(version: int, big: bool) -> bytes:
    fdes = []
    for k, fre_type in enumerate((C.FRE_TYPE_ADDR1, C.FRE_TYPE_ADDR2, C.FRE_TYPE_ADDR4) * 2):
        top = {C.FRE_TYPE_ADDR1: 0xF0, C.FRE_TYPE_ADDR2: 0xF000,
               C.FRE_TYPE_ADDR4: 0xF0000000}[fre_type]
        fres = (make_fre(0, (8,)), make_fre(1 + k, (16, -16)),
                make_fre(top, (300, -16, -24 - k)), make_fre(top + 1, (-70000,), base_sp=False))
        fdes.append(FDE(0x1000 * k, top + 0x10, fde_info(fre_type), fres))
    return encode(build_section(version, C.ABI_AMD64_LE, fdes, flags=C.F_FDE_SORTED,
                                big_endian=big))


@pytest.mark.parametrize("version", [C.VERSION_2, C.VERSION_3])
@pytest.mark.parametrize("big", [False, True])
@pytest.mark.parametrize("split", [None, 1, 4])
def test_tokens_are_the_decoders_fres(version: int, big: bool, split: int | None) -> None:
    data = _section(version, big)
    want = [[(f.start, f.info, f.words) for f in fde.fres] for fde in decode(data).fdes]
    blocks = FreBlocks(Decoder(data))
    got: dict[int, list] = {}
    paths: list[str] = []

    def on_tokens(i, rec, info, info2, asz, toks) -> None:
        paths.append("tokens")
        starts = starts_of(toks, asz, big)
        fres = [token_fre(rest, big) for _start, rest in toks]
        assert all(f.start == 0 for f in fres)
        got[i] = [(s, f.info, f.words) for s, f in zip(starts, fres, strict=True)]

    def on_decoded(i, fde) -> None:
        paths.append("decoded")
        got[i] = [(f.start, f.info, f.words) for f in fde.fres]

    n = len(want)
    cuts = [0, n] if split is None else [0, split, n]
    for a, b in zip(cuts, cuts[1:], strict=False):
        blocks.run(a, b, on_tokens, on_decoded)
    blocks.run(n, n, on_tokens, on_decoded)  # an empty range hands out nothing
    assert [got[i] for i in range(n)] == want
    assert paths == ["tokens"] * n


def test_token_fre_words_in_byte_order() -> None:
    info = make_fre(0, (0x102, -2), size_code=1).info
    assert token_fre(bytes([info, 1, 2, 0xFF, 0xFE]), True) == FRE(0, info, (0x102, -2))
    assert token_fre(bytes([info, 2, 1, 0xFE, 0xFF]), False) == FRE(0, info, (0x102, -2))


def test_block_ending_before_it_starts_goes_to_the_decoder() -> None:
    """An FDE with no FREs whose block starts after the next FDE's (out of table order): its
    block does not end where the next one starts, so run() hands it to the decoder, even
    though the regex walk would find the zero FREs it claims."""
    fdes = [FDE(0, 0x10, fde_info(C.FRE_TYPE_ADDR1), ()),
            FDE(0x100, 0x10, fde_info(C.FRE_TYPE_ADDR1), (make_fre(0, (8,)),))]
    data = bytearray(encode(build_section(C.VERSION_2, C.ABI_AMD64_LE, fdes,
                                          flags=C.F_FDE_SORTED)))
    h = decode(bytes(data)).header
    data[h.fdes_start + 8:h.fdes_start + 12] = h.fre_len.to_bytes(4, "little")
    paths: list[tuple[str, int]] = []
    FreBlocks(Decoder(bytes(data))).run(
        0, 2, lambda i, *a: paths.append(("tokens", i)),
        lambda i, fde: paths.append(("decoded", i)))
    assert paths == [("decoded", 0), ("tokens", 1)]
