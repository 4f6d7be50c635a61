"""Report section for co-location cells (seeds 000, 003): the figure shapes of the papers.

- normalized throughput per scenario and platform (seed 003 Table 2, seed 000 Fig. 3a)
- a table with degradation %, aggregated throughput and its ratio (seed 003 Fig. 20),
  Jain's fairness of the environments' shares of their own solo (seed 000 Fig. 4a) and the
  target's CoV
- the interference matrix: victim platform x aggressor (test case | scenario)
- normalized peak with 0-3 idle neighbours per file size, µs/exe, exe/s and CoV of every
  role (roles.py); per-step curves: throughput of every environment, CPU/blocked/waiting vs
  rate, reply/transfer time degradation (steps.py); start-up storms (figures.py); CPU
  weights per configuration with the CPU split they produced (weights.py)
Reads only the store's rows, through analysis/colocation.py and analysis/colocation_steps.py.
"""

from __future__ import annotations

from .... import labelkeys
from ....analysis import colocation as coloc
from ....analysis import colocation_steps as coloc_steps
from ....store.description import DIMENSION
from ... import html, svg
from ...sections import Section, register_section
from . import figures, roles, steps, weights

# every sample of a co-location cell carries the scenario's kind under this label


def _fmt(v: float | None, spec: str = ".3g") -> str:
    return "–" if v is None else format(v, spec)


def _after_storm(st: coloc.CellStats) -> bool:
    return st.storm_s is not None and st.storm_s[0] < 0.05  # under a sampling tick: none


def _storm_text(st: coloc.CellStats) -> str:
    """A start-up storm row's share of its point with a newcomer starting: a size that ran
    after the storm measured the target beside ready newcomers, not a start-up."""
    if st.storm_s is None:
        return ""
    during, length = st.storm_s
    if _after_storm(st):
        return f"0 of {length:.1f} s (after the storm)"
    return f"{during:.1f} of {length:.1f} s"


def _vs_solo(st: coloc.CellStats) -> str:
    if st.bad_peak:  # its load was a share of a peak that was none: no degradation measured
        return "– (solo peak never saturated)"
    # a point no solo cell served (a weights cell's deeper backlog is another connection
    # count): say so rather than leave a bare dash that reads as "not computed"
    if st.normalized is None and st.n and st.solo_mean is None:
        return "– (no solo at this point)"
    return _fmt(st.normalized)


def bad_peak_note(stats: list[coloc.CellStats]) -> str:
    """The rows whose offered load was scaled by a solo peak that never saturated: their
    ratio to solo (and the interference matrix, which leaves them out) is no degradation."""
    bad = [st for st in stats if st.bad_peak]
    if not bad:
        return ""
    rows = "; ".join(
        f"{st.platform} {st.scenario}" + (f" ({st.point})" if st.point else "") + f": {st.bad_peak}"
        for st in bad
    )
    return (
        f"Not a degradation, {len(bad)} row{'s' * (len(bad) > 1)}: the offered rates were"
        " shares of a solo peak whose sweep ran out of steps with its top step served in full"
        " (it never saturated: a low capacity probe set its scale), so the server was offered"
        f" a fraction of what it serves. {rows}."
    )


def budget_ref_note(stats: list[coloc.CellStats]) -> str:
    """The rows whose agg. ratio and Jain divide an environment by its solo peak measured
    under the pair's CPU budget, not by its platform's solo cell (another budget, or none):
    a neighbour of another platform runs inside the target's budget."""
    rows = [st for st in stats if st.budget_refs]
    if not rows:
        return ""

    def ref(r: coloc.SoloRef, unit: str) -> str:
        who = f"{r.role} ({r.platform})"
        if r.value is None:
            return f"{who}: no solo peak measured in {r.budget} CPU (no ratio, no Jain)"
        return f"{who} ÷ {r.value:,.0f} {unit}, its solo peak in {r.budget} CPU"

    listed = "; ".join(
        f"{st.platform} {st.scenario}" + (f" ({st.point})" if st.point else "") + ": "
        + ", ".join(ref(r, st.unit) for r in st.budget_refs)
        for st in rows
    )  # fmt: skip
    return (
        f"Solo reference under the pair's CPU budget, {len(rows)} row{'s' * (len(rows) > 1)}:"
        " the agg. ratio and Jain divide each environment by its own solo, but these ran"
        " inside the cell's shared budget while their platform's solo cell ran under another"
        " (or there is none), so they are divided by their solo peak measured alone in the"
        f" cell's budget. {listed}."
    )


