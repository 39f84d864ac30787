"""The survey report page (sfcheck/survey/html.py), its data schema and the sample data.

Three layers: the schema against the sample (and against broken data); the page's markup
parsed in Python (hostile strings escaped, every link resolves, the CSP hashes match the
inline style and script); and the page in a real headless Chromium driven by selenium
(no console error, no network request, plots drawn, tables sort, links reach the details),
with screenshots saved as test artefacts."""

from __future__ import annotations

import base64
import copy
import hashlib
import io
import json
import os
import re
import shutil
import time
from html.parser import HTMLParser
from importlib import resources
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from sfcheck.survey import html as page
from sfcheck.survey.html import render

from helpers import ROOT
from survey_sample import sample_report_data

# From the package, not the checkout: CI's run on the installed wheel checks it ships.
SCHEMA_PATH = resources.files("sfcheck.survey") / "survey-report.schema.json"
# Each breaks out of a context it might land in: element, attribute, script, a line (bidi
# override, newline), or carries an undecodable byte (surrogateescape).
HOSTILE = ['<script>window.__pwned=1</script>', '"><img src=x onerror="window.__pwned=2">',
           "'><svg onload=window.__pwned=3>", "evil\u202egnp.so", "a\nb&amp;</td>",
           "</script><script>window.__pwned=4</script>", "bad\udcffbyte"]


def schema() -> dict[str, Any]:
    return json.loads(SCHEMA_PATH.read_text())


def html_of(data: dict[str, Any], **kw: Any) -> str:
    buf = io.StringIO()
    render(data, buf, **kw)
    return buf.getvalue()


def hostile_data() -> dict[str, Any]:
    """The sample with a hostile string in every string field the page shows."""
    data = sample_report_data(n_packages=12, seed=3)
    h = iter(HOSTILE * 40)
    data["snapshot"]["label"] = next(h)
    data["snapshot"]["repositories"] = [next(h)]
    data["previous"]["label"] = next(h)
    data["sfcheck_version"] = next(h)
    for p in data["packages"]:
        for key in ("name", "version", "source", "suite"):
            p[key] = next(h)
        for f in p["files"]:
            f["path"] = next(h)
            f["producer"] = next(h)
            for x in f["findings"]:
                x["rule"] = next(h)
        p["rules"] = {next(h): n for n in p["rules"].values()}
        p["profiles"] = {next(h): v for v in p["profiles"].values()}
    for table, key in (("producers", "producer"), ("rules", "rule"), ("profiles", "profile"),
                       ("versions", "flags")):
        for row in data[table]:
            row[key] = next(h)
    data["diff"]["removed_packages"] = [next(h)]
    data["diff"]["new_errors"][0]["rule"] = next(h)
    return data


# -- schema and sample -----------------------------------------------------------------------

def test_schema_is_a_valid_2020_12_schema() -> None:
    jsonschema.Draft202012Validator.check_schema(schema())


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("with_diff", [True, False])
def test_sample_is_valid(seed: int, with_diff: bool) -> None:
    data = sample_report_data(n_packages=40, seed=seed, with_diff=with_diff)
    jsonschema.validate(data, schema(), cls=jsonschema.Draft202012Validator,
                        format_checker=jsonschema.Draft202012Validator.FORMAT_CHECKER)


def test_sample_is_realistic() -> None:
    data = sample_report_data()
    pkgs = data["packages"]
    assert any(not p["elf_files"] for p in pkgs), "a package without ELF files"
    assert any(p["elf_files"] and not p["elf_files_with_sframe"] for p in pkgs)
    assert {v["version"] for v in data["versions"]} == {2, 3}
    assert len(data["rules"]) >= 3 and len(data["producers"]) >= 2
    diff = data["diff"]
    assert diff["new_errors"] and diff["coverage_drops"] and diff["lost_sframe"]
    assert set(diff["changed_packages"]) >= {e["package"] for e in diff["new_errors"]}
    t = data["totals"]
    assert t["packages"] == len(pkgs)
    assert t["elf_files_with_sframe"] == sum(b["files"] for b in data["coverage_histogram"])
    assert len({p["id"] for p in pkgs}) == len(pkgs)
    assert sample_report_data(seed=5) == sample_report_data(seed=5)


