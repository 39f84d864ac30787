"""The survey report as one self-contained HTML page.

`render(data, out)` writes the page for the dict of survey-report.schema.json: summary
figures, plots drawn here as inline SVG (no charting library), sortable tables (a few lines
of inline JavaScript) linking to a details section per package. The page loads nothing: a
Content-Security-Policy meta tag allows only its own style and script, by hash, so neither
a fetch nor an injected element can reach the network.

Every string from the data (package names, paths, producers, rule ids) is hostile: it is
first made visible by sfcheck.report.escape (controls, bidi overrides and undecodable bytes
become \\xNN/\\uNNNN) and then HTML-escaped, quotes included, so it can sit in text and in
attributes alike. The page carries no data inside <script>.

Big archives: a package's details list at most `max_files` files (those with findings and
the least covered first; the JSON report has them all), sections lay out only when scrolled
to (content-visibility), and sorting re-appends rows in one fragment. 50,000 packages render
in seconds into a page of tens of MB.
"""

from __future__ import annotations

import base64
import hashlib
import html
from collections.abc import Iterable, Sequence
from typing import Any, TextIO

from sfcheck.report.escape import escape

SEVERITIES = ("error", "warning", "info")
# Per-package overhead bins (.sframe bytes / .eh_frame bytes): 0.25 wide, the last open.
OVERHEAD_EDGES = (0.25, 0.5, 0.75, 1.0, 1.25, 1.5, 1.75, 2.0)
LABEL_CHARS = 40  # longer labels are cut in plots (the <title> tooltip keeps the whole)
TOP_BARS = 20  # plots show the largest rows; their tables list all

CSS = """\
:root{--fg:#1b1f24;--mute:#57606a;--line:#d0d7de;--bg:#fff;--alt:#f6f8fa;--acc:#0a58ca;
--err:#c62828;--warn:#b26a00;--info:#1565c0;--ok:#2e7d32;--bar:#3b6ea5;--bar2:#9db9d9}
*{box-sizing:border-box}
body{font:15px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;color:var(--fg);
background:var(--bg);margin:0 auto;max-width:1200px;padding:1rem 1.5rem 4rem}
h1{font-size:1.6rem;margin:.5rem 0}h2{font-size:1.3rem;margin:2.2rem 0 .6rem;
border-bottom:1px solid var(--line);padding-bottom:.2rem}h3{font-size:1.05rem;margin:.2rem 0}
a{color:var(--acc)}nav a{margin-right:.9rem}.mute,small{color:var(--mute)}
code,.path{font:13px ui-monospace,SFMono-Regular,Menlo,Consolas,monospace;overflow-wrap:anywhere}
.cards{display:grid;grid-template-columns:repeat(auto-fill,minmax(170px,1fr));gap:.6rem;
margin:1rem 0}.card{border:1px solid var(--line);border-radius:6px;padding:.5rem .7rem;
background:var(--alt)}.card b{display:block;font-size:1.25rem}.card>span{color:var(--mute);
font-size:.85rem}
table{border-collapse:collapse;margin:.4rem 0 1rem;font-size:.9rem}
th,td{border-bottom:1px solid var(--line);padding:.25rem .55rem;text-align:left;
vertical-align:top}td.n,th.n{text-align:right;font-variant-numeric:tabular-nums}
thead th{background:var(--alt);position:sticky;top:0}
th button{font:inherit;font-weight:600;border:0;background:none;padding:0;cursor:pointer;
color:inherit}th button::after{content:" \\2195";color:var(--mute)}
th[aria-sort=ascending] button::after{content:" \\2191"}
th[aria-sort=descending] button::after{content:" \\2193"}
tbody tr:nth-child(even){background:var(--alt)}
.sev-error{color:var(--err);font-weight:600}.sev-warning{color:var(--warn)}
.sev-info{color:var(--info)}.accepts{color:var(--ok)}.refuses{color:var(--err);
font-weight:600}.no-sframe{color:var(--mute)}
.scroll{overflow-x:auto}
table.packages td:nth-child(n+6),table.files td:nth-child(n+4):nth-child(-n+8){
text-align:right;font-variant-numeric:tabular-nums}table.files td:nth-child(-n+3){
font:13px ui-monospace,SFMono-Regular,Menlo,Consolas,monospace;overflow-wrap:anywhere}
table.packages td,td.n{
white-space:nowrap}.zero{color:var(--mute)}
svg{display:block;max-width:100%;height:auto;margin:.5rem 0 1rem}
svg text{font:12px system-ui,sans-serif;fill:var(--fg)}svg .axis{stroke:var(--mute)}
svg .bar{fill:var(--bar)}svg .bar2{fill:var(--bar2)}svg .error{fill:var(--err)}
svg .warning{fill:#e0a030}svg .info{fill:var(--info)}svg .accepts{fill:var(--ok)}
svg .refuses{fill:var(--err)}svg .eh{fill:#8a8f98}
section.pkg{border-top:1px solid var(--line);padding:.6rem 0;content-visibility:auto;
contain-intrinsic-size:auto 160px}section.pkg:target{background:#fff8c5;outline:2px solid
#d4a72c}section.pkg p{margin:.2rem 0}ul.names{columns:3 16rem;padding-left:1.2rem}
.legend>span{margin-right:1rem}svg.sw{display:inline-block;margin:0 .3em 0 0;
vertical-align:-.1em}
"""

