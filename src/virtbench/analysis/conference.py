"""The conference suite's figures (seed 002's macro benchmark) from a run's sample rows:
resource curves against connected users, users served before saturation, and the cost per
user (the slope of a resource over the user counts one cell served, one slope per
repetition so the CI is over repetitions).

Reads store rows only (the export contract's columns plus labels): the environment's CPU and
memory are the sampler's per-point summaries (metrics/sampler.py, label `users`), the viewer
figures and the server's bytes are the workload's samples.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from .. import labelkeys, suites
from .stats import Summary, summarize

SUITE = suites.CONFERENCE
USERS = labelkeys.USERS
SATURATED = labelkeys.SATURATED  # a step measured past the server's saturation
# a step whose server ran at its CPU budget (throttled by its CFS quota): it still
# served its viewers, but its CPU is the budget's, not the users' cost
BUDGET_BOUND = labelkeys.BUDGET_BOUND
THROTTLED = labelkeys.CPU_THROTTLED  # the step's share of throttled CFS periods (when counted)
# a step whose CPU reached this share of its platform's quota counts as at its budget where
# no throttle count says so (a run whose counters missed the group holding the quota)
AT_BUDGET = 0.9


def _users(row: dict[str, Any]) -> int | None:
    u = row["labels"].get(labelkeys.USERS)
    return int(u) if isinstance(u, int | float) and not isinstance(u, bool) else None


def rows_of(samples: Iterable[dict[str, Any]]) -> list[dict[str, Any]]:
    return [r for r in samples if r["suite"] == SUITE]


def excluded_steps(rows: list[dict[str, Any]]) -> set[tuple[str, int]]:
    """(cell, users) of steps that are no cost figure: invalid (a saturated client, an
    unfinished cell) or past the server's saturation."""
    out = set()
    for r in rows:
        u = _users(r)
        if u is not None and (not r["valid"] or r["labels"].get(labelkeys.SATURATED)):
            out.add((r["cell_id"], u))
    return out


def saturated_steps(rows: list[dict[str, Any]]) -> set[tuple[str, int]]:
    """(cell, users) of valid steps measured past the server's saturation."""
    return {
        (r["cell_id"], u)
        for r in rows
        if (u := _users(r)) is not None and r["valid"] and r["labels"].get(labelkeys.SATURATED)
    }


def curve(
    rows: list[dict[str, Any]], metric: str, role: str = "target", past: bool = False
) -> dict[str, dict[int, list[float]]]:
    """platform -> users -> the metric's value in each repetition: of the valid steps before
    saturation, or (`past`) of the steps measured past it (drawn as marked points)."""
    skip, over = excluded_steps(rows), saturated_steps(rows)
    out: dict[str, dict[int, list[float]]] = defaultdict(lambda: defaultdict(list))
    for r in rows:
        u = _users(r)
        if r["metric"] != metric or r["role"] != role or u is None or not r["valid"]:
            continue
        step = (r["cell_id"], u)
        if (step not in over) if past else (step in skip):
            continue
        out[r["platform"]][u].append(float(r["value"]))
    return {p: dict(v) for p, v in out.items()}


def slope(points: list[tuple[float, float]]) -> float | None:
    """Least-squares slope of y over x (None: fewer than two distinct x)."""
    if len({x for x, _ in points}) < 2:
        return None
    n = len(points)
    mx = sum(x for x, _ in points) / n
    my = sum(y for _, y in points) / n
    sxx = sum((x - mx) ** 2 for x, _ in points)
    return sum((x - mx) * (y - my) for x, y in points) / sxx