@pytest.mark.parametrize("breakage", [
    lambda d: d.pop("diff"),
    lambda d: d["totals"].update(packages=-1),
    lambda d: d["packages"][0].update(coverage=1.5),
    lambda d: d["packages"][0].update(id="pkg x\"><"),
    lambda d: d["packages"][0]["profiles"].update(kernel="maybe"),
    lambda d: d["coverage_histogram"].pop(),
    lambda d: d["rules"][0].update(severity="fatal"),
    lambda d: d["packages"][0].update(extra=1),
    lambda d: d.update(schema="sfcheck-survey-report/2"),
])
def test_schema_rejects_broken_data(breakage: Any) -> None:
    data = sample_report_data(n_packages=10, seed=1)
    breakage(data)
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(data, schema(), cls=jsonschema.Draft202012Validator)


def test_schema_is_package_data() -> None:
    """The wheel carries the schema (the installed-wheel run reads it through SCHEMA_PATH;
    an editable install reads the checkout, hence this look at setup.py)."""
    if not (ROOT / "setup.py").exists():
        pytest.skip("setup.py is not beside the tests (Debian's build copies only the tests)")
    setup = (ROOT / "setup.py").read_text()
    assert re.search(r'"sfcheck\.survey": \["\*\.schema\.json"\]', setup)


# -- markup ----------------------------------------------------------------------------------

