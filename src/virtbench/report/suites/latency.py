"""Report section for the latency suite, shaped like seed 001's Tables 2-15 and Figs. 6-8.

Per scenario, one table: a row block per platform (maximum with RT throttling windows left
out, p99.99, p99.9, the tick delay, and the throttling windows as their own row), a column
per test case. A cell shows the largest value over the repetitions, with the mean ± CI of
the per-run values and n, since a single maximum has no spread. Then, for every scenario,
the tick duration over time (Figs. 6-7) and the thread switch latency over time (Fig. 8),
one line per platform, and the first raw samples (Fig. 6).
"""

from __future__ import annotations

from ... import labelkeys, suites
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
# besides each maximum (RT throttling excluded): (metric, column label)
EXTRA = (
    ("p9999_us", "{} p99.99"),
    ("p999_us", "{} p99.9"),
    ("tick_delay_us", "tick delay (2nd mode − main)"),
)
THROTTLE = ("rt_throttle_windows", "rt_throttle_total_ms", "rt_throttle_max_us", "raw_max_us")
SEED_SCENARIOS = {
    "solo": "1 one-to-all",
    "pinned": "2 one-to-one (affinity)",
    "antagonist:cpu-load:same-cpu": "3 one CPU-load, same CPU",
    "antagonist:memory-load:same-cpu": "4 one memory-load, same CPU",
    "antagonist:cpu-load:free:3": "5 all-to-all, 3 CPU-load",
    "antagonist:memory-load:free:3": "6 all-to-all, 3 memory-load",
    "antagonist:memory-load:free:1": "7 two-to-all, 1 memory-load",
}
OPTION_NAMES = {"quantum": "quantum", "compete": "competition"}
MAX_POINTS = 400  # per line; longer series are thinned evenly, keeping each stretch's maximum
CHART_W, CHART_H = 440, 250


def us(v: float | None) -> str:
    """µs below 1 ms, ms above (as the seed's tables)."""
    if v is None:
        return "–"
    return f"{fmt.num(v / 1000)} ms" if v >= 1000 else f"{fmt.num(v)} µs"


def _cell(g: Group | None, text=us) -> Td | str:
    if g is None:
        return "–"
    s = g.summary
    if not s.n:
        return Td(f"invalid ({g.n_invalid})", "warn", "every run of this cell was invalid")
    spread = f"mean of runs {text(s.mean)}" + (f" ± {text(s.ci_half)}" if s.ci_half else "")
    title = f"{spread}, n={s.n}" + (f", {g.n_invalid} invalid" if g.n_invalid else "")
    return Td(f"{text(s.maximum)} (n={s.n})", "num", title)


def _throttle_cell(gs: dict[str, Group | None]) -> Td | str:
    count, total, longest = (gs.get(m) for m in THROTTLE[:3])
    if count is None or not count.summary.n:
        return "–"
    n = count.summary.mean or 0.0
    tot = total.summary.mean if total else None
    mx = longest.summary.maximum if longest else None
    raw = gs.get("raw_max_us")
    title = "per run: windows, total stalled; max over runs" + (
        f"; maximum with them: {us(raw.summary.maximum)}" if raw and raw.summary.n else ""
    )
    if not n:
        return Td("none", "num", title)
    text = f"{n:.3g} / run, {fmt.num(tot or 0)} ms, max {us(mx)}"
    return Td(text, "num", title)


def title(scenario: str) -> str:
    """'Scenario 3 one CPU-load, same CPU, competition rr, quantum 1ms — <scenario>'."""
    parts = scenario.split(":")
    base = ":".join(p for p in parts if "=" not in p)
    opts = [p.split("=", 1) for p in parts if "=" in p]
    seed = SEED_SCENARIOS.get(base)
    extra = ", ".join(f"{OPTION_NAMES.get(k, k)} {v}" for k, v in opts)
    if seed:
        return f"Scenario {seed}" + (f", {extra}" if extra else "") + f" — {scenario}"
    return f"Scenario {scenario}"