# Sorting: one delegated click handler (a page may hold 50,000 tables); numeric columns
# compare data-v (else the text) as numbers, empty last either way; text columns use a
# numeric-aware collator. A hash link opens the <details> around its target.
JS = """\
"use strict";
(function(){
var coll=new Intl.Collator(undefined,{numeric:true,sensitivity:"base"});
function key(td,num){var v=td.hasAttribute("data-v")?td.getAttribute("data-v"):td.textContent;
if(!num)return v;return v===""?NaN:Number(v);}
document.addEventListener("click",function(ev){
var b=ev.target.closest("table.sortable thead th button");if(!b)return;
var th=b.parentElement,table=th.closest("table"),col=th.cellIndex,num=th.classList.contains("n");
var asc=th.getAttribute("aria-sort")!=="ascending",body=table.tBodies[0];
var rows=Array.prototype.map.call(body.rows,function(r,i){return[key(r.cells[col],num),i,r];});
rows.sort(function(a,b){var x=a[0],y=b[0],c;
if(num){var xn=isNaN(x),yn=isNaN(y);if(xn||yn)return xn===yn?a[1]-b[1]:(xn?1:-1);c=x-y;}
else c=coll.compare(x,y);
return c===0?a[1]-b[1]:(asc?c:-c);});
var frag=document.createDocumentFragment();
rows.forEach(function(r){frag.appendChild(r[2]);});body.appendChild(frag);
Array.prototype.forEach.call(th.parentElement.cells,function(h){
if(h.hasAttribute("aria-sort"))h.setAttribute("aria-sort","none");});
th.setAttribute("aria-sort",asc?"ascending":"descending");});
function reveal(){var id=decodeURIComponent(location.hash.slice(1));
var el=id&&document.getElementById(id);if(!el)return;
for(var d=el;d;d=d.parentElement)if(d.tagName==="DETAILS")d.open=true;el.scrollIntoView();}
window.addEventListener("hashchange",reveal);reveal();
})();
"""


def _csp_hash(text: str) -> str:
    return "'sha256-" + base64.b64encode(hashlib.sha256(text.encode()).digest()).decode() + "'"


# default-src 'none' covers fetch, images, fonts, frames; the one style and script by hash.
CSP = (f"default-src 'none'; style-src {_csp_hash(CSS)}; script-src {_csp_hash(JS)}; "
       "img-src data:; base-uri 'none'; form-action 'none'")


def t(value: object) -> str:
    """Any data string, safe as HTML text and as a quoted attribute value."""
    return html.escape(escape(str(value)), quote=True)


def _cut(value: str, limit: int = LABEL_CHARS) -> str:
    return value if len(value) <= limit else value[:limit - 1] + "\u2026"


def num(n: int) -> str:
    return f"{n:,}"


def size(n: int) -> str:
    for unit, scale in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= scale:
            return f"{n / scale:.1f} {unit}"
    return f"{n} B"


def pct(ratio: float | None) -> str:
    return "\u2014" if ratio is None else f"{100 * ratio:.1f} %"


def ratio(a: int, b: int) -> float | None:
    return a / b if b else None


# -- table cells: numeric ones carry the raw value in data-v when the text is not it. The two
# big tables (packages, files) align their numeric columns by position in CSS rather than by
# a class on each of their millions of cells.

