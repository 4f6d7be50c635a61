"""Report section of the application suite (seed 004 §3.5, Figs. 2-3), from the store only:
the measured period's throughput and response-time percentiles per platform, and throughput
per interval of the measured period (one line per platform and scenario: mean over the
repetitions, whiskers min-max; invalid intervals marked, not dropped)."""

from __future__ import annotations

from collections import defaultdict

from ... import labelkeys, suites
from .. import html, svg
from ..sections import Section, register_section
from .web import _group_table

TEST_CASE = "daytrader-jmeter"
SUMMARY = [
    ("throughput", "throughput"),
    ("response_time_p50_ms", "p50"),
    ("response_time_p90_ms", "p90"),
    ("response_time_p99_ms", "p99"),
    ("error_pct", "errors"),
    ("dry_run_throughput", "dry run"),
    ("interval_throughput_cv_pct", "interval CV"),
    ("server_ready_s", "server ready"),
]


def interval_chart(data) -> str | None:
    """Throughput per interval, one line per platform (× scenario)."""
    groups = [
        g
        for g in data.select(test_case=TEST_CASE, role="target")
        if g.key.metric == "interval_throughput" and g.key.dim(labelkeys.INTERVAL) is not None
    ]
    if not groups:
        return None
    scenarios = {g.key.scenario for g in groups}
    by_line: dict[tuple[str, str], list] = defaultdict(list)
    for g in groups:
        by_line[(g.key.platform, g.key.scenario)].append(g)
    order = {p: i for i, p in enumerate(data.platforms)}
    lines = []
    step = None
    for i, key in enumerate(sorted(by_line, key=lambda k: (order.get(k[0], 99), k[1]))):
        platform, scenario = key
        pts, invalid = [], {}
        for g in sorted(by_line[key], key=lambda g: int(g.key.dim(labelkeys.INTERVAL))):
            step = step or g.labels.get(labelkeys.INTERVAL_S)
            x = (int(g.key.dim(labelkeys.INTERVAL)) + 1) * float(
                g.labels.get(labelkeys.INTERVAL_S) or 1
            )
            s = g.summary
            if s.mean is not None:
                pts.append((x, s.mean, s.minimum, s.maximum))
            elif g.invalid:  # every repetition invalid: show the raw mean, marked
                pts.append((x, sum(v.value for v in g.invalid) / len(g.invalid), None, None))
            if g.invalid:
                invalid[x] = "; ".join(sorted({v.reason for v in g.invalid}))
        name = platform if len(scenarios) < 2 else f"{platform} · {scenario}"
        colour = data.colour(platform) if len(scenarios) < 2 else svg.PALETTE[i % len(svg.PALETTE)]
        lines.append(svg.Line(name, colour, pts, invalid=invalid))
    title = "JMeter throughput per interval of the measured period" + (
        f" ({step} s intervals)" if step else ""
    )
    return svg.line_chart(title, lines, "seconds into the measured period", "req/s", width=680)


@register_section(order=45, name="application")
def application_section(data) -> Section | None:
    if not any(r["suite"] == suites.APPLICATION for r in data.samples):
        return None
    parts, md = [], ""
    headers, rows = _group_table(data, TEST_CASE, SUMMARY, None)
    if rows:
        parts.append("<h3>Measured period (after the dry run): throughput and response times</h3>")
        parts.append(str(html.scroll(str(html.table(headers, rows)))))
        md += "application (JMeter, measured period):\n" + html.md_table(headers, rows) + "\n"
    chart = interval_chart(data)
    if chart:
        parts.append(chart)
        parts.append(
            "<p class='note'>Each point is one interval's completed requests per second (mean"
            " over repetitions; whiskers min–max). Invalid intervals (client saturated, failed"
            " requests) are hollow red-ringed markers.</p>"
        )
    per = [("interval_throughput", "req/s"), ("interval_response_time_p99_ms", "p99")]
    headers, rows = _group_table(data, TEST_CASE, per, "interval")
    if rows:
        md += "application, per interval:\n" + html.md_table(headers, rows) + "\n"
    if not parts:
        return None
    return Section(
        "Application: DayTrader-like servlet under JMeter", html.Raw("\n".join(parts)), markdown=md
    )
