"""Synthetic SFrame sections of realistic shape, at any size, from the project's encoder.

The FRE blocks of a pool of function shapes are encoded once with
`sfcheck.format.encode.encode_fre` (the shapes mimic gcc -O2 amd64 output:
mostly ADDR1 functions with SP-based rows, some FP-based, some ADDR2/ADDR4,
PCMASK PLT entries, and in v3 a few FLEX (DRAP) functions); the section is
then tiled from those blocks with the encoder's FDE layout. Building a
million `FRE` objects would take minutes and gigabytes; tiling takes
seconds. `synth_fdes` gives the same section as model objects, and at small
sizes `build_section` + `encode` must give the same bytes (`check_tiling`).
"""

from __future__ import annotations

import random
import struct
from dataclasses import dataclass

from sfcheck.format import FDE, build_section, encode, fde_info, make_fre
from sfcheck.format import constants as C
from sfcheck.format.encode import encode_fre
from sfcheck.format.model import FRE

FDE_FMT = {1: "iIIIB", 2: "iIIIBBH", 3: "qII"}
PLT_ENTRY = 16


@dataclass(frozen=True)
class Shape:
    """One function's SFrame description, independent of its address."""

    size: int
    info: int
    fres: tuple[FRE, ...]
    rep_size: int = 0
    info2: int = 0


def _sp(start: int, cfa: int) -> FRE:
    return make_fre(start, (cfa,))


def _push_pop(rng: random.Random, size: int) -> list[FRE]:
    """Rows of a function that pushes callee-saved registers, then pops them on one or two
    exit paths (gcc -O2 without a frame pointer)."""
    pushes = rng.randint(1, 6)
    frame = rng.choice((0, 0, 8, 24, 40, 56, 120, 200, 488))
    rows, pc, cfa = [_sp(0, 8)], 0, 8
    for _ in range(pushes):
        pc += rng.randint(1, 2)
        cfa += 8
        rows.append(_sp(pc, cfa))
    if frame:
        pc += 4
        cfa += frame
        rows.append(_sp(pc, cfa))
    body_end = size - 1 - 2 * pushes - (4 if frame else 0)
    exits = 2 if body_end - pc > 40 and rng.random() < 0.5 else 1
    for e in range(exits):
        pc = max(pc + 4, body_end - (exits - 1 - e) * 20)
        c = cfa
        if frame:
            c -= frame
            rows.append(_sp(pc, c))
            pc += 4
        for _ in range(pushes):
            c -= 8
            rows.append(_sp(pc, c))
            pc += 1
        if e < exits - 1:  # the other exit restores the full frame
            rows.append(_sp(pc, cfa))
            pc += 1
    return rows


def _fp_based(rng: random.Random, size: int) -> list[FRE]:
    """push %rbp; mov %rsp,%rbp; ... leave; ret"""
    rows = [_sp(0, 8), make_fre(1, (16, -16)), make_fre(4, (16, -16), base_sp=False)]
    rows.append(make_fre(size - 1, (8,)))
    return rows


def _long(rng: random.Random, size: int, count: int) -> list[FRE]:
    """A large function: many rows, CFA offsets sometimes past one byte."""
    starts = sorted(rng.sample(range(1, size), count - 1))
    rows = [_sp(0, 8)]
    for s in starts:
        rows.append(_sp(s, 8 * rng.randint(1, 40 if rng.random() < 0.9 else 600)))
    return rows


def _flex(rng: random.Random, size: int) -> list[FRE]:
    """A DRAP function (stack realignment) as a v3 FLEX FDE: CFA through r10, RA and FP
    saved relative to the CFA."""
    sp, r10, fp = (7 << 3) | 1, (10 << 3) | 1, (6 << 3) | 1
    return [make_fre(0, (sp, 8), size_code=0),
            make_fre(5, (r10, 0), size_code=0),
            make_fre(12, (r10, 0, 2, -8, 2, -16), size_code=0),
            make_fre(20, (fp, -8 & 0xFF, 2, -8, 2, -16), size_code=0),
            make_fre(size - 2, (sp, 8), size_code=0)]


def _shape(rng: random.Random, version: int) -> Shape:
    s = _raw_shape(rng, version)
    rows, last = [], -1
    for f in s.fres:  # keep rows a generator overshot valid: strictly increasing, < size
        if last < f.start < s.size:
            rows.append(f)
            last = f.start
    return Shape(s.size, s.info, tuple(rows), s.rep_size, s.info2)


def _raw_shape(rng: random.Random, version: int) -> Shape:
    r = rng.random()
    if version == 3 and r < 0.005:
        size = rng.randint(80, 250)
        return Shape(size, fde_info(C.FRE_TYPE_ADDR1), tuple(_flex(rng, size)),
                     info2=C.FDE_TYPE_FLEX)
    if r < 0.25:
        size = rng.randint(3, 200)
        return Shape(size, fde_info(C.FRE_TYPE_ADDR1), (_sp(0, 8),))
    if r < 0.70:
        size = rng.randint(60, 255)
        return Shape(size, fde_info(C.FRE_TYPE_ADDR1), tuple(_push_pop(rng, size)))
    if r < 0.86:
        size = rng.randint(8, 255)
        return Shape(size, fde_info(C.FRE_TYPE_ADDR1), tuple(_fp_based(rng, size)))
    if r < 0.99:
        size = rng.randint(256, 6000)
        if rng.random() < 0.6:
            return Shape(size, fde_info(C.FRE_TYPE_ADDR2), tuple(_push_pop(rng, size)))
        return Shape(size, fde_info(C.FRE_TYPE_ADDR2),
                     tuple(_long(rng, size, rng.randint(8, 40))))
    size = rng.randint(0x10000, 0x40000)
    return Shape(size, fde_info(C.FRE_TYPE_ADDR4), tuple(_long(rng, size, rng.randint(20, 80))))


