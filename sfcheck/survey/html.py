"""The survey report as one self-contained HTML page.

`render(data, out)` writes the page for the dict of survey-report.schema.json: summary
figures, plots drawn here as inline SVG (no charting library), sortable tables (a few lines
of inline JavaScript) linking to a details section per package. The page loads nothing: a
Content-Security-Policy meta tag allows only its own style and script, by hash, so neither
a fetch nor an injected element can reach the network.

Every string from the data (package names, paths, producers, rule ids) is hostile: it is
first made visible by sfcheck.report.escape (controls, bidi overrides and undecodable bytes
become \\xNN/\\uNNNN). In the static HTML it is then HTML-escaped, quotes included, so it can
sit in text and in attributes alike. The packages table and details come from an inert JSON
block (see _json_block) that the script inserts as text nodes only.

Big archives: the script shows the packages table a page at a time and builds one package's
details on demand, so the DOM stays small; a package's details list at most `max_files`
files (those with findings and the least covered first; the JSON report has them all).
"""

from __future__ import annotations

import base64
import hashlib
import html
import json
from collections.abc import Iterable, Sequence
from typing import Any, TextIO

from sfcheck.report.escape import escape

SEVERITIES = ("error", "warning", "info")
# Per-package overhead bins (.sframe bytes / .eh_frame bytes): 0.25 wide, the last open.
OVERHEAD_EDGES = (0.25, 0.5, 0.75, 1.0, 1.25, 1.5, 1.75, 2.0)
LABEL_CHARS = 40  # longer labels are cut in plots (the <title> tooltip keeps the whole)
TOP_BARS = 20  # plots show the largest rows; their tables list all
MAX_NAMES = 1000  # per list of package names in the diff (the JSON report has them all)

CSS = """\
:root{--fg:#1b1f24;--mute:#57606a;--line:#d0d7de;--bg:#fff;--alt:#f6f8fa;--acc:#0a58ca;
--err:#c62828;--warn:#b26a00;--info:#1565c0;--ok:#2e7d32;--bar:#3b6ea5;--bar2:#9db9d9}
*{box-sizing:border-box}
body{font:15px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;color:var(--fg);
background:var(--bg);margin:0 auto;max-width:1400px;padding:1rem 1.5rem 4rem}
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
contain-intrinsic-size:auto 160px}section.pkg.current{background:#fff8c5;outline:2px
solid #d4a72c;padding:.6rem}section.pkg p{margin:.2rem 0}
ul.names{columns:3 16rem;padding-left:1.2rem}#pkg-detail{min-height:85vh}
.legend>span{margin-right:1rem}svg.sw{display:inline-block;margin:0 .3em 0 0;
vertical-align:-.1em}
"""