@register_section(order=55, name="colocation")
def colocation_section(data) -> Section | None:
    if not any(labelkeys.SCENARIO_KIND in s["labels"] for s in data.samples):
        return None
    primary = data.description.primary_metrics()
    dims = {tc: data.description.labels_of(DIMENSION, tc) for tc in primary}
    stats = coloc.cell_stats(data.samples, primary, dims)
    if not stats:
        return None
    # the sweep point (file size...) of each row: never pooled, so always named
    points = any(st.dims for st in stats)
    limits = any(st.limit for st in stats)
    storms = any(st.storm_s for st in stats)
    rows, md_rows = [], []
    for st in stats:
        row = [
            st.platform,
            st.test_case,
            st.scenario,
            *([st.point or "–"] if points else []),
            *([st.limit or "–"] if limits else []),
            f"{st.target_mean:.4g} {st.unit}" if st.n else "– (no valid sample)",
            _fmt(st.target_cov, ".1%"),
            _vs_solo(st),
            "– (see note)" if st.bad_peak else _fmt(st.degradation_pct, ".1f"),
            str(st.environments),
            _fmt(st.aggregated, ".4g"),
            _fmt(st.aggregated_ratio),
            _fmt(st.jain),
            f"{st.n}" + (f" (+{st.invalid} invalid)" if st.invalid else ""),
        ]
        rows.append(row + ([_storm_text(st)] if storms else []))
        extra = len(row) - 12  # the point and limit columns, where shown
        md_rows.append([*row[0:1], *row[2 : 3 + extra], *(row[i + extra] for i in (3, 6, 9, 10))])
    shown = ["point"] * points + ["limit"] * limits
    headers = [
        "platform",
        "test case",
        "scenario",
        *shown,
        "target mean",
        "CoV",
        "vs solo",
        "degradation %",
        "envs",
        "aggregated",
        "agg. ratio",
        "Jain",
        "n",
        *(["newcomer starting during the point"] if storms else []),
    ]
    parts = normalized_charts(stats, data.colour)
    parts.append(str(html.scroll(str(html.table(headers, rows)))))
    if note := bad_peak_note(stats):
        parts.append(f"<p class='note'>{html.h(note)}</p>")
    if refs := budget_ref_note(stats):
        parts.append(f"<p class='note'>{html.h(refs)}</p>")
    matrix = coloc.interference_matrix(stats)
    if matrix:
        aggressors = sorted({a for m in matrix.values() for a in m})
        mrows = [[v] + [_fmt(matrix[v].get(a), ".1f") for a in aggressors] for v in matrix]
        parts.append("<h3>Interference matrix: target degradation % (victim × aggressor)</h3>")
        parts.append(str(html.scroll(str(html.table(["victim platform", *aggressors], mrows)))))
    shared = lockstep_note(data)
    if shared:
        parts.append(f"<p class='note'>{html.h(shared)}</p>")
    idle_charts, idle_table = roles.idle_neighbours(data, primary)
    if idle_charts:
        parts.append("<h3>Idle neighbours: peak throughput per file size (seed 003 Table 2)</h3>")
        parts.append(_charts(idle_charts) + idle_table)
    weight_charts, weight_table = weights.weight_views(data, primary)
    if weight_charts:
        parts.append("<h3>CPU weights: what each configuration gave every environment</h3>")
        parts.append(
            _charts(
                weight_charts,
                "Seed 003 §6 (Figs. 24-25) per served point: each environment's throughput "
                "(whiskers min–max over repetitions) and, in the table, the CPU split measured "
                "in the same cells. A weight divides CPU only between environments runnable "
                "at once: an about even CPU split under unequal weights means the pair did not "
                "contend (docs/colocation.md, 'Weights need contention').",
            )
            + weight_table
        )
    points = coloc_steps.sweep_points(data.samples, "reply_rate", x="offered")
    per_platform = steps.platform_charts(data, points)
    if per_platform:
        parts.append(
            "<h3>Target throughput vs offered rate per platform and file size, every scenario</h3>"
        )
        parts.append(_charts(per_platform, steps.INVALID_NOTE))
    pairs = steps.pair_charts(data, coloc_steps.sweep_points(data.samples, "reply_rate"))
    if pairs:
        parts.append("<h3>Sweeps beside neighbours: each environment and their sum</h3>")
        parts.append(_charts(pairs, steps.INVALID_NOTE))
    env = steps.env_rate_charts(data)
    if env:
        parts.append(
            "<h3>CPU, blocked and waiting time, µs/exe and exe/s of every environment vs rate</h3>"
        )
        parts.append(
            _charts(
                env,
                "Each environment's 1 s samples averaged over each step's window; one colour "
                "per scenario, the target solid, neighbours dashed (seed 003 Table 4, Figs. "
                "1-2, 5-10).",
            )
        )
    deg_html, _deg_md = steps.degradation_table(data)  # HTML only: the summary stays short
    if deg_html:
        parts.append(deg_html)
    per_role = roles.role_bars(data)
    if per_role:
        parts.append("<h3>Per environment: µs/exe, exe/s and CPU (seed 000 Figs. 2-3)</h3>")
        parts.append(
            _charts(
                per_role,
                "One chart per test case and served point (file size): each cell's 1 s "
                "samples while that point was served, nothing averaged across sizes; "
                "whiskers ±1 sd of those samples. A sweep's steps are in the per-step charts.",
            )
        )
    covs = roles.cov_bars(data)
    if covs:
        parts.append(
            "<h3>Coefficient of variation of every environment (seed 003 Figs. 11-12)</h3>"
        )
        parts.append(
            _charts(
                covs,
                "CoV of the 1 s samples of one served point (one file size) in each cell, "
                "not the change between sizes; whiskers: min–max over repetitions.",
            )
        )
    starts, not_drawn = figures.startup_charts(data)
    if starts:
        parts.append(
            "<h3>Start-up storms: target throughput over time, newcomers' ready times</h3>"
        )
        parts.append(_charts(starts, not_drawn))
    parts.append(figures.startup_table(data))
    parts.append(figures.env_metrics_table(data))
    md_headers = ["platform", "scenario", *shown, "target", "degr. %", "agg. ratio", "Jain"]
    md = html.md_table(md_headers, md_rows) + "".join(
        f"\n{text}\n" for text in (refs, shared) if text
    )
    return Section("Co-location and interference", html.Raw("\n".join(parts)), markdown=md)


