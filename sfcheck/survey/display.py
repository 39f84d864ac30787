"""How values read on the survey page: data strings made safe as HTML text and attributes
(sfcheck.report.escape first, then HTML escaping), counts, byte sizes and percentages."""

from __future__ import annotations

import html

from sfcheck.report.escape import escape


def t(value: object) -> str:
    """Any data string, safe as HTML text and as a quoted attribute value."""
    return html.escape(escape(str(value)), quote=True)



def num(n: int) -> str:
    return f"{n:,}"


def size(n: int) -> str:
    for unit, scale in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= scale:
            return f"{n / scale:.1f} {unit}"
    return f"{n} B"


def pct(r: float | None) -> str:
    return "\u2014" if r is None else f"{100 * r:.1f} %"


def ratio(a: int, b: int) -> float | None:
    return a / b if b else None

