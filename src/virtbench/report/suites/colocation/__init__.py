"""Report section for co-location cells (seeds 000, 003): the figure shapes of the papers.

- normalized throughput per scenario and platform (seed 003 Table 2, seed 000 Fig. 3a)
- a table with degradation %, aggregated throughput and its ratio (seed 003 Fig. 20),
  Jain's fairness between environments (seed 000 Fig. 4a) and CoV of the target
- the interference matrix: victim platform x aggressor (test case | scenario)
- the figures of figures.py (start-up storms, sweeps beside neighbours, scheduler metrics)
Reads only the store's sample rows, through analysis/colocation.py.
"""

from __future__ import annotations

from ....analysis import colocation as coloc
from ... import html, svg
from ...sections import Section, register_section
from . import figures

# every sample of a co-location cell carries the scenario's kind under this label
KIND_LABEL = "scenario_kind"


def _fmt(v: float | None, spec: str = ".3g") -> str:
    return "–" if v is None else format(v, spec)


@register_section(order=55, name="colocation")
def colocation_section(data) -> Section | None:
    if not any(KIND_LABEL in s["labels"] for s in data.samples):
        return None
    stats = coloc.cell_stats(data.samples, data.description.primary_metrics())
    if not stats:
        return None
    rows, md_rows = [], []
    for st in stats:
        row = [
            st.platform,
            st.test_case,
            st.scenario,
            f"{st.target_mean:.4g} {st.unit}" if st.n else "– (no valid sample)",
            _fmt(st.target_cov, ".1%"),
            _fmt(st.normalized),
            _fmt(st.degradation_pct, ".1f"),
            str(st.environments),
            _fmt(st.aggregated, ".4g"),
            _fmt(st.aggregated_ratio),
            _fmt(st.jain),
            f"{st.n}" + (f" (+{st.invalid} invalid)" if st.invalid else ""),
        ]
        rows.append(row)
        md_rows.append([row[0], row[2], row[3], row[6], row[9], row[10]])
    headers = [
        "platform",
        "test case",
        "scenario",
        "target mean",
        "CoV",
        "vs solo",
        "degradation %",
        "envs",
        "aggregated",
        "agg. ratio",
        "Jain",
        "n",
    ]
    bars = {}
    for st in stats:
        if st.normalized is not None:
            bars[(st.scenario, st.platform)] = svg.Bar(st.normalized, None, None)
    parts = []
    if bars:
        scenarios = list(dict.fromkeys(k[0] for k in bars))
        series = [(p, data.colour(p)) for p in dict.fromkeys(k[1] for k in bars)]
        parts.append(
            svg.bar_chart("Target throughput normalized to solo", scenarios, series, bars, "×")
        )
    parts.append(str(html.scroll(str(html.table(headers, rows)))))
    matrix = coloc.interference_matrix(stats)
    if matrix:
        aggressors = sorted({a for m in matrix.values() for a in m})
        mrows = [[v] + [_fmt(matrix[v].get(a), ".1f") for a in aggressors] for v in matrix]
        parts.append("<h3>Interference matrix: target degradation % (victim × aggressor)</h3>")
        parts.append(str(html.scroll(str(html.table(["victim platform", *aggressors], mrows)))))
    starts = figures.startup_charts(data)
    if starts:
        parts.append(
            "<h3>Start-up storms: target throughput over time, newcomers' ready times</h3>"
        )
        parts.extend(starts)
    sweeps = figures.intensity_charts(data)
    if sweeps:
        parts.append("<h3>Sweeps beside neighbours: each environment and the aggregate</h3>")
        parts.extend(sweeps)
    parts.append(figures.env_metrics_table(data))
    md = html.md_table(["platform", "scenario", "target", "degr. %", "agg. ratio", "Jain"], md_rows)
    return Section("Co-location and interference", html.Raw("\n".join(parts)), markdown=md)
