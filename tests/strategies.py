"""Hypothesis strategies for valid SFrame sections and for damaged copies of them.

`sections()` generates valid `sfcheck.format.Section` objects for every version
(1, 2, 3), every ABI (s390x only with v2/v3), both byte orders, all FRE types,
PCINC and PCMASK FDEs, v3 DEFAULT and FLEX FDEs, the v3 signal bit, the aarch64
pauth key and mangled-RA bit, and FREs of 0..6 data words of 1, 2 or 4 bytes.

`generated()` yields the section together with the values the strategy chose
(`GenSection`), so a test can derive expected values without asking the code
under test. `mutations(data)` and `mutated_sections()` damage encoded bytes.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass

from hypothesis import strategies as st

from sfcheck.format import FDE, FRE, Section, build_section, encode, fde_info, make_fre
from sfcheck.format import constants as C

HEADER_SIZE = 28
FDE_SIZES = {1: 17, 2: 20, 3: 16}
ADDR_SIZES = {0: 1, 1: 2, 2: 4}
ADDR_MAX = {0: 0xFF, 1: 0xFFFF, 2: 0xFFFFFFFF}
WIDTHS = {0: 1, 1: 2, 2: 4}
FLAGS_ALLOWED = {1: 0x3, 2: 0x7, 3: 0x5}
START_RANGE = {1: (-(1 << 31), (1 << 31) - 1), 2: (-(1 << 31), (1 << 31) - 1),
               3: (-(1 << 63), (1 << 63) - 1)}
ABIS_FOR = {1: (1, 2, 3), 2: (1, 2, 3, 4), 3: (1, 2, 3, 4)}
ABI_BE = {1: True, 2: False, 3: False, 4: True}
DEFAULT_COUNTS = {1: (0, 1, 2, 3), 2: (0, 1, 2, 3), 3: (0, 1, 2), 4: (0, 1, 2, 3)}
FLEX_COUNTS = (0, 2, 4, 5, 6)
AARCH64 = (1, 2)

MAX_FDES = 8
MAX_FRES = 8
# Keeps header + aux header + fdeoff + the FDE array far below the margin we leave
# at the ends of the start-address range, so PCREL starts always fit.
MAX_FDEOFF = 64
MAX_AUXHDR = 16
START_MARGIN = 4096


@dataclass(frozen=True)
class GenSection:
    """A generated section and the independent facts the strategy used to build it."""

    section: Section
    version: int
    abi: int
    big_endian: bool
    flags: int
    fixed_fp: int
    fixed_ra: int
    auxhdr: bytes
    fdeoff: int
    trailing: bytes
    fdes: tuple[FDE, ...]  # as given to build_section (fre_off/num_fres not set)
    rel_starts: tuple[int, ...]  # section-relative function start of each FDE

    @property
    def pcrel(self) -> bool:
        return self.version >= 2 and bool(self.flags & 0x4)

    def field_offset(self, index: int) -> int:
        """Section offset of FDE `index`'s start field, computed from the spec."""
        return HEADER_SIZE + len(self.auxhdr) + self.fdeoff + index * FDE_SIZES[self.version]

    def fre_bytes(self) -> int:
        """Bytes the FRE sub-section must hold, from §1.4/§1.6."""
        total = 0
        for fde in self.fdes:
            if self.version == 3:
                total += 5
            asz = ADDR_SIZES[fde.info & 0xF]
            for fre in fde.fres:
                total += asz + 1 + len(fre.words) * WIDTHS[(fre.info >> 5) & 3]
        return total


def signed_range(width: int) -> tuple[int, int]:
    lim = 1 << (8 * width - 1)
    return -lim, lim - 1


def word_values(width: int) -> st.SearchStrategy[int]:
    lo, hi = signed_range(width)
    return st.one_of(st.sampled_from([0, -1, 1, lo, hi, 8, 16, -8, -16]),
                     st.integers(lo, hi))


@st.composite
def fre_lists(draw, version: int, abi: int, fre_type: int, flex: bool,
              start_max: int) -> list[FRE]:
    n = draw(st.integers(0, min(MAX_FRES, start_max + 1)))
    starts = sorted(draw(st.lists(st.integers(0, start_max), min_size=n, max_size=n,
                                  unique=True)))
    counts = FLEX_COUNTS if flex else DEFAULT_COUNTS[abi]
    fres = []
    for start in starts:
        count = draw(st.sampled_from(counts))
        code = draw(st.sampled_from([None, 0, 1, 2]))
        # code None: make_fre picks the width; draw values of some width for it.
        width = draw(st.sampled_from([1, 2, 4])) if code is None else WIDTHS[code]
        words = draw(st.lists(word_values(width), min_size=count, max_size=count))
        mangled = abi in AARCH64 and draw(st.booleans())
        base_sp = draw(st.booleans())
        fres.append(make_fre(start, words, base_sp=base_sp, mangled_ra=mangled, size_code=code))
    return fres


