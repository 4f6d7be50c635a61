"""Per-step views of sweeps (seeds 000 and 003), from the store's rows only.

A sweep step is one workload intensity held for a while. The papers plot most things against
it: throughput of each environment (seed 000 Figs. 4-6, seed 003 Figs. 15-23), CPU, blocked
and waiting time (seed 003 Table 4, Figs. 5-10), µs per execution and executions per second
(seed 003 Figs. 1-2), reply and transfer time (Table 3). This module gives:

- `sweep_points`: per (platform, test case, scenario, role, file size) the steps of a metric,
  mean and min-max over repetitions; a step with no valid repetition is kept, flagged with
  its reason (the fall after saturation is part of the curve);
- `env_by_step`: an environment's 1 s series (cpu_util, sched_*_pct, exe_per_s...) averaged
  over each step's window, the window taken from the step's own throughput series point;
- `degradation_rows`: seed 003 Table 3, each scenario at solo's offered rate against solo.

Nothing here is averaged across file sizes or across steps.
"""

from __future__ import annotations

import bisect
import statistics
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from .. import labelkeys
from ..results import LOAD_PCT_LABEL, is_solo_peak, shown_scenario
from .colocation import labels_of, lockstep_points, value_order

SOLO = "solo"
SweepKey = tuple[str, str, str, str, Any]  # platform, test case, scenario, role, file size
ENV_STEP_METRICS = (
    "cpu_util",
    "sched_blocked_pct",
    "sched_wait_pct",
    "cpu_us_per_exe",
    "exe_per_s",
)


@dataclass
class StepPoint:
    step: int
    x: float  # intensity in % of the environment's own capacity, else offered req/s
    offered: float | None  # offered req/s (mean over repetitions)
    mean: float
    low: float | None  # min over repetitions (None with one)
    high: float | None
    n: int  # repetitions behind the mean
    invalid: str | None = None  # set when no repetition of the step was valid: the reason
    # cell (one repetition) -> its value among those averaged (the valid ones; with none valid
    # the flagged ones): sums across environments pair the same runs
    by_cell: dict[str, float] = field(default_factory=dict)


def intensity(labels: dict[str, Any]) -> float | None:
    """A step's intensity in % of the environment's own capacity (a `load=PCT` run, or a
    capacity-mode sweep whose parameters were recorded), else None."""
    p = labels.get(labelkeys.ENV_PARAMS) or {}
    step = labels.get(labelkeys.STEP)
    if labels.get(LOAD_PCT_LABEL) is not None:  # one fixed-rate step at PCT % of its solo peak
        return float(labels[LOAD_PCT_LABEL])
    if step is None or p.get("mode", "capacity") != "capacity":
        return None
    if "start_fraction" in p and "step_fraction" in p:
        return 100.0 * (float(p["start_fraction"]) + int(step) * float(p["step_fraction"]))
    return None


def _spread(values: list[float]) -> tuple[float, float | None, float | None]:
    m = statistics.fmean(values)
    return (m, min(values), max(values)) if len(values) > 1 else (m, None, None)


def _reason(r: dict[str, Any], lab: dict[str, Any]) -> str:
    return r.get("invalid_reason") or str(lab.get(labelkeys.INVALID) or "") or "invalid"


def _valid_or_flagged(reps: list[tuple]) -> tuple[list[tuple], str | None]:
    """A step's repetitions (value, valid, reason, ...) to average: the valid ones; with none
    valid, all of them flagged with the first's reason (the fall after saturation is part of
    the curve). Invalid ones never join valid ones in one plain point."""
    valid = [rep for rep in reps if rep[1]]
    return (valid, None) if valid else (reps, reps[0][2])


