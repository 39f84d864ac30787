"""The FRE patterns of the fast path, derived from rules/fre.py's predicates.

An FRE's length follows from its info byte, so a regular expression over the raw
bytes can walk a whole FDE's FREs: the start address (captured), one of the info
bytes fre.info_quiet accepts for this header, and the data words, the SP-based CFA
word constrained by byte classes built from fre.cfa_offset_ok (and s390x RA/FP words
from fre.stack_slot). `pattern.findall(data, first, end)` then returns one start
address per FRE, or an empty string for a byte where no such FRE begins. The patterns
accept a subset of the finding-free FREs, never more (tests/test_fast_classes.py,
tests/test_fastpath_equivalence.py).
"""

from __future__ import annotations

import re
from functools import cache

from ..format import constants as C
from ..format.abi import has_pauth
from ..rules import fre as R


def _cls(values: list[int] | range) -> bytes:
    """A regex character class matching exactly these byte values."""
    vals = sorted(set(values))
    if len(vals) == 256:
        return b"."
    out, k = [], 0
    while k < len(vals):
        j = k
        while j + 1 < len(vals) and vals[j + 1] == vals[j] + 1:
            j += 1
        out.append(b"\\x%02x" % vals[k] if j == k else b"\\x%02x-\\x%02x" % (vals[k], vals[j]))
        k = j + 1
    return b"[" + b"".join(out) + b"]"


def _word(width: int, big: bool, low: bytes, top: bytes) -> bytes:
    """Bytes of one `width`-byte word given classes for its lowest and highest byte."""
    if width == 1:
        raise ValueError("single-byte words have one class")
    mid = b"." * (width - 2)
    return top + mid + low if big else low + mid + top


def _sext(value: int, width: int) -> int:
    top = 1 << (8 * width - 1)
    return (value & (2 * top - 1)) - 2 * top * bool(value & top)


@cache  # pure; fre_pattern asks it once per SP-based info byte (18 per pattern)
def _cfa_classes(width: int, abi: int) -> tuple[list[int], list[int], list[int]]:
    """The byte classes of a stored SP-based CFA word that fre-cfa-offset accepts, from
    R.cfa_offset_ok over the stored value as the ABI scales it: (low, top, neg). One
    byte: `low` holds every accepted value (tried as signed). Wider: a word whose bytes
    below the top one are free is accepted when its low byte is in `low` and its top
    byte in `top` (with the other bytes 0), or -- for negative words -- when it is a
    sign-extended low byte in `neg`; the predicate is checked to be separable that way
    over the edge values, and the equivalence test covers the rest. Written once for
    the regex (_cfa_word) and the C walk's tables (walk_spec)."""
    def ok(stored: int) -> bool:
        return R.cfa_offset_ok(cfa_scale_abi(abi, stored))

    if width == 1:
        return [b for b in range(256) if ok(_sext(b, 1))], [], []
    shift = 8 * (width - 1)
    low = [b for b in range(256) if ok(b)]
    top = [t for t in range(0x80) if ok(t << shift)]
    neg = [b for b in range(0x80, 0x100) if ok(b - 0x100)]
    for lo in (low[:1] + low[-1:]):
        for hi in (top[:1] + top[-1:]):
            if not ok((hi << shift) | (0xFF << 8 if width > 2 else 0) | lo):
                raise ValueError("fre-cfa-offset is not separable by bytes")
    return low, top, neg


@cache
def _cfa_word(width: int, big: bool, abi: int) -> bytes:
    """A stored SP-based CFA word that fre-cfa-offset accepts (_cfa_classes as a regex)."""
    low, top, neg = _cfa_classes(width, abi)
    if width == 1:
        return _cls(low)
    arms = []
    if low and top:
        arms.append(_word(width, big, _cls(low), _cls(top)))
    if neg:
        ones = b"\\xff" * (width - 1)
        arms.append(ones + _cls(neg) if big else _cls(neg) + ones)
    if not arms:
        return b"(?!)"
    return arms[0] if len(arms) == 1 else b"(?:" + b"|".join(arms) + b")"


def cfa_scale_abi(abi: int, stored: int) -> int:
    """A stored CFA word as bytes (datawords.cfa_scale, by ABI number)."""
    return C.s390x_cfa_decode(stored) if abi == C.ABI_S390X_BE else stored


def _slot_bytes() -> list[int]:
    """Low bytes of the s390x RA/FP words R.stack_slot accepts (it looks at no other)."""
    return [b for b in range(256) if R.stack_slot(b)]