@st.composite
def fde_lists(draw, version: int, abi: int, n: int) -> list[FDE]:
    fdes = []
    for _ in range(n):
        fre_type = draw(st.sampled_from([0, 1, 2]))
        pcmask = draw(st.booleans())
        rep_size = draw(st.integers(1, 255)) if pcmask and version >= 2 else 0
        pauth = draw(st.sampled_from([0, 1])) if abi in AARCH64 else 0
        signal = version == 3 and draw(st.booleans())
        flex = version == 3 and draw(st.booleans())
        info2 = C.FDE_TYPE_FLEX if flex else C.FDE_TYPE_DEFAULT
        start_max = ADDR_MAX[fre_type]
        if rep_size:
            start_max = min(start_max, rep_size - 1)
        fres = draw(fre_lists(version, abi, fre_type, flex, start_max))
        last = fres[-1].start if fres else 0
        size = draw(st.integers(min(last + 1, 0xFFFFFFFF) if fres else 0, 0xFFFFFFFF))
        fdes.append(FDE(start=0, size=size, info=fde_info(fre_type, pcmask, pauth, signal),
                        fres=tuple(fres), rep_size=rep_size, info2=info2))
    return fdes


@st.composite
def generated(draw, versions=(1, 2, 3)) -> GenSection:
    version = draw(st.sampled_from(versions))
    abi = draw(st.sampled_from(ABIS_FOR[version]))
    big_endian = draw(st.sampled_from([ABI_BE[abi]] * 3 + [not ABI_BE[abi]]))
    flags = draw(st.integers(0, 7)) & FLAGS_ALLOWED[version]
    fixed_fp = draw(st.one_of(st.just(0), st.integers(-128, 127)))
    fixed_ra = draw(st.one_of(st.just(-8 if abi == 3 else 0), st.integers(-128, 127)))
    auxhdr = draw(st.one_of(st.just(b""), st.binary(min_size=1, max_size=MAX_AUXHDR)))
    fdeoff = draw(st.one_of(st.just(0), st.integers(1, MAX_FDEOFF)))
    trailing = b"\0" * draw(st.integers(0, 8))
    n = draw(st.integers(0, MAX_FDES))
    fdes = draw(fde_lists(version, abi, n))
    lo, hi = START_RANGE[version]
    rel = draw(st.lists(st.one_of(st.integers(lo + START_MARGIN, hi - START_MARGIN),
                                  st.integers(-0x10000, 0x10000)),
                        min_size=n, max_size=n))
    rel.sort()  # SORTED or not, sorted starts are valid
    pcrel = version >= 2 and bool(flags & 0x4)
    hdr_end = HEADER_SIZE + len(auxhdr) + fdeoff
    placed = []
    for i, (fde, r) in enumerate(zip(fdes, rel, strict=True)):
        stored = r - (hdr_end + i * FDE_SIZES[version]) if pcrel else r
        placed.append(FDE(start=stored, size=fde.size, info=fde.info, fres=fde.fres,
                          rep_size=fde.rep_size, info2=fde.info2))
    section = build_section(version, abi, placed, flags=flags, fixed_fp=fixed_fp,
                            fixed_ra=fixed_ra, big_endian=big_endian, fdeoff=fdeoff,
                            auxhdr=auxhdr, trailing=trailing)
    return GenSection(section=section, version=version, abi=abi, big_endian=big_endian,
                      flags=flags, fixed_fp=fixed_fp, fixed_ra=fixed_ra, auxhdr=auxhdr,
                      fdeoff=fdeoff, trailing=trailing, fdes=tuple(placed),
                      rel_starts=tuple(rel))


def sections(versions=(1, 2, 3)) -> st.SearchStrategy[Section]:
    """Valid sections (see the module docstring)."""
    return generated(versions).map(lambda g: g.section)


HUGE_U32 = (0xFFFFFFFF, 0x80000000, 0x7FFFFFFF, 0xFFFFFFF0, 0x10000, 0xFFFF)


def _field_positions(data: bytes) -> list[tuple[int, int]]:
    """(offset, width) of count/offset fields that lie inside `data`."""
    return [(o, w) for o, w in _candidate_fields(data) if o >= 0 and o + w <= len(data)]