def _td_num(n: int, cls: str = " class=n") -> str:
    return f"<td{cls}>{n}</td>" if n < 1000 else f"<td{cls} data-v={n}>{num(n)}</td>"


def _td_size(n: int, cls: str = " class=n") -> str:
    return f"<td{cls} data-v={n}>{size(n)}</td>"


def _td_pct(r: float | None, cls: str = " class=n") -> str:
    return f'<td{cls} data-v="{"" if r is None else f"{r:.6g}"}">{pct(r)}</td>'


def _table(cls: str, heads: Sequence[tuple[str, bool]], rows: Iterable[str],
           sortable: bool = True) -> str:
    """A table, sortable by its header buttons; heads are (label, numeric); rows are ready
    <tr>… strings."""
    if sortable:
        th = "".join(f'<th{" class=n" if n else ""} aria-sort=none scope=col>'
                     f"<button type=button>{label}</button></th>" for label, n in heads)
    else:
        th = "".join(f'<th{" class=n" if n else ""}>{label}</th>' for label, n in heads)
    return (f'<div class=scroll><table class="{"sortable " if sortable else ""}{cls}"><thead>'
            f"<tr>{th}</tr></thead><tbody>\n" + "\n".join(rows) + "\n</tbody></table></div>\n")


# -- plots: inline SVG -----------------------------------------------------------------------

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
            parts.append(f'<rect class="mark {cls}" x="{x:.1f}" y="{y + 4}" width="{w:.1f}" '
                         f'height="{row_h - 8}"><title>{t(name)}: {num(value)} {t(what)}'
                         f"</title></rect>")
            x += w
        total = sum(v for v, _, _ in segs)
        parts.append(f'<text x="{x + 6:.1f}" y="{y + 16}">{num(total)}</text>')
    parts.append("</svg>")
    keys = "".join(f'<span><svg class=sw width="12" height="12" aria-hidden=true>'
                   f'<rect class="{cls}" width="12" height="12"/></svg>{t(what)}</span>'
                   for cls, what in legend)
    return "".join(parts) + (f"<p class=legend>{keys}</p>" if legend else "")


# -- sections --------------------------------------------------------------------------------

def _pkg_key(p: dict[str, Any]) -> str:
    return f"{p['name']}/{p['architecture']}"


def _link(name: str, ids: dict[str, str]) -> str:
    ident = ids.get(name)
    return f'<a href="#{t(ident)}">{t(name)}</a>' if ident else t(name)


def _header(data: dict[str, Any]) -> str:
    snap, prev = data["snapshot"], data["previous"]
    repos = ", ".join(f"<code>{t(r)}</code>" for r in snap["repositories"]) or "none"
    against = (f"Previous snapshot: {t(prev['label'])} (#{prev['id']}, taken {t(prev['taken'])})."
               if prev else "No previous snapshot.")
    return (f"<header><h1>SFrame survey: {t(snap['label'])}</h1>"
            f"<p class=mute>Snapshot #{snap['id']} taken {t(snap['taken'])} of {repos}. "
            f"{against} Generated {t(data['generated'])} by sfcheck "
            f"{t(data['sfcheck_version'])}.</p>"
            '<nav><a href="#summary">Summary</a><a href="#coverage">Coverage</a>'
            '<a href="#size">Size</a><a href="#versions">Versions and producers</a>'
            '<a href="#rules">Findings</a><a href="#profiles">Readers</a>'
            '<a href="#diff">Diff</a><a href="#packages">Packages</a>'
            '<a href="#details">Details</a></nav></header>\n')


def _summary(data: dict[str, Any]) -> str:
    tot = data["totals"]
    f = tot["findings"]
    cards = [
        (num(tot["packages"]), "packages"),
        (num(tot["packages_with_elf"]), "with ELF files"),
        (num(tot["packages_with_sframe"]), "with .sframe"),
        (num(tot["elf_files"]), "ELF files"),
        (f"{num(tot['elf_files_with_sframe'])} "
         f"<small>({pct(ratio(tot['elf_files_with_sframe'], tot['elf_files']))})</small>",
         "ELF files with .sframe"),
        (pct(ratio(tot["text_bytes_covered"], tot["text_bytes"])),
         f"of {size(tot['text_bytes'])} executable bytes covered"),
        (size(tot["sframe_bytes"]), ".sframe"),
        (size(tot["eh_frame_bytes"]), ".eh_frame"),
        (pct(ratio(tot["sframe_bytes"], tot["eh_frame_bytes"])), ".sframe / .eh_frame"),
        (f'<span class=sev-error>{num(f["error"])}</span>', "errors"),
        (f'<span class=sev-warning>{num(f["warning"])}</span>', "warnings"),
        (f'<span class=sev-info>{num(f["info"])}</span>', "info findings"),
    ]
    body = "".join(f"<div class=card><b>{v}</b><span>{k}</span></div>" for v, k in cards)
    return f'<section id=summary><h2>Summary</h2><div class=cards>{body}</div></section>\n'


