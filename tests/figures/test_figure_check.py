"""The figure harness itself: it passes a sound chart and fails each kind of broken one."""

from __future__ import annotations

import pytest

from virtbench.report import svg

from .figure_check import assert_figures_ok, assert_layout_ok, available, check_html

pytestmark = [
    pytest.mark.figures,
    pytest.mark.skipif(not available(), reason="needs /usr/bin/chromium"),
]


def _page(*figures: str) -> str:
    return "<!doctype html><html><body>" + "".join(figures) + "</body></html>"


def _line(names=("native", "container")) -> str:
    lines = [
        svg.Line(n, svg.PALETTE[i], [(1.0, 10.0 * (i + 1), None, None), (2.0, 12.0, 11.0, 13.0)])
        for i, n in enumerate(names)
    ]
    return svg.line_chart("throughput vs rate", lines, "rate", "req/s")


def test_sound_charts_pass(tmp_path):
    bars = {("solo", "native"): svg.Bar(5.0, 4.0, 6.0), ("solo", "vm"): svg.Bar(None)}
    bar = svg.bar_chart("solo", ["solo"], [("native", "#000"), ("vm", "#111")], bars, "x")
    shot = tmp_path / "shot.png"
    report = check_html(_page(_line(), bar), screenshot=shot)
    assert len(report.figures) == 2
    assert report.figures[0]["series"] and report.figures[0]["legend"] == ["native", "container"]
    assert_figures_ok(report)
    assert shot.stat().st_size > 1000


def test_cut_label_fails():
    # a label placed past the right edge of the 760 px chart
    cut = _line().replace(
        "</svg>", '<text x="700" y="100">a label running off the edge</text></svg>'
    )
    report = check_html(_page(cut))
    assert [p.kind for p in report.problems] == ["cut-text"]
    with pytest.raises(AssertionError, match="cut-text"):
        assert_figures_ok(report)


def test_long_legend_wraps_inside_the_chart():
    # legends used to run off the right edge (issue 12: "legend cut"); they now wrap
    long = [f"platform-with-an-extremely-long-name-number-{i}-" + "x" * 30 for i in range(4)]
    report = check_html(_page(_line(long)))
    assert_figures_ok(report)
    assert report.figures[0]["height"] > 300  # grown by the extra legend rows


def test_legend_mismatch_and_empty_fail():
    # a series in the legend that is never drawn, one drawn and not in the legend
    broken = _line().replace('data-legend="container"', 'data-legend="vm"')
    empty = svg.line_chart("nothing", [svg.Line("native", "#000", [])], "rate", "req/s")
    report = check_html(_page(broken, empty))
    found = {(p.kind, p.detail) for p in report.problems}
    assert ("legend-without-series", "vm") in found
    assert ("series-without-legend", "container") in found
    assert any(p.kind == "empty" and p.figure == "nothing" for p in report.problems)


def test_overlapping_legend_fails():
    # the second legend entry shifted back onto the first
    overlap = _line().replace('data-legend="container"', 'data-legend="container" dx="-60"')
    report = check_html(_page(overlap))
    assert any(p.kind == "legend-overlap" for p in report.problems)


def test_overlapping_labels_fail():
    # a label written over another one, in the empty middle of the plot (clear of the tick
    # labels whatever the font's metrics)
    clash = _line().replace("</svg>", '<text x="300" y="150">overlapping label</text></svg>')
    clash = clash.replace("</svg>", '<text x="302" y="151">overlapping label</text></svg>')
    report = check_html(_page(clash))
    assert [p.kind for p in report.problems] == ["text-overlap"]


def test_layout_faults_are_found_and_scroll_boxes_are_not_faults():
    wide = "".join(f"<td>column_{i}_with_a_long_unbreakable_name</td>" for i in range(6))
    page = _page(
        # fits: a number right-aligned, text left
        '<table><tr><td>sysbench</td><td style="text-align:right">1,234.5</td></tr></table>',
        # too wide for 1,024 px: scrolls inside its own box, which is fine
        f'<div id="boxed" style="overflow-x:auto"><table><tr>{wide}</tr></table></div>',
        # too wide, no box: the page scrolls sideways
        f'<table id="loose"><tr>{wide}</tr></table>',
        # a cell whose text runs out of its fixed-width column
        '<table style="table-layout:fixed;width:120px"><tr>'
        '<td style="white-space:nowrap">a value far wider than its column</td></tr></table>',
        # a reason squeezed beside wide cells: a few characters per line
        '<table style="width:300px"><tr><td style="white-space:nowrap">'
        + "x" * 40
        + "</td><td>the interval reaches past the floor on both sides</td></tr></table>",
        # a number left-aligned
        "<table><tr><td>42.0 %</td></tr></table>",
    )
    report = check_html(page, width=1024)
    kinds = sorted({p.kind for p in report.layout})
    assert kinds == ["clipped-cell", "number-left", "squeezed-cell", "wider-than-viewport"]
    loose = [p for p in report.layout if p.kind == "wider-than-viewport" and "loose" in p.figure]
    assert loose and not any("boxed" in p.figure for p in report.layout), report.text()
    assert any("42.0 %" in p.figure for p in report.layout if p.kind == "number-left")
    assert [b for b in report.scrolled if "boxed" in b["what"]], report.scrolled
    with pytest.raises(AssertionError, match="wider-than-viewport"):
        assert_layout_ok(report)