# a platform's client path (net_path) is not a served point to compare across: each platform
# is normalized to its own solo, so platforms on different paths share a chart
PLATFORM_DIMS = frozenset({"net_path"})


def normalized_charts(stats: list[coloc.CellStats], colour) -> list[str]:
    """One chart per test case and served point (file size...): groups are scenarios, bars
    the platforms' target ÷ own solo, whiskers min–max of the repetitions. One chart for
    every point at once made 200+ bars of a pixel each on a full campaign."""
    by_point: dict[tuple[str, roles.Point], list[coloc.CellStats]] = {}
    for st in stats:
        # a voided row (its load came from a peak that never saturated) keeps its platform
        # and scenario in the chart, drawn as a red – with no bar
        if st.scenario == "solo" or st.solo_mean is None:
            continue
        if st.normalized is None and not st.bad_peak:
            continue
        point = tuple(kv for kv in st.dims if kv[0] not in PLATFORM_DIMS)
        by_point.setdefault((st.test_case, point), []).append(st)
    charts = []
    for (tc, point), group in sorted(
        by_point.items(), key=lambda kv: (kv[0][0], coloc.dims_order(kv[0][1]))
    ):
        bars = {}
        for st in group:
            if st.normalized is None:
                continue
            lo = hi = None
            if st.target_range and st.n > 1:
                lo, hi = (v / st.solo_mean for v in st.target_range)  # type: ignore[operator]
            after = _after_storm(st)
            note = f"n={st.n}" + (", ran after the start-up storm" if after else "")
            bars[(st.scenario, st.platform)] = svg.Bar(st.normalized, lo, hi, note, warn=after)
        scenarios = sorted({st.scenario for st in group}, key=roles.scenario_order)
        series = [(p, colour(p)) for p in dict.fromkeys(st.platform for st in group)]
        where = " · ".join(x for x in (tc, roles.point_text(point)) if x)
        title = f"{where}: target throughput ÷ its solo"
        # wide enough that a scenario's name fits its group (up to the page's width)
        wide = 110 + len(scenarios) * (len(series) * 44 + 30)
        width = min(1300, wide) if wide > 760 else None  # None: bar_chart's own rule
        charts.append(svg.bar_chart(title, scenarios, series, bars, "× solo", width, ref=1.0))
    note = "Whiskers: min–max over repetitions."
    if any(st.bad_peak for st in stats):
        note += (
            " A red – where a bar would be: no degradation to draw, the target's load was a"
            " share of a solo peak that never saturated (the note under the table)."
        )
    if any(_after_storm(st) for group in by_point.values() for st in group):
        note += (
            " Hatched: a start-up storm's size that ran after every newcomer was ready (sizes"
            " run one after another), so not a start-up figure."
        )
    return [_charts(charts, note)] if charts else []


def _charts(svgs: list[str], note: str = "") -> str:
    body = '<div class="charts">' + "".join(svgs) + "</div>"
    return (f"<p class='note'>{html.h(note)}</p>" if note else "") + body


def lockstep_note(data) -> str:
    """How many steps of the lockstep cells had a window every environment did not share
    (those steps alone are invalid), per platform, scenario and role."""
    total: dict[str, int] = {}
    unshared: dict[str, int] = {}
    for r in data.samples:
        lab = r["labels"]
        if (
            r["metric"] != "reply_rate"
            or labelkeys.STEP not in lab
            or not lab.get(labelkeys.LOCKSTEP)
        ):
            continue
        who = f"{r['platform']} · {r['scenario']} · {r['role']}"
        total[who] = total.get(who, 0) + 1
        if "not shared" in (r.get("invalid_reason") or ""):
            unshared[who] = unshared.get(who, 0) + 1
    if not total:
        return ""
    counts = "; ".join(f"{who} {unshared.get(who, 0)}/{n}" for who, n in total.items())
    return (
        "Lockstep steps whose window was not shared by every environment (invalid, the other "
        f"steps stand): {sum(unshared.values())} of {sum(total.values())} ({counts})."
    )