def sweep_points(
    rows: Iterable[dict[str, Any]], metric: str = "reply_rate", x: str = "intensity"
) -> dict[SweepKey, list[StepPoint]]:
    """Steps of `metric` per sweep; x = "intensity" (% of own capacity where recorded, else
    the offered rate) or "offered" (req/s)."""
    # key -> step -> [(value, valid, reason, offered, intensity, cell)]
    acc: dict[SweepKey, dict[int, list[tuple]]] = defaultdict(lambda: defaultdict(list))
    every = list(rows)
    rows = [r for r in every if r["metric"] == metric]
    beside = _beside_sizes(rows, every)
    for r, there in zip(rows, beside, strict=True):
        if r["role"].startswith("client") or r["role"] == "host":
            continue
        lab = labels_of(r)
        if lab.get(labelkeys.STEP) is None:
            continue
        scenario = shown_scenario(r["scenario"], lab)
        size, role = lab.get(labelkeys.FILE_SIZE_KB), r["role"]
        if there is not None:
            # a different:SIZE neighbour runs its size once beside each of the target's: one
            # sweep per target size, never pooled as if they were repetitions
            role = beside_role(role, there)
        key = (r["platform"], r["test_case"], scenario, role, size)
        reason = _reason(r, lab)
        acc[key][int(lab[labelkeys.STEP])].append(
            (
                float(r["value"]),
                bool(r["valid"]),
                reason,
                lab.get(labelkeys.OFFERED_RATE),
                intensity(lab),
                r.get("cell_id"),
            )
        )
    out: dict[SweepKey, list[StepPoint]] = {}
    for key, steps in acc.items():
        pts = []
        for step, reps in sorted(steps.items()):
            used, why = _valid_or_flagged(reps)
            mean, low, high = _spread([rep[0] for rep in used])
            offered = [float(rep[3]) for rep in used if rep[3] is not None]
            off = statistics.fmean(offered) if offered else None
            pct = next((rep[4] for rep in used if rep[4] is not None), None)
            at = pct if x == "intensity" and pct is not None else off
            if at is None:
                continue
            by_cell = {rep[5]: rep[0] for rep in used}
            pts.append(StepPoint(step, at, off, mean, low, high, len(used), why, by_cell))
        out[key] = pts
    return out


def beside_role(role: str, target_size: Any) -> str:
    """The sweep key's role of `role`'s run beside the target's sweep of `target_size`."""
    return f"{role} beside {target_size} KB"


def _beside_sizes(rows: list[dict[str, Any]], every: list[dict[str, Any]]) -> list[Any]:
    """Per row (of one metric): the target's file size its step ran beside, for an
    environment that served another size than the target at some step of the cell
    (different:SIZE); paired by lockstep step (colocation.lockstep_points), None where it
    cannot be and for every other row (the target, neighbours serving the target's sizes).
    The target's size at a step is told by any of its samples there (`every`: all metrics'):
    a metric stored only at some steps (errors_by_class) may have none of the target's."""
    # cell -> the target's (lockstep step, size); (cell, role) -> [(row index, step, size)]
    target: dict[Any, list[tuple[Any, Any]]] = defaultdict(list)
    for r in every:
        if r["role"] == "target":
            lab = labels_of(r)
            target[r.get("cell_id")].append(
                (lab.get(labelkeys.LOCKSTEP_STEP), lab.get(labelkeys.FILE_SIZE_KB))
            )
    others: dict[tuple[Any, str], list[tuple[int, Any, Any]]] = defaultdict(list)
    for i, r in enumerate(rows):
        if r["role"] != "target":
            lab = labels_of(r)
            others[(r.get("cell_id"), r["role"])].append(
                (i, lab.get(labelkeys.LOCKSTEP_STEP), lab.get(labelkeys.FILE_SIZE_KB))
            )
    out: list[Any] = [None] * len(rows)
    for (cell, _role), own in others.items():
        pts = lockstep_points([step for _i, step, _s in own], target.get(cell, []))
        if pts is None:
            continue  # not in lockstep: nothing to pair by
        paired = list(zip(pts, own, strict=True))
        if all(p is None or p == size for p, (_i, _step, size) in paired):
            continue  # it served the target's sizes: its own sweeps tell its runs apart
        for p, (i, _step, _size) in paired:
            out[i] = p
    return out


def _windows(points: list[tuple[float, float]]) -> list[tuple[float, float]]:
    """Each step's (start, end] from its throughput series points (one at each step's end)."""
    ts = sorted(t for t, _v in points)
    gaps = [b - a for a, b in zip(ts, ts[1:], strict=False)]
    gap = statistics.median(gaps) if gaps else 2.0
    return [(t - gap, t) for t in ts]


