"""The cross-check's shortcut: FDEs settled from their raw FRE tokens."""

from __future__ import annotations

from itertools import chain, islice
from operator import lt

from ...dwarf.cfi import CfiRow
from ...format import constants
from ...format.abi import Abi
from ...format.fre_blocks import Tokens, starts_of, token_fre
from ...format.fre_info_table import COUNT
from ...format.model import Header
from .compare import eh_steps, rules_of

_NO_ROWS, _OUTERMOST = object(), object()


class Settle:
    """Decides from an FDE's raw FRE tokens (format.fre_blocks) when the exact comparison
    would report nothing, without building FDE or FRE objects: the same answer as
    _sframe_rows + _same_rows for PCINC FDEs, or "don't know" (then the exact path runs).
    A large binary is mostly such FDEs, so this is what keeps the cross-check linear
    and cheap."""

    def __init__(self, h: Header, abi: Abi) -> None:
        self.h, self.abi = h, abi
        self.v3 = h.version == constants.VERSION_3
        self.rules: dict[bytes, object] = {}  # info + data-word bytes -> (CFA, RA, FP)
        # One object per distinct (CFA, RA, FP) value, whatever bytes said it: rules compare
        # equal exactly when they are the same object, so no RegRule.__eq__ runs in _quiet.
        self.canon: dict[object, object] = {}
        # (start-address size, FRE count, .eh_frame rows, same start?, FRE tokens) ->
        # (verdict, reach): functions of one shape share both sides; the verdict holds for
        # any size past `reach`. The tokens joined are the FRE block's bytes (they cover it
        # exactly), so known() looks the block up as it lies in the section.
        self.verdicts: dict[tuple, tuple[bool, int]] = {}
        self.steps: dict = {}  # eh_steps' memo: id(.eh_frame rows) -> steps of all of them

    def _rules(self, rest: bytes) -> object:
        h, abi = self.h, self.abi
        # No data words: the outermost frame (v1 has no such FRE: _sframe_rows gives up).
        if not COUNT[rest[0]]:
            return _NO_ROWS if h.version == constants.VERSION_1 else _OUTERMOST
        got = rules_of(h, False, token_fre(rest, h.big_endian), abi)
        return _NO_ROWS if got is None else self.canon.setdefault(got, got)

    def quiet(self, start: int, size: int, info: int, info2: int, asz: int, toks: Tokens,
              eh_start: int, eh_end: int, rel: tuple[CfiRow, ...]) -> bool:
        """True when compare_fde against the .eh_frame FDE [eh_start, eh_end) with relative
        rows `rel` alone would find nothing to report (no rows: a work bound stopped its
        program, EhFdes.limits)."""
        if info & 0x10 or (self.v3 and info2 & 0x1F == constants.FDE_TYPE_FLEX) or not rel:
            return False  # PCMASK and FLEX FDEs, .eh_frame not run: the exact path
        if eh_start > start or eh_end < start + size:
            return False  # a part no .eh_frame FDE covers: the exact path reports it
        if not toks:
            return True  # no FREs, no rows to compare
        # The FREs as one bytes object: each token's length follows from `asz` and its info
        # byte, so the joined bytes name the tokens exactly, and a memo entry keeps one
        # object instead of a tuple and two bytes per FRE (rel lives as long as this).
        key = (asz, len(toks), id(rel), eh_start == start, b"".join(chain.from_iterable(toks)))
        got = self.verdicts.get(key)
        if got is not None and size > got[1]:
            return got[0]
        starts = starts_of(toks, asz, self.h.big_endian)
        verdict = self._quiet(size, starts, toks, eh_start == start, rel)
        reach = max(max(starts), rel[-1].pc)
        if size > reach:  # nothing was cut at `size`: the same for every larger size
            self.verdicts[key] = (verdict, reach)
        return verdict

    def known(self, start: int, size: int, info: int, info2: int, nf: int, block: bytes,
              eh_start: int, eh_end: int, rel: tuple[CfiRow, ...]) -> bool:
        """True when quiet() is known to say True for the FDE whose FRE block is `block`
        (`nf` FREs, when they split into tokens): it said so for a block of these bytes,
        FRE type and count, against these rows, for a size below this one."""
        if info & 0x10 or (self.v3 and info2 & 0x1F == constants.FDE_TYPE_FLEX) or not rel:
            return False
        if eh_start > start or eh_end < start + size:
            return False
        asz = constants.FRE_ADDR_SIZE.get(info & 0xF)
        got = self.verdicts.get((asz, nf, id(rel), eh_start == start, block))
        return got is not None and got[0] and size > got[1]

    def _quiet(self, size: int, starts: bytes | tuple[int, ...], toks: Tokens,
               same_start: bool, rel: tuple[CfiRow, ...]) -> bool:
        if not all(map(lt, starts, islice(starts, 1, None))):
            return True  # _sframe_rows gives up on unordered FREs (structural rules report)
        rules = self.rules
        mine: list[tuple[int, object]] = []
        last = None
        for fre_start, (_b, rest) in zip(starts, toks, strict=True):
            r = rules.get(rest)
            if r is None:
                r = rules[rest] = self._rules(rest)
            if r is _NO_ROWS:
                return True  # every FRE is read, as _sframe_rows does, even past the end
            if fre_start >= size or r is last:  # (canonical: `is` is ==)
                continue
            if r is _OUTERMOST:
                return False
            mine.append((fre_start, r))
            last = r
        if not same_start:
            return False
        return mine == eh_steps(rel, size, self.steps)
