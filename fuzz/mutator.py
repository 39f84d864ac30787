"""Structure-aware mutation of SFrame sections (an atheris `custom_mutator`).

Decode, change one thing at the level of fields (header counts and offsets,
flags, version, byte order, FDE start/size/info/rep_size, FRE start/info/words,
reorder/duplicate/drop FDEs and FREs), re-encode; then either re-lay the
section out canonically (so the change reaches the rules behind the layout
checks) or keep the stored counts and offsets (so it hits the layout checks).
Anything that does not decode gets a header repair or libFuzzer's own byte
mutation. Deterministic for a given (data, seed), as libFuzzer requires.
"""

from __future__ import annotations

import random
import struct
from collections.abc import Callable
from dataclasses import replace

from sfcheck.errors import SfcheckError
from sfcheck.format import constants as C
from sfcheck.format.decode import decode
from sfcheck.format.encode import encode
from sfcheck.format.layout import build_section
from sfcheck.format.model import FDE, FRE, Section, fre_info, smallest_size_code

INTERESTING32 = (0, 1, 2, 4, 8, 16, 0x7F, 0x80, 0xFF, 0x100, 0xFFFF, 0x10000, 0x7FFFFFFF,
                 0x80000000, 0xFFFFFFFF, 0xFFFFFFFE)
# Boundary values for unsigned offset/size fields, as fuzzers' "interesting values" move:
# sign and width boundaries of 8, 16 and 32 bits (the s32/u32 confusions readers make).
BOUNDARY32 = (0, 1, 0x7F, 0x80, 0xFF, 0x100, 0x7FFF, 0x8000, 0xFFFF, 0x10000, 0x7FFFFFFF,
              0x80000000, 0xFFFFFFFF)
INTERESTING_WORDS = (0, 1, -1, 8, -8, 16, -16, 24, 0x7F, -0x80, 0x7FFF, -0x8000, 0x7FFFFFFF,
                     -0x80000000, 3, 5, 0x11, 0x21, 0x31, 160, -160)

_CACHE: dict[bytes, Section | None] = {}
_CACHE_MAX = 1024


def _decoded(data: bytes) -> Section | None:
    got = _CACHE.get(data, False)
    if got is False:
        try:
            got = decode(data)
        except (SfcheckError, ValueError, OverflowError):
            got = None
        if len(_CACHE) >= _CACHE_MAX:
            _CACHE.clear()
        _CACHE[data] = got
    return got  # type: ignore[return-value]


def _u32(rng: random.Random, old: int) -> int:
    r = rng.random()
    if r < 0.4:
        return rng.choice(INTERESTING32)
    if r < 0.8:
        return (old + rng.randint(-4, 4)) & 0xFFFFFFFF
    return rng.getrandbits(32)


def _s(rng: random.Random, old: int, bits: int) -> int:
    lo, hi = -(1 << (bits - 1)), (1 << (bits - 1)) - 1
    v = rng.choice(INTERESTING_WORDS) if rng.random() < 0.5 else old + rng.randint(-16, 16)
    return max(lo, min(hi, v))


def _with_words(fre: FRE, words: tuple[int, ...], rng: random.Random) -> FRE:
    code = smallest_size_code(words)
    if rng.random() < 0.2:
        code = max(code, rng.randint(0, 2))
    return FRE(fre.start, fre_info(fre.base_sp, len(words), code, fre.mangled_ra), words)


# -- one mutation each; every one returns a new Section ------------------------------