def _plt_shapes(entries: int) -> tuple[Shape, Shape]:
    """ld's .plt rows: PLT0 (PCINC) and the PCMASK FDE covering every PLTn entry."""
    plt0 = Shape(PLT_ENTRY, fde_info(C.FRE_TYPE_ADDR1), (_sp(0, 16), _sp(6, 24)))
    pltn = Shape(PLT_ENTRY * entries, fde_info(C.FRE_TYPE_ADDR1, pcmask=True),
                 (_sp(0, 8), _sp(11, 16)), rep_size=PLT_ENTRY)
    return plt0, pltn


@dataclass(frozen=True)
class Layout:
    """Where the section sits and the function addresses its FDEs describe."""

    version: int
    sframe_vma: int
    text_start: int
    text_end: int
    addrs: list[int]
    shapes: list[Shape]


def plan(n_fdes: int, version: int, seed: int = 1, pool: int | None = None,
         text_start: int = 0x401000) -> Layout:
    """Choose the shapes and addresses of n_fdes functions (2 of them the PLT).

    Shapes come from a pool of one per 8 functions (at least 2048, at most 65536): a
    real binary repeats some FRE sequences (sqlite3: 1409 distinct blocks in 1901
    FDEs), and anything that caches per distinct sequence must not look better here
    than there.
    """
    if pool is None:
        pool = min(65536, max(2048, n_fdes // 8))
    rng = random.Random(seed)
    shapes_pool = [_shape(rng, version) for _ in range(pool)]
    plt0, pltn = _plt_shapes(max(1, n_fdes // 50))
    shapes = [plt0, pltn] + [shapes_pool[rng.randrange(pool)] for _ in range(n_fdes - 2)]
    shapes = shapes[:n_fdes]
    addrs, pc = [], text_start
    for s in shapes:
        addrs.append(pc)
        pc += s.size + (-(pc + s.size) % 16)  # 16-byte aligned functions, as gcc does
    sframe_vma = (pc + 0xFFFF) & ~0xFFF
    return Layout(version, sframe_vma, text_start, pc, addrs, shapes)


def _field_start(lay: Layout, i: int, pcrel: bool) -> int:
    if not pcrel:
        return lay.addrs[i] - lay.sframe_vma
    return lay.addrs[i] - (lay.sframe_vma + C.HEADER_SIZE + i * C.FDE_SIZE[lay.version])


def _flags(version: int) -> int:
    if version == 1:
        return C.F_FDE_SORTED
    return C.F_FDE_SORTED | C.F_FDE_FUNC_START_PCREL


def synth_fdes(lay: Layout) -> list[FDE]:
    """The section's FDEs as model objects (for small sizes and the tiling check)."""
    pcrel = lay.version >= 2
    return [FDE(start=_field_start(lay, i, pcrel), size=s.size, info=s.info, fres=s.fres,
                rep_size=s.rep_size, info2=s.info2) for i, s in enumerate(lay.shapes)]


def encode_via_model(lay: Layout) -> bytes:
    return encode(build_section(lay.version, C.ABI_AMD64_LE, synth_fdes(lay),
                                flags=_flags(lay.version)))


def encode_tiled(lay: Layout) -> bytes:
    """The same bytes as encode_via_model, built from per-shape encoded FRE blocks."""
    v = lay.version
    order = "<"
    blocks: dict[int, tuple[bytes, int]] = {}
    fde_struct = struct.Struct(order + FDE_FMT[v])
    fdes = bytearray()
    parts: list[bytes] = []
    fre_off = num_fres = 0
    pcrel = v >= 2
    for i, s in enumerate(lay.shapes):
        key = id(s)
        got = blocks.get(key)
        if got is None:
            body = b"".join(encode_fre(f, s.info & 0xF, order) for f in s.fres)
            if v == 3:
                body = struct.pack(order + "HBBB", len(s.fres), s.info, s.info2,
                                   s.rep_size) + body
            got = blocks[key] = (body, len(s.fres))
        body, n = got
        start = _field_start(lay, i, pcrel)
        if v == 1:
            fdes += fde_struct.pack(start, s.size, fre_off, n, s.info)
        elif v == 2:
            fdes += fde_struct.pack(start, s.size, fre_off, n, s.info, s.rep_size, 0)
        else:
            fdes += fde_struct.pack(start, s.size, fre_off)
        parts.append(body)
        fre_off += len(body)
        num_fres += n
    header = struct.pack(order + "HBBBbbBIIIII", C.MAGIC, v, _flags(v), C.ABI_AMD64_LE, 0, -8,
                         0, len(lay.shapes), num_fres, fre_off, 0, len(fdes))
    return header + bytes(fdes) + b"".join(parts)


def check_tiling(n_fdes: int = 300, versions: tuple[int, ...] = (1, 2, 3)) -> None:
    """The tiled encoding equals the model encoding (raises AssertionError otherwise)."""
    for v in versions:
        lay = plan(n_fdes, v, pool=64)
        if encode_tiled(lay) != encode_via_model(lay):
            raise AssertionError(f"tiled v{v} section differs from the encoder's")
