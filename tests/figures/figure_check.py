"""Check the figures of an HTML report in headless Chromium, objectively.

A human looks at screenshots; a test cannot, so this renders the page in the real browser and
lets a small script measure every `<svg>` figure in the laid-out page:

- cut-text: a text element whose box falls outside its svg viewport (a clipped label, a
  legend running off the right edge);
- legend-without-series / series-without-legend: legend entries (`data-legend`) against the
  series actually drawn (`data-series`, with `data-gap` for a bar that had no result);
- legend-overlap: two legend entries drawn on top of each other;
- text-overlap: two other labels (ticks, group names, titles) drawn on top of each other;
- empty: a figure with nothing drawn at all (or the "no data" placeholder); a bar chart
  whose bars are all "no valid result" gaps is not empty: it says so.

The script runs inside the page before Chromium's `--dump-dom` serializes it and leaves its
result as JSON in `<pre id="vb-figure-check">`. A second Chromium call saves a full-page
screenshot for humans. Usage from a shell:

    python -m tests.figures.figure_check report.html --screenshot report.png
"""

from __future__ import annotations

import argparse
import html
import json
import re
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

CHROMIUM = "/usr/bin/chromium"
WIDTH = 1400
MAX_HEIGHT = 16000  # Chromium refuses far taller screenshots
FLAGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--hide-scrollbars",
)
RESULT_ID = "vb-figure-check"

# Runs in the page after layout. Reports per figure; tolerance 1 px for anti-aliasing.
CHECK_JS = (
    r"""
(function () {
  document.querySelectorAll('details').forEach(function (d) { d.open = true; });
  var tol = 1, figures = [];
  function label(el) {
    var t = '';
    el.childNodes.forEach(function (n) { if (n.nodeType === 3) t += n.textContent; });
    return t.trim().slice(0, 100);
  }
  function inter(a, b) {
    return a.left < b.right - tol && b.left < a.right - tol &&
           a.top < b.bottom - tol && b.top < a.bottom - tol;
  }
  document.querySelectorAll('svg').forEach(function (svg, i) {
    var name = svg.getAttribute('aria-label') || ('svg #' + i);
    var r = svg.getBoundingClientRect(), problems = [];
    var fig = {index: i, title: name, width: r.width, height: r.height, problems: problems};
    figures.push(fig);
    if (r.width === 0 || r.height === 0) { problems.push({kind: 'zero-size', detail: ''}); return; }
    svg.querySelectorAll('text').forEach(function (t) {
      var b = t.getBoundingClientRect();
      if (b.width === 0 && b.height === 0) return;
      var over = [];
      if (b.left < r.left - tol) over.push('left ' + Math.round(r.left - b.left) + 'px');
      if (b.right > r.right + tol) over.push('right ' + Math.round(b.right - r.right) + 'px');
      if (b.top < r.top - tol) over.push('top ' + Math.round(r.top - b.top) + 'px');
      if (b.bottom > r.bottom + tol) over.push('bottom ' + Math.round(b.bottom - r.bottom) + 'px');
      if (over.length)
        problems.push({kind: 'cut-text', detail: label(t) + ' (' + over.join(', ') + ')'});
    });
    // axis and group labels drawn on top of each other (the legend is checked below)
    var labels = Array.prototype.slice.call(svg.querySelectorAll('text:not([data-legend])'))
      .filter(function (t) { return label(t) !== ''; });
    for (var i = 0; i < labels.length; i++) {
      for (var j = i + 1; j < labels.length; j++) {
        if (inter(labels[i].getBoundingClientRect(), labels[j].getBoundingClientRect()))
          problems.push({kind: 'text-overlap',
                         detail: label(labels[i]) + ' / ' + label(labels[j])});
      }
    }
    var legendEls = Array.prototype.slice.call(svg.querySelectorAll('[data-legend]'));
    var legend = legendEls.map(function (e) { return e.getAttribute('data-legend'); });
    var drawn = {};
    svg.querySelectorAll('[data-series],[data-gap]').forEach(function (e) {
      drawn[e.getAttribute('data-series') || e.getAttribute('data-gap')] = 1;
    });
    var marks = svg.querySelectorAll('[data-series]').length;
    fig.legend = legend; fig.series = Object.keys(drawn); fig.marks = marks;
    legend.forEach(function (n) {
      if (!drawn[n]) problems.push({kind: 'legend-without-series', detail: n});
    });
    Object.keys(drawn).forEach(function (n) {
      if (legendEls.length && legend.indexOf(n) < 0)
        problems.push({kind: 'series-without-legend', detail: n});
    });
    for (var a = 0; a < legendEls.length; a++) {
      for (var c = a + 1; c < legendEls.length; c++) {
        if (inter(legendEls[a].getBoundingClientRect(), legendEls[c].getBoundingClientRect()))
          problems.push({kind: 'legend-overlap', detail: legend[a] + ' / ' + legend[c]});
      }
    }
    // a bar chart of gaps only says "no valid result" on purpose: not empty
    var gaps = svg.querySelectorAll('[data-gap]').length;
    var nothing = svg.classList.contains('chart') && marks + gaps === 0;
    if (svg.querySelector('[data-empty]') || nothing)
      problems.push({kind: 'empty', detail: ''});
  });
  var pre = document.createElement('pre');
  pre.id = '"""
    + RESULT_ID
    + r"""';
  pre.textContent = JSON.stringify({
    figures: figures,
    height: Math.ceil(document.documentElement.scrollHeight)
  });
  document.body.appendChild(pre);
})();
"""
)