def _coverage(data: dict[str, Any]) -> str:
    hist = data["coverage_histogram"]
    bins = [(f"{round(100 * b['lo'])}\u2013{round(100 * b['hi'])} %", b["files"]) for b in hist]
    n = sum(b["files"] for b in hist)
    plot = vbars("plot-coverage", "ELF files with .sframe by share of executable bytes covered",
                 bins, "files")
    return ("<section id=coverage><h2>SFrame coverage</h2>"
            f"<p>Share of each ELF file's executable bytes that an SFrame FDE covers, over the "
            f"{num(n)} files that have .sframe.</p>{plot}</section>\n")


def _size(data: dict[str, Any]) -> str:
    tot = data["totals"]
    totals = hbars("plot-size-total", "Total size of .sframe and .eh_frame",
                   [(".eh_frame", [(tot["eh_frame_bytes"], "eh", "bytes")]),
                    (".sframe", [(tot["sframe_bytes"], "bar", "bytes")])])
    counts = [0] * (len(OVERHEAD_EDGES) + 1)
    without_eh = 0
    for p in data["packages"]:
        if not p["sframe_bytes"]:
            continue
        if not p["eh_frame_bytes"]:
            without_eh += 1
            continue
        r = p["sframe_bytes"] / p["eh_frame_bytes"]
        counts[sum(r >= e for e in OVERHEAD_EDGES)] += 1
    names = [f"< {round(100 * OVERHEAD_EDGES[0])} %"]
    names += [f"{round(100 * a)}\u2013{round(100 * b)} %"
              for a, b in zip(OVERHEAD_EDGES, OVERHEAD_EDGES[1:], strict=False)]
    names.append(f"\u2265 {round(100 * OVERHEAD_EDGES[-1])} %")
    per_pkg = vbars("plot-size-packages", "Packages by .sframe size relative to .eh_frame",
                    list(zip(names, counts, strict=True)), "packages")
    note = (f" {num(without_eh)} packages have .sframe but no .eh_frame and are not counted."
            if without_eh else "")
    return ("<section id=size><h2>Size: .sframe against .eh_frame</h2>"
            f"<p>In total .sframe takes {size(tot['sframe_bytes'])}, "
            f"{pct(ratio(tot['sframe_bytes'], tot['eh_frame_bytes']))} of .eh_frame's "
            f"{size(tot['eh_frame_bytes'])}. Per package (column \u201c.sframe/.eh_frame\u201d "
            f"of the packages table):{note}</p>"
            f"{totals}{per_pkg}</section>\n")


def _versions(data: dict[str, Any]) -> str:
    versions = data["versions"]
    vplot = hbars("plot-versions", "ELF files with .sframe by SFrame version and flags",
                  [(f"v{v['version']} {v['flags']}", [(v["files"], "bar", "files")])
                   for v in versions])
    vtable = _table("versions", [("Version", True), ("Flags", False), ("Files", True)],
                    (f"<tr>{_td_num(v['version'])}<td><code>{t(v['flags'])}</code></td>"
                     f"{_td_num(v['files'])}</tr>" for v in versions))
    prods = sorted(data["producers"], key=lambda p: -p["files"])
    pplot = hbars("plot-producers", "ELF files by producer",
                  [(p["producer"], [(p["files_with_sframe"], "bar", "with .sframe"),
                                    (p["files"] - p["files_with_sframe"], "bar2",
                                     "without .sframe")]) for p in prods[:TOP_BARS]],
                  legend=[("bar", "with .sframe"), ("bar2", "without .sframe")])
    ptable = _table("producers", [("Producer", False), ("ELF files", True),
                                  ("With .sframe", True), ("Share", True)],
                    (f"<tr><td>{t(p['producer'])}</td>{_td_num(p['files'])}"
                     f"{_td_num(p['files_with_sframe'])}"
                     f"{_td_pct(ratio(p['files_with_sframe'], p['files']))}</tr>"
                     for p in prods))
    more = (f"<p class=mute>The plot shows the {TOP_BARS} producers with most files.</p>"
            if len(prods) > TOP_BARS else "")
    return ("<section id=versions><h2>Versions and producers</h2>"
            f"<h3>SFrame versions</h3>{vplot}{vtable}"
            f"<h3>Producers</h3><p>From each file's .comment section and notes; "
            f"\u201cunknown\u201d when it has none.</p>{pplot}{more}{ptable}</section>\n")


