"""Per-environment figures of co-location cells (seeds 000 and 003), from the store only.

- `idle_neighbours`: normalized peak throughput with 0-3 idle neighbours, per file size
  (seed 003 Table 2, seed 000 Fig. 3), a figure and the table of peaks;
- `role_bars`: µs/exe and exe/s (and CPU %) of every environment per scenario (seed 000
  Figs. 2-3, seed 003 Figs. 1-4), whiskers ±1 sd of the 1 s samples;
- `cov_bars`: coefficient of variation of CPU, waiting and blocked time for every role
  (seed 003 Figs. 11-12), not the target alone.

Both read the cells' summaries, one per served point (file size, connections...): a chart per
test case and point, never a mean across file sizes or test cases.
"""

from __future__ import annotations

import statistics
from collections import defaultdict
from collections.abc import Callable
from typing import Any

from .... import labelkeys
from ....analysis.colocation import dims_order, value_order
from ....results import PATH_LABELS, SOLO_PEAK_SCENARIO
from ....store.description import DIMENSION
from ... import html, svg

IDLE = "idle-neighbours"
ROLE_METRICS = (
    ("cpu_us_per_exe", "CPU time per execution", "µs/exe"),
    ("exe_per_s", "executions per second", "exe/s"),
    ("cpu_util", "CPU utilization", "CPU %"),
)
COV_METRICS = (
    ("cpu_util", "CPU"),
    ("sched_wait_pct", "waiting time"),
    ("sched_blocked_pct", "blocked time"),
)


def _idle_count(scenario: str) -> int | None:
    if scenario == "solo":
        return 0
    kind, _, n = scenario.partition(":")
    return int(n) if kind == IDLE and n.isdigit() else None


def idle_neighbours(data, primary: dict[str, str]) -> tuple[list[str], str]:
    """Per platform: a bar chart (groups: served points, the file sizes of a web test case;
    bars: 0..N idle neighbours) of the target's peak normalized to solo's, whiskers min-max
    over repetitions; and a table."""
    # (platform, tc) -> served point -> idle count -> [values]
    acc: dict[tuple[str, str], dict[Point, dict[int, list[float]]]] = defaultdict(
        lambda: defaultdict(lambda: defaultdict(list))
    )
    lower: set[tuple[str, str]] = set()  # lower is better (a time): degradation is a rise
    for r in data.samples:
        n = _idle_count(r["scenario"])
        if n is None or r["role"] != "target" or r["metric"] != primary.get(r["test_case"]):
            continue
        if not r.get("higher_is_better", True):
            lower.add((r["platform"], r["test_case"]))
        if r["valid"]:
            # every dimension but the client's path (one per platform): a memory sweep's
            # block sizes keyed by file size alone were averaged into one row
            pt = tuple(kv for kv in sample_point(data, r) if kv[0] not in PATH_LABELS)
            acc[(r["platform"], r["test_case"])][pt][n].append(float(r["value"]))
    charts, rows = [], []
    every = sorted({n for sizes in acc.values() for per in sizes.values() for n in per})
    for (platform, tc), sizes in sorted(acc.items()):
        counts = sorted({n for per in sizes.values() for n in per})
        if len(counts) < 2 or 0 not in counts:
            continue
        groups = [point_text(pt) or tc for pt in sorted(sizes, key=dims_order)]
        series = [(f"{n} idle", svg.PALETTE[i % len(svg.PALETTE)]) for i, n in enumerate(counts)]
        bars = {}
        for pt, per in sorted(sizes.items(), key=lambda kv: dims_order(kv[0])):
            solo = statistics.fmean(per[0]) if per.get(0) else None
            where = point_text(pt) or tc
            row = [platform, where]
            for n in every:
                vals = per.get(n, [])
                if not vals:
                    row.append("–")
                    continue
                m = statistics.fmean(vals)
                deg = ""
                if solo and n:
                    worse = m / solo - 1 if (platform, tc) in lower else 1 - m / solo
                    deg = f" ({100 * worse:+.1f} %)"
                row.append(f"{m:.4g}{deg} n={len(vals)}")
                if solo:
                    lo, hi = (min(vals) / solo, max(vals) / solo) if len(vals) > 1 else (None,) * 2
                    bars[(where, f"{n} idle")] = svg.Bar(m / solo, lo, hi, f"n={len(vals)}")
            rows.append(row)
        charts.append(
            svg.bar_chart(
                f"{platform} · {tc}: peak throughput with idle neighbours ÷ solo",
                groups,
                series,
                bars,
                "× solo",
            )
        )
    if not charts:
        return [], ""
    headers = ["platform", "point", *(f"{n} idle" for n in every)]
    table = str(html.scroll(str(html.table(headers, rows))))
    return charts, (
        "<p class='note'>Peak throughput (req/s) with N idle neighbours of the same type, "
        "degradation % against 0 idle in brackets, positive = worse (seed 003 Table 2: "
        "(1,0)…(4,3)).</p>" + table
    )