def _candidate_fields(data: bytes) -> list[tuple[int, int]]:
    """(offset, width) of count/offset fields, found by reading the header by hand."""
    fields = [(8, 4), (12, 4), (16, 4), (20, 4), (24, 4), (7, 1), (4, 1), (3, 1)]
    if len(data) < HEADER_SIZE or data[:2] not in (b"\xe2\xde", b"\xde\xe2"):
        return fields
    order = "<" if data[:2] == b"\xe2\xde" else ">"
    version = data[2]
    num_fdes, _, fre_len, fdeoff, freoff = struct.unpack_from(order + "5I", data, 8)
    hdr = HEADER_SIZE + data[7]
    size = FDE_SIZES.get(version)
    if size is None:
        return fields
    for i in range(min(num_fdes, MAX_FDES * 2)):
        base = hdr + fdeoff + i * size
        if version == 3:
            fields += [(base + 12, 4), (base + 8, 4), (base, 8)]
            if base + 16 <= len(data):
                (fre_off,) = struct.unpack_from(order + "I", data, base + 12)
                attr = hdr + freoff + fre_off
                fields += [(attr, 2), (attr + 2, 1), (attr + 4, 1)]
        else:
            fields += [(base + 8, 4), (base + 12, 4), (base + 16, 1), (base, 4)]
    return fields


# Weighted: count/offset fields most; magic and version (which stop decoding at once) least.
_OPS = (["flip", "set", "truncate", "extend", "insert", "delete"] * 3 + ["field"] * 9
        + ["magic"])


def _position(draw, size: int) -> int:
    """A position in [0, size) past magic and version when possible (op "magic" hits them)."""
    return draw(st.integers(3 if size > 3 else 0, size - 1))


@st.composite
def mutations(draw, data: bytes, max_ops: int = 4) -> bytes:
    """`data` damaged by 1..max_ops of: flip, set byte, truncate, extend, insert,
    delete, or overwrite a count/offset field with a huge value (either byte order)."""
    buf = bytearray(data)
    for _ in range(draw(st.integers(1, max_ops))):
        op = draw(st.sampled_from(_OPS))
        if op in ("flip", "set", "delete") and not buf or op == "magic" and len(buf) < 3:
            op = "extend"
        if op == "flip":
            pos = _position(draw, len(buf))
            buf[pos] ^= draw(st.integers(1, 255))
        elif op == "set":
            pos = _position(draw, len(buf))
            buf[pos] = draw(st.integers(0, 255))
        elif op == "magic":
            buf[draw(st.integers(0, 2))] = draw(st.integers(0, 255))
        elif op == "truncate":
            del buf[draw(st.integers(0, len(buf))):]
        elif op == "extend":
            buf += draw(st.binary(min_size=1, max_size=64))
        elif op == "insert":
            pos = _position(draw, len(buf) + 1)
            buf[pos:pos] = draw(st.binary(min_size=1, max_size=8))
        elif op == "delete":
            pos = _position(draw, len(buf))
            del buf[pos:pos + draw(st.integers(1, 8))]
        else:
            fields = _field_positions(bytes(buf))
            if not fields:
                continue
            pos, width = draw(st.sampled_from(fields))
            order = draw(st.sampled_from(["<", ">"]))
            if width == 1:
                value = draw(st.sampled_from([0xFF, 0x80, 0x7F, 3, 0x0F, 0x5E, 0x7E]))
                buf[pos] = value
            else:
                mask = (1 << (8 * width)) - 1
                value = draw(st.one_of(st.sampled_from(HUGE_U32),
                                       st.integers(0, 0xFFFFFFFF))) & mask
                if width == 8:
                    value = draw(st.sampled_from([(1 << 63) - 1, 1 << 63, mask, value]))
                code = {2: "H", 4: "I", 8: "Q"}[width]
                struct.pack_into(order + code, buf, pos, value)
    return bytes(buf)


def mutated_sections() -> st.SearchStrategy[bytes]:
    """Encoded valid sections, damaged by `mutations`."""
    return sections().flatmap(lambda s: mutations(encode(s)))


def permute_blocks(data: bytes, seed: int) -> bytes | None:
    """The section with its FRE blocks laid out in a shuffled order (what gcc's .cold parts
    do to a linked table) and each FDE's FRE offset moved with its block: the same FDEs
    and FREs. None unless the blocks tile the FRE sub-section in table order."""
    import random
    import struct

    from sfcheck.errors import DecodeError
    from sfcheck.format import constants as C
    from sfcheck.format.decode import Decoder

    try:
        dec = Decoder(data)
        h = dec.header
        spans = [dec.fre_span(dec.fde(i)) for i in range(h.num_fdes)]
    except DecodeError:
        return None
    if (len(spans) < 2 or spans[0][0] != h.fres_start or spans[-1][1] != h.fres_end
            or any(a[1] != b[0] for a, b in zip(spans, spans[1:], strict=False))):
        return None
    order = list(range(len(spans)))
    random.Random(seed).shuffle(order)
    out = bytearray(data)
    pos = h.fres_start
    wide = 8 if h.version == C.VERSION_3 else 4
    code = (">" if h.big_endian else "<") + "I"
    for i in order:
        a, b = spans[i]
        out[pos:pos + b - a] = data[a:b]
        struct.pack_into(code, out, h.fdes_start + i * h.fde_size + wide + 4, pos - h.fres_start)
        pos += b - a
    return bytes(out)
