"""Counted nouns in messages: `1 finding`, `2 findings`, never `finding(s)`."""

from __future__ import annotations


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
