"""The survey page's plots, drawn as inline SVG (no charting library): vertical bars for
histograms, horizontal stacked bars for per-label counts. Every label is made safe by
display.t; a cut label keeps its whole text in the <title> tooltip."""

from __future__ import annotations

from collections.abc import Sequence

from .display import num, t

LABEL_CHARS = 40  # longer labels are cut in plots (the <title> tooltip keeps the whole)


def _cut(value: str, limit: int = LABEL_CHARS) -> str:
    return value if len(value) <= limit else value[:limit - 1] + "\u2026"

def _svg_open(ident: str, width: int, height: int, label: str) -> str:
    return (f'<svg id="{ident}" class=plot role=img aria-label="{t(label)}" width="{width}" '
            f'height="{height}" viewBox="0 0 {width} {height}" '
            f'xmlns="http://www.w3.org/2000/svg"><title>{t(label)}</title>')


def vbars(ident: str, label: str, bins: Sequence[tuple[str, int]], y_label: str) -> str:
    """A vertical bar chart (histogram): one rect.bar per bin, zero-height ones included."""
    width, height, left, bottom, top = 720, 270, 56, 40, 30
    plot_w, plot_h = width - left - 12, height - bottom - top
    peak = max((v for _, v in bins), default=0) or 1
    step = plot_w / max(1, len(bins))
    parts = [_svg_open(ident, width, height, label),
             f'<line class=axis x1="{left}" y1="{top + plot_h}" x2="{width - 12}" '
             f'y2="{top + plot_h}"/>',
             f'<text x="4" y="{top - 16}">{t(y_label)}</text>',
             f'<text x="{left - 6}" y="{top + 4}" text-anchor=end>{num(peak)}</text>',
             f'<text x="{left - 6}" y="{top + plot_h}" text-anchor=end>0</text>']
    for i, (name, value) in enumerate(bins):
        h = plot_h * value / peak
        x = left + i * step + 3
        y = top + plot_h - h
        parts.append(f'<rect class=bar x="{x:.1f}" y="{y:.1f}" width="{step - 6:.1f}" '
                     f'height="{h:.1f}"><title>{t(name)}: {num(value)}</title></rect>'
                     f'<text x="{x + (step - 6) / 2:.1f}" y="{y - 4:.1f}" '
                     f'text-anchor=middle>{num(value)}</text>'
                     f'<text x="{x + (step - 6) / 2:.1f}" y="{top + plot_h + 16}" '
                     f'text-anchor=middle>{t(name)}</text>')
    parts.append("</svg>")
    return "".join(parts)


def hbars(ident: str, label: str, rows: Sequence[tuple[str, Sequence[tuple[int, str, str]]]],
          legend: Sequence[tuple[str, str]] = ()) -> str:
    """A horizontal bar chart: one row per label, each a stack of (value, class, what)
    segments (rect.bar-like marks, one per non-zero segment)."""
    width, left, row_h, top = 720, 270, 24, 8
    plot_w = width - left - 90
    height = top * 2 + row_h * max(1, len(rows))
    peak = max((sum(v for v, _, _ in segs) for _, segs in rows), default=0) or 1
    parts = [_svg_open(ident, width, height, label)]
    for i, (name, segs) in enumerate(rows):
        y = top + i * row_h
        parts.append(f'<text x="{left - 8}" y="{y + 16}" text-anchor=end>'
                     f"<title>{t(name)}</title>{t(_cut(name))}</text>")
        x = float(left)
        for value, cls, what in segs:
            if not value:
                continue
            w = max(1.0, plot_w * value / peak)
            parts.append(f'<rect class="mark {t(cls)}" x="{x:.1f}" y="{y + 4}" width="{w:.1f}" '
                         f'height="{row_h - 8}"><title>{t(name)}: {num(value)} {t(what)}'
                         f"</title></rect>")
            x += w
        total = sum(v for v, _, _ in segs)
        parts.append(f'<text x="{x + 6:.1f}" y="{y + 16}">{num(total)}</text>')
    parts.append("</svg>")
    keys = "".join(f'<span><svg class=sw width="12" height="12" aria-hidden=true>'
                   f'<rect class="{t(cls)}" width="12" height="12"/></svg>{t(what)}</span>'
                   for cls, what in legend)
    return "".join(parts) + (f"<p class=legend>{keys}</p>" if legend else "")