def env_by_step(
    samples: list[dict[str, Any]],
    series: list[dict[str, Any]],
    metrics: Iterable[str] = ENV_STEP_METRICS,
) -> dict[tuple[SweepKey, str], list[StepPoint]]:
    """(sweep key, metric) -> the metric's mean over each step's window, per role of each
    cell, then mean and min-max over repetitions; x is the target's offered rate, averaged over
    the repetitions (each calibrates its own schedule). The windows are the target's steps
    (pair scenarios step in lockstep, so they are every environment's).
    A step whose target sample is invalid (window not shared, overload) is one for every role
    of the cell: flagged with its reason as the throughput lines, never averaged with valid ones."""
    wanted = set(metrics)
    x_of: dict[tuple[str, Any, int], float] = {}
    why_of: dict[tuple[str, Any, int], tuple[bool, str]] = {}  # the target's step sample
    for r in samples:
        lab = labels_of(r)
        if (
            r["metric"] == "reply_rate"
            and r["role"] == "target"
            and lab.get(labelkeys.STEP) is not None
        ):
            off = lab.get(labelkeys.OFFERED_RATE)
            if off is not None:  # x: the target's offered rate (the papers' request rate)
                at = (r["cell_id"], lab.get(labelkeys.FILE_SIZE_KB), int(lab[labelkeys.STEP]))
                x_of[at] = float(off)
                why_of[at] = (bool(r["valid"]), _reason(r, lab))
    by_cell: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for p in series:
        by_cell[p["cell_id"]].append(p)
    # (sweep key, metric) -> step -> [(value, valid, reason)], one per cell
    acc: dict[tuple[SweepKey, str], dict[int, list[tuple]]] = defaultdict(lambda: defaultdict(list))
    xs: dict[tuple[SweepKey, str], dict[int, list[float]]] = defaultdict(lambda: defaultdict(list))
    for cell_id, pts in by_cell.items():
        # the target's throughput series: metric "reply_rate.<size>KB", one point per step
        sizes: dict[str, list[tuple[float, float]]] = defaultdict(list)
        for p in pts:
            if p["role"] == "target" and p["metric"].startswith("reply_rate."):
                sizes[p["metric"].split(".", 1)[1]].append((p["t"], p["value"]))
        within = _Within([p for p in pts if p["metric"] in wanted and p["role"] != "host"])
        for size_txt, tpts in sizes.items():
            size = _size(size_txt)
            for step, (t0, t1) in enumerate(_windows(tpts)):
                at = x_of.get((cell_id, size, step))
                if at is None:
                    continue
                inside: dict[tuple[str, str], list[float]] = defaultdict(list)
                for p in within(t0, t1):
                    inside[(p["role"], p["metric"])].append(p["value"])
                for (role, metric), vals in inside.items():
                    cell = pts[0]
                    sweep = (cell["platform"], cell["test_case"], cell["scenario"], role, size)
                    key = (sweep, metric)
                    acc[key][step].append((statistics.fmean(vals), *why_of[(cell_id, size, step)]))
                    xs[key][step].append(at)
    out: dict[tuple[SweepKey, str], list[StepPoint]] = {}
    for key, steps in acc.items():
        out[key] = []
        for step, reps in sorted(steps.items()):
            used, why = _valid_or_flagged(reps)
            x = statistics.fmean(xs[key][step])
            out[key].append(StepPoint(step, x, x, *_spread([v[0] for v in used]), len(used), why))
    return out


class _Within:
    """A cell's series points in a window (t0, t1], in their stored order. Found by time
    (bisection), not by reading every point of the cell for each of its 70 step windows."""

    def __init__(self, points: list[dict[str, Any]]) -> None:
        self.points = points
        self.by_time = sorted(range(len(points)), key=lambda i: points[i]["t"])
        self.times = [points[i]["t"] for i in self.by_time]

    def __call__(self, t0: float, t1: float) -> list[dict[str, Any]]:
        lo, hi = bisect.bisect_right(self.times, t0), bisect.bisect_right(self.times, t1)
        return [self.points[i] for i in sorted(self.by_time[lo:hi])]


def _size(text: str) -> Any:
    """'1KB' -> 1 (the file_size_kb label's value)."""
    body = text.removesuffix("KB")
    try:
        return int(body)
    except ValueError:
        try:
            return float(body)
        except ValueError:
            return text


def _deg(value: float | None, solo: float | None, higher_is_better: bool) -> float | None:
    if value is None or not solo:
        return None
    r = value / solo
    return 100.0 * (1.0 - r) if higher_is_better else 100.0 * (r - 1.0)


@dataclass
class DegradationRow:
    platform: str
    size: Any
    step: int
    x: float
    scenario: str
    throughput: tuple[float | None, float | None, float | None]  # solo, scenario, deg %
    reply_ms: tuple[float | None, float | None, float | None]
    transfer_ms: tuple[float | None, float | None, float | None]
    invalid: bool  # either side of the comparison had no valid repetition


def _bracket(points: list[StepPoint], x: float, tolerance: float) -> list[tuple[StepPoint, float]]:
    """(step, weight) pairs that give a curve's value at offered rate `x`: its step at x
    (within `tolerance` of it), else its two steps around x, weighted linearly; none
    outside the curve."""
    pts = sorted(points, key=lambda p: p.x)
    if hit := [p for p in pts if abs(p.x - x) <= tolerance * x]:
        return [(min(hit, key=lambda p: abs(p.x - x)), 1.0)]
    for lo, hi in zip(pts, pts[1:], strict=False):
        if lo.x < x < hi.x:
            w = (x - lo.x) / (hi.x - lo.x)
            return [(lo, 1.0 - w), (hi, w)]
    return []