def _columns(by: dict, present: list) -> list[tuple[str, str, str]]:
    """(test case, metric, header) of every column that has a value somewhere."""
    have = {(tc, m) for (_sc, _p, tc, m) in by}
    cols = []
    for tc, label in present:
        cols.append((tc, "max_us", label))
        short = label.removeprefix("max ")
        cols += [(tc, m, name.format(short)) for m, name in EXTRA if (tc, m) in have]
    return cols


def _table(data: ReportData, scenario: str, by: dict, present: list) -> tuple[str, list[str]]:
    cols = _columns(by, present)
    rows, md = [], []
    for p in data.platforms:
        cells = [by.get((scenario, p, tc, m)) for tc, m, _ in cols]
        if not any(cells):
            continue
        rows.append([Td(p, "name"), *(_cell(c) for c in cells)])
        throttled = [
            _throttle_cell({m: by.get((scenario, p, tc, m)) for m in THROTTLE})
            if m == "max_us"
            else ""
            for tc, m, _ in cols
        ]
        rows.append([Td(f"{p}: RT throttling windows", "name"), *throttled])
        maxima = [by.get((scenario, p, tc, "max_us")) for tc, _ in present]
        md.append(
            f"{scenario} {p}: "
            + ", ".join(
                f"{label} {us(g.summary.maximum) if g else '–'}"
                for (_, label), g in zip(present, maxima, strict=True)
            )
        )
    if not rows:
        return "", md
    head = ["platform", *(label for _, _, label in cols)]
    notes = _notes(data, scenario)
    md += [f"{scenario}: {n}" for n in notes]
    foot = "".join(f'<p class="note">{h(n)}</p>' for n in notes)
    return f"<h3>{h(title(scenario))}</h3>" + table(head, rows) + foot, md


def _notes(data: ReportData, scenario: str) -> list[str]:
    """What a reader of the scenario's maxima must know per platform: a real-time budget
    split between the target's group and its antagonists' (containers, compete=rr), and
    stalls kept in the maximum that may be shortened throttling windows."""
    split: dict[str, dict] = {}
    ambiguous: dict[str, float] = {}
    for r in data.samples:
        if (
            r["suite"] != suites.LATENCY
            or r["scenario"] != scenario
            or r["role"] != "target"
            or r["metric"] != "max_us"
        ):
            continue
        labels = r["labels"]
        if (
            labelkeys.RT_BUDGET_SPLIT in labels
            and labelkeys.RT_BUDGET_NEIGHBOUR_PERIOD_US in labels
        ):
            split.setdefault(r["platform"], labels)
        # with an RR competitor (compete=rr) long gaps at no boundary are its quantum
        if (
            labels.get(labelkeys.RT_THROTTLE_AMBIGUOUS_US)
            and labels.get(labelkeys.QUANTUM_POLICY) != "rr"
            and r["value"] >= float(labels[labelkeys.RT_THROTTLE_AMBIGUOUS_US])
        ):
            amb = float(labels[labelkeys.RT_THROTTLE_AMBIGUOUS_US])
            ambiguous[r["platform"]] = max(ambiguous.get(r["platform"], 0.0), amb)
    notes = []
    for p, lb in split.items():
        notes.append(
            f"{p}: the host's real-time budget is split between {lb['rt_budget_split']} groups "
            f"(the target holds {lb['rt_budget_us']} µs of every {lb['rt_budget_period_us']} "
            f"µs, each antagonist its share of every {lb['rt_budget_neighbour_period_us']} µs, "
            "so it runs about half that period at a stretch and a longer quantum is cut to "
            "that; natively both share one budget). The target's own group is throttled for up to "
            f"{us(float(lb['rt_throttle_stall_us']))} per period (plus up to one timer tick), "
            "left out of the maxima where the window ends at its period timer; the competitor's "
            "quantum decides above that (docs/latency.md)."
        )
    for p, amb in ambiguous.items():
        notes.append(
            f"{p}: a stall of {us(amb)} at no throttling boundary is kept in the maximum; it may "
            "be a shortened throttling or fair-server window (label rt_throttle_ambiguous_us)."
        )
    return notes