@dataclass
class Problem:
    figure: str
    kind: str
    detail: str

    def __str__(self) -> str:
        return f"{self.kind}: {self.figure}" + (f" — {self.detail}" if self.detail else "")


@dataclass
class FigureReport:
    figures: list[dict]
    problems: list[Problem] = field(default_factory=list)
    page_height: int = 0
    screenshot: Path | None = None

    def text(self) -> str:
        head = f"{len(self.figures)} figures, {len(self.problems)} problems"
        return "\n".join([head, *(f"  {p}" for p in self.problems)])


def available() -> bool:
    return Path(CHROMIUM).exists() or shutil.which("chromium") is not None


def _chromium(args: list[str], profile: str, timeout: float) -> str:
    exe = CHROMIUM if Path(CHROMIUM).exists() else shutil.which("chromium") or CHROMIUM
    cmd = [exe, *FLAGS, f"--user-data-dir={profile}", *args]
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, check=False)
    if done.returncode != 0:
        raise RuntimeError(f"chromium exited {done.returncode}: {done.stderr[-2000:]}")
    return done.stdout


def _inject(page: str) -> str:
    script = f"<script>{CHECK_JS}</script>"
    i = page.lower().rfind("</body>")
    return page[:i] + script + page[i:] if i >= 0 else page + script


def check_html(
    source: Path | str, screenshot: Path | None = None, timeout: float = 90.0
) -> FigureReport:
    """Render `source` (a path to an HTML file, or the HTML itself) and check every svg."""
    page = Path(source).read_text() if isinstance(source, Path) else source
    with tempfile.TemporaryDirectory(prefix="vb-figcheck-") as tmp:
        checked = Path(tmp) / "page.html"
        checked.write_text(_inject(page))
        dom = _chromium(
            [f"--window-size={WIDTH},2000", "--dump-dom", checked.as_uri()],
            str(Path(tmp) / "profile"),
            timeout,
        )
        m = re.search(rf'<pre id="{RESULT_ID}">(.*?)</pre>', dom, re.S)
        if not m:
            raise RuntimeError("the figure check script left no result (did the page load?)")
        result = json.loads(html.unescape(m.group(1)))
        report = FigureReport(result["figures"], page_height=int(result["height"]))
        for f in report.figures:
            report.problems += [Problem(f["title"], p["kind"], p["detail"]) for p in f["problems"]]
        if screenshot is not None:
            # the shot is of the page as served (no script), as tall as the page
            plain = Path(tmp) / "plain.html"
            plain.write_text(page)
            height = min(max(report.page_height, 600), MAX_HEIGHT)
            _chromium(
                [f"--window-size={WIDTH},{height}", f"--screenshot={screenshot}", plain.as_uri()],
                str(Path(tmp) / "profile"),
                timeout,
            )
            report.screenshot = Path(screenshot)
    return report


def only_sections(page: str, ids: list[str]) -> str:
    """The page with only the `<section id=...>` elements named (for a legible screenshot of
    one part of a long report)."""
    first = page.find("<section")
    if first < 0:
        return page
    keep = []
    for sid in ids:
        m = re.search(rf'<section id="{re.escape(sid)}">.*?</section>', page, re.S)
        if m is None:
            raise ValueError(f"no <section id={sid!r}> in the page")
        keep.append(m.group(0))
    return page[:first] + "".join(keep) + "</main></body></html>"


def by_heading(page: str) -> list[str]:
    """One page per `<h3>` part of the page's sections (the text before the first `<h3>`
    of the page is its own part): screenshots short enough to read."""
    first = page.find("<section")
    if first < 0:
        return [page]
    head, body = page[:first], page[first:]
    parts = re.split(r"(?=<h3)", body)
    return [head + part + "</main></body></html>" for part in parts if "<svg" in part]


def assert_figures_ok(report: FigureReport, allow: tuple[str, ...] = ()) -> None:
    """Fail listing every problem whose kind is not in `allow`."""
    bad = [p for p in report.problems if p.kind not in allow]
    assert not bad, f"{len(bad)} figure problems:\n" + "\n".join(f"  {p}" for p in bad)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("html", type=Path)
    ap.add_argument("--screenshot", type=Path)
    ap.add_argument("--section", action="append", help="keep only this section id (repeatable)")
    ap.add_argument(
        "--by-heading", action="store_true", help="also one screenshot per <h3> part with figures"
    )
    args = ap.parse_args(argv)
    page = args.html.read_text()
    if args.section:
        page = only_sections(page, args.section)
    report = check_html(page, args.screenshot.resolve() if args.screenshot else None)
    print(report.text())
    if args.screenshot and args.by_heading:
        for i, part in enumerate(by_heading(page)):
            shot = args.screenshot.resolve().with_name(f"{args.screenshot.stem}-{i:02d}.png")
            check_html(part, shot)
            print(f"part {i}: {shot}")
    return 1 if report.problems else 0


if __name__ == "__main__":
    sys.exit(main())
