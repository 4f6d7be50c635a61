"""Per-environment figures of co-location cells (seeds 000 and 003), from the store only.

- `idle_neighbours`: normalized peak throughput with 0-3 idle neighbours, per file size
  (seed 003 Table 2, seed 000 Fig. 3), a figure and the table of peaks;
- `role_bars`: µs/exe and exe/s (and CPU %) of every environment per scenario (seed 000
  Figs. 2-3, seed 003 Figs. 1-4), whiskers ±1 sd of the cell's 1 s samples;
- `cov_bars`: coefficient of variation of CPU, waiting and blocked time for every role
  (seed 003 Figs. 11-12), not the target alone.
"""

from __future__ import annotations

import statistics
from collections import defaultdict
from typing import Any

from ....analysis.colocation_steps import labels_of
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
    """Per platform: a bar chart (groups: file sizes; bars: 0..N idle neighbours) of the
    target's peak normalized to solo's, whiskers min-max over repetitions; and a table."""
    # (platform, tc) -> size -> idle count -> [values]
    acc: dict[tuple[str, str], dict[Any, dict[int, list[float]]]] = defaultdict(
        lambda: defaultdict(lambda: defaultdict(list))
    )
    for r in data.samples:
        n = _idle_count(r["scenario"])
        if n is None or r["role"] != "target" or r["metric"] != primary.get(r["test_case"]):
            continue
        if r["valid"]:
            size = labels_of(r).get("file_size_kb")
            acc[(r["platform"], r["test_case"])][size][n].append(float(r["value"]))
    charts, rows = [], []
    every = sorted({n for sizes in acc.values() for per in sizes.values() for n in per})
    for (platform, tc), sizes in sorted(acc.items()):
        counts = sorted({n for per in sizes.values() for n in per})
        if len(counts) < 2 or 0 not in counts:
            continue
        groups = [f"{s} KB" for s in sorted(sizes, key=str)]
        series = [(f"{n} idle", svg.PALETTE[i % len(svg.PALETTE)]) for i, n in enumerate(counts)]
        bars = {}
        for size, per in sorted(sizes.items(), key=lambda kv: str(kv[0])):
            solo = statistics.fmean(per[0]) if per.get(0) else None
            row = [platform, str(size)]
            for n in every:
                vals = per.get(n, [])
                if not vals:
                    row.append("–")
                    continue
                m = statistics.fmean(vals)
                deg = f" ({100 * (1 - m / solo):+.1f} %)" if solo and n else ""
                row.append(f"{m:.4g}{deg} n={len(vals)}")
                if solo:
                    lo, hi = (min(vals) / solo, max(vals) / solo) if len(vals) > 1 else (None,) * 2
                    bars[(f"{size} KB", f"{n} idle")] = svg.Bar(m / solo, lo, hi, f"n={len(vals)}")
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
    headers = ["platform", "size KB", *(f"{n} idle" for n in every)]
    table = str(html.scroll(str(html.table(headers, rows))))
    return charts, (
        "<p class='note'>Peak throughput (req/s) with N idle neighbours of the same type, "
        "degradation % against 0 idle in brackets, positive = worse (seed 003 Table 2: "
        "(1,0)…(4,3)).</p>" + table
    )


def _summaries(data, metrics: set[str]) -> dict[tuple[str, str, str, str], list[dict]]:
    """(platform, scenario, role, metric) -> the cells' summary rows (mean, stdev, cov of the
    1 s samples in labels), one per repetition. A cell that stored no summaries (a solo
    cell) gets them from its series, the same 1 s points."""
    out: dict[tuple[str, str, str, str], list[dict]] = defaultdict(list)
    summarized = set()
    for r in data.samples:
        if r["metric"] in metrics and r["role"] != "host" and "stdev" in r["labels"]:
            out[(r["platform"], r["scenario"], r["role"], r["metric"])].append(r)
            summarized.add(r["cell_id"])
    points: dict[tuple[str, str, str, str, str], list[float]] = defaultdict(list)
    for p in data.series:
        if p["metric"] in metrics and p["cell_id"] not in summarized and p["role"] == "target":
            points[(p["cell_id"], p["platform"], p["scenario"], p["role"], p["metric"])].append(
                p["value"]
            )
    for (_cell, *key), values in points.items():
        if len(values) < 2:
            continue
        m, sd = statistics.fmean(values), statistics.stdev(values)
        labels = {"stdev": sd, "cov": sd / m if m else None, "from": "series"}
        out[tuple(key)].append({"value": m, "labels": labels})  # type: ignore[index]
    return out


def _groups(keys) -> tuple[list[str], list[tuple[str, str]]]:
    """Scenarios in order (solo first) and one coloured series per role (target first)."""
    scen = list(dict.fromkeys(k[1] for k in sorted(keys, key=lambda k: _order(k[1]))))
    roles = sorted({k[2] for k in keys}, key=lambda r: (r != "target", r))
    return scen, [(r, svg.PALETTE[(i + 1) % len(svg.PALETTE)]) for i, r in enumerate(roles)]


def role_bars(data) -> list[str]:
    """Per platform and metric: groups = scenarios, one bar per role."""
    summ = _summaries(data, {m for m, _t, _u in ROLE_METRICS})
    out = []
    for platform in data.platforms:
        for metric, what, unit in ROLE_METRICS:
            keys = [k for k in summ if k[0] == platform and k[3] == metric]
            if not keys:
                continue
            scen, series = _groups(keys)
            bars = {}
            for _p, scenario, role, _m in keys:
                rs = summ[(platform, scenario, role, metric)]
                m = statistics.fmean(r["value"] for r in rs)
                sd = statistics.fmean(float(r["labels"]["stdev"]) for r in rs)
                bars[(scenario, role)] = svg.Bar(m, m - sd, m + sd, f"±{sd:.3g} sd, n={len(rs)}")
            out.append(
                svg.bar_chart(
                    f"{platform}: {what} per environment ({unit})", scen, series, bars, unit
                )
            )
    return out


def cov_bars(data) -> list[str]:
    """Per platform and metric: CoV of the cell's 1 s samples, every role, per scenario."""
    summ = _summaries(data, {m for m, _t in COV_METRICS})
    out = []
    for platform in data.platforms:
        for metric, what in COV_METRICS:
            keys = [
                k
                for k in summ
                if k[0] == platform and k[3] == metric
                and any(r["labels"].get("cov") is not None for r in summ[k])
            ]  # fmt: skip
            if not keys:
                continue
            scen, series = _groups(keys)
            bars = {}
            for _p, scenario, role, _m in keys:
                covs = [
                    float(r["labels"]["cov"])
                    for r in summ[(platform, scenario, role, metric)]
                    if r["labels"].get("cov") is not None
                ]
                m = statistics.fmean(covs)
                spread = (min(covs), max(covs)) if len(covs) > 1 else (None, None)
                bars[(scenario, role)] = svg.Bar(m, *spread, f"n={len(covs)} repetitions")
            out.append(
                svg.bar_chart(
                    f"{platform}: coefficient of variation of {what}", scen, series, bars, "CoV"
                )
            )
    return out


def _order(scenario: str) -> tuple:
    kind, _, arg = scenario.partition(":")
    return (kind != "solo", kind, arg.zfill(4))