@register_section(46, "latency-tables")
def latency(data: ReportData) -> list[Section] | None:
    groups = [g for g in data.select(suite=suites.LATENCY) if not g.key.dims]
    if not any(g.key.metric == "max_us" for g in groups):
        return None
    by = {(g.key.scenario, g.key.platform, g.key.test_case, g.key.metric): g for g in groups}
    present = [c for c in COLUMNS if any(g.key.test_case == c[0] for g in groups)]
    parts: list[str] = [
        '<p class="note">Largest value over the repetitions (hover: mean ± CI of the per-run '
        "values, n). The maximum leaves out RT throttling windows: the kernel stops a busy "
        "real-time task for (period − runtime) of its budget once per period, which is the "
        "host's configuration, not its latency (docs/latency.md). Those windows are counted "
        "in their own row (windows per run, time stalled per run, the longest). Seed 001 "
        "Tables 2–15 report the maxima per scenario.</p>"
    ]
    md: list[str] = []
    for scenario in data.scenarios():
        html, lines = _table(data, scenario, by, present)
        parts.append(html)
        md += lines
    sections = [Section("Real-time latency (seed 001)", Raw("".join(parts)), "\n".join(md))]
    for title_, figures in (
        ("Tick duration over time", TICK_FIGURES),
        ("Thread switch latency over time", SWITCH_FIGURES),
    ):
        plots = _plots(data, title_, figures)
        if plots:
            sections.append(plots)
    return sections


def thin_max(points: list, limit: int = MAX_POINTS) -> list:
    """At most `limit` points, each the largest of its stretch (spikes stay visible)."""
    if len(points) <= limit:
        return points
    step = len(points) / limit
    return [
        max(points[int(i * step) : max(int((i + 1) * step), int(i * step) + 1)], key=lambda p: p[1])
        for i in range(limit)
    ]


# charts per scenario: (test case, series metric, chart title)
TICK_FIGURES = (
    ("tick", "tick_max_us", "tick duration, per-block maximum (Fig. 7)"),
    ("tick", "tick_head_us", "tick duration, first samples (Fig. 6)"),
)
SWITCH_FIGURES = (
    ("thread-switch-2", "switch2_max_us", "switch latency, 2 threads (Fig. 8)"),
    ("thread-switch-1000", "switch1000_max_us", "switch latency, 1000 threads (Fig. 8)"),
)
NOTES = {
    "Tick duration over time": "Like seed 001 Fig. 6 (first samples: the busy loop and, a few "
    "µs above, iterations hit by the timer tick) and Fig. 7 (the whole run, per-block maxima).",
    "Thread switch latency over time": "Like seed 001 Fig. 8: per-block maxima of the thread "
    "switch latency over the run.",
}


def _plots(data: ReportData, section: str, figures: tuple) -> Section | None:
    """Per scenario: one chart per figure (repetition 1), one line per platform."""
    per: dict[tuple[str, str], dict[str, list]] = {}
    wanted = {(tc, metric) for tc, metric, _ in figures}
    for r in data.series:
        if (
            r["role"] == "target"
            and r["repetition"] == 1
            and (r["test_case"], r["metric"]) in wanted
        ):
            key = (r["scenario"], r["metric"])
            per.setdefault(key, {}).setdefault(r["platform"], []).append(
                (r["t"], r["value"], None, None)
            )
    if not per:
        return None
    parts = []
    for scenario in data.scenarios():
        svgs = []
        for _tc, metric, what in figures:
            lines = per.get((scenario, metric))
            if not lines:
                continue
            chart_lines = [
                Line(p, data.colour(p), thin_max(sorted(lines[p])))
                for p in data.platforms
                if p in lines
            ]
            svgs.append(
                line_chart(
                    what,
                    chart_lines,
                    "seconds since the probe started",
                    "µs",
                    width=CHART_W,
                    height=CHART_H,
                )
            )
        if svgs:
            parts.append(f"<h3>{h(title(scenario))}</h3>")
            parts.append('<div class="charts">' + "".join(svgs) + "</div>")
    note = (
        f'<p class="note">{h(NOTES[section])} RT throttling windows are left out of the '
        "maxima as in the tables; the first repetition is drawn, one line per platform.</p>"
    )
    return Section(section, Raw(note + "".join(parts)))
