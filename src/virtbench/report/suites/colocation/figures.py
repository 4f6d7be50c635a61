"""Figure shapes of seeds 000 and 003 for co-location cells, from the store only.

- start-up storms (seed 003 Fig. 14): one chart per storm (one per served size), the
  target's throughput over time normalized to the rate it was offered (a fixed-rate target,
  load=PCT: the paper's baseline), else to the run's solo at that size, else to its mean
  before the first newcomer started (raw when one series spans several file sizes, as in
  cells from before one storm per size), each newcomer's ready time a vertical line named
  in the legend with its start and start-up time;
- per-environment scheduler metrics (Xenmon/Xentop columns; seed 000 Fig. 2-4, seed 003 Fig.
  1-4, 25-29): one row per cell group, served point (file size...) and role, means over
  repetitions with their spread.
"""

from __future__ import annotations

import statistics
from collections import defaultdict
from dataclasses import dataclass
from typing import Any

from .... import labelkeys
from ....analysis.colocation import value_order
from ... import html, svg
from ..web import client_text
from . import roles

# workload series that are a throughput (first match wins), then the environment's own bytes
THROUGHPUT_SERIES = ("reply_rate", "requests_per_s", "throughput", "events_per_s")
ENV_METRICS = (
    ("cpu_util", "CPU %"),
    ("vcpu_cpu_util", "vCPU %"),
    ("backend_cpu_util", "QEMU back end %"),
    ("sched_wait_pct", "wait %"),
    ("sched_blocked_pct", "blocked %"),
    ("exe_per_s", "exe/s"),
    ("cpu_us_per_exe", "µs/exe"),
    ("net_tx_bytes_per_s", "net tx B/s"),
    ("mem_mib", "MiB"),
)
HOST_METRICS = (("softirq_pct", "softirq %"), ("ksoftirqd_util", "ksoftirqd %"))
MAX_STARTUP_CHARTS = 12


def _kind(scenario: str) -> str:
    return scenario.split(":")[0]


def _throughput_metric(points: list[dict[str, Any]]) -> str | None:
    """The workload's own throughput series, else the bytes the environment sent if it
    serves the network (> 10 kB/s on average), else its CPU utilization."""
    metrics = list(dict.fromkeys(p["metric"] for p in points))
    for prefix in THROUGHPUT_SERIES:
        for m in metrics:
            if m.startswith(prefix):
                return m
    tx = [p["value"] for p in points if p["metric"] == "net_tx_bytes_per_s"]
    if tx and statistics.fmean(tx) > 10_000:
        return "net_tx_bytes_per_s"
    return "cpu_util" if "cpu_util" in metrics else None


def startup_charts(data) -> tuple[list[str], str]:
    """One chart per start-up storm, and a note on the storms not drawn. A cell has one
    storm per served size (scenarios/colocation_engine.run); per cell the first and the last
    size are drawn (seed 003 Fig. 14: 1 kB and 70 kB), first repetitions first, at most
    MAX_STARTUP_CHARTS."""
    cells = [c for c in data.cells if _kind(c.scenario) == "startup"]
    if not cells:
        return [], ""
    by_cell: dict[str, list[dict[str, Any]]] = defaultdict(list)
    wanted = {c.cell_id for c in cells}
    for p in data.series:
        if p["cell_id"] in wanted:
            by_cell[p["cell_id"]].append(p)
    newcomers: dict[str, list[dict[str, Any]]] = defaultdict(list)
    sizes: dict[str, set[Any]] = defaultdict(set)  # the file sizes the target served
    fixed_steps: dict[str, list[dict[str, Any]]] = defaultdict(list)  # load=PCT targets'
    for s in data.samples:
        if s["cell_id"] in wanted and s["metric"] == "startup_s":
            newcomers[s["cell_id"]].append(s)
        elif (
            s["cell_id"] in wanted
            and s["role"] == "target"
            and labelkeys.FILE_SIZE_KB in s["labels"]
        ):
            sizes[s["cell_id"]].add(s["labels"][labelkeys.FILE_SIZE_KB])
            if s["labels"].get(labelkeys.PHASE) == "fixed-rate":
                fixed_steps[s["cell_id"]].append(s)
    out, storms, fixed_drawn = [], 0, False
    for c in sorted(cells, key=lambda c: (c.repetition, c.seq)):
        # no newcomer ever ready (all failed to start): the target's line alone, as before
        scenes = _scenes(newcomers[c.cell_id]) or [(None, [])]
        storms += len(scenes)
        for span, news in scenes[:1] + scenes[1:][-1:]:
            if len(out) == MAX_STARTUP_CHARTS:
                break
            pts = by_cell[c.cell_id]
            if span is not None:  # this storm's size, while the target ran (it idles after)
                run = news[0]["labels"].get(labelkeys.TARGET_RUN_S) or span
                pts = [p for p in pts if run[0] < p["t"] <= run[1]]
                served = {news[0]["labels"].get(labelkeys.FILE_SIZE_KB)} - {None}
            else:
                served = sizes[c.cell_id]
            fixed = fixed_rate(fixed_steps[c.cell_id], served)
            chart = _startup_chart(data, c, pts, news, served, fixed)
            if chart:
                out.append(chart)
                fixed_drawn = fixed_drawn or fixed is not None
    left = storms - len(out)
    notes = []
    if fixed_drawn:
        notes.append(
            "A storm whose target ran at a fixed rate (load=PCT) is divided by its offered "
            "rate, seed 003 Fig. 14's baseline (1.0 = every request offered was served), not "
            "by its solo maximum; its 1 s line is the bytes it sent at its step's bytes per "
            "reply. Other storms are divided by the run's solo mean at that size."
        )
    if left > 0:
        notes.append(
            f"{left} more start-up storm(s) not drawn (per cell the first and last size, "
            "first repetitions first); the co-location table gives every size's figure."
        )
    return out, " ".join(notes)