def _header_field(sec: Section, rng: random.Random) -> Section:
    h = sec.header
    name = rng.choice(("num_fdes", "num_fres", "fre_len", "fdeoff", "freoff", "flags",
                       "abi", "fixed_fp", "fixed_ra", "auxhdr"))
    if name == "flags":
        new = h.flags ^ (1 << rng.randint(0, 7)) if rng.random() < 0.7 else rng.getrandbits(8)
        return replace(sec, header=replace(h, flags=new))
    if name == "abi":
        return replace(sec, header=replace(h, abi=rng.choice((0, 1, 2, 3, 4, 5, 255))))
    if name in ("fixed_fp", "fixed_ra"):
        return replace(sec, header=replace(h, **{name: _s(rng, getattr(h, name), 8)}))
    if name == "auxhdr":
        aux = b"" if h.auxhdr else bytes(rng.getrandbits(8) for _ in range(rng.randint(1, 8)))
        return replace(sec, header=replace(h, auxhdr=aux))
    return replace(sec, header=replace(h, **{name: _u32(rng, getattr(h, name))}))


def _version(sec: Section, rng: random.Random) -> Section:
    h = sec.header
    v = rng.choice([x for x in C.VERSIONS if x != h.version] + [0, 4])
    return replace(sec, header=replace(h, version=v))


def _byte_order(sec: Section, rng: random.Random) -> Section:
    return replace(sec, header=replace(sec.header, big_endian=not sec.header.big_endian))


def _pick_fde(sec: Section, rng: random.Random) -> tuple[int, FDE] | None:
    if not sec.fdes:
        return None
    i = rng.randrange(len(sec.fdes))
    return i, sec.fdes[i]


def _set_fde(sec: Section, i: int, fde: FDE) -> Section:
    fdes = list(sec.fdes)
    fdes[i] = fde
    return replace(sec, fdes=tuple(fdes))


def _fde_field(sec: Section, rng: random.Random) -> Section:
    got = _pick_fde(sec, rng)
    if got is None:
        return sec
    i, f = got
    name = rng.choice(("start", "start", "size", "size", "info", "info", "info2", "rep_size",
                       "fre_off", "num_fres"))
    if name == "start":
        other = rng.choice(sec.fdes).start
        new = rng.choice((other, other + rng.randint(-8, 8), f.start + rng.randint(-32, 32),
                          f.start + f.size, -f.start))
        bits = 64 if sec.header.version == C.VERSION_3 else 32
        return _set_fde(sec, i, replace(f, start=_s(rng, new, bits) if rng.random() < 0.1
                                        else max(-(1 << (bits - 1)),
                                                 min((1 << (bits - 1)) - 1, new))))
    if name == "size":
        fres = [x.start for x in f.fres]
        choices = [0, 1, f.size + 1, max(0, f.size - 1), rng.choice(BOUNDARY32),
                   _u32(rng, f.size)]
        if fres:
            choices += [fres[-1], fres[-1] + 1]
        return _set_fde(sec, i, replace(f, size=rng.choice(choices) & 0xFFFFFFFF))
    if name == "info":
        bit = rng.choice((0, 1, 2, 3, 4, 5, 6, 7))
        return _set_fde(sec, i, replace(f, info=f.info ^ (1 << bit)))
    if name == "info2":
        return _set_fde(sec, i, replace(f, info2=rng.choice((0, 1, 2, 0x1F, 0x20, 0xFF))))
    if name == "rep_size":
        return _set_fde(sec, i, replace(f, rep_size=rng.choice((0, 1, 8, 16, 32, 255))))
    return _set_fde(sec, i, replace(f, **{name: _u32(rng, getattr(f, name)) & (
        0xFFFF if name == "num_fres" and sec.header.version == C.VERSION_3 else 0xFFFFFFFF)}))