def degradation_rows(
    rows: list[dict[str, Any]], steps_per_size: int = 3, tolerance: float = 0.01
) -> list[DegradationRow]:
    """Seed 003 Table 3: per platform and file size, at a low, a middle and the highest step
    valid in solo, each scenario's target throughput, reply time and transfer time at the
    same offered rate, against solo's, with degradation % (positive = worse). Capacity-mode
    sweeps step by each cell's own probe and lockstep schedules by each environment's solo
    peak, so steps rarely share a rate: the scenario's value is read off its curve at solo's
    rate (a step within `tolerance` of it, else linearly between its two steps around it;
    outside its curve, no row). Its nearest step within 10 % compared 90 req/s offered
    against solo's 100 and read the 10 % fewer requests offered as 10 % degradation."""
    metrics = {"reply_rate": True, "reply_time_ms": False, "transfer_time_ms": False}
    pts = {m: sweep_points(rows, m, x="offered") for m in metrics}

    def at(metric: str, key: SweepKey, step: int) -> StepPoint | None:
        return next((p for p in pts[metric].get(key, []) if p.step == step), None)

    out = []
    # by platform, test case, scenario, role, then size as a number (1, 4, 10 KB, not 1, 10, 4)
    order = sorted(pts["reply_rate"], key=lambda k: (*map(str, k[:4]), value_order(k[4])))
    for key in order:
        solo_pts = pts["reply_rate"][key]
        platform, tc, scenario, role, size = key
        if scenario != SOLO or role != "target":
            continue
        valid = [p for p in solo_pts if p.invalid is None]
        if not valid:
            continue
        idx = sorted({0, len(valid) // 2, len(valid) - 1})[:steps_per_size]
        others = sorted(
            {k[2] for k in pts["reply_rate"] if k[:2] == (platform, tc) and k[3] == "target"}
            - {SOLO}
        )
        others = [sc for sc in others if not is_solo_peak(sc)]  # the lockstep reference
        for solo_pt in (valid[i] for i in idx):
            for sc in others:
                other = (platform, tc, sc, "target", size)
                near = _bracket(pts["reply_rate"].get(other, []), solo_pt.x, tolerance)
                if not near:
                    continue
                step = max(near, key=lambda pw: pw[1])[0].step
                cols, bad = [], False
                for metric, hib in metrics.items():
                    a = at(metric, key, solo_pt.step)
                    bs = [(at(metric, other, p.step), w) for p, w in near if w > 0]
                    bad = bad or any(b is not None and b.invalid is not None for b, _w in bs)
                    va = a.mean if a else None
                    got = [(b.mean, w) for b, w in bs if b is not None]
                    vb = sum(v * w for v, w in got) if len(got) == len(bs) else None
                    cols.append((va, vb, _deg(vb, va, hib)))
                out.append(DegradationRow(platform, size, step, solo_pt.x, sc, *cols, bad))
    return out


def concurrent_sweeps(series: list[dict[str, Any]]) -> dict[tuple[str, str, str, Any], set]:
    """(platform, test case, scenario, target's file size) -> {(role, file size)} of the
    sweeps that ran at the same time as the target's sweep of that size (their throughput
    series overlap in time in some cell): a `different:50` neighbour serves 50 KB while the
    target sweeps 1 KB, and the target's own 50 KB sweep may run with no neighbour at all."""
    spans: dict[str, dict[tuple[str, Any], tuple[float, float]]] = defaultdict(dict)
    where: dict[str, tuple[str, str, str]] = {}
    for p in series:
        if not p["metric"].startswith("reply_rate.") or p["role"].startswith("client"):
            continue
        key = (p["role"], _size(p["metric"].split(".", 1)[1]))
        t0, t1 = spans[p["cell_id"]].get(key, (p["t"], p["t"]))
        spans[p["cell_id"]][key] = (min(t0, p["t"]), max(t1, p["t"]))
        where[p["cell_id"]] = (p["platform"], p["test_case"], p["scenario"])
    out: dict[tuple[str, str, str, Any], set] = defaultdict(set)
    for cell, by in spans.items():
        for (role, size), (a0, a1) in by.items():
            if role != "target":
                continue
            out[(*where[cell], size)] |= set()  # recorded, even when it ran alone
            for (other, osize), (b0, b1) in by.items():
                if other != "target" and a0 <= b1 and b0 <= a1:
                    out[(*where[cell], size)].add((other, osize))
    return dict(out)
