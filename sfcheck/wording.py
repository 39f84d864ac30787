"""Wording shared by messages: counted nouns (`1 finding`, `2 findings`, never
`finding(s)`) and the did-you-mean hint for a mistyped name."""

from __future__ import annotations

from collections.abc import Iterable


def plural(n: int, word: str, many: str | None = None) -> str:
    """`n word`, with the plural form when n is not 1 (`many`, default word + "s").

    `word` may be a phrase ("data word"); only its last word takes the plural. "info" is a
    mass noun in severity counts (`2 info`): pass many="info"."""
    if n == 1:
        return f"{n} {word}"
    return f"{n} {word + 's' if many is None else many}"


def noun(n: int, word: str, many: str | None = None) -> str:
    """The noun alone, as plural() would write it after n (`unknown key(s) a, b`)."""
    return plural(n, word, many).split(" ", 1)[1]


def did_you_mean(word: str, known: Iterable[str]) -> str:
    """` (did you mean `x`?)` for the closest of `known`, or "" when none is close."""
    import difflib

    known = list(known)
    close = difflib.get_close_matches(word, known, n=1, cutoff=0.6)
    if not close:  # a fragment of a long rule ID: `plt-got` for defect-ld-plt-got-cfa
        close = [k for k in known if len(word) >= 3 and word in k][:1]
    return f" (did you mean `{close[0]}`?)" if close else ""