# The script: (1) one delegated click handler sorts any table.sortable: numeric columns
# compare data-v (else the text) as numbers, empty last either way; text columns use a
# numeric-aware collator; the packages table (#pkg-table) sorts its records and shows one page.
# (2) The packages table and a package's details are built from the JSON block with
# textContent only. (3) A hash link opens the <details> around its target, or builds the
# package's details first.
JS = r"""
"use strict";
(function(){
var coll=new Intl.Collator("en",{numeric:true,sensitivity:"base"});
var PAGE=100;
function num(n){return n.toLocaleString("en-US");}
function size(n){var u=[["GiB",1073741824],["MiB",1048576],["KiB",1024]];
for(var i=0;i<3;i++)if(n>=u[i][1])return (n/u[i][1]).toFixed(1)+" "+u[i][0];return n+" B";}
function pct(r){return r===null?"\u2014":(100*r).toFixed(1)+" %";}
function el(tag,attrs,kids){var e=document.createElement(tag),k;
for(k in attrs)e.setAttribute(k,attrs[k]);
(kids||[]).forEach(function(c){e.appendChild(typeof c==="string"?document.createTextNode(c):c);});
return e;}
function sortBy(list,get,num,asc){
var keyed=list.map(function(r,i){return[get(r),i,r];});
keyed.sort(function(a,b){var x=a[0],y=b[0],c;
if(num){var xn=x===null||isNaN(x),yn=y===null||isNaN(y);
if(xn||yn)return xn===yn?a[1]-b[1]:(xn?1:-1);c=x-y;}else c=coll.compare(x,y);
return c===0?a[1]-b[1]:(asc?c:-c);});
return keyed.map(function(k){return k[2];});}
function cellKey(td,num){var v=td.hasAttribute("data-v")?td.getAttribute("data-v"):td.textContent;
return num?(v===""?null:Number(v)):v;}
// -- packages --
var dataEl=document.getElementById("pkg-data");
var P=dataEl?JSON.parse(dataEl.textContent):[],byId={},shown=P,start=0;
P.forEach(function(r,i){byId[r[0]]=i;});
var FMT={6:num,7:num,8:pct,9:size,10:size,11:pct,12:num,13:num,14:num,15:num};
var table=document.getElementById("pkg-table");
function draw(){if(!table)return;var body=table.tBodies[0],frag=document.createDocumentFragment();
shown.slice(start,start+PAGE).forEach(function(r){var tr=el("tr");
tr.appendChild(el("td",{},[el("a",{href:"#"+r[0]},[r[1]])]));
for(var c=2;c<=15;c++){var f=FMT[c];tr.appendChild(el("td",{},[f?f(r[c]):r[c]]));}
frag.appendChild(tr);});
body.textContent="";body.appendChild(frag);
document.getElementById("pkg-range").textContent=shown.length?
"rows "+num(start+1)+"\u2013"+num(Math.min(start+PAGE,shown.length))+" of "+num(shown.length):
"no package";
document.getElementById("pkg-prev").disabled=start===0;
document.getElementById("pkg-next").disabled=start+PAGE>=shown.length;}
function setSort(th,asc){Array.prototype.forEach.call(th.parentElement.cells,function(h){
if(h.hasAttribute("aria-sort"))h.setAttribute("aria-sort","none");});
th.setAttribute("aria-sort",asc?"ascending":"descending");}
document.addEventListener("click",function(ev){
var b=ev.target.closest("table.sortable thead th button");if(!b)return;
var th=b.parentElement,t=th.closest("table"),col=th.cellIndex,isNum=th.classList.contains("n");
var asc=th.getAttribute("aria-sort")!=="ascending";
if(t===table){shown=sortBy(shown,function(r){return r[col+1];},isNum,asc);start=0;draw();}
else{var body=t.tBodies[0],rows=sortBy(Array.prototype.slice.call(body.rows),
function(r){return cellKey(r.cells[col],isNum);},isNum,asc);
var frag=document.createDocumentFragment();rows.forEach(function(r){frag.appendChild(r);});
body.appendChild(frag);}
setSort(th,asc);});
if(table){
document.getElementById("pkg-prev").addEventListener("click",function(){
start=Math.max(0,start-PAGE);draw();});
document.getElementById("pkg-next").addEventListener("click",function(){
if(start+PAGE<shown.length){start+=PAGE;draw();}});
document.getElementById("pkg-filter").addEventListener("input",function(ev){
var q=ev.target.value.toLowerCase();
shown=q?P.filter(function(r){return r[1].toLowerCase().indexOf(q)>=0||
r[3].toLowerCase().indexOf(q)>=0;}):P;start=0;
Array.prototype.forEach.call(table.tHead.rows[0].cells,function(h){h.setAttribute("aria-sort","none");});
draw();});
draw();}
function sev(s,text){return el("span",{"class":"sev-"+s},[text]);}
function details(r){
var f=[],sec=el("section",{"class":"pkg current",id:r[0]},[el("h3",{},[r[1]+" ",
el("small",{},[r[2]+" \u00b7 "+r[4]+" \u00b7 "+r[5]+" \u00b7 source "+r[3]])])]);
if(!r[6]){sec.appendChild(el("p",{"class":"mute"},["No ELF files."]));return sec;}
sec.appendChild(el("p",{},[num(r[6])+" ELF files, "+num(r[7])+" with .sframe; coverage "+
pct(r[8])+"; .sframe "+size(r[9])+", .eh_frame "+size(r[10])+"."]));
f.push("Findings: ");[["error","errors",12],["warning","warnings",13],["info","info",14]]
.forEach(function(s,i){if(i)f.push(", ");f.push(s[1]+" ");
f.push(r[s[2]]?sev(s[0],num(r[s[2]])):el("span",{"class":"zero"},["0"]));});
r[16].forEach(function(x,i){f.push(i?", ":"; ");f.push(el("code",{},[x[0]]));
f.push(" \u00d7"+num(x[1]));});
sec.appendChild(el("p",{},f));
var refusing=r[17].filter(function(x){return x[1]==="refuses";}).map(function(x){return x[0];});
var accepting=r[17].filter(function(x){return x[1]==="accepts";}).length;
if(r[17].length)sec.appendChild(el("p",{},["Readers: "].concat(refusing.length?
["refused by ",el("span",{"class":"refuses"},[refusing.join(", ")]),", "]:[],
["accepted by "+accepting+" of "+r[17].length])));
var heads=["Path",".sframe","Flags","FDEs","FREs","Coverage",".sframe",".eh_frame","Producer",
"Findings"];
var body=el("tbody");r[18].forEach(function(x){var fs=[];
x[9].forEach(function(y,i){if(i)fs.push(", ");fs.push(sev(y[1],y[0]));
fs.push(" \u00d7"+num(y[2]));});
body.appendChild(el("tr",{},[x[0],x[1]===null?"no":"v"+x[1],x[2],num(x[3]),num(x[4]),pct(x[5]),
size(x[6]),size(x[7]),x[8]].map(function(v){return el("td",{},[v]);})
.concat([el("td",{},fs.length?fs:["\u2014"])])));});
var tbl=el("table",{"class":"files"},[el("thead",{},[el("tr",{},heads.map(function(h){
return el("th",{},[h]);}))]),body]);
var kids=[el("summary",{},[num(r[6])+" ELF files"]),el("div",{"class":"scroll"},[tbl])];
if(r[19])kids.push(el("p",{"class":"mute"},[num(r[19])+" more files, without findings and "+
"better covered, are left out here; sfcheck survey report --json lists them all."]));
sec.appendChild(el("details",{open:""},kids));
sec.appendChild(el("p",{},[el("a",{href:"#packages"},["\u2191 Packages table"])]));return sec;}
function reveal(){var id=decodeURIComponent(location.hash.slice(1));if(!id)return;
var box=document.getElementById("pkg-detail"),el2=document.getElementById(id);
if(box&&byId.hasOwnProperty(id)&&!(el2&&box.contains(el2))){
box.textContent="";box.appendChild(details(P[byId[id]]));el2=document.getElementById(id);}
if(!el2)return;
for(var d=el2;d;d=d.parentElement)if(d.tagName==="DETAILS")d.open=true;el2.scrollIntoView();}
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


def pct(r: float | None) -> str:
    return "\u2014" if r is None else f"{100 * r:.1f} %"


def ratio(a: int, b: int) -> float | None:
    return a / b if b else None


# -- static table cells: numeric ones carry the raw value in data-v when the text is not it
# (the sort reads it). The script's tables (packages, files) align their numeric columns by
# position in the CSS instead.

def _td_num(n: int) -> str:
    return f"<td class=n>{n}</td>" if n < 1000 else f"<td class=n data-v={n}>{num(n)}</td>"


def _td_size(n: int) -> str:
    return f"<td class=n data-v={n}>{size(n)}</td>"


def _td_pct(r: float | None) -> str:
    return f'<td class=n data-v="{"" if r is None else f"{r:.6g}"}">{pct(r)}</td>'


def _table(cls: str, heads: Sequence[tuple[str, bool]], rows: Iterable[str],
           sortable: bool = True, table_id: str = "") -> str:
    """A table, sortable by its header buttons; heads are (label, numeric); rows are ready
    <tr>… strings."""
    if sortable:
        th = "".join(f'<th{" class=n" if n else ""} aria-sort=none scope=col>'
                     f"<button type=button>{label}</button></th>" for label, n in heads)
    else:
        th = "".join(f'<th{" class=n" if n else ""}>{label}</th>' for label, n in heads)
    ident = f" id={table_id}" if table_id else ""
    kind = "sortable " if sortable else ""
    return (f'<div class=scroll><table{ident} class="{kind}{cls}"><thead>'
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
        *((f'<span class={f"sev-{s}" if f[s] else "zero"}>{num(f[s])}</span>', what)
          for s, what in zip(SEVERITIES, ("errors", "warnings", "info findings"), strict=True)),
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
    def order(r: dict[str, Any]) -> tuple:
        sev = r["severity"]
        return (SEVERITIES.index(sev) if sev in SEVERITIES else 3, -r["findings"], r["rule"])

    rules = sorted(data["rules"], key=order)
    plot = hbars("plot-rules", "Findings by rule",
                 [(r["rule"], [(r["findings"], r["severity"], "findings")])
                  for r in sorted(rules, key=lambda r: -r["findings"])[:TOP_BARS]],
                 legend=[(s, s) for s in SEVERITIES])
    table = _table("rules", [("Rule", False), ("Severity", False), ("Findings", True),
                             ("Files", True), ("Packages", True)],
                   (f"<tr><td><code>{t(r['rule'])}</code></td>"
                    f"<td class=\"sev-{t(r['severity'])}\">{t(r['severity'])}</td>"
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
    more = (f"<p class=mute>and {num(len(items) - MAX_NAMES)} more: <code>sfcheck survey "
            "report --json</code> lists them all.</p>" if len(items) > MAX_NAMES else "")
    return ("<ul class=names>" + "".join(f"<li>{_link(n, ids)}</li>" for n in items[:MAX_NAMES])
            + "</ul>" + more)


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
             f"new errors {num(len(diff['new_errors']))}, "
             f"coverage drops {num(len(diff['coverage_drops']))}, "
             f"packages that lost .sframe {num(len(diff['lost_sframe']))}, "
             f"that gained it {num(len(diff['gained_sframe']))}; "
             f"changed packages {num(len(diff['changed_packages']))}.</p>",
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


# The packages table and the per-package details are drawn by the page's script from one
# inert JSON block: as static HTML, 50,000 packages made a 70 MB page that Chromium took over
# two minutes to lay out, and a table of 5,000 rows took seconds to re-sort. The script shows
# one page of rows and builds a package's details when a link (#id) targets it.
PKG_HEADS = [("Package", False), ("Version", False), ("Source", False), ("Arch", False),
             ("Suite", False), ("ELF files", True), ("With .sframe", True), ("Coverage", True),
             (".sframe", True), (".eh_frame", True), (".sframe/.eh_frame", True),
             ("Errors", True), ("Warnings", True), ("Info", True), ("Refused by", True)]


def _packages(count: int) -> str:
    return ("<section id=packages><h2>Packages</h2>"
            f"<p>{num(count)} packages, most errors first; click a column to sort, a name for "
            "its details. Refused by: how many reader profiles refuse one of its files.</p>"
            "<noscript><p>The packages table and details are drawn by the page's script; "
            "<code>sfcheck survey report --json</code> gives the same data.</p></noscript>"
            "<p class=pager><label>Filter <input id=pkg-filter type=search "
            'placeholder="name or source"></label> <button type=button id=pkg-prev>'
            "\u25c0 Previous</button> <span id=pkg-range aria-live=polite></span> "
            "<button type=button id=pkg-next>Next \u25b6</button></p>"
            + _table("packages", PKG_HEADS, [], table_id="pkg-table")
            + "</section>\n<section id=details><h2>Package details</h2>"
            "<p class=mute>Click a package name to show its files and findings here.</p>"
            "<div id=pkg-detail></div></section>\n")


def _file_order(f: dict[str, Any]) -> tuple:
    """Files with errors first, then warnings, info, the least covered; without .sframe last."""
    sev = dict.fromkeys(SEVERITIES, 0)
    for x in f["findings"]:
        sev[x["severity"]] = sev.get(x["severity"], 0) + x["count"]
    cov = f["text_bytes_covered"] / f["text_bytes"] if f["sframe"] and f["text_bytes"] else 2.0
    return (-sev["error"], -sev["warning"], -sev["info"], cov, f["path"])


def _r(x: float | None) -> float | None:
    return None if x is None else round(x, 6)


def package_record(p: dict[str, Any], max_files: int) -> list[Any]:
    """One package as the script reads it (positions in JS's column table). Strings are
    made visible by escape() here; the script inserts them as text, never as markup."""
    e = escape
    f = p["findings"]
    shown = sorted(p["files"], key=_file_order)[:max_files]
    files = [[e(x["path"]), x["version"] if x["sframe"] else None, e(x["flags"] or ""),
              x["fdes"], x["fres"],
              _r(ratio(x["text_bytes_covered"], x["text_bytes"])) if x["sframe"] else None,
              x["sframe_bytes"], x["eh_frame_bytes"], e(x["producer"]),
              [[e(y["rule"]), e(y["severity"]), y["count"]] for y in x["findings"]]]
             for x in shown]
    return [e(p["id"]), e(p["name"]), e(p["version"]), e(p["source"]), e(p["architecture"]),
            e(p["suite"]), p["elf_files"], p["elf_files_with_sframe"], _r(p["coverage"]),
            p["sframe_bytes"], p["eh_frame_bytes"], _r(_overhead(p)), f["error"], f["warning"],
            f["info"], _refused(p),
            [[e(k), n] for k, n in sorted(p["rules"].items(), key=lambda kv: (-kv[1], kv[0]))],
            [[e(k), e(v)] for k, v in p["profiles"].items()], files,
            len(p["files"]) - len(shown)]


def _json_block(ident: str, value: object, out: TextIO) -> None:
    """Data for the script, inert (type application/json is never executed, so the CSP does
    not apply) and unable to end its element: <, > and & are written as \\u escapes."""
    text = json.dumps(value, ensure_ascii=True, separators=(",", ":"), allow_nan=False)
    text = text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")
    out.write(f'<script type="application/json" id="{ident}">{text}</script>\n')


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
                 _packages(len(packages))):
        out.write(part)
    _json_block("pkg-data", [package_record(p, max_files) for p in packages], out)
    out.write(f"<footer class=mute><p>sfcheck {t(data['sfcheck_version'])} \u00b7 "
              f"{t(data['schema'])}</p></footer><script>{JS}</script></body></html>\n")