@dataclass(frozen=True)
class Offered:
    """A target's fixed-rate step at one size (httperf's `rate`, set by load=PCT)."""

    rate: float  # req/s offered
    replies: float  # req/s served over the step
    load_pct: float | None  # % of its solo peak (load=PCT), None: a rate set in the campaign
    point_s: float | None  # the step's length
    tx_mean: float | None  # its bytes sent per second over the step (the 1 s summary)

    def text(self) -> str:
        pct = f" ({self.load_pct:g} % of its solo peak)" if self.load_pct is not None else ""
        return f"the offered {self.rate:,.0f} req/s{pct}"


def fixed_rate(steps: list[dict[str, Any]], served: set[Any]) -> Offered | None:
    """The target's step at the one size served when it ran at a fixed rate, from its cell's
    target samples of phase fixed-rate (`steps`); None for a sweep, wrk or several sizes."""
    if len(served) != 1:
        return None
    (size,) = served
    found: dict[str, dict[str, Any]] = {}
    for s in steps:
        lab = s["labels"]
        if lab.get(labelkeys.FILE_SIZE_KB) == size:
            found.setdefault(("mean " if labelkeys.STDEV in lab else "") + s["metric"], s)
    if "offered_rate" not in found or "reply_rate" not in found:
        return None
    step, tx = found["reply_rate"], found.get("mean net_tx_bytes_per_s")
    return Offered(
        found["offered_rate"]["value"],
        step["value"],
        step["labels"].get(labelkeys.LOAD_PCT),
        step["labels"].get(labelkeys.POINT_S),
        tx["value"] if tx else None,
    )


def _fixed_line(
    target: list[dict[str, Any]], fixed: Offered, end: float | None
) -> tuple[list[tuple[float, float]], float] | None:
    """A fixed-rate target's 1 s line: the bytes it sent each second of its step (the
    workload records one figure per step), and the bytes per second that the offered rate
    is at the step's own bytes per reply; None without those figures."""
    if end is None or not fixed.point_s or not fixed.tx_mean or fixed.replies <= 0:
        return None
    start = end - fixed.point_s
    # a reading covers the second before it: those mostly inside the step (not nginx's set-up)
    pts = sorted(
        (p["t"], p["value"])
        for p in target
        if p["metric"] == "net_tx_bytes_per_s" and start + 0.5 <= p["t"] <= end + 0.5
    )
    if len(pts) < 2:
        return None
    return pts, fixed.tx_mean / fixed.replies * fixed.rate


