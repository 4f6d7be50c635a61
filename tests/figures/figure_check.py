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

And the page's layout at the window width (`check_html(..., width=)`; `assert_layout_ok`):

- wider-than-viewport: an element reaching past the window's right edge outside any scroll
  box (the page scrolls sideways);
- clipped-cell: a table cell whose text is wider than the cell (scrollWidth > clientWidth)
  or runs past the edge of an ancestor that hides what overflows, without a scroll box;
- squeezed-cell: a cell of 24 characters or more laid out at fewer than 8 characters a line
  (a column squeezed to a sliver by its neighbours);
- number-left: a cell holding only a number, not right-aligned (a cell of class `text`, such
  as a version 3.33, is text).

Boxes that scroll sideways at that width are listed (`FigureReport.scrolled`), not faults.

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
LAYOUT_WIDTHS = (1024, 1400)  # a small laptop, a common desktop window
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

  // ---- layout: overflow past the viewport, clipped, squeezed and left-aligned cells
  var layout = [], scrolled = [];
  var vw = document.documentElement.clientWidth;
  function what(el) {
    var name = el.tagName.toLowerCase() + (el.id ? '#' + el.id : '') +
      (el.className && typeof el.className === 'string' ? '.' + el.className.split(' ')[0] : '');
    var sec = el.closest('section');
    return name + (sec ? ' in #' + sec.id : '') + ': ' +
      (el.innerText || el.textContent || '').trim().replace(/\s+/g, ' ').slice(0, 60);
  }
  function box(el) {  // the nearest ancestor that clips or scrolls sideways, or null
    for (var a = el.parentElement; a && a !== document.body; a = a.parentElement) {
      if (getComputedStyle(a).overflowX !== 'visible') return a;
    }
    return null;
  }
  var docWidth = document.documentElement.scrollWidth;
  if (docWidth > vw + tol)
    layout.push({kind: 'wider-than-viewport', what: 'page',
                 detail: 'page ' + docWidth + 'px in a ' + vw + 'px window'});
  var reported = [];
  document.body.querySelectorAll('*').forEach(function (el) {
    if (el.id === '"""
    + RESULT_ID
    + r"""') return;
    var r = el.getBoundingClientRect();
    if (r.right <= vw + tol || box(el)) return;
    for (var k = 0; k < reported.length; k++) if (reported[k].contains(el)) return;
    reported.push(el);
    layout.push({kind: 'wider-than-viewport', what: what(el),
                 detail: 'right edge at ' + Math.round(r.right) + 'px, window ' + vw + 'px'});
  });
  document.body.querySelectorAll('*').forEach(function (el) {
    var ox = getComputedStyle(el).overflowX;
    if ((ox === 'auto' || ox === 'scroll') && el.scrollWidth > el.clientWidth + tol)
      scrolled.push({what: what(el), width: el.scrollWidth, box: el.clientWidth});
  });
  document.querySelectorAll('td, th').forEach(function (c) {
    var st = getComputedStyle(c), text = (c.innerText || '').trim();
    if (st.overflowX !== 'auto' && st.overflowX !== 'scroll' &&
        c.scrollWidth > c.clientWidth + tol)
      layout.push({kind: 'clipped-cell', what: what(c),
                   detail: 'text ' + c.scrollWidth + 'px in a ' + c.clientWidth + 'px cell'});
    var b = box(c);
    var bx = b ? getComputedStyle(b).overflowX : '';
    if (b && bx !== 'auto' && bx !== 'scroll' &&
        c.getBoundingClientRect().right > b.getBoundingClientRect().right + tol)
      layout.push({kind: 'clipped-cell', what: what(c),
                   detail: 'cut by a box that hides overflow'});
    if (text.length >= 24) {
      var range = document.createRange(), tops = [];
      range.selectNodeContents(c);
      Array.prototype.forEach.call(range.getClientRects(), function (q) {
        if (q.height === 0) return;
        for (var t = 0; t < tops.length; t++) if (Math.abs(tops[t] - q.top) < q.height / 2) return;
        tops.push(q.top);
      });
      if (tops.length > 1 && text.length / tops.length < 8)
        layout.push({kind: 'squeezed-cell', what: what(c),
                     detail: text.length + ' characters on ' + tops.length + ' lines, ' +
                             c.clientWidth + 'px wide'});
    }
    if (c.tagName === 'TD' && !c.classList.contains('text') &&
        /^[-+\u2212\u00d7]?\d[\d,]*(\.\d+)?\s?%?$/.test(text) &&
        st.textAlign !== 'right' && st.textAlign !== 'end')
      layout.push({kind: 'number-left', what: what(c), detail: 'text-align ' + st.textAlign});
  });
  var pre = document.createElement('pre');
  pre.id = '"""
    + RESULT_ID
    + r"""';
  pre.textContent = JSON.stringify({
    figures: figures,
    layout: layout,
    scrolled: scrolled,
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
    width: int = WIDTH
    layout: list[Problem] = field(default_factory=list)  # Problem.figure names the element
    scrolled: list[dict] = field(default_factory=list)  # boxes scrolling sideways: what, width, box

    def text(self) -> str:
        head = f"{len(self.figures)} figures, {len(self.problems)} problems"
        lay = f"layout at {self.width} px: {len(self.layout)} problems"
        lay += f", {len(self.scrolled)} boxes scroll"
        return "\n".join(
            [head, *(f"  {p}" for p in self.problems), lay, *(f"  {p}" for p in self.layout)]
            + [f"  scrolls: {b['what']} ({b['width']} px in {b['box']} px)" for b in self.scrolled]
        )


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
    source: Path | str,
    screenshot: Path | None = None,
    timeout: float = 90.0,
    width: int = WIDTH,
) -> FigureReport:
    """Render `source` (a path to an HTML file, or the HTML itself) in a window `width` px
    wide; check every svg and the page's layout."""
    page = Path(source).read_text() if isinstance(source, Path) else source
    with tempfile.TemporaryDirectory(prefix="vb-figcheck-") as tmp:
        checked = Path(tmp) / "page.html"
        checked.write_text(_inject(page))
        dom = _chromium(
            [f"--window-size={width},2000", "--dump-dom", checked.as_uri()],
            str(Path(tmp) / "profile"),
            timeout,
        )
        m = re.search(rf'<pre id="{RESULT_ID}">(.*?)</pre>', dom, re.S)
        if not m:
            raise RuntimeError("the figure check script left no result (did the page load?)")
        result = json.loads(html.unescape(m.group(1)))
        report = FigureReport(result["figures"], page_height=int(result["height"]), width=width)
        for f in report.figures:
            report.problems += [Problem(f["title"], p["kind"], p["detail"]) for p in f["problems"]]
        report.layout = [Problem(p["what"], p["kind"], p["detail"]) for p in result["layout"]]
        report.scrolled = result["scrolled"]
        if screenshot is not None:
            # the shot is of the page as served (no script), as tall as the page
            plain = Path(tmp) / "plain.html"
            plain.write_text(page)
            height = min(max(report.page_height, 600), MAX_HEIGHT)
            _chromium(
                [f"--window-size={width},{height}", f"--screenshot={screenshot}", plain.as_uri()],
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


def assert_layout_ok(report: FigureReport, allow: tuple[str, ...] = ()) -> None:
    """Fail listing every layout problem whose kind is not in `allow`."""
    bad = [p for p in report.layout if p.kind not in allow]
    assert not bad, f"{len(bad)} layout problems at {report.width} px:\n" + "\n".join(
        f"  {p}" for p in bad
    )


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("html", type=Path)
    ap.add_argument("--screenshot", type=Path)
    ap.add_argument("--width", type=int, default=WIDTH, help="window width in px")
    ap.add_argument("--section", action="append", help="keep only this section id (repeatable)")
    ap.add_argument(
        "--by-heading", action="store_true", help="also one screenshot per <h3> part with figures"
    )
    args = ap.parse_args(argv)
    page = args.html.read_text()
    if args.section:
        page = only_sections(page, args.section)
    shot = args.screenshot.resolve() if args.screenshot else None
    report = check_html(page, shot, width=args.width)
    print(report.text())
    if args.screenshot and args.by_heading:
        for i, part in enumerate(by_heading(page)):
            shot = args.screenshot.resolve().with_name(f"{args.screenshot.stem}-{i:02d}.png")
            check_html(part, shot, width=args.width)
            print(f"part {i}: {shot}")
    return 1 if report.problems or report.layout else 0


if __name__ == "__main__":
    sys.exit(main())