def _fre_field(sec: Section, rng: random.Random) -> Section:
    cands = [i for i, f in enumerate(sec.fdes) if f.fres]
    if not cands:
        return _fde_field(sec, rng)
    i = rng.choice(cands)
    f = sec.fdes[i]
    j = rng.randrange(len(f.fres))
    fre = f.fres[j]
    name = rng.choice(("start", "start", "base_sp", "mangled", "words", "words", "count",
                       "size_code"))
    asz = C.FRE_ADDR_SIZE.get(f.fre_type, 4)
    amax = (1 << (8 * asz)) - 1
    if name == "start":
        cands2 = [0, f.size, max(0, f.size - 1), fre.start + 1, max(0, fre.start - 1), amax]
        if j:
            cands2.append(f.fres[j - 1].start)
        boundary = rng.random() < 0.3
        start = rng.choice(BOUNDARY32 if boundary else cands2) & 0xFFFFFFFF
        if start > amax and boundary:
            # Widen the FDE's FRE type so the boundary value fits, as an encoder would for
            # such a function; other values are clamped to the current width below.
            fre_type = next(t for t in (C.FRE_TYPE_ADDR1, C.FRE_TYPE_ADDR2, C.FRE_TYPE_ADDR4)
                            if start < 1 << (8 * C.FRE_ADDR_SIZE[t]))
            f = replace(f, info=(f.info & ~0xF) | fre_type)
            amax = 0xFFFFFFFF
        new = FRE(min(amax, start), fre.info, fre.words)
    elif name == "base_sp":
        new = FRE(fre.start, fre.info ^ 1, fre.words)
    elif name == "mangled":
        new = FRE(fre.start, fre.info ^ 0x80, fre.words)
    elif name == "size_code":
        new = _with_words(fre, fre.words, rng)
        code = rng.randint(0, 2)
        lim = 1 << (8 * C.WORD_SIZE[code] - 1)
        words = tuple(max(-lim, min(lim - 1, w)) for w in fre.words)
        new = FRE(fre.start, fre_info(fre.base_sp, len(words), code, fre.mangled_ra), words)
    elif name == "count":
        words = list(fre.words)
        if words and rng.random() < 0.5:
            del words[rng.randrange(len(words))]
        elif len(words) < 15:
            words.insert(rng.randint(0, len(words)), rng.choice(INTERESTING_WORDS))
        new = _with_words(fre, tuple(words), rng)
    else:
        words = list(fre.words) or [0]
        k = rng.randrange(len(words))
        words[k] = _s(rng, words[k], 32)
        new = _with_words(fre, tuple(words), rng)
    fres = list(f.fres)
    fres[j] = new
    return _set_fde(sec, i, replace(f, fres=tuple(fres)))


def _reorder(items: list, op: str, rng: random.Random) -> bool:
    """Apply `op` (dup, drop or swap) to `items` in place; False when it does not apply."""
    if op == "dup" and items:
        k = rng.randrange(len(items))
        items.insert(k, items[k])
    elif op == "drop" and items:
        del items[rng.randrange(len(items))]
    elif op == "swap" and len(items) > 1:
        a, b = rng.sample(range(len(items)), 2)
        items[a], items[b] = items[b], items[a]
    else:
        return False
    return True


def _fre_list(sec: Section, rng: random.Random) -> Section:
    got = _pick_fde(sec, rng)
    if got is None:
        return sec
    i, f = got
    fres = list(f.fres)
    op = rng.choice(("dup", "drop", "swap", "add", "clear"))
    if op == "clear":
        fres = []
    elif not _reorder(fres, op, rng):  # "add", or a reordering that does not apply
        start = (fres[-1].start + rng.randint(1, 8)) if fres else 0
        words = tuple(rng.choice(INTERESTING_WORDS) for _ in range(rng.randint(0, 3)))
        fres.append(_with_words(FRE(start & 0xFF, 0, ()), words, rng))
    return _set_fde(sec, i, replace(f, fres=tuple(fres)))


def _fde_list(sec: Section, rng: random.Random) -> Section:
    fdes = list(sec.fdes)
    op = rng.choice(("dup", "drop", "swap", "reverse", "keep_one"))
    if op == "reverse":
        fdes.reverse()
    elif not _reorder(fdes, op, rng) and fdes:  # "keep_one", or a reordering that does not apply
        fdes = [rng.choice(fdes)]
    return replace(sec, fdes=tuple(fdes))


def _trailing(sec: Section, rng: random.Random) -> Section:
    if sec.trailing and rng.random() < 0.5:
        return replace(sec, trailing=b"")
    return replace(sec, trailing=bytes([rng.choice((0, 0, 1, 0xFF))]) * rng.randint(1, 8))