def startup_table(data) -> str:
    """Seed 003 Fig. 14's right axis: how long the newcomers took to start beside the target,
    per target platform, scenario, the size the target served meanwhile and newcomer platform:
    mean ± sd over repetitions and newcomers."""
    acc: dict[tuple[str, str, str, Any, str], list[float]] = defaultdict(list)
    invalid: dict[tuple[str, str, str, Any, str], int] = defaultdict(int)
    loaded: dict[tuple[str, str, str, Any, str], list[float]] = defaultdict(list)
    for s in data.samples:
        if s["metric"] == "startup_s" and _kind(s["scenario"]) == "startup":
            lab = s["labels"]
            size = lab.get(labelkeys.FILE_SIZE_KB)  # None: a cell from before one storm per size
            key = (s["platform"], s.get("test_case", ""), s["scenario"], size,
                   lab.get(labelkeys.ENV_PLATFORM) or "?")  # fmt: skip
            acc[key]  # a row also when all its samples are invalid
            if s.get("valid", True):  # a failed cell's start-ups: flagged, not averaged
                acc[key].append(s["value"])
                if labelkeys.UNDER_LOAD_S in lab and s["value"] > 0:
                    loaded[key].append(100.0 * lab[labelkeys.UNDER_LOAD_S] / s["value"])
            else:
                invalid[key] += 1
    if not acc:
        return ""
    loads = _target_loads(data.samples)
    rows = [
        [platform, tc, scenario, (f"{size} KB" if size is not None else "all sizes (one storm)")
         + loads.get((platform, tc, scenario, size), ""), newcomer,
         f"{_fmt(v)} s" if v else "–", f"{_fmt(loaded[key])} %" if loaded[key] else "–",
         str(len(v)), str(invalid.get(key, 0))]
        for key, v in sorted(
            acc.items(),
            key=lambda kv: (kv[0][0], kv[0][1], kv[0][2], value_order(kv[0][3]), kv[0][4]),
        )
        for platform, tc, scenario, size, newcomer in [key]
    ]  # fmt: skip
    headers = ["target platform", "test case", "scenario", "target served", "newcomer",
               "start-up", "of it beside the target's load", "n", "invalid"]  # fmt: skip
    return (
        "<h3>Newcomers' start-up time beside the loaded target (seed 003 Fig. 14, right axis; "
        "mean ± sd over repetitions and newcomers)</h3><p class='note'>A start-up that "
        "outlasts the target's run at that size ran partly beside an idle target: the share "
        "says how much; give the target a run longer than DELAY_S plus a boot.</p>"
        + str(html.scroll(str(html.table(headers, rows))))
    )


def _target_loads(samples: list[dict[str, Any]]) -> dict[tuple[str, str, str, Any], str]:
    """(platform, test case, scenario, size) of start-up cells whose target ran at load=PCT ->
    " at 900 req/s (90 % of its solo peak)": the rate offered beside the storm."""
    rates: dict[tuple[str, str, str, Any], set[float]] = defaultdict(set)
    pcts: dict[tuple[str, str, str, Any], set[Any]] = defaultdict(set)
    clients: dict[tuple[str, str, str, Any], set[str]] = defaultdict(set)
    for s in samples:
        lab = s["labels"]
        if (
            s["metric"] == "offered_rate"
            and s["role"] == "target"
            and lab.get(labelkeys.LOAD_PCT) is not None
            and _kind(s.get("scenario", "")) == "startup"
        ):
            key = (
                s["platform"],
                s.get("test_case", ""),
                s["scenario"],
                lab.get(labelkeys.FILE_SIZE_KB),
            )
            rates[key].add(s["value"])
            pcts[key].add(lab[labelkeys.LOAD_PCT])
            if (text := client_text(lab)) is not None:
                clients[key].add(text)
    out = {}
    for key, values in rates.items():
        lo, hi = min(values), max(values)  # one per run (its peak is measured once)
        rate = f"{lo:,.0f}" + (f"–{hi:,.0f}" if hi - lo >= 0.5 else "")
        pct = ", ".join(f"{p:g}" for p in sorted(pcts[key]))
        out[key] = f" at {rate} req/s ({pct} % of its solo peak)"
        if clients[key]:  # what the storm's reply times were measured with
            out[key] += f" by {' / '.join(sorted(clients[key]))}"
    return out


def _scenes(news: list[dict[str, Any]]) -> list[tuple[tuple[float, float] | None, list]]:
    """The cell's storms in time order: (span on the cell's axis, its newcomers). Cells from
    before one storm per size have no span: one storm over the whole cell."""
    groups: dict[tuple[float, float] | None, list[dict[str, Any]]] = defaultdict(list)
    for s in news:
        span = s["labels"].get(labelkeys.SCENE_S)
        groups[tuple(span) if span else None].append(s)
    order = sorted(groups, key=lambda k: (k is not None, k or (0.0, 0.0)))
    return [
        (k, sorted(groups[k], key=lambda s: s["labels"].get(labelkeys.READY_AT_S, 0)))
        for k in order
    ]