def _rules(data: dict[str, Any]) -> str:
    rules = sorted(data["rules"], key=lambda r: (SEVERITIES.index(r["severity"]),
                                                 -r["findings"], r["rule"]))
    plot = hbars("plot-rules", "Findings by rule",
                 [(r["rule"], [(r["findings"], r["severity"], "findings")])
                  for r in sorted(rules, key=lambda r: -r["findings"])[:TOP_BARS]],
                 legend=[(s, s) for s in SEVERITIES])
    table = _table("rules", [("Rule", False), ("Severity", False), ("Findings", True),
                             ("Files", True), ("Packages", True)],
                   (f"<tr><td><code>{t(r['rule'])}</code></td>"
                    f"<td class=sev-{t(r['severity'])}>{t(r['severity'])}</td>"
                    f"{_td_num(r['findings'])}{_td_num(r['files'])}{_td_num(r['packages'])}</tr>"
                    for r in rules))
    return ("<section id=rules><h2>Findings by rule</h2>"
            + (plot + table if rules else "<p>No findings.</p>")
            + "<p>Findings by package: sort the packages table below by its Errors, "
            "Warnings or Info column.</p></section>\n")


def _profiles(data: dict[str, Any]) -> str:
    profs = data["profiles"]
    plot = hbars("plot-profiles", "ELF files with .sframe each reader accepts or refuses",
                 [(p["profile"], [(p["files_accepted"], "accepts", "accepted"),
                                  (p["files_refused"], "refuses", "refused")]) for p in profs],
                 legend=[("accepts", "accepted"), ("refuses", "refused")])
    table = _table("profiles", [("Profile", False), ("Files accepted", True),
                                ("Files refused", True), ("Refused share", True),
                                ("Packages refused", True)],
                   (f"<tr><td><code>{t(p['profile'])}</code></td>{_td_num(p['files_accepted'])}"
                    f"{_td_num(p['files_refused'])}"
                    f"{_td_pct(ratio(p['files_refused'], _checked(p)))}"
                    f"{_td_num(p['packages_refused'])}</tr>" for p in profs))
    return ("<section id=profiles><h2>Reader acceptance</h2>"
            "<p>Whether each consumer profile's reader (<code>sfcheck --profile</code>) would "
            "take the file's .sframe section.</p>"
            + (plot + table if profs else "<p>No profile was evaluated.</p>")
            + "</section>\n")


def _names(items: Sequence[str], ids: dict[str, str]) -> str:
    if not items:
        return "<p class=mute>None.</p>"
    return "<ul class=names>" + "".join(f"<li>{_link(n, ids)}</li>" for n in items) + "</ul>"


def _diff(data: dict[str, Any], ids: dict[str, str]) -> str:
    diff = data["diff"]
    if diff is None:
        return ("<section id=diff><h2>Changes</h2><p>No previous snapshot to compare with."
                "</p></section>\n")
    errs = _table("new-errors", [("Package", False), ("Rule", False), ("Before", True),
                                 ("After", True)],
                  (f"<tr><td>{_link(e['package'], ids)}</td><td><code>{t(e['rule'])}</code></td>"
                   f"{_td_num(e['before'])}{_td_num(e['after'])}</tr>"
                   for e in diff["new_errors"]))
    drops = _table("coverage-drops", [("Package", False), ("Before", True), ("After", True),
                                      ("Change", True)],
                   (f"<tr><td>{_link(d['package'], ids)}</td>{_td_pct(d['before'])}"
                    f"{_td_pct(d['after'])}<td class=n data-v=\"{d['after'] - d['before']:.6g}\">"
                    f"{100 * (d['after'] - d['before']):+.1f} pt</td></tr>"
                    for d in diff["coverage_drops"]))
    lists = [("lost-sframe", "Lost .sframe", diff["lost_sframe"]),
             ("gained-sframe", "Gained .sframe", diff["gained_sframe"]),
             ("added-packages", "Added packages", diff["added_packages"]),
             ("removed-packages", "Removed packages", diff["removed_packages"]),
             ("changed-packages", "Changed packages (findings or coverage)",
              diff["changed_packages"])]
    parts = [f"<section id=diff><h2>Changes since {t(diff['against']['label'])}</h2>",
             f"<p>Against snapshot #{diff['against']['id']}: "
             f"{num(len(diff['new_errors']))} new errors, "
             f"{num(len(diff['coverage_drops']))} coverage drops, "
             f"{num(len(diff['lost_sframe']))} packages lost .sframe, "
             f"{num(len(diff['gained_sframe']))} gained it, "
             f"{num(len(diff['changed_packages']))} changed.</p>",
             "<h3>New errors</h3>",
             errs if diff["new_errors"] else "<p class=mute>None.</p>",
             "<h3>Coverage drops</h3>",
             drops if diff["coverage_drops"] else "<p class=mute>None.</p>"]
    for ident, title, items in lists:
        parts.append(f"<h3 id={ident}>{title} ({num(len(items))})</h3>{_names(items, ids)}")
    parts.append("</section>\n")
    return "".join(parts)