def budget_bound_steps(
    rows: list[dict[str, Any]], budgets: dict[str, float] | None = None
) -> set[tuple[str, int]]:
    """(cell, users) of steps whose server was at its CPU budget: labelled so by its
    throttle count, or (`budgets`: platform -> its quota in % of one CPU) without a throttle
    count, its CPU at AT_BUDGET of the quota or more."""
    out, counted = set(), set()
    for r in rows:
        if (u := _users(r)) is None:
            continue
        if r["labels"].get(BUDGET_BOUND):
            out.add((r["cell_id"], u))
        if r["labels"].get(THROTTLED) is not None:
            counted.add((r["cell_id"], u))
    for r in rows:
        u = _users(r)
        quota = (budgets or {}).get(r["platform"])
        if u is None or quota is None or r["metric"] != "cpu_util" or r["role"] != "target":
            continue
        if (r["cell_id"], u) not in counted and float(r["value"]) >= AT_BUDGET * quota:
            out.add((r["cell_id"], u))
    return out


def budget_percent(platform_labels: dict[str, dict[str, Any]]) -> dict[str, float]:
    """platform -> its host-side CPU quota in % of one CPU (platforms with one)."""
    out = {}
    for platform, lab in platform_labels.items():
        quota = lab.get(labelkeys.CPU_QUOTA_US)
        if isinstance(quota, int | float) and quota > 0:
            out[platform] = 100.0 * quota / float(lab.get(labelkeys.CPU_PERIOD_US) or 100_000)
    return out


def budget_reached(
    rows: list[dict[str, Any]], budgets: dict[str, float] | None = None
) -> dict[str, list[int]]:
    """platform -> the first budget-bound user count of each cell that reached its budget."""
    bound = budget_bound_steps(rows, budgets)
    first: dict[tuple[str, str], int] = {}
    for r in rows:
        u = _users(r)
        if u is not None and (r["cell_id"], u) in bound:
            key = (r["platform"], r["cell_id"])
            first[key] = min(first.get(key, u), u)
    out: dict[str, list[int]] = defaultdict(list)
    for (platform, _cell), u in sorted(first.items()):
        out[platform].append(u)
    return dict(out)


def per_user(
    rows: list[dict[str, Any]],
    metric: str,
    role: str = "target",
    budgets: dict[str, float] | None = None,
) -> dict[str, Summary]:
    """platform -> the cost per user of `metric` (its slope over each cell's valid,
    unsaturated steps that had the CPU they wanted: a budget-bound step's CPU is flat at the
    budget and would bend every slope), summarized over the cells (repetitions)."""
    skip = excluded_steps(rows) | budget_bound_steps(rows, budgets)
    cells: dict[tuple[str, str], list[tuple[float, float]]] = defaultdict(list)
    for r in rows:
        u = _users(r)
        if r["metric"] != metric or r["role"] != role or u is None or not r["valid"]:
            continue
        if (r["cell_id"], u) not in skip:
            cells[(r["platform"], r["cell_id"])].append((u, float(r["value"])))
    slopes: dict[str, list[float]] = defaultdict(list)
    for (platform, _cell), pts in cells.items():
        if (s := slope(pts)) is not None:
            slopes[platform].append(s)
    return {p: summarize(v) for p, v in slopes.items()}


@dataclass
class Served:
    """Users served before saturation on one platform, over its repetitions."""

    summary: Summary
    stopped: list[str]  # why each repetition stopped
    bounds: int  # repetitions that reached max_users without saturating (lower bounds)
    invalid: int  # repetitions whose clients were the limit (or that failed)


def users_served(rows: list[dict[str, Any]]) -> dict[str, Served]:
    found: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for r in rows:
        if r["metric"] == "users_served" and r["role"] == "target":
            found[r["platform"]].append(r)
    out = {}
    for platform, rs in found.items():
        valid = [float(r["value"]) for r in rs if r["valid"]]
        out[platform] = Served(
            summarize(valid),
            [str(r["labels"].get(labelkeys.STOPPED, "")) for r in rs],
            sum(1 for r in rs if r["valid"] and r["labels"].get(labelkeys.BOUND)),
            sum(1 for r in rs if not r["valid"]),
        )
    return out