class Tags(HTMLParser):
    """Every start tag with its attributes, ids, hrefs and the raw text of <script>s."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.tags: list[tuple[str, dict[str, str | None]]] = []
        self.scripts: list[tuple[dict[str, str | None], str]] = []
        self.styles: list[str] = []
        self._in: str | None = None

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append((tag, dict(attrs)))
        if tag in ("script", "style"):
            self._in = tag
            if tag == "script":
                self.scripts.append((dict(attrs), ""))
            else:
                self.styles.append("")

    def handle_endtag(self, tag: str) -> None:
        self._in = None

    def handle_data(self, data: str) -> None:
        if self._in == "script":
            a, text = self.scripts[-1]
            self.scripts[-1] = (a, text + data)
        elif self._in == "style":
            self.styles[-1] += data


def parse(text: str) -> Tags:
    p = Tags()
    p.feed(text)
    p.close()
    return p


ALLOWED_ATTRS = {"id", "class", "href", "lang", "charset", "http-equiv", "content", "name",
                 "rel", "title", "type", "role", "aria-label", "aria-sort", "aria-hidden",
                 "aria-live", "scope", "width", "height", "viewbox", "xmlns", "x", "y", "x1",
                 "y1", "x2", "y2", "text-anchor", "data-v", "placeholder"}


def test_hostile_strings_are_escaped() -> None:
    data = hostile_data()
    jsonschema.validate(data, schema(), cls=jsonschema.Draft202012Validator)
    text = html_of(data)
    tags = parse(text)
    names = {t for t, _ in tags.tags}
    assert "img" not in names
    assert [t for t, _ in tags.tags if t == "script"] == ["script", "script"]
    for _, attrs in tags.tags:
        assert set(attrs) <= ALLOWED_ATTRS, attrs  # no onerror=, onload=, src=
    # The hostile text is there, but only escaped: as HTML entities in the markup, as \u
    # escapes in the JSON block; the bidi override, newline and byte made visible (\uNNNN).
    assert "&lt;script&gt;window.__pwned=1&lt;/script&gt;" in text
    assert "&quot;&gt;&lt;img src=x onerror=&quot;" in text
    assert "\\u003cscript\\u003ewindow.__pwned=1" in text
    assert "\u202e" not in text and "\udcff" not in text and "a\nb" not in text
    assert "evil\\u202egnp.so" in text and "bad\\xffbyte" in text
    assert text.count("<script") == 2 and text.count("</script>") == 2
    # The JSON block reads back to the visible strings.
    (block,) = [s for a, s in tags.scripts if a.get("type") == "application/json"]
    shown = {r[1] for r in json.loads(block)}
    assert "<script>window.__pwned=1</script>" in shown and "evil\\u202egnp.so" in shown


def test_hostile_enum_values_stay_inside_their_attribute() -> None:
    """Severity and profile verdicts are enums in the schema; the page does not rely on it."""
    data = sample_report_data(n_packages=8, seed=2)
    evil = 'x" onmouseover="window.__pwned=5'
    data["rules"][0]["severity"] = evil
    data["packages"][0]["profiles"] = {"kernel": evil}
    tags = parse(html_of(data))
    for _, attrs in tags.tags:
        assert set(attrs) <= ALLOWED_ATTRS, attrs


def test_csp_hashes_match_inline_style_and_script() -> None:
    text = html_of(sample_report_data(n_packages=5))
    tags = parse(text)
    (csp,) = [a["content"] for t, a in tags.tags if a.get("http-equiv") ==
              "Content-Security-Policy"]
    assert "default-src 'none'" in csp and "unsafe-inline" not in csp

    def digest(s: str) -> str:
        return "'sha256-" + base64.b64encode(hashlib.sha256(s.encode()).digest()).decode() + "'"

    code = [s for a, s in tags.scripts if "type" not in a]
    assert len(code) == 1 and f"script-src {digest(code[0])}" in csp
    assert len(tags.styles) == 1 and f"style-src {digest(tags.styles[0])}" in csp


def test_links_resolve() -> None:
    data = sample_report_data(n_packages=30, seed=2)
    text = html_of(data)
    tags = parse(text)
    ids = {a["id"] for _, a in tags.tags if "id" in a}
    ids |= {p["id"] for p in data["packages"]}  # the script builds these on demand
    hrefs = [a["href"] for t, a in tags.tags if t == "a"]
    assert hrefs and all(h.startswith("#") for h in hrefs)
    assert {h[1:] for h in hrefs} <= ids
    by_key = {f"{p['name']}/{p['architecture']}": p["id"] for p in data["packages"]}
    for e in data["diff"]["new_errors"]:
        assert f'href="#{by_key[e["package"]]}"' in text


def test_json_block_holds_every_package_in_order() -> None:
    data = sample_report_data(n_packages=30, seed=4)
    tags = parse(html_of(data))
    (block,) = [s for a, s in tags.scripts if a.get("type") == "application/json"]
    records = json.loads(block)
    assert sorted(r[0] for r in records) == sorted(p["id"] for p in data["packages"])
    errors = [r[12] for r in records]
    assert errors == sorted(errors, reverse=True)  # most errors first
    p = next(p for p in data["packages"] if p["files"])
    r = next(r for r in records if r[0] == p["id"])
    assert r[1:6] == [p["name"], p["version"], p["source"], p["architecture"], p["suite"]]
    assert r[9:11] == [p["sframe_bytes"], p["eh_frame_bytes"]]
    assert len(r[18]) == len(p["files"]) and r[19] == 0


def test_file_list_is_capped_worst_first() -> None:
    data = sample_report_data(n_packages=3, seed=1)
    p = data["packages"][0]
    base = sample_report_data(n_packages=1, seed=9)["packages"]
    proto = next(f for q in base for f in q["files"]) if any(q["files"] for q in base) else None
    proto = proto or {"path": "x", "sframe": True, "version": 3, "flags": "FDE_SORTED",
                      "fdes": 1, "fres": 1, "text_bytes": 100, "text_bytes_covered": 100,
                      "sframe_bytes": 40, "eh_frame_bytes": 60, "producer": "unknown",
                      "findings": []}
    files = []
    for k in range(120):
        f = copy.deepcopy(proto)
        f.update(path=f"usr/lib/f{k:03}.so", sframe=True, version=3, text_bytes=100,
                 text_bytes_covered=100, findings=[])
        files.append(f)
    files[117]["findings"] = [{"rule": "fde-unsorted", "severity": "error", "count": 2}]
    files[118]["text_bytes_covered"] = 10
    p["files"] = files
    tags = parse(html_of(data, max_files=50))
    (block,) = [s for a, s in tags.scripts if a.get("type") == "application/json"]
    r = next(r for r in json.loads(block) if r[0] == p["id"])
    assert len(r[18]) == 50 and r[19] == 70
    assert r[18][0][0] == "usr/lib/f117.so"  # the error first
    assert r[18][1][0] == "usr/lib/f118.so"  # then the least covered


def test_plots_count_their_bars() -> None:
    data = sample_report_data(n_packages=30, seed=0)
    text = html_of(data)
    svg = {m.group(1): m.group(0) for m in
           re.finditer(r'<svg id="([a-z-]+)".*?</svg>', text, re.S)}
    assert svg["plot-coverage"].count("<rect class=bar") == 10
    assert svg["plot-rules"].count("<rect class=\"mark") == len(data["rules"])
    assert svg["plot-versions"].count("<rect class=\"mark") == len(data["versions"])
    # The tallest coverage bar is the bin with most files.
    heights = [float(h) for h in re.findall(r'<rect class=bar [^>]*height="([0-9.]+)"',
                                            svg["plot-coverage"])]
    files = [b["files"] for b in data["coverage_histogram"]]
    assert heights.index(max(heights)) == files.index(max(files))
    assert all((h == 0) == (n == 0) for h, n in zip(heights, files, strict=True))


def test_overhead_histogram_bins_packages() -> None:
    data = sample_report_data(n_packages=300, seed=6)
    text = html_of(data)
    plot = re.search(r'<svg id="plot-size-packages".*?</svg>', text, re.S).group(0)
    got = [int(n) for n in re.findall(r"<title>[^<]*: ([0-9,]+)</title></rect>", plot)]
    want = [0] * (len(page.OVERHEAD_EDGES) + 1)
    for p in data["packages"]:
        if p["sframe_bytes"] and p["eh_frame_bytes"]:
            r = p["sframe_bytes"] / p["eh_frame_bytes"]
            want[sum(r >= e for e in page.OVERHEAD_EDGES)] += 1
    assert got == want and sum(want) > 100 and min(want[1:-1]) > 0


def test_long_diff_lists_are_cut() -> None:
    data = sample_report_data(n_packages=5, seed=1)
    data["diff"]["removed_packages"] = [f"gone{k}/amd64" for k in range(page.MAX_NAMES + 7)]
    text = html_of(data)
    assert f"gone{page.MAX_NAMES - 1}/amd64" in text and f"gone{page.MAX_NAMES}/" not in text
    assert "and 7 more" in text


def test_empty_survey_renders() -> None:
    data = sample_report_data(n_packages=0, seed=0, with_diff=False)
    jsonschema.validate(data, schema(), cls=jsonschema.Draft202012Validator)
    text = html_of(data)
    assert "No previous snapshot to compare with" in text
    assert "<p>No findings.</p>" in text


def test_big_archive_size_per_package() -> None:
    """2,000 packages: the page grows by under 1 KB a package (50,000 -> under 50 MB)."""
    data = sample_report_data(n_packages=2000, seed=7, with_diff=True)
    start = time.perf_counter()
    text = html_of(data)
    elapsed = time.perf_counter() - start
    per_pkg = len(text.encode()) / 2000
    print(f"2,000 packages: {len(text) / 1e6:.1f} MB, {per_pkg:.0f} B/package, "
          f"rendered in {elapsed:.2f} s")
    assert per_pkg < 1000


# -- a real browser --------------------------------------------------------------------------

def _chromium() -> tuple[str, str]:
    browser = shutil.which("chromium") or shutil.which("chromium-browser")
    driver = shutil.which("chromedriver")
    if not (browser and driver):
        pytest.skip("Debian's chromium and chromium-driver are not installed "
                    "(apt-get install -y chromium chromium-driver)")
    return browser, driver


@pytest.fixture(scope="module")
def browser() -> Any:
    webdriver = pytest.importorskip("selenium.webdriver",
                                    reason="selenium (the test extra) is not installed")
    from selenium.webdriver.chrome.service import Service

    binary, driver_path = _chromium()
    os.environ.setdefault("SE_AVOID_STATS", "true")  # selenium-manager sends no statistics
    opts = webdriver.ChromeOptions()
    opts.binary_location = binary
    for arg in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                "--window-size=1280,1600", "--no-first-run", "--disable-extensions",
                "--disable-background-networking", "--disable-component-update"):
        opts.add_argument(arg)
    opts.set_capability("goog:loggingPrefs", {"browser": "ALL", "performance": "ALL"})
    drv = webdriver.Chrome(options=opts, service=Service(driver_path))
    drv.set_page_load_timeout(120)
    yield drv
    drv.quit()


@pytest.fixture(scope="module")
def artefacts(tmp_path_factory: pytest.TempPathFactory) -> Path:
    where = os.environ.get("SFCHECK_TEST_ARTEFACTS")
    path = Path(where) if where else tmp_path_factory.mktemp("artefacts")
    path.mkdir(parents=True, exist_ok=True)
    return path


@pytest.fixture
def screenshot(browser: Any, artefacts: Path, request: pytest.FixtureRequest) -> Any:
    """shoot(name): the browser's viewport as a PNG in the artefacts directory, its path
    written to the terminal (past pytest's capture)."""
    def shoot(name: str) -> Path:
        path = artefacts / name
        browser.save_screenshot(str(path))
        assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
        capture = request.config.pluginmanager.get_plugin("capturemanager")
        if capture is not None:
            with capture.global_and_fixture_disabled():
                print(f"\nscreenshot: {path}")
        return path

    return shoot


@pytest.fixture(scope="module")
def hostile_page(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, Any]]:
    data = hostile_data()
    # Names the sorting test reads: numeric order differs from text order (9 < 10).
    path = tmp_path_factory.mktemp("page") / "survey.html"
    path.write_text(html_of(data), encoding="utf-8")
    return path, data