@cache
def _slot_word(width: int, big: bool) -> bytes:
    """s390x RA/FP words that R.stack_slot accepts."""
    low = _cls(_slot_bytes())
    if width == 1:
        return low
    rest = b"." * (width - 1)
    return rest + low if big else low + rest


def pattern_abi(abi: int) -> int:
    """An ABI with the facts fre_pattern reads (pointer authentication, s390x CFA scaling
    and register words): one compiled pattern per class, not per ABI byte value (fuzzed
    headers hold all 256)."""
    if abi == C.ABI_S390X_BE or has_pauth(abi):
        return abi
    return C.ABI_AMD64_LE


def _fre_shapes(abi: int, version: int, fixed: int) -> list[tuple[int, int, int, bool, bool]]:
    """(info, word size, word count, first word an SP-based CFA word, later words s390x
    RA/FP slots) for every info byte a finding-free DEFAULT FRE may have."""
    s390x = abi == C.ABI_S390X_BE
    quiet = R.quiet_infos(R.legal_counts(version, fixed), has_pauth(abi))
    out = []
    for info in range(256):
        code = info >> C.FRE_INFO_SIZE_SHIFT & 3
        if code not in C.WORD_SIZE or not quiet[info]:
            continue
        n = (info & C.FRE_INFO_COUNT) >> 1
        out.append((info, C.WORD_SIZE[code], n, bool(info & C.FRE_INFO_BASE_SP), s390x))
    return out


@cache
def fre_pattern(asz: int, abi: int, version: int, big: bool,
                fixed: int) -> re.Pattern[bytes]:
    """One finding-free DEFAULT FRE with a start of `asz` bytes, or any single byte.

    findall() returns the start-address bytes of each FRE, and b"" where a byte
    starts no acceptable FRE (so a clean walk contains no b"").
    """
    tails: dict[bytes, list[int]] = {}
    order: list[tuple[int, int, bytes]] = []
    for info, w, n, sp, slots in _fre_shapes(abi, version, fixed):
        words = []
        for k in range(n):
            if k == 0 and sp:
                words.append(_cfa_word(w, big, abi))
            elif k > 0 and slots:
                words.append(_slot_word(w, big))
            else:
                words.append(b"." * w)
        tail = b"".join(words)
        if tail not in tails:
            tails[tail] = []
            order.append((w, n if n else 99, tail))
        tails[tail].append(info)
    # Most frequent shapes first: 1-byte words, then fewer words.
    alts = [_cls(tails[t]) + t for _w, _n, t in sorted(order, key=lambda o: (o[0], o[1]))]
    body = b"(" + b"." * asz + b")(?:" + b"|".join(alts) + b")|."
    return re.compile(body, re.DOTALL)


# The layout of walk_spec's bytes, which sfcheck/walk/_frewalk.c reads (SPEC_* there).
SPEC_INFO_OK, SPEC_INFO_WSIZE, SPEC_INFO_COUNT, SPEC_INFO_FLAGS = 0, 256, 512, 768
SPEC_CFA = 1024  # per word size 1, 2, 4: low, top, neg tables of 256 bytes
SPEC_SLOT = SPEC_CFA + 3 * 768
SPEC_BIG = SPEC_SLOT + 256
SPEC_LEN = SPEC_BIG + 1


@cache
def walk_spec(abi: int, version: int, big: bool, fixed: int) -> bytes:
    """What fre_pattern accepts (for any start size), as the tables the C walk reads:
    per info byte whether it is accepted, its word size and count, and whether its
    first word is an SP-based CFA word (bit 0) and later words s390x slots (bit 1); the
    CFA words' byte classes per word size; the slot words' low-byte class; the byte order.
    Built from the same _fre_shapes/_cfa_classes/_slot_bytes as the regex."""
    spec = bytearray(SPEC_LEN)
    for info, w, n, sp, slots in _fre_shapes(abi, version, fixed):
        spec[SPEC_INFO_OK + info] = 1
        spec[SPEC_INFO_WSIZE + info] = w
        spec[SPEC_INFO_COUNT + info] = n
        spec[SPEC_INFO_FLAGS + info] = sp | slots << 1
    for j, w in enumerate((1, 2, 4)):
        for t, cls in enumerate(_cfa_classes(w, abi)):
            for b in cls:
                spec[SPEC_CFA + j * 768 + t * 256 + b] = 1
    for b in _slot_bytes():
        spec[SPEC_SLOT + b] = 1
    spec[SPEC_BIG] = big
    return bytes(spec)