def _checked(p: dict[str, Any]) -> int:
    return p["files_accepted"] + p["files_refused"]


def _overhead(p: dict[str, Any]) -> float | None:
    """.sframe bytes over .eh_frame bytes; undefined without .sframe or without .eh_frame."""
    return ratio(p["sframe_bytes"], p["eh_frame_bytes"]) if p["sframe_bytes"] else None


def _refused(p: dict[str, Any]) -> int:
    return sum(v == "refuses" for v in p["profiles"].values())


def _packages(packages: Sequence[dict[str, Any]]) -> str:
    rows = []
    for p in packages:
        f = p["findings"]
        rows.append(
            f'<tr><td><a href="#{t(p["id"])}">{t(p["name"])}</a></td><td>{t(p["version"])}</td>'
            f'<td>{t(p["source"])}</td><td>{t(p["architecture"])}</td><td>{t(p["suite"])}</td>'
            f'{_td_num(p["elf_files"], "")}{_td_num(p["elf_files_with_sframe"], "")}'
            f'{_td_pct(p["coverage"], "")}{_td_size(p["sframe_bytes"], "")}'
            f'{_td_size(p["eh_frame_bytes"], "")}{_td_pct(_overhead(p), "")}'
            f'{_td_num(f["error"], "")}{_td_num(f["warning"], "")}{_td_num(f["info"], "")}'
            f'{_td_num(_refused(p), "")}</tr>')
    heads = [("Package", False), ("Version", False), ("Source", False), ("Arch", False),
             ("Suite", False), ("ELF files", True), ("With .sframe", True), ("Coverage", True),
             (".sframe", True), (".eh_frame", True), (".sframe/.eh_frame", True),
             ("Errors", True), ("Warnings", True), ("Info", True), ("Refused by", True)]
    return ("<section id=packages><h2>Packages</h2>"
            f"<p>{num(len(packages))} packages, most errors first; click a column to sort, "
            "a name for its details. Refused by: how many reader profiles refuse one of its "
            "files.</p>" + _table("packages", heads, rows) + "</section>\n")


def _file_order(f: dict[str, Any]) -> tuple:
    sev = {s: sum(x["count"] for x in f["findings"] if x["severity"] == s) for s in SEVERITIES}
    cov = f["text_bytes_covered"] / f["text_bytes"] if f["sframe"] and f["text_bytes"] else 2.0
    return (-sev["error"], -sev["warning"], -sev["info"], cov, f["path"])