Point = tuple[tuple[str, Any], ...]  # a served point's dimension labels, sorted
# platform, test case, served point, scenario, role, metric
Key = tuple[str, str, Point, str, str, str]
# labels that split a test case's samples but never its served points (an error class)
NOT_POINT = frozenset({"error_class"})


def point_of(labels: dict[str, Any], dims: set[str]) -> Point:
    """The served point a sample belongs to: its dimension labels (file size, step...)."""
    return tuple(
        sorted(
            (k, v)
            for k, v in labels.items()
            if k in dims and k not in NOT_POINT and v is not None and not isinstance(v, dict | list)
        )
    )


def point_text(point: Point) -> str:
    """'1 KB', '70 KB · step 3', '' for a cell-wide figure."""
    words = {"file_size_kb": "{} KB", "connections": "{} connections", "phase": "{}"}
    words["step"] = "step {}"
    first = list(words)
    ordered = sorted(point, key=lambda kv: (first.index(kv[0]) if kv[0] in first else 9, kv[0]))
    return " · ".join(words.get(k, f"{k}={{}}").format(v) for k, v in ordered)


def sample_point(data, row: dict[str, Any]) -> Point:
    """The served point of a stored sample, by its test case's dimension labels."""
    return point_of(row["labels"], data.description.labels_of(DIMENSION, row["test_case"]))


def unplanned(data) -> Callable[[dict[str, Any]], bool]:
    """Whether a summary row lies at a point where its cell's target sample was invalid (a
    window the neighbours did not share, a neighbour that died): summaries are stored
    unflagged, so the target's own samples at that point say whether the scene was as
    planned. A summary names fewer labels than a workload sample: it matches every sample
    whose point includes its own."""
    # a cell's invalid points, once each (a bad step has a dozen invalid metrics)
    bad: dict[str, set[frozenset]] = defaultdict(set)
    for r in data.samples:
        if (
            r["role"] == "target"
            and not r.get("valid", True)
            and labelkeys.STDEV not in r["labels"]
        ):
            bad[r["cell_id"]].add(frozenset(sample_point(data, r)))

    def off_plan(row: dict[str, Any]) -> bool:
        points = bad.get(row.get("cell_id"))
        if not points:
            return False
        mine = set(sample_point(data, row))  # once, not once per invalid point
        return any(mine <= at for at in points)

    return off_plan


def _summaries(data, metrics: set[str]) -> dict[Key, list[dict]]:
    """(platform, test case, served point, scenario, role, metric) -> the cells' summary
    rows (mean, stdev, cov of the point's 1 s samples in labels), one per repetition: nothing
    pooled across file sizes, steps or test cases. A cell that stored no summaries (a solo cell
    of a run before solo stored them) gets them from its series, the same 1 s points, when it
    served one point only (several cannot be told apart in its series)."""
    out: dict[Key, list[dict]] = defaultdict(list)
    summarized = set()
    detailed = set()  # test cases whose cells store summaries (web, read in detail)
    invalid = unplanned(data)
    for r in data.samples:
        if r["metric"] in metrics and r["role"] != "host" and labelkeys.STDEV in r["labels"]:
            summarized.add(r["cell_id"])
            detailed.add(r["test_case"])
            if invalid(r):
                continue
            pt = sample_point(data, r)
            out[(r["platform"], r["test_case"], pt, r["scenario"], r["role"], r["metric"])].append(
                r
            )
    served: dict[str, set[Point]] = defaultdict(set)  # cell -> the points its target served
    for r in data.samples:
        if r["role"] == "target" and r["cell_id"] not in summarized:
            served[r["cell_id"]].add(sample_point(data, r))
    points: dict[tuple[str, ...], list[float]] = defaultdict(list)
    for p in data.series:
        # only solo cells of old runs of co-located test cases: a solo-peak cell (no window)
        # or another suite's cell has just the whole cell's cpu_util, set-up included
        if p["test_case"] not in detailed or p["scenario"] == SOLO_PEAK_SCENARIO:
            continue
        if p["metric"] in metrics and p["cell_id"] not in summarized and p["role"] == "target":
            key = (p["cell_id"], p["platform"], p["test_case"], p["scenario"], p["metric"])
            points[key].append(p["value"])
    for (cell, platform, tc, scenario, metric), values in points.items():
        if len(values) < 2 or len(served.get(cell, set())) > 1:
            continue
        (pt,) = served.get(cell) or {()}
        m, sd = statistics.fmean(values), statistics.stdev(values)
        labels = {
            labelkeys.STDEV: sd,
            labelkeys.COV: sd / m if m else None,
            labelkeys.FROM: "series",
        }
        out[(platform, tc, pt, scenario, "target", metric)].append({"value": m, "labels": labels})
    return out


