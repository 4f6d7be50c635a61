"""Report section for the latency suite, shaped like seed 001's Tables 2-15 and Fig. 6/7.

Per scenario, one table: rows are platforms, columns the maximum clock tick processing
duration and the maximum thread switch latency with 2 and 1000 threads. A cell shows the
largest maximum over the repetitions, with the mean ± CI of the per-run maxima and n, since
a single maximum has no spread. Then the tick duration over time (per-block maxima) and the
first raw samples of the first repetition, one line per platform.
"""

from __future__ import annotations

from ...analysis.groups import Group
from .. import fmt
from ..data import ReportData
from ..html import Raw, Td, h, table
from ..sections import Section, register_section
from ..svg import Line, line_chart

COLUMNS = (
    ("tick", "max tick duration"),
    ("thread-switch-2", "max switch, 2 threads"),
    ("thread-switch-1000", "max switch, 1000 threads"),
    ("cyclictest", "cyclictest max"),
)
SEED_SCENARIOS = {
    "solo": "1 one-to-all",
    "pinned": "2 one-to-one (affinity)",
    "antagonist:cpu-load:same-cpu": "3 one CPU-load, same CPU",
    "antagonist:memory-load:same-cpu": "4 one memory-load, same CPU",
    "antagonist:cpu-load:free:3": "5 all-to-all, 3 CPU-load",
    "antagonist:memory-load:free:3": "6 all-to-all, 3 memory-load",
    "antagonist:memory-load:free:1": "7 two-to-all, 1 memory-load",
}
PLOTS = 6  # duration-over-time charts at most


def us(v: float | None) -> str:
    """µs below 1 ms, ms above (as the seed's tables)."""
    if v is None:
        return "–"
    return f"{fmt.num(v / 1000)} ms" if v >= 1000 else f"{fmt.num(v)} µs"


def _cell(g: Group | None) -> Td | str:
    if g is None:
        return "–"
    s = g.summary
    if not s.n:
        return Td(f"invalid ({g.n_invalid})", "warn", "every run of this cell was invalid")
    spread = f"mean of run maxima {us(s.mean)}" + (f" ± {us(s.ci_half)}" if s.ci_half else "")
    title = f"{spread}, n={s.n}" + (f", {g.n_invalid} invalid" if g.n_invalid else "")
    return Td(f"{us(s.maximum)} (n={s.n})", "", title)


def _title(scenario: str) -> str:
    base = scenario.split(":quantum=")[0]
    seed = SEED_SCENARIOS.get(base)
    if seed and ":quantum=" in scenario:
        seed += ", quantum " + scenario.split(":quantum=")[1].split(":")[0]
    return f"Scenario {seed} — {scenario}" if seed else f"Scenario {scenario}"


@register_section(46, "latency-tables")
def latency(data: ReportData) -> list[Section] | None:
    groups = [g for g in data.select(suite="latency") if g.key.metric == "max_us"]
    if not groups:
        return None
    by = {(g.key.scenario, g.key.platform, g.key.test_case): g for g in groups}
    present = [c for c in COLUMNS if any(g.key.test_case == c[0] for g in groups)]
    parts: list[str] = [
        '<p class="note">Maximum over all repetitions (hover: mean ± CI of the per-run '
        "maxima, n). Seed 001 Tables 2–15 report the same maxima per scenario.</p>"
    ]
    md: list[str] = []
    for scenario in data.scenarios():
        rows = []
        for p in data.platforms:
            cells = [by.get((scenario, p, tc)) for tc, _ in present]
            if any(cells):
                rows.append([p, *(_cell(c) for c in cells)])
                md.append(
                    f"{scenario} {p}: "
                    + ", ".join(
                        f"{label} {us(c.summary.maximum) if c else '–'}"
                        for (_, label), c in zip(present, cells, strict=True)
                    )
                )
        if rows:
            parts.append(f"<h3>{h(_title(scenario))}</h3>")
            parts.append(table(["platform", *(label for _, label in present)], rows))
    sections = [Section("Real-time latency (seed 001)", Raw("".join(parts)), "\n".join(md))]
    plots = _plots(data)
    if plots:
        sections.append(plots)
    return sections


def _plots(data: ReportData) -> Section | None:
    """Tick duration over time (per-block maxima) and the first raw samples, rep 1."""
    per: dict[tuple[str, str], dict[str, list]] = {}
    for r in data.series:
        wanted = r["metric"] in ("tick_max_us", "tick_head_us") and r["role"] == "target"
        if wanted and r["test_case"] == "tick" and r["repetition"] == 1:
            key = (r["metric"], r["scenario"])
            per.setdefault(key, {}).setdefault(r["platform"], []).append(
                (r["t"], r["value"], None, None)
            )
    if not per:
        return None
    svgs = []
    for (metric, scenario), lines in sorted(per.items(), key=lambda kv: kv[0][0] != "tick_head_us"):
        if len(svgs) >= PLOTS:
            break
        what = "first samples" if metric == "tick_head_us" else "per-block maximum"
        chart_lines = [
            Line(p, data.colour(p), sorted(lines[p])) for p in data.platforms if p in lines
        ]
        svgs.append(
            line_chart(
                f"tick duration, {what} · {scenario}",
                chart_lines,
                "seconds since the probe started",
                "µs",
                width=560,
                height=240,
            )
        )
    note = (
        '<p class="note">Like seed 001 Fig. 6 (first samples: the busy loop and, a few µs '
        "above, iterations hit by the timer tick) and Fig. 7 (the whole run).</p>"
    )
    return Section(
        "Tick duration over time", Raw(note + '<div class="charts">' + "".join(svgs) + "</div>")
    )