@pytest.fixture(scope="module")
def sample_page(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, Any]]:
    data = sample_report_data(n_packages=250, seed=0)
    path = tmp_path_factory.mktemp("page") / "survey.html"
    path.write_text(html_of(data), encoding="utf-8")
    return path, data


def load(drv: Any, path: Path) -> list[dict[str, Any]]:
    """Open the page afresh; the performance log of that load (its network events)."""
    drv.get("about:blank")
    drv.get_log("browser")
    drv.get_log("performance")
    drv.get(path.as_uri())
    drv.execute_script("return document.readyState")
    return [json.loads(e["message"])["message"] for e in drv.get_log("performance")]


def test_page_loads_clean_without_network(browser: Any, hostile_page: Any,
                                          screenshot: Any) -> None:
    path, _ = hostile_page
    events = load(browser, path)
    severe = [e for e in browser.get_log("browser") if e["level"] == "SEVERE"]
    assert severe == []
    urls = [e["params"]["request"]["url"] for e in events
            if e["method"] == "Network.requestWillBeSent"]
    assert urls == [path.as_uri()]
    # Nothing from the data ran or made an element.
    assert browser.execute_script("return window.__pwned === undefined")
    assert browser.execute_script("return document.scripts.length") == 2
    assert browser.execute_script("return document.images.length") == 0
    names = browser.execute_script(
        "return Array.from(document.querySelectorAll('#pkg-table tbody a'))"
        ".map(a => a.textContent)")
    assert "<script>window.__pwned=1</script>" in names
    assert any("evil\\u202egnp.so" in n for n in names)
    browser.execute_script("document.getElementById('packages').scrollIntoView()")
    screenshot("survey-report-hostile.png")


