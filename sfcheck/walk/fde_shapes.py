"""Which FDEs the fast path must leave to the reference pass, asked of rules/fde.py.

fde_rules.check_fde itself decides, run on one probe FDE per distinct shape (SHAPE) with a
context that only notes whether it emitted; the fast path adds what its patterns
cannot walk (PCMASK, FRE types above ADDR4, FDE types other than DEFAULT).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from functools import cache, lru_cache
from itertools import compress, product, repeat
from math import prod
from operator import add, ge

from ..format import constants
from ..format.model import FDE, Header
from ..rules import fde as fde_rules
from .context import Reporter

# bytes.translate tables: byte value == FRE type t -> 1.
EQ = [bytes(int(b == t) for b in range(256)) for t in range(3)]


def fast_fre_type(info: int) -> int:
    """The FRE type of an FDE info byte whose FREs the patterns can walk (PCINC, type
    0-2), or 255. Whether check_fde objects to the byte is asked of check_fde itself."""
    t = info & constants.FDE_INFO_FRE_TYPE
    return t if not info & constants.FDE_INFO_PCMASK and t <= constants.FRE_TYPE_ADDR4 else 255


@cache
def type_table() -> bytes:
    """FDE info byte -> fast_fre_type, for bytes.translate."""
    return bytes(map(fast_fre_type, range(256)))


class _Probe(Reporter):
    """A reporter that only notes whether a check emitted."""

    __slots__ = ("hit",)

    def __init__(self) -> None:
        self.hit = False

    def emit_as(self, *args: object, **where: object) -> None:
        self.hit = True


SHAPE = ("info", "info2", "rep_size", "padding", "size_class", "num_fres")
PRODUCT_MAX = 4096  # shapes tried when looking for per-column verdicts
# Up to this many FDEs, the shapes present are looked up directly: one probe per distinct
# shape costs less than probing every combination of the column values in search of
# per-column verdicts, which only pay off when a table is too large for a per-FDE lookup.
DIRECT_MAX = 4096


@lru_cache(maxsize=8)
def _verdicts(h: Header) -> dict[tuple[int, ...], bool]:
    """Full shape (SHAPE order) -> verdict, for one header (kept across chunks)."""
    return {}


def _verdict(h: Header, shape: tuple[int, ...]) -> bool:
    """True when an FDE of this shape must take the reference path: fde_rules.check_fde emits on
    a probe FDE of that shape, or the patterns cannot walk its FREs (PCMASK, FRE type > 2,
    not DEFAULT)."""
    cache = _verdicts(h)
    got = cache.get(shape)
    if got is None:
        info, info2, rep, pad, size_class, nf = shape
        probe = _Probe()
        fde_rules.check_fde(probe, h, FDE(0, fde_rules.CLASS_SIZES[size_class], info,
                                          rep_size=rep, info2=info2, padding=pad,
                                          num_fres=nf), {})
        got = cache[shape] = (probe.hit or fast_fre_type(info) == 255
                              or info2 & constants.FDE_INFO2_TYPE != constants.FDE_TYPE_DEFAULT)
    return got


def noisy_fdes(h: Header, columns: dict[str, Sequence[int]], sizes: list[int],
               types: bytes) -> list[bytes]:
    """0/1 flags per FDE, in layers to OR together: must the FDE take the reference path
    (_verdict of its shape)?

    fde_rules.check_fde decides, on one probe FDE per distinct shape. To keep per-FDE Python
    work off clean tables: columns holding one value are fixed; the size class
    (fde_rules.size_class) is a function of the FRE type when each type's functions all
    fall in one class; and
    when the verdict over all combinations of the values present is an OR of per-column
    conditions (e.g. "PCMASK info byte" or "no FREs"), each column is marked on its own
    with C-level table lookups (tables above DIRECT_MAX FDEs only). Otherwise every FDE's
    shape is looked up."""
    n = len(sizes)
    class_by_type: dict[int, int] | None = {}
    for t in range(3):
        sel = list(compress(sizes, types.translate(EQ[t])))
        if sel:
            lo, hi = fde_rules.size_class(min(sel)), fde_rules.size_class(max(sel))
            if lo != hi:
                class_by_type = None
                break
            class_by_type[t] = lo
    class_of_info: list[int] = []
    if class_by_type is None:
        # size_class of every size: how many bounds it reaches, in C-level maps
        counts: Iterable[int] = repeat(0, n)
        for bound in fde_rules.SIZE_BOUNDS:
            counts = map(add, counts, map(ge, sizes, repeat(bound, n)))
        columns["size_class"] = list(counts)
    else:  # not a column: follows from the info byte, via its fast FRE type
        by_type = bytearray(256)
        for t, size_class in class_by_type.items():
            by_type[t] = size_class
        class_of_info = list(type_table().translate(by_type))
    fixed: dict[str, int] = {}
    values: dict[str, list[int]] = {}
    for name in SHAPE:
        col = columns.get(name)
        if col is None:
            continue
        distinct = set(col)
        if len(distinct) == 1:
            fixed[name] = col[0]
        else:
            values[name] = sorted(distinct)
    varying = list(values)

    template = [fixed.get(name, 0) for name in SHAPE]
    at = [SHAPE.index(name) for name in varying]
    info_at, class_at = SHAPE.index("info"), SHAPE.index("size_class")

    def shape(combo: tuple[int, ...]) -> tuple[int, ...]:
        full = template[:]
        for k, v in zip(at, combo, strict=True):
            full[k] = v
        if class_of_info:
            full[class_at] = class_of_info[full[info_at]]
        return tuple(full)

    if not varying:  # one shape
        return [b"\x01" * n] if _verdict(h, shape(())) else []
    # More combinations than FDEs: the shapes present are fewer, look those up instead.
    if n > DIRECT_MAX and prod(map(len, values.values())) <= min(PRODUCT_MAX, n):
        verdict = {c: _verdict(h, shape(c)) for c in product(*values.values())}
        # Per column: the values noisy in every combination that has them.
        always = [set(vals) for vals in values.values()]
        for combo, noisy in verdict.items():
            if not noisy:
                for k, v in enumerate(combo):
                    always[k].discard(v)
        if all(noisy == any(v in always[k] for k, v in enumerate(combo))
               for combo, noisy in verdict.items()):
            layers = []
            for name, marked in zip(varying, always, strict=True):
                if marked:
                    col = columns[name]
                    if isinstance(col, bytes):
                        layers.append(col.translate(bytes(int(b in marked)
                                                          for b in range(256))))
                    else:
                        layers.append(bytes(map(marked.__contains__, col)))
            return layers
    keys = list(zip(*(columns[name] for name in varying), strict=True))
    verdict = {k: _verdict(h, shape(k)) for k in set(keys)}  # one probe per shape present
    return [bytes(map(verdict.__getitem__, keys))]
