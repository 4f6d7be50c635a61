"""Section 80: time series recorded while cells ran (CPU utilization per role, and whatever
samplers and workloads record), one chart per test case · scenario · metric · role."""

from __future__ import annotations

from ..data import ReportData
from ..html import Raw
from ..sections import Section, register_section
from ..svg import Line, line_chart

MAX_CHARTS = 24
MAX_POINTS = 240  # per line; longer series are thinned evenly


def _thin(points: list, limit: int = MAX_POINTS) -> list:
    if len(points) <= limit:
        return points
    step = len(points) / limit
    return [points[int(i * step)] for i in range(limit)]


@register_section(80, "time-series")
def time_series(data: ReportData) -> Section | None:
    rows = data.series
    if not rows:
        return None
    charts: dict[tuple, dict[tuple, list]] = {}
    for r in rows:
        ck = (r["suite"], r["test_case"], r["scenario"], r["metric"], r["role"], r["unit"])
        charts.setdefault(ck, {}).setdefault((r["platform"], r["repetition"]), []).append(
            (r["t"], r["value"], None, None)
        )
    svgs = []
    for (_suite, tc, scenario, metric, role, unit), per in list(charts.items())[:MAX_CHARTS]:
        lines = []
        for p in data.platforms:
            for (plat, rep), pts in sorted(per.items()):
                if plat == p:
                    lines.append(Line(f"{p} #{rep}", data.colour(p), _thin(pts)))
        title = f"{tc} · {scenario} · {role}: {metric}"
        svgs.append(
            line_chart(title, lines, "seconds since cell start", unit, width=560, height=240)
        )
    note = (
        f"Showing {MAX_CHARTS} of {len(charts)} charts. " if len(charts) > MAX_CHARTS else ""
    ) + "One line per platform and repetition (same colour per platform)."
    return Section(
        "Time series",
        Raw(f'<p class="note">{note}</p><div class="charts">' + "".join(svgs) + "</div>"),
    )