def _files(files: Sequence[dict[str, Any]], max_files: int) -> str:
    shown = sorted(files, key=_file_order)[:max_files]
    rows = []
    for f in shown:
        findings = ", ".join(f'<span class=sev-{t(x["severity"])}>{t(x["rule"])}</span>'
                             f" \u00d7{num(x['count'])}" for x in f["findings"]) or "\u2014"
        cov = ratio(f["text_bytes_covered"], f["text_bytes"]) if f["sframe"] else None
        rows.append(
            f'<tr><td>{t(f["path"])}</td>'
            f'<td>{"v" + t(f["version"]) if f["sframe"] else "no"}</td>'
            f'<td>{t(f["flags"]) if f["flags"] else ""}</td>'
            f'<td>{num(f["fdes"])}</td><td>{num(f["fres"])}</td><td>{pct(cov)}</td>'
            f'<td>{size(f["sframe_bytes"])}</td><td>{size(f["eh_frame_bytes"])}</td>'
            f'<td>{t(f["producer"])}</td><td>{findings}</td></tr>')
    heads = [("Path", False), (".sframe", False), ("Flags", False), ("FDEs", True),
             ("FREs", True), ("Coverage", True), (".sframe", True), (".eh_frame", True),
             ("Producer", False), ("Findings", False)]
    hidden = len(files) - len(shown)
    more = (f"<p class=mute>{num(hidden)} more files, without findings and better covered, "
            "are left out here; <code>sfcheck survey report --json</code> lists them all.</p>"
            if hidden else "")
    return (f"<details><summary>{num(len(files))} ELF files</summary>"
            + _table("files", heads, rows, sortable=False) + more + "</details>")


def _details(packages: Sequence[dict[str, Any]], out: TextIO, max_files: int) -> None:
    out.write(f"<section id=details><h2>Package details</h2>"
              f"<p>Each package's files list at most {num(max_files)} files, those with "
              "findings and the least covered first.</p>\n")
    for p in packages:
        f = p["findings"]
        rules = ", ".join(f"<code>{t(r)}</code> \u00d7{num(n)}"
                          for r, n in sorted(p["rules"].items(), key=lambda kv: -kv[1]))
        refusing = [k for k, v in p["profiles"].items() if v == "refuses"]
        accepting = sum(v == "accepts" for v in p["profiles"].values())
        profs = (f'refused by <span class=refuses>{", ".join(t(k) for k in refusing)}</span>, '
                 if refusing else "") + f"accepted by {num(accepting)} of {len(p['profiles'])}"
        body = (f'<section class=pkg id="{t(p["id"])}"><h3>{t(p["name"])} <small>'
                f'{t(p["version"])} \u00b7 {t(p["architecture"])} \u00b7 {t(p["suite"])} '
                f'\u00b7 source {t(p["source"])}</small></h3>')
        if not p["elf_files"]:
            out.write(body + "<p class=mute>No ELF files.</p></section>\n")
            continue
        out.write(
            body
            + f'<p>{num(p["elf_files"])} ELF files, {num(p["elf_files_with_sframe"])} with '
            f'.sframe; coverage {pct(p["coverage"])}; .sframe {size(p["sframe_bytes"])}, '
            f'.eh_frame {size(p["eh_frame_bytes"])}.</p>'
            + "<p>Findings: " + ", ".join(
                f'{w} <span class={f"sev-{s}" if f[s] else "zero"}>{num(f[s])}</span>'
                for s, w in zip(SEVERITIES, ("errors", "warnings", "info"), strict=True))
            + (f"; {rules}" if rules else "") + "</p>"
            + (f"<p>Readers: {profs}</p>" if profs else "")
            + _files(p["files"], max_files) + "</section>\n")
    out.write("</section>\n")


def render(data: dict[str, Any], out: TextIO, *, max_files: int = 50) -> None:
    """Write the report page for `data` (survey-report.schema.json) to `out`."""
    packages = sorted(data["packages"], key=lambda p: (-p["findings"]["error"],
                                                       -p["findings"]["warning"],
                                                       p["name"], p["architecture"]))
    ids: dict[str, str] = {}
    for p in packages:
        ids.setdefault(_pkg_key(p), p["id"])
    out.write("<!DOCTYPE html>\n<html lang=en><head><meta charset=utf-8>"
              f'<meta http-equiv="Content-Security-Policy" content="{CSP}">'
              '<meta name=referrer content=no-referrer>'
              '<meta name=viewport content="width=device-width,initial-scale=1">'
              '<link rel=icon href="data:,">'
              f"<title>SFrame survey: {t(data['snapshot']['label'])}</title>"
              f"<style>{CSS}</style></head><body>\n")
    for part in (_header(data), _summary(data), _coverage(data), _size(data),
                 _versions(data), _rules(data), _profiles(data), _diff(data, ids),
                 _packages(packages)):
        out.write(part)
    _details(packages, out, max_files)
    out.write(f"<footer class=mute><p>sfcheck {t(data['sfcheck_version'])} \u00b7 "
              f"{t(data['schema'])}</p></footer><script>{JS}</script></body></html>\n")