def test_csp_refuses_a_fetch(browser: Any, sample_page: Any) -> None:
    path, _ = sample_page
    load(browser, path)
    directive = browser.execute_async_script("""
        const done = arguments[arguments.length - 1];
        document.addEventListener('securitypolicyviolation',
                                  e => done(e.effectiveDirective), {once: true});
        fetch('http://127.0.0.1:9/x').catch(() => {});
        setTimeout(() => done('no violation'), 5000);""")
    assert directive == "connect-src"


def test_plots_render(browser: Any, sample_page: Any) -> None:
    path, data = sample_page
    load(browser, path)
    plots = browser.execute_script("""
        return Array.from(document.querySelectorAll('svg.plot')).map(s => {
          const r = s.getBoundingClientRect();
          return [s.id, r.width, r.height, s.querySelectorAll('rect.bar, rect.mark').length];
        });""")
    by_id = {p[0]: p[1:] for p in plots}
    assert set(by_id) == {"plot-coverage", "plot-size-total", "plot-size-packages",
                          "plot-versions", "plot-producers", "plot-rules", "plot-profiles"}
    for ident, (w, h, _) in by_id.items():
        assert w > 100 and h > 30, ident
    assert by_id["plot-coverage"][2] == 10
    assert by_id["plot-size-packages"][2] == len(page.OVERHEAD_EDGES) + 1
    assert by_id["plot-rules"][2] == len(data["rules"])
    nonzero = sum(bool(p["files_accepted"]) + bool(p["files_refused"])
                  for p in data["profiles"])
    assert by_id["plot-profiles"][2] == nonzero
    # Drawn bars have height on screen: the coverage plot's tallest is the fullest bin.
    heights = browser.execute_script(
        "return Array.from(document.querySelectorAll('#plot-coverage rect.bar'))"
        ".map(r => r.getBoundingClientRect().height)")
    files = [b["files"] for b in data["coverage_histogram"]]
    assert heights.index(max(heights)) == files.index(max(files)) and max(heights) > 50