def _startup_chart(
    data, c, points, news, served: set[Any], fixed: Offered | None = None
) -> str | None:
    target = [p for p in points if p["role"] == "target"]
    metric = _throughput_metric(target)
    if metric is None:
        return None
    pts = sorted((p["t"], p["value"]) for p in target if p["metric"] == metric)
    offered = {
        p["t"]: p["value"]
        for p in target
        if p["metric"] == metric.replace("reply_rate", "offered_rate", 1) and p["value"] > 0
    }
    # one series over sizes served one after another (wrk: the bytes sent)
    mixed = len(served) > 1 and not metric.startswith("reply_rate.")
    line = _fixed_line(target, fixed, max(offered, default=None)) if fixed else None
    if fixed is not None and line is not None:
        # seed 003 Fig. 14: a fixed rate, ~90 % of the maximum, is the baseline (1.0 = all
        # served), not the solo maximum; drawn each second from the bytes the target sent
        metric, (pts, base) = "net_tx_bytes_per_s", line
        ys = [v / base for _t, v in pts]
        per_reply = base / fixed.rate
        how = f"{fixed.text()} = {base / 1e6:.3g} MB/s at {per_reply:,.0f} B per reply"
    elif metric.startswith("reply_rate") and all(t in offered for t, _v in pts):
        # seed 003 Fig. 14: replies ÷ the rate offered at the same moment (1.0 = all
        # served), which holds for a sweep whose rate rises step by step
        ys = [v / offered[t] for t, v in pts]
        base, how = 1.0, fixed.text() if fixed else "the offered rate at each step"
    elif mixed:
        # a 1.0 line from the first size made a 70 KB part read several times "normal"
        # while it sent a fraction of its solo bytes (docs/code-measurements.md): drawn raw,
        # in its unit, and the sizes said
        base, how = None, ""
        ys = [v for _t, v in pts]
    else:
        # seed 003 Fig. 14 divides by the rate the target served alone: the run's solo
        # cells at this size; a 2 s stretch before the storm is one ramp-up reading
        base, how = solo_base(data, c, metric, served)
        if base is None:
            base, how = startup_base(pts, news)
        ys = [v / base if base else v for _t, v in pts]
    line = svg.Line(
        f"target {metric}" + (f" ÷ {how}" if base else ""),
        data.colour(c.platform),
        [(t, y, None, None) for (t, _v), y in zip(pts, ys, strict=True)],
    )
    top = max(ys, default=1.0) or 1.0
    lines = [line]
    for i, s in enumerate(news):
        lab = s["labels"]
        started = lab.get(labelkeys.STARTED_AT_S)
        t1 = lab.get(labelkeys.READY_AT_S, (started or 0.0) + s["value"])
        if started is None:
            started = t1 - s["value"]
        colour = svg.PALETTE[(i + 3) % len(svg.PALETTE)]
        name = (
            f"{s['role']} ({lab.get(labelkeys.ENV_PLATFORM) or '?'}): started {started:.1f} s, "
            f"ready {t1:.1f} s ({s['value']:.1f} s)"
        )
        # every newcomer is named: a vertical line at the moment it ran its first command
        lines.append(svg.Line(name, colour, [(t1, 0.0, None, None), (t1, top, None, None)]))
    title = f"{c.platform} · {c.test_case} · {c.scenario} · rep {c.repetition}"
    listed = ", ".join(f"{x} KB" for x in sorted(served, key=value_order))
    if mixed:
        title += f" · {listed} one after another (raw, not normalized)"
    elif listed:
        title += f" · {listed}"
    y_label = "normalized throughput" if base else metric
    if fixed is not None and base:
        y_label = "throughput ÷ offered rate"
    return svg.line_chart(title, lines, "seconds since the cell started", y_label)