def _groups(keys: list[Key]) -> tuple[list[str], list[tuple[str, str]]]:
    """Scenarios in order (solo first) and one coloured series per role (target first)."""
    scen = list(dict.fromkeys(k[3] for k in sorted(keys, key=lambda k: scenario_order(k[3]))))
    roles = sorted({k[4] for k in keys}, key=lambda r: (r != "target", r))
    return scen, [(r, svg.PALETTE[(i + 1) % len(svg.PALETTE)]) for i, r in enumerate(roles)]


def _charted(summ: dict[Key, list[dict]], platform: str, metric: str) -> dict[tuple, list[Key]]:
    """(test case, point) -> its keys, in size order. A sweep's many steps are left to the
    per-step charts (steps.env_rate_charts): one bar group per step would not read."""
    steps: dict[str, set[Any]] = defaultdict(set)
    for k in summ:
        if k[0] == platform:
            steps[k[1]].add(dict(k[2]).get("step"))
    out: dict[tuple, list[Key]] = defaultdict(list)
    for k in summ:
        if k[0] == platform and k[5] == metric and len(steps[k[1]]) < 2:
            out[(k[1], k[2])].append(k)
    return dict(
        sorted(out.items(), key=lambda kv: (kv[0][0], [value_order(v) for _k, v in kv[0][1]]))
    )


def _title(platform: str, tc: str, point: Point, what: str, points: list[Point]) -> str:
    """The chart's title: its point by the labels that tell the test case's points apart
    (the file size always; a constant connection count would only crowd it)."""
    varying = {k for k, _v in point if len({dict(p).get(k) for p in points}) > 1}
    shown = tuple((k, v) for k, v in point if k in varying or k == "file_size_kb")
    where = " · ".join(x for x in (platform, tc, point_text(shown)) if x)
    return f"{where}: {what}"


def _point_charts(
    summ: dict[Key, list[dict]],
    platform: str,
    metric: str,
    what: str,
    unit: str,
    bar: Callable[[list[dict]], svg.Bar],
) -> list[str]:
    """One chart per test case and served point of `metric` on `platform`: groups =
    scenarios, one bar per role, each bar made by `bar` from that key's summary rows."""
    charted = _charted(summ, platform, metric)
    out = []
    for (tc, point), keys in charted.items():
        scen, series = _groups(keys)
        bars = {(k[3], k[4]): bar(summ[k]) for k in keys}
        title = _title(platform, tc, point, what, [p for t, p in charted if t == tc])
        out.append(svg.bar_chart(title, scen, series, bars, unit))
    return out


def _mean_sd_bar(rs: list[dict]) -> svg.Bar:
    m = statistics.fmean(r["value"] for r in rs)
    sds = [float(sd) for r in rs if (sd := r["labels"].get(labelkeys.STDEV)) is not None]
    if not sds:  # one 1 s reading per point: no spread to draw
        return svg.Bar(m, None, None, f"one 1 s sample: no sd, n={len(rs)}")
    sd = statistics.fmean(sds)
    return svg.Bar(m, m - sd, m + sd, f"±{sd:.3g} sd, n={len(rs)}")


def _cov_bar(rs: list[dict]) -> svg.Bar:
    covs = [float(r["labels"][labelkeys.COV]) for r in rs]
    spread = (min(covs), max(covs)) if len(covs) > 1 else (None, None)
    return svg.Bar(statistics.fmean(covs), *spread, f"n={len(covs)} repetitions")


def role_bars(data) -> list[str]:
    """Per platform, metric, test case and served point (file size): groups = scenarios, one
    bar per role."""
    summ = _summaries(data, {m for m, _t, _u in ROLE_METRICS})
    out = []
    for platform in data.platforms:
        for metric, what, unit in ROLE_METRICS:
            out += _point_charts(
                summ, platform, metric, f"{what} per environment ({unit})", unit, _mean_sd_bar
            )
    return out


def cov_bars(data) -> list[str]:
    """Per platform, metric, test case and served point: CoV of the point's 1 s samples,
    every role, per scenario."""
    summ = _summaries(data, {m for m, _t in COV_METRICS})
    summ = {
        k: [r for r in rs if r["labels"].get(labelkeys.COV) is not None] for k, rs in summ.items()
    }
    summ = {k: rs for k, rs in summ.items() if rs}
    out = []
    for platform in data.platforms:
        for metric, what in COV_METRICS:
            out += _point_charts(
                summ, platform, metric, f"coefficient of variation of {what}", "CoV", _cov_bar
            )
    return out


def scenario_order(scenario: str) -> tuple:
    kind, _, arg = scenario.partition(":")
    return (kind != "solo", kind, arg.zfill(4))