def _column(drv: Any, table: str, col: int) -> list[str]:
    return drv.execute_script(
        f"return Array.from(document.querySelectorAll('{table} tbody tr'))"
        f".map(r => r.cells[{col}].getAttribute('data-v') ?? r.cells[{col}].textContent)")


def _click_head(drv: Any, table: str, label: str) -> str:
    from selenium.webdriver.common.by import By

    th = drv.find_element(By.XPATH, f"//table[@id='{table}' or contains(@class,'{table}')]"
                                    f"/thead//th[button[normalize-space()='{label}']]")
    th.find_element(By.TAG_NAME, "button").click()
    return th.get_attribute("aria-sort")


def test_packages_table_sorts_numerically_both_ways(browser: Any, sample_page: Any,
                                                    screenshot: Any) -> None:
    path, data = sample_page
    load(browser, path)
    assert len(_column(browser, "#pkg-table", 0)) == 100  # one page of 250
    assert _click_head(browser, "pkg-table", "Warnings") == "ascending"
    shown = [int(v.replace(",", "")) for v in _column(browser, "#pkg-table", 12)]
    every = sorted(p["findings"]["warning"] for p in data["packages"])
    assert shown == every[:100]  # numeric order over all packages, not text order
    assert _click_head(browser, "pkg-table", "Warnings") == "descending"
    shown = [int(v.replace(",", "")) for v in _column(browser, "#pkg-table", 12)]
    assert shown == sorted(every, reverse=True)[:100]
    # Mixed digit counts on the page: text order would differ (it puts 9 before 100).
    assert any(len(str(a)) > len(str(b)) for a, b in zip(shown, shown[1:], strict=False))
    # Coverage: null ("\u2014") last in both directions: page 1 has none, page 3 only them.
    nulls = sum(p["coverage"] is None for p in data["packages"])
    assert 50 <= nulls <= 150
    for direction in ("ascending", "descending"):
        assert _click_head(browser, "pkg-table", "Coverage") == direction
        cov = _column(browser, "#pkg-table", 7)
        values = [float(c.rstrip(" %")) for c in cov]
        assert values == sorted(values, reverse=direction == "descending")
        browser.find_element("id", "pkg-next").click()
        browser.find_element("id", "pkg-next").click()
        assert set(_column(browser, "#pkg-table", 7)) == {"\u2014"}
    # Text: numeric-aware (libz9 before libz10).
    assert _click_head(browser, "pkg-table", "Package") == "ascending"
    names = _column(browser, "#pkg-table", 0)
    assert names.index("libcurl2") < names.index("libcurl10")
    browser.find_element("id", "pkg-next").click()
    assert browser.find_element("id", "pkg-range").text == "rows 101\u2013200 of 250"
    browser.execute_script("document.getElementById('packages').scrollIntoView()")
    screenshot("survey-report-packages.png")