def solo_base(data, c, metric: str, served: set[Any]) -> tuple[float | None, str]:
    """The mean of `metric` for the target role in the run's solo cells of c's platform and
    test case, at the one size served (their per-point summaries), else None."""
    if len(served) != 1:
        return None, ""
    (size,) = served
    values = [
        s["value"]
        for s in data.samples
        if s["metric"] == metric
        and s["role"] == "target"
        and _kind(s.get("scenario", "")) == "solo"
        and s.get("platform") == c.platform
        and s.get("test_case", c.test_case) == c.test_case
        and labelkeys.STDEV in s["labels"]
        and s["labels"].get(labelkeys.FILE_SIZE_KB) == size
        and s.get("valid", True)
    ]
    if not values:
        return None, ""
    return statistics.fmean(values), f"solo's mean at {size} KB ({len(values)} run(s))"


def startup_base(
    pts: list[tuple[float, float]], news: list[dict[str, Any]]
) -> tuple[float | None, str]:
    """The 1.0 line of a start-up chart: the target's mean throughput before the first
    newcomer started (seed 003 Fig. 14 divides by the rate it was serving), else after the
    last one was ready, else over the run. Ramp-up zeros are left out. A median over a run
    whose throughput sat near zero half the time made spikes (docs/code-measurements.md); a
    mean over the undisturbed part does not."""
    starts = [
        s["labels"].get(
            labelkeys.STARTED_AT_S, s["labels"].get(labelkeys.READY_AT_S, 0.0) - s["value"]
        )
        for s in news
    ]
    readies = [s["labels"].get(labelkeys.READY_AT_S, 0.0) for s in news]
    running = [(t, v) for t, v in pts if v > 0]
    parts = []
    if starts:
        parts.append(
            ([v for t, v in running if t < min(starts)], "its mean before the first start")
        )
        parts.append(([v for t, v in running if t > max(readies)], "its mean after all were ready"))
    parts.append(([v for _t, v in running], "its mean over the run"))
    for values, how in parts:
        if len(values) >= 2:
            return statistics.fmean(values), how
    return None, ""


def _fmt(values: list[float]) -> str:
    if not values:
        return "–"
    m = statistics.fmean(values)
    sd = statistics.stdev(values) if len(values) > 1 else 0.0
    return f"{m:.3g} ± {sd:.2g}" if len(values) > 1 else f"{m:.3g}"


def env_metrics_table(data) -> str:
    """Per-environment scheduler/resource means (the cell summaries), per cell group and
    served point (test case, file size...): never a mean across points."""
    # (platform, test case, point, scenario, role) -> metric -> [per-repetition mean]
    acc: dict[tuple[str, str, Any, str, str], dict[str, list[float]]] = defaultdict(
        lambda: defaultdict(list)
    )
    left_out: dict[tuple[str, str, Any, str, str], int] = defaultdict(int)
    names = dict(ENV_METRICS + HOST_METRICS)
    invalid = roles.unplanned(data)
    for s in data.samples:
        if (
            s["metric"] in names
            and labelkeys.STDEV in s["labels"]
            and _kind(s["scenario"]) != "solo"
        ):
            point = roles.sample_point(data, s)
            key = (s["platform"], s["test_case"], point, s["scenario"], s["role"])
            if invalid(s):  # counted and said, never averaged in
                left_out[key] += s["metric"] == "cpu_util"
                acc.setdefault(key, defaultdict(list))
                continue
            acc[key][s["metric"]].append(s["value"])
    if not acc:
        return ""
    rows = []
    for (platform, tc, point, scenario, role), metrics in sorted(acc.items(), key=_table_order):
        cols = HOST_METRICS if role == "host" else ENV_METRICS
        cells = [f"{names[m]} {_fmt(metrics[m])}" for m, _ in cols if metrics.get(m)]
        key = (platform, tc, point, scenario, role)
        if left_out.get(key):
            cells.append(f"{left_out[key]} repetition(s) left out: the target's result invalid")
        where = " · ".join(x for x in (tc, roles.point_text(point)) if x)
        rows.append([platform, where, scenario, role, "; ".join(cells) or "–"])
    headers = ["target platform", "test case · point", "scenario", "role", "means"]
    return (
        "<h3>Per-environment scheduler metrics (Xenmon/Xentop analogue; mean ± sd over "
        "repetitions of the 1 s samples of each served point)</h3>"
        + str(html.scroll(str(html.table(headers, rows))))
    )


def _table_order(kv: tuple) -> tuple:
    platform, tc, point, scenario, role = kv[0]
    return (platform, tc, [value_order(v) for _k, v in point], scenario, role)
