"""The survey report as one self-contained HTML page.

`render(data, out)` writes the page for the dict of survey-report.schema.json: summary
figures, plots (svg.py: inline SVG, no charting library), sortable tables (a few lines of
inline JavaScript, page_assets.py) linking to a details section per package. The page loads
nothing: a Content-Security-Policy meta tag allows only its own style and script, by hash,
so neither a fetch nor an injected element can reach the network.

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

import json
from collections.abc import Iterable, Sequence
from typing import Any, TextIO

from sfcheck.report.escape import escape

from .display import num, pct, ratio, size, t
from .page_assets import CSP, CSS, JS
from .svg import hbars, vbars

SEVERITIES = ("error", "warning", "info")
# Per-package overhead bins (.sframe bytes / .eh_frame bytes): 0.25 wide, the last open.
OVERHEAD_EDGES = (0.25, 0.5, 0.75, 1.0, 1.25, 1.5, 1.75, 2.0)
TOP_BARS = 20  # plots show the largest rows; their tables list all
MAX_NAMES = 1000  # per list of package names in the diff (the JSON report has them all)


# -- static table cells: numeric ones carry the raw value in data-v when the text is not it
# (the sort reads it). The script's tables (packages, files) align their numeric columns by
# position in the CSS instead.

def _td_num(n: int) -> str:
    return f"<td class=n>{n}</td>" if n < 1000 else f"<td class=n data-v={n}>{num(n)}</td>"


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