MUTATIONS: tuple[Callable[[Section, random.Random], Section], ...] = (
    _header_field, _header_field, _version, _byte_order, _fde_field, _fde_field, _fde_field,
    _fre_field, _fre_field, _fre_field, _fre_list, _fre_list, _fde_list, _trailing,
)


def relayout(sec: Section) -> Section:
    """The same FDEs/FREs with canonical counts and offsets (header fields kept)."""
    h = sec.header
    version = h.version if h.version in C.VERSIONS else C.VERSION_2
    return build_section(version, h.abi, sec.fdes, flags=h.flags, fixed_fp=h.fixed_fp,
                         fixed_ra=h.fixed_ra, big_endian=h.big_endian, fdeoff=h.fdeoff,
                         auxhdr=h.auxhdr, trailing=sec.trailing)


def encoded_size(sec: Section) -> int:
    """An upper bound of len(encode(sec)): the encoder allocates up to the stored
    offsets, so a mutated fre_len or fre_off must be bounded before encoding."""
    h = sec.header
    size = max(h.fdes_start + len(sec.fdes) * C.FDE_SIZE.get(h.version, 20), h.fres_end)
    for f in sec.fdes:
        size = max(size, h.fres_start + f.fre_off + 5 + 16 * len(f.fres))
    return size + len(sec.trailing)


def structured(data: bytes, rng: random.Random, max_size: int = 1 << 16) -> bytes | None:
    """One field-level mutation of a decodable section; None when `data` does not decode."""
    sec = _decoded(data)
    if sec is None:
        return None
    for _ in range(1 + (rng.random() < 0.3) + (rng.random() < 0.1)):
        sec = rng.choice(MUTATIONS)(sec, rng)
    # A new version changes every record size: only a re-layout keeps it readable.
    keep_raw = rng.random() < 0.35 and sec.header.version in C.VERSIONS
    try:
        if not keep_raw:
            if rng.random() < 0.1:
                sec = replace(sec, header=replace(sec.header, fdeoff=0))
            sec = relayout(sec)
        if encoded_size(sec) > max_size:
            return None
        return encode(sec)
    except (SfcheckError, ValueError, OverflowError, struct.error, KeyError):
        return None


def repair(data: bytes, rng: random.Random) -> bytes | None:
    """Make a header that does not decode consistent with the bytes present."""
    if len(data) < C.HEADER_SIZE or data[:2] not in (C.MAGIC_LE, C.MAGIC_BE):
        return None
    order = ">" if data[:2] == C.MAGIC_BE else "<"
    buf = bytearray(data)
    version = buf[2] if buf[2] in C.VERSIONS else rng.choice(C.VERSIONS)
    buf[2] = version
    aux = buf[7]
    if C.HEADER_SIZE + aux > len(buf):
        buf[7] = aux = 0
    body = len(buf) - C.HEADER_SIZE - aux
    fdes = min(struct.unpack_from(order + "I", buf, 8)[0], body // C.FDE_SIZE[version])
    freoff = fdes * C.FDE_SIZE[version]
    struct.pack_into(order + "IIIII", buf, 8, fdes, struct.unpack_from(order + "I", buf, 12)[0],
                     body - freoff, 0, freoff)
    return bytes(buf)


def mutate(data: bytes, max_size: int, seed: int,
           byte_mutate: Callable[[bytes, int], bytes] | None = None) -> bytes:
    """The atheris custom mutator: structured most of the time, bytes otherwise."""
    rng = random.Random(seed)
    out: bytes | None = None
    r = rng.random()
    if r < 0.6:
        out = structured(data, rng, max_size)
        if out is None and rng.random() < 0.5:
            out = repair(data, rng)
    if out is None or len(out) > max_size:
        if byte_mutate is None:
            import atheris
            byte_mutate = atheris.Mutate
        out = byte_mutate(data, max_size)
    return out
