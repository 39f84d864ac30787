"""Shrink a failing input while a predicate keeps holding (delta debugging).

Structure first when the bytes decode as a section (drop FDEs, then FREs, with a
canonical re-layout), then bytes: remove chunks of halving size, then lower
each byte to 0. Bounded by a wall-clock budget; deterministic.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import replace

Predicate = Callable[[bytes], bool]


def _structural(data: bytes, keep: Predicate, deadline: float) -> bytes:
    from sfcheck.errors import SfcheckError
    from sfcheck.format.decode import decode
    from sfcheck.format.encode import encode

    from .mutator import relayout
    try:
        sec = decode(data)
    except (SfcheckError, ValueError):
        return data
    best = data

    def attempt(candidate_sec: object) -> bool:
        nonlocal best, sec
        try:
            out = encode(relayout(candidate_sec))  # type: ignore[arg-type]
        except (SfcheckError, ValueError, OverflowError, KeyError):
            return False
        if len(out) < len(best) and keep(out):
            best, sec = out, candidate_sec  # type: ignore[assignment]
            return True
        return False

    i = 0
    while i < len(sec.fdes) and time.monotonic() < deadline:
        fdes = sec.fdes[:i] + sec.fdes[i + 1:]
        if not attempt(replace(sec, fdes=fdes)):
            i += 1
    for i in range(len(sec.fdes)):
        j = 0
        while j < len(sec.fdes[i].fres) and time.monotonic() < deadline:
            f = sec.fdes[i]
            fdes = list(sec.fdes)
            fdes[i] = replace(f, fres=f.fres[:j] + f.fres[j + 1:])
            if not attempt(replace(sec, fdes=tuple(fdes))):
                j += 1
    return best


def minimize(data: bytes, keep: Predicate, budget_s: float = 30.0,
             structural: bool = True) -> bytes:
    """The smallest input found within the budget for which `keep` still holds."""
    deadline = time.monotonic() + budget_s
    if not keep(data):
        return data
    if structural:
        data = _structural(data, keep, deadline)
    chunk = max(1, len(data) // 2)
    while chunk >= 1 and time.monotonic() < deadline:
        i = 0
        progressed = False
        while i < len(data) and time.monotonic() < deadline:
            cand = data[:i] + data[i + chunk:]
            if cand != data and keep(cand):
                data, progressed = cand, True
            else:
                i += chunk
        if not progressed:
            chunk //= 2
    for i in range(len(data)):
        if time.monotonic() >= deadline:
            break
        if data[i]:
            cand = data[:i] + b"\0" + data[i + 1:]
            if keep(cand):
                data = cand
    return data


def same_failure(test_one_input: Callable[[bytes], None], sig: str) -> Predicate:
    """A predicate: the harness fails on the input with the signature `sig`."""
    from .common import sfcheck_errors, signature

    ours = sfcheck_errors()

    def keep(data: bytes) -> bool:
        try:
            test_one_input(data)
        except ours:
            return False
        except Exception as exc:  # noqa: BLE001 - any escape may be the one we keep
            return signature(exc) == sig
        return False

    return keep