def test_packages_table_rows_show_the_data(browser: Any, sample_page: Any) -> None:
    path, data = sample_page
    load(browser, path)
    cells = browser.execute_script(
        "return Array.from(document.querySelectorAll('#pkg-table tbody tr'))"
        ".map(r => Array.from(r.cells).map(c => c.textContent))")
    by_name = {(p["name"], p["version"]): p for p in data["packages"]}
    assert len(cells) == 100
    for row in cells[:20]:
        p = by_name[(row[0], row[1])]
        f = p["findings"]
        over = p["sframe_bytes"] / p["eh_frame_bytes"] if p["sframe_bytes"] else None
        assert row == [p["name"], p["version"], p["source"], p["architecture"], p["suite"],
                       page.num(p["elf_files"]), page.num(p["elf_files_with_sframe"]),
                       page.pct(p["coverage"]), page.size(p["sframe_bytes"]),
                       page.size(p["eh_frame_bytes"]), page.pct(over), page.num(f["error"]),
                       page.num(f["warning"]), page.num(f["info"]),
                       str(sum(v == "refuses" for v in p["profiles"].values()))]


def test_static_table_sorts(browser: Any, sample_page: Any) -> None:
    path, data = sample_page
    load(browser, path)
    assert _click_head(browser, "rules", "Findings") == "ascending"
    got = [int(v) for v in _column(browser, "table.rules", 2)]
    assert got == sorted(r["findings"] for r in data["rules"])
    assert _click_head(browser, "rules", "Findings") == "descending"
    got = [int(v) for v in _column(browser, "table.rules", 2)]
    assert got == sorted((r["findings"] for r in data["rules"]), reverse=True)
    others = browser.execute_script(
        "return Array.from(document.querySelectorAll('table.rules th'))"
        ".map(t => t.getAttribute('aria-sort'))")
    assert others.count("descending") == 1 and others.count("none") == len(others) - 1


def _wait_for(drv: Any, ident: str) -> Any:
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import WebDriverWait

    return WebDriverWait(drv, 10).until(lambda d: d.find_element(By.ID, ident))


def test_package_link_shows_its_details(browser: Any, sample_page: Any,
                                        screenshot: Any) -> None:
    from selenium.webdriver.common.by import By

    path, data = sample_page
    load(browser, path)
    screenshot("survey-report-top.png")
    link = browser.find_element(By.CSS_SELECTOR, "#pkg-table tbody tr:first-child a")
    ident = link.get_attribute("href").split("#", 1)[1]
    name = link.text
    link.click()
    p = next(p for p in data["packages"] if p["id"] == ident)
    assert browser.execute_script("return location.hash") == f"#{ident}"
    sec = _wait_for(browser, ident)  # the hashchange handler builds it
    assert sec.find_element(By.TAG_NAME, "h3").text.startswith(name)
    top = browser.execute_script(f"return document.getElementById('{ident}')"
                                 ".getBoundingClientRect().top")
    assert 0 <= top < browser.execute_script("return innerHeight")
    rows = sec.find_elements(By.CSS_SELECTOR, "table.files tbody tr")
    assert len(rows) == len(p["files"])
    assert {r.find_elements(By.TAG_NAME, "td")[0].text for r in rows} == \
        {f["path"] for f in p["files"]}
    screenshot("survey-report-details.png")
    # A diff link goes to its package too, replacing the details shown.
    diff_link = browser.find_element(By.CSS_SELECTOR, "#diff table.new-errors a")
    target = diff_link.get_attribute("href").split("#", 1)[1]
    diff_link.click()
    _wait_for(browser, target)
    assert target == ident or not browser.find_elements(By.ID, ident)
