"""Derived co-location metrics (seeds 000 and 003), from the store's sample rows only.

- normalized throughput: value / the same environment's solo value (seed 003 §3.4)
- degradation %: 100 * (1 - normalized) for higher-is-better metrics (seed 003 Table 2)
- aggregated throughput: the sum over all environments of a cell (seed 003 §3.4)
- aggregated throughput ratio: sum over environments of value / own solo peak (§5.2)
- Jain's fairness index between environments: (sum x)^2 / (n * sum x^2), 1 = fair
  (both over each environment's share of its own solo under the CPU budget it had in the
  cell: its solo cell's, else its solo peak measured under that budget)
- coefficient of variation of any metric (§4.3)
- interference matrix: victim platform x aggressor scenario -> degradation %
"""

from __future__ import annotations

import json
import statistics
from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from .. import cpubudget, labelkeys
from ..results import PATH_LABELS, SOLO_PEAK_SCENARIO
from ..saturation import MAX_STEPS, SERVED_IN_FULL
from .stats import summarize

SOLO = "solo"


def normalized(value: float, solo: float) -> float:
    if solo == 0:
        raise ValueError("solo value is 0: cannot normalize")
    return value / solo


def degradation_pct(value: float, solo: float, higher_is_better: bool = True) -> float:
    """Positive = worse than solo, for either direction of metric."""
    r = normalized(value, solo)
    return 100.0 * (1.0 - r) if higher_is_better else 100.0 * (r - 1.0)


def aggregated(values: Iterable[float]) -> float:
    return float(sum(values))


def aggregated_ratio(values: Sequence[float], solo_peaks: Sequence[float]) -> float:
    """Seed 003 Fig. 20: 661/1070 + 0.68 = 1.30 for the 1 kB + 70 kB pair."""
    if len(values) != len(solo_peaks):
        raise ValueError("one solo peak per environment is needed")
    return sum(normalized(v, p) for v, p in zip(values, solo_peaks, strict=True))


def jain(values: Sequence[float]) -> float:
    """Jain's fairness index; 1/n (one gets all) .. 1 (all equal)."""
    if not values:
        raise ValueError("no values")
    sq = sum(v * v for v in values)
    if sq == 0:
        return 1.0  # all zero is equal shares of nothing
    return sum(values) ** 2 / (len(values) * sq)


def cov(values: Sequence[float]) -> float | None:
    """Coefficient of variation (stdev / |mean|); None for < 2 values or a zero mean."""
    return summarize(values).cv


Dims = tuple[tuple[str, Any], ...]
# how a point was driven (a sweep, a fixed rate), not what was served: a fixed-rate cell is
# normalized by the solo sweep of the same file size
HOW_LABELS = frozenset({"phase"})
# (CFS quota µs, period µs) a server ran under; None: no quota
Quota = tuple[int, int] | None
# a cell's labels text -> the platform it recorded (None: unreadable), parsed once per text
Platforms = dict[str, dict[str, Any] | None]
PERIOD_US = 100_000  # the kernel's default CFS period, where a quota names none


@dataclass(frozen=True)
class SoloRef:
    """An environment whose own platform's solo cell ran under another CPU budget than it had
    in the pair (a neighbour of another platform inside the target's budget): its share is of
    `value`, its solo peak measured alone under the pair's budget (None: none was measured,
    so no ratio and no fairness)."""

    role: str
    platform: str
    budget: str  # the pair's budget in CPUs ("0.5")
    value: float | None


@dataclass
class CellStats:
    platform: str
    test_case: str
    scenario: str
    metric: str
    unit: str
    higher_is_better: bool
    target_mean: float
    target_cov: float | None
    n: int
    invalid: int  # target samples flagged invalid (not used in the means, counted here)
    solo_mean: float | None = None
    normalized: float | None = None
    degradation_pct: float | None = None
    aggregated: float | None = None  # mean over repetitions of the sum over environments
    aggregated_ratio: float | None = None
    jain: float | None = None
    environments: int = 1
    dims: Dims = ()  # the sweep point (file size, connections...): never pooled across
    limit: str | None = None  # which side limited the target's headline (server / client)
    target_range: tuple[float, float] | None = None  # min, max of the target's valid samples
    # start-up storms: mean seconds of the point during which a newcomer was starting, and
    # the point's mean length (a later size may have run after the storm was over)
    storm_s: tuple[float, float] | None = None
    # why its ratio to solo is no degradation: an environment's schedule (or load=PCT) was
    # scaled by a solo peak whose sweep never saturated (`unsaturated_peaks`)
    bad_peak: str | None = None
    # the environments whose aggregated ratio and Jain share is not of their solo cell's
    # mean, which ran under another CPU budget (`SoloRef`)
    budget_refs: tuple[SoloRef, ...] = ()

    @property
    def point(self) -> str:
        return ", ".join(f"{k}={v}" for k, v in self.dims)


def labels_of(row: dict[str, Any]) -> dict[str, Any]:
    """A sample row's labels, whether parsed already or still JSON."""
    labels = row.get("labels")
    if isinstance(labels, dict):
        return labels
    try:
        return json.loads(row.get("labels_json") or "{}")
    except ValueError:
        return {}


def _dims(labels: dict[str, Any], keys: Iterable[str]) -> Dims:
    """The sweep point of a sample: its dimension labels that it has (None is absent)."""
    return tuple(
        (k, v if isinstance(v, int | float | str) else json.dumps(v, sort_keys=True))
        for k in sorted(keys)
        if (v := labels.get(k)) is not None
    )


def _what(dims: Dims) -> Dims:
    """What was served at a point, without how it was driven (for the solo reference)."""
    return tuple(kv for kv in dims if kv[0] not in HOW_LABELS)


# (platform, tc, scenario) -> repetition -> role -> sweep point -> [values]
Groups = dict[tuple[str, str, str], dict[int, dict[str, dict[Dims, list[float]]]]]


def _served(dims: Dims) -> Dims:
    """What a point served, without how its environment was reached: a heterogeneous VM
    neighbour's client took the host bridge where the native target's took loopback."""
    return tuple(kv for kv in dims if kv[0] not in PATH_LABELS)


def _role_values(by_dims: dict[Dims, list[float]], dims: Dims) -> tuple[Dims, list[float]]:
    """A role's values at the target's point (over its own network path); a neighbour
    serving one other point (different:SIZE) is taken at that point."""
    if dims in by_dims:
        return dims, by_dims[dims]
    same = [d for d in by_dims if _served(d) == _served(dims)]
    if len(same) == 1:
        return same[0], by_dims[same[0]]
    if len(by_dims) == 1:
        return next(iter(by_dims.items()))
    return dims, []


Step = Any  # a sample's lockstep step (label `lockstep_step`), None where it has none


def lockstep_points(
    own: Sequence[Step], target: Sequence[tuple[Step, Any]]
) -> list[Any | None] | None:
    """`paired_points` in lockstep only: the target's point at each of the neighbour's
    lockstep steps (None: the sample has no step, or the target no sample at it); None when
    not both record steps. A sweep's per-step samples pair this way alone: counting them
    would pair steps of sweeps that did not step together."""
    at = {step: point for step, point in target if step is not None}
    if at and any(step is not None for step in own):
        return [at.get(step) if step is not None else None for step in own]
    return None


def paired_points(
    own: Sequence[Step], target: Sequence[tuple[Step, Any]]
) -> list[Any | None] | None:
    """The target's point each of a neighbour's runs ran beside: a neighbour serving one
    other point (different:SIZE) ran it once beside each of the target's points. `own`: the
    neighbour's samples' lockstep steps, in the order stored; `target`: the target's samples
    of the same cell and metric as (lockstep step, point), in order.

    In lockstep (both record steps), the target's point at the sample's step (None: the
    target has no sample there). A sweep's headline spans many steps and has no step label:
    then its k-th run is the one beside the target's k-th point, when both have as many (both
    served their points in the same order). None when they cannot be paired (counts differ:
    a cell stopped part-way; older stores): never guessed."""
    if (pts := lockstep_points(own, target)) is not None:
        return pts
    if own and len(own) == len(target):
        return [point for _step, point in target]
    return None


# a group dimension of a neighbour's samples (groups.build): the target point they ran beside
BESIDE_LABEL = labelkeys.BESIDE_TARGET
UNPAIRED = "unknown"  # its runs could not be paired with the target's points


def beside_targets(
    rows: Sequence[dict[str, Any]],
    dimensions: dict[str, Iterable[str]],
    primary: dict[str, str],
) -> list[Any]:
    """Per row: the target's point (its file size) a different:SIZE neighbour's sample ran
    beside: it served its one size once beside each of the target's sizes, and those runs
    are not repetitions of one figure. Paired as cell_stats pairs them (`paired_points`
    against the target's headline, `primary`, of the same cell): by the cell's lockstep step
    where the rows record one; else by order, and only rows stored with every run as the
    headline is (a sweep's peak, its step count), never a metric stored for some runs only
    (errors by class). UNPAIRED where they cannot be; None for every other row (the target,
    neighbours of other scenarios, per-step samples told apart by their own step).
    `dimensions`: test case -> its dimension label keys (points compared without the path)."""
    out: list[Any] = [None] * len(rows)
    # cell -> (client or not, environment) -> metric -> [(row index, lockstep step, point)]
    cells: dict[Any, dict[tuple[bool, str], dict[str, list[tuple[int, Step, Dims]]]]]
    cells = defaultdict(lambda: defaultdict(lambda: defaultdict(list)))
    test_case: dict[Any, str] = {}
    for i, r in enumerate(rows):
        lab = labels_of(r)
        # only a different:SIZE neighbour runs one size beside each of the target's: any other
        # neighbour with one size (it stopped after its first) is told apart by its own size
        if (
            lab.get(labelkeys.SCENARIO_KIND) != "different"
            or r["role"] == "host"
            or labelkeys.STEP in lab
        ):
            continue
        client = r["role"].startswith("client")  # pairs with the target's client
        env = str(lab.get(labelkeys.CLIENT_OF, "target")) if client else r["role"]
        point = _served(_dims(lab, dimensions.get(r["test_case"], ())))
        if not point:  # a figure of the whole cell (the mean of its 1 s samples): no run's
            continue
        cells[r.get("cell_id")][(client, env)][r["metric"]].append(
            (i, lab.get(labelkeys.LOCKSTEP_STEP), point)
        )
        test_case[r.get("cell_id")] = r["test_case"]
    for cell, envs in cells.items():
        head = primary.get(test_case[cell])
        # the target's runs, in order, as cell_stats takes them: its headline rows
        target = [(s, p) for _i, s, p in envs.get((False, "target"), {}).get(head or "", [])]
        for (_client, env), metrics in envs.items():
            if env == "target":
                continue
            runs = [p for _i, _s, p in envs.get((False, env), {}).get(head or "", [])]
            for own in metrics.values():
                steps = [s for _i, s, _p in own]
                if any(s is not None for s in steps):  # lockstep: the step says where
                    stepped = any(s is not None for s, _p in target)
                    pts = paired_points(steps, target) if stepped else None
                elif runs and [p for _i, _s, p in own] == runs:  # one with every run
                    pts = paired_points(steps, target)
                else:  # stored for some runs only: which ones, its count cannot tell
                    pts = None
                for k, (i, _s, p) in enumerate(own):
                    there = None if pts is None else pts[k]
                    out[i] = UNPAIRED if there is None else _point_value(there, p)
    return out


def _point_value(target: Dims, own: Dims) -> Any:
    """The target point a neighbour's row ran beside, as one group dimension value: the
    target's file size (a number: sorts as one, shown '30 KB') where that is how the two
    points differ, as a different:SIZE neighbour's do (wrk-max's connections are the same
    on both sides); else the target's differing labels as text."""
    mine = dict(own)
    differ = [(k, v) for k, v in target if mine.get(k) != v]
    size = dict(target).get(labelkeys.FILE_SIZE_KB)
    if size is not None and all(k == "file_size_kb" for k, _v in differ):
        return size  # a different:SIZE of one of the target's own sizes differs in none
    return ", ".join(f"{k}={v}" for k, v in differ or target)


def cell_stats(
    rows: list[dict[str, Any]],
    primary: dict[str, str],
    dimensions: dict[str, Iterable[str]] | None = None,
) -> list[CellStats]:
    """One CellStats per (platform, test case, scenario, sweep point) for each test case's
    primary metric; nothing is averaged across sweep points (file sizes).

    `rows` are `Store.sample_rows`; `primary` maps test case -> primary metric name;
    `dimensions` test case -> the run's dimension label keys (None: no sweep points).
    """
    groups: Groups = defaultdict(
        lambda: defaultdict(lambda: defaultdict(lambda: defaultdict(list)))
    )
    env_platform: dict[tuple[str, str, str, str], str] = {}
    meta: dict[tuple[str, str, str], tuple[str, bool]] = {}
    invalid: dict[tuple[str, str, str, Dims], int] = defaultdict(int)
    # (platform, tc, scenario, repetition, role, point) -> [(lockstep step, value or None)]
    stepped: dict[tuple[Any, ...], list[tuple[Any, float | None]]] = defaultdict(list)
    # (platform, test case, scenario, rep) -> the target's (lockstep step, point), in order
    target_order: dict[tuple[Any, ...], list[tuple[Step, Dims]]] = defaultdict(list)
    platforms: Platforms = {}  # cell labels parsed once, for every CPU budget read below
    limits = _limits(rows, primary, dimensions or {}, platforms)
    storm: dict[tuple[str, str, str, Dims], list[tuple[float, float]]] = defaultdict(list)
    # the CPU quota each environment ran under: (platform, tc, scenario, rep, role) in a cell,
    # (platform, tc, point) -> those of its solo cells
    env_quota: dict[tuple[Any, ...], Quota] = {}
    solo_quotas: dict[tuple[str, str, Dims], set[Quota]] = defaultdict(set)
    for r in rows:
        if r["metric"] != primary.get(r["test_case"]) or r["role"] == "client":
            continue
        if r["scenario"] == SOLO_PEAK_SCENARIO:  # a reference, not a co-location scenario
            continue
        key = (r["platform"], r["test_case"], r["scenario"])
        labels = labels_of(r)
        dims = _dims(labels, (dimensions or {}).get(r["test_case"], ()))
        meta[key] = (r["unit"], bool(r["higher_is_better"]))
        env_quota[(*key, r["repetition"], r["role"])] = _env_quota(r, platforms)
        if r["scenario"] == SOLO and r["role"] == "target":
            solo_quotas[(r["platform"], r["test_case"], _what(dims))].add(_cpu_quota(r, platforms))
        if r["role"] == "target" and labelkeys.STORM_OVERLAP_S in labels:
            storm[(*key, dims)].append(
                (labels[labelkeys.STORM_OVERLAP_S], labels.get(labelkeys.POINT_S) or 0)
            )
        step = labels.get(labelkeys.LOCKSTEP_STEP)
        stepped[(*key, r["repetition"], r["role"], dims)].append(
            (step, float(r["value"]) if r["valid"] else None)
        )
        if r["role"] == "target":
            target_order[(*key, r["repetition"])].append((step, dims))  # in sample order
        if not r["valid"]:
            if r["role"] == "target":
                invalid[(*key, dims)] += 1
            # the point was served (with no valid value): a role's other point must not
            # stand in for it in the sums below
            groups[key][r["repetition"]][r["role"]].setdefault(dims, [])
            continue
        groups[key][r["repetition"]][r["role"]][dims].append(float(r["value"]))
        env_platform[(*key, r["role"])] = labels.get(labelkeys.ENV_PLATFORM, r["platform"])
    solo: dict[tuple[str, str, Dims], list[float]] = defaultdict(list)
    for (p, tc, sc), reps in groups.items():
        if sc == SOLO:
            for rep in reps.values():
                for dims, values in rep.get("target", {}).items():
                    solo[(p, tc, _what(dims))] += values
    solo_means = {k: statistics.fmean(v) for k, v in solo.items() if v}
    unsaturated = _unsaturated_peak_cells(rows, primary)  # both below skip or name them
    peaks_in = solo_peaks(rows, primary, dimensions or {}, unsaturated)
    bad_peaks = unsaturated_peaks(rows, primary, dimensions or {}, unsaturated)
    points = {
        (*key, d)
        for key, reps in groups.items()
        for rep in reps.values()
        for d in rep.get("target", {})
    }
    out = []
    for key in sorted(points | set(invalid), key=lambda k: (k[:3], dims_order(k[3]))):
        platform, tc, scenario, dims = key
        reps = groups.get(key[:3], {})
        target = [v for rep in reps.values() for v in rep.get("target", {}).get(dims, [])]
        unit, hib = meta[key[:3]]
        st = CellStats(
            platform, tc, scenario, primary[tc], unit, hib,
            statistics.fmean(target) if target else float("nan"),
            cov(target), len(target), invalid.get(key, 0), dims=dims,
            limit=limits.get(key),
            target_range=(min(target), max(target)) if target else None,
            storm_s=_mean_pair(storm[key]) if storm.get(key) else None,
        )  # fmt: skip
        solo_mean = solo_means.get((platform, tc, _what(dims)))
        if solo_mean and target:
            st.solo_mean = solo_mean
            st.normalized = normalized(st.target_mean, solo_mean)
            st.degradation_pct = degradation_pct(st.target_mean, solo_mean, hib)
        if short := _under_driven(bad_peaks.get((platform, tc, scenario, _served(dims))),
                                  solo_means, tc, dims):  # fmt: skip
            st.bad_peak = "; ".join(short)
            st.normalized = st.degradation_pct = None  # no degradation: the load was wrong
        sums, ratios, fair = [], [], []
        refs: dict[str, SoloRef] = {}
        for rep_no, rep in reps.items():
            roles, peaks, missing, other = {}, [], False, []
            for role, by_dims in rep.items():
                at, values = _role_values(by_dims, dims)
                own = stepped[(*key[:3], rep_no, role, at)]
                # its runs beside this point only: one at another point, or one of several
                # at this one (different:50 beside the target's 50 KB ran seven times)
                if values and (_served(at) != _served(dims) or len(own) > 1):
                    pts = paired_points([s for s, _v in own], target_order[(*key[:3], rep_no)])
                    if pts is not None:  # else (older stores, no lockstep): all, as before
                        values = [v for (_s, v), p in zip(own, pts, strict=True)
                                  if p == dims and v is not None]  # fmt: skip
                if values:
                    roles[role] = statistics.fmean(values)
                    where = env_platform.get((*key[:3], role), platform)
                    what = (where, tc, _what(at))
                    quota = env_quota.get((*key[:3], rep_no, role))
                    solo_ran = solo_quotas.get(what)
                    if quota is None or solo_ran == {quota}:  # no shared budget, or its solo's
                        ref = solo_means.get(what)
                    else:
                        # its solo cell ran under another budget (or there is none): its solo
                        # peak under this one (docs/colocation.md "Each environment's solo
                        # under the budget it had in the cell")
                        ref = peaks_in.get((*what, quota))
                        if solo_ran or ref is not None:
                            other.append(SoloRef(role, where, _cpus(quota), ref))
                    peaks.append(ref)
                elif at in by_dims:  # it served this point, but no valid value
                    missing = True
            if "target" not in roles:
                continue
            refs |= {x.role: x for x in other if x.role not in refs}
            st.environments = max(st.environments, len(roles))
            if missing:  # the target alone is no sum over the cell's environments
                continue
            sums.append(aggregated(roles.values()))
            # fairness of each environment's share of its OWN solo (seed 000 compares like
            # with like; raw req/s of a VM beside native would read "unfair" for being slower)
            if len(roles) > 1 and all(peaks):
                fair.append(jain([v / p for v, p in zip(roles.values(), peaks, strict=True)]))  # type: ignore[operator]
            if all(peaks):
                ratios.append(aggregated_ratio(list(roles.values()), peaks))  # type: ignore[arg-type]
        st.aggregated = statistics.fmean(sums) if sums else None
        st.aggregated_ratio = statistics.fmean(ratios) if ratios else None
        st.jain = statistics.fmean(fair) if fair else None
        st.budget_refs = tuple(refs.values())
        out.append(st)
    return out


def _budget(row: dict[str, Any], platforms: Platforms) -> str | None:
    """The server's CPU budget (CPUs), if it had a quota (`_cpu_quota`), with how many
    environments divided a shared one."""
    quota = _cpu_quota(row, platforms)
    if quota is None:
        return None
    n = len(labels_of(row).get(labelkeys.CPU_BUDGET_MEMBERS) or [])  # only a shared budget has them
    return _cpus(quota) + (f" shared by {n}" if n > 1 else "")


def _ran_out(row: dict[str, Any]) -> float | None:
    """The share of CFS periods the row's budget ran out in (`cpu_budget_throttled`, "N/M
    periods": a scene's, or a solo cell's whole); None: not said."""
    said = str(labels_of(row).get(labelkeys.CPU_BUDGET_THROTTLED) or "")
    try:
        throttled, periods = (int(x) for x in said.split()[0].split("/"))
    except (ValueError, IndexError):
        return None
    return throttled / periods if periods > 0 else None


def _pct_span(shares: list[float]) -> str:
    """'38 %' or '31-45 %' (shares of 1)."""
    lo, hi = round(100 * min(shares)), round(100 * max(shares))
    return f"{lo} %" if lo == hi else f"{lo}–{hi} %"


def _quota(quota: Any, period: Any) -> Quota:
    """A CFS quota as numbers; None: none (absent, "max", -1, unreadable)."""
    try:
        q, p = int(quota), int(period or PERIOD_US)
    except (TypeError, ValueError):
        return None
    return (q, p) if q > 0 and p > 0 else None


def _cpus(quota: tuple[int, int]) -> str:
    return f"{quota[0] / quota[1]:g}"


def _cpu_quota(row: dict[str, Any], platforms: Platforms | None = None) -> Quota:
    """The CFS quota the row's server ran under: the cell's shared budget from the sample's
    `cpu_budget` labels (cpubudget.py), else its cell's platform's own quota (the target's: a
    neighbour's own is not in its row); a weights cell's "lifted" budget is none. `platforms`:
    `_platform`'s memo."""
    said = cpubudget.from_labels(labels_of(row))
    if said is not None and said.mode == cpubudget.LIFTED:
        return None
    if said is not None and said.shared:
        return _quota(said.quota_us, said.period_us)
    plat = _platform(row, platforms if platforms is not None else {})
    if plat is None:
        return None
    return _quota(plat.get("cpu_quota_us"), plat.get("cpu_period_us"))


def _env_quota(row: dict[str, Any], platforms: Platforms) -> Quota:
    """The shared CPU budget an environment of a co-location cell ran in (every environment
    inside the target's, a neighbour of another platform too); None: none, each environment
    under its own platform's quota as in its solo cell (cpu_budget "own", "none"; a weights
    cell's lifted quota is compared with its solo as it always was)."""
    said = cpubudget.from_labels(labels_of(row))
    shared = said is not None and said.shared
    return _cpu_quota(row, platforms) if shared else None


def _peak_quota(row: dict[str, Any]) -> Quota:
    """The CFS quota a solo peak was measured under: its `peak_cpu_limit` ("cpu quota Q P",
    "none"; scenarios/peaks.py `cpu_limit`), else (stores before that label) as any row's."""
    limit = labels_of(row).get(labelkeys.PEAK_CPU_LIMIT)
    if limit is None:
        return _cpu_quota(row)
    quota, _, period = str(limit).removeprefix("cpu quota ").partition(" ")
    return _quota(quota, period)


def solo_peaks(
    rows: list[dict[str, Any]],
    primary: dict[str, str],
    dimensions: dict[str, Iterable[str]],
    unsaturated: dict[Any, float],
) -> dict[tuple[str, str, Dims, Quota], float]:
    """(platform, test case, served point, CFS quota) -> the mean of the solo peaks measured
    under that quota (solo-peak cells' primary headlines). None that never saturated: stored
    invalid, kept as a lower bound (`peak_lower_bound`), or, in stores from before the runner
    flagged them, a sweep that ran out of steps with its top step served in full: each only
    bounds the peak from below. `unsaturated`: `_unsaturated_peak_cells`."""
    found: dict[tuple[str, str, Dims, Quota], list[float]] = defaultdict(list)
    for r in rows:
        if r["scenario"] != SOLO_PEAK_SCENARIO or r["metric"] != primary.get(r["test_case"]):
            continue
        lab = labels_of(r)
        if r["role"] == "client" or not r["valid"] or labelkeys.PEAK_LOWER_BOUND in lab:
            continue
        if r.get("cell_id") in unsaturated:
            continue
        # the limit is the quota's, not the served point's
        keys = [k for k in dimensions.get(r["test_case"], ()) if k != labelkeys.PEAK_CPU_LIMIT]
        point = _what(_dims(lab, keys))
        found[(r["platform"], r["test_case"], point, _peak_quota(r))].append(float(r["value"]))
    return {k: statistics.fmean(v) for k, v in found.items()}


def _platform(row: dict[str, Any], platforms: Platforms) -> dict[str, Any] | None:
    """The platform its cell recorded (None: unreadable), parsed once per text in
    `platforms`: every sample of a cell carries the same (10^5 in a co-location run)."""
    text = row.get("cell_labels") or "{}"
    if text not in platforms:
        try:
            platforms[text] = json.loads(text).get("platform") or {}
        except ValueError:
            platforms[text] = None
    return platforms[text]


def _client_limited(row: dict[str, Any]) -> bool:
    """The workload's own verdict (each tool judges its load generator its own way: wrk by
    its CPU, httperf by its send rate, sockets and schedule, since it busy-polls)."""
    why = row.get("invalid_reason") or str(labels_of(row).get(labelkeys.INVALID) or "")
    return not row["valid"] and ("load generator" in why or "client" in why)


# a server under a quota of its own that used less than this share of it from its peak step
# to its sweep's end was not what stopped the sweep: the client was (docs/colocation.md)
SERVER_BUSY = 0.8


def _server_cpu(rows: list[dict[str, Any]]) -> dict[tuple[Any, Any], list[tuple[int, float]]]:
    """(cell, file size) -> [(step, the target server's CPU % in it)] of its sweep steps."""
    out: dict[tuple[Any, Any], list[tuple[int, float]]] = defaultdict(list)
    for r in rows:
        if r["metric"] != "cpu_util" or r["role"] != "target":
            continue
        lab = labels_of(r)
        if lab.get(labelkeys.STEP) is None or lab.get(labelkeys.PHASE):
            continue
        cell = r.get("cell_id") or r["repetition"]
        out[(cell, lab.get(labelkeys.FILE_SIZE_KB))].append(
            (int(lab[labelkeys.STEP]), float(r["value"]))
        )
    return out


def _server_idle(
    row: dict[str, Any],
    step: tuple[Any, Any, Any],
    server_cpu: dict[tuple[Any, Any], list[tuple[int, float]]],
    platforms: Platforms,
) -> tuple[float, float] | None:
    """(the most CPU %, its budget in %) of a server whose own quota it never neared from its
    headline's step to its sweep's end: the sweep stopped on something else (the client, the
    path). None where it neared it, or had no quota of its own (none, lifted, shared)."""
    cell, size, peak_step = step
    quota = _cpu_quota(row, platforms)
    if (
        quota is None
        or peak_step is None
        or len(labels_of(row).get(labelkeys.CPU_BUDGET_MEMBERS) or []) > 1
    ):
        return None
    used = max(
        (pct for s, pct in server_cpu.get((cell, size), []) if s >= int(peak_step)), default=None
    )
    budget = 100.0 * quota[0] / quota[1]
    if used is None or used >= SERVER_BUSY * budget:
        return None
    return used, budget


def _limits(
    rows: list[dict[str, Any]],
    primary: dict[str, str],
    dimensions: dict[str, Iterable[str]],
    platforms: Platforms | None = None,
) -> dict[tuple[str, str, str, Dims], str]:
    """Which side limited each target headline, over repetitions: the load generator (the
    headline invalid by the tool's own client verdict) or the server (with its CPU budget
    where it had one); the client's CPU at the headline's step is given as context. Neither,
    where the headline is its sweep's last step served in full (`_top_served`): the schedule
    ended before anything saturated, and its ratio to solo measures no interference."""
    # (cell, point) -> (stats key, client-limited, where its client CPU is: (cell, file size,
    # peak step)); one per point a cell served: keyed by (cell, file size) alone, a cell's
    # other points (connections, block sizes) overwrote each other
    heads: dict[tuple[Any, Dims], tuple[tuple[str, str, str, Dims], bool, tuple, Any]] = {}
    platforms = {} if platforms is None else platforms
    server_cpu = _server_cpu(rows)
    # (cell, point) -> the offered rate of a top step served in full (no saturation seen)
    unsaturated: dict[tuple[Any, Dims], float] = {}
    steps: dict[tuple[Any, Dims], float] = {}  # (cell, point) -> how many steps its sweep ran
    for r in rows:
        if r["metric"] == SWEEP_STEPS and r["role"] == "target":
            dims = _dims(labels_of(r), dimensions.get(r["test_case"], ()))
            steps[(r.get("cell_id") or r["repetition"], dims)] = r["value"]
    for r in rows:
        if r["metric"] == primary.get(r["test_case"]) and r["role"] == "target":
            lab = labels_of(r)
            key = (r["platform"], r["test_case"], r["scenario"])
            dims = _dims(lab, dimensions.get(r["test_case"], ()))
            cell = r.get("cell_id") or r["repetition"]
            step = (cell, lab.get(labelkeys.FILE_SIZE_KB), lab.get(labelkeys.PEAK_STEP))
            idle = _server_idle(r, step, server_cpu, platforms)
            heads[(cell, dims)] = ((*key, dims), _client_limited(r), step, idle)
            if (top := _top_served(r, lab, steps.get((cell, dims)))) is not None:
                unsaturated[(cell, dims)] = top
    budgets = {r.get("cell_id") or r["repetition"]: b for r in rows if (b := _budget(r, platforms))}
    ran_out = {
        r.get("cell_id") or r["repetition"]: f for r in rows if (f := _ran_out(r)) is not None
    }
    # the target's client CPU per (cell, file size, step): a headline's is at its peak step
    client_at: dict[tuple[Any, Any, Any], float] = {}
    for r in rows:
        lab = labels_of(r)
        if r["metric"] != "client_cpu_pct" or lab.get(labelkeys.CLIENT_OF, "target") != "target":
            continue
        if lab.get(labelkeys.PHASE) != "probe":
            cell = r.get("cell_id") or r["repetition"]
            client_at[(cell, lab.get(labelkeys.FILE_SIZE_KB), lab.get(labelkeys.STEP))] = float(
                r["value"]
            )
    sides: dict[tuple[str, str, str, Dims], list[tuple[bool, float | None, str | None, Any]]]
    sides = defaultdict(list)
    tops: dict[tuple[str, str, str, Dims], list[float]] = defaultdict(list)
    shares: dict[tuple[str, str, str, Dims], list[float]] = defaultdict(list)
    for at, (key, client, step, idle) in heads.items():
        if at in unsaturated:  # neither side limited it: the schedule ended first
            tops[key].append(unsaturated[at])
            continue
        sides[key].append((client, client_at.get(step), budgets.get(at[0]), idle))
        if at[0] in ran_out:
            shares[key].append(ran_out[at[0]])
    out = {}
    for key, found in sides.items():
        pcts = [p for _c, p, _b, _i in found if p is not None]
        cpu = f"client at ≤ {max(pcts):.0f} % CPU" if pcts else ""
        budget = next((b for _c, _p, b, _i in found if b), None)
        if budget and shares[key]:  # the evidence that the budget was what ran out
            budget += f", ran out in {_pct_span(shares[key])} of periods"
        server = "server" + (f" (CPU budget {budget})" if budget else "")
        idle = [i for c, _p, _b, i in found if i is not None and not c]
        path = (
            f"client or path (the server used ≤ {max(u for u, _b in idle):.0f} % CPU"
            f" of its {idle[0][1]:g} %)"
            if idle
            else ""
        )
        n = sum(1 for c, _p, _b, _i in found if c)
        counts = {"client": n, "path": len(idle), "server": len(found) - n - len(idle)}
        bare = {"client": "client", "path": path, "server": server}
        alone = {
            "client": "client" + (f" ({cpu})" if cpu else ""),
            "path": path,
            "server": server + (f"; {cpu}" if cpu else ""),
        }
        out[key] = _counted(counts, bare, alone, len(found))
    for key, offered in tops.items():
        rate = f"{max(offered):.0f} req/s offered"
        if key not in out:
            out[key] = f"none reached: its sweep's top step ({rate}) was served in full"
        else:
            n = len(offered) + len(sides[key])
            out[key] = (
                f"none reached in {len(offered)}/{n} (top step, {rate}, served in full), "
                f"else {out[key]}"
            )
    return out


def _counted(counts: dict[str, int], bare: dict[str, str], alone: dict[str, str], n: int) -> str:
    """One verdict over `n` repetitions: a kind that all of them share reads as its `alone`
    label (with the client's CPU as context); several as 'A in k/n, B in j/n, else C' in
    `counts`' order, with their `bare` labels."""
    present = [kind for kind, k in counts.items() if k]
    if len(present) == 1:
        return alone[present[0]]
    head = ", ".join(f"{bare[kind]} in {counts[kind]}/{n}" for kind in present[:-1])
    return f"{head}, else {bare[present[-1]]}"


# a sweep's headline sample carries `peak_step` and `offered_rate`; its `steps` sample the
# number of steps it ran (web.py headline), labelled `stopped`: MAX_STEPS when it ran out
SWEEP_STEPS = "steps"


def _under_driven(
    bad: dict[str, tuple[str, float]] | None,
    solo_means: dict[tuple[str, str, str], float],
    tc: str,
    dims: Dims,
) -> list[str]:
    """Why a point's load was too low to read as a degradation: the target's schedule
    topped out at a solo peak that never saturated AND below what its solo sweep served (a
    peak just short of saturation, at or above the solo figure, still drove the pair to full
    load; docs/colocation.md)."""
    out = []
    for role, (where, top) in sorted((bad or {}).items()):
        # a neighbour offered less than it could makes the target's degradation smaller, not
        # void (and it may run under another CPU limit than the solo cell it is compared with)
        if role != "target":
            continue
        solo = solo_means.get((where, tc, _what(dims)))
        if solo and top >= SERVED_IN_FULL * solo:
            continue
        out.append(
            f"{_whose(role)} scaled by a solo peak that never saturated ({top:,.0f} req/s"
            " offered" + (f", {top / solo:.0%} of the {solo:,.0f} its solo sweep served"
                          if solo else "; no solo sweep to compare") + ")"
        )  # fmt: skip
    return out


def _whose(role: str) -> str:
    return "schedule" if role == "target" else f"{role}'s schedule"


def unsaturated_peaks(
    rows: list[dict[str, Any]],
    primary: dict[str, str],
    dimensions: dict[str, Iterable[str]],
    tops: dict[Any, float],
) -> dict[tuple[str, str, str, Dims], dict[str, tuple[str, float]]]:
    """(platform, test case, scenario, served point) -> role -> (its platform, top rate) of
    each environment whose rates were shares of a solo peak that never saturated: a
    solo-peak cell whose sweep ran out of steps with its headline at the last step, served
    in full (stores written before the runner refused such peaks: docs/colocation.md). Cells
    name their peak by `peak_cell_id` (per file size for a schedule). `tops`:
    `_unsaturated_peak_cells`."""
    out: dict[tuple[str, str, str, Dims], dict[str, tuple[str, float]]] = defaultdict(dict)
    if not tops:
        return out
    for r in rows:
        if r["scenario"] == SOLO_PEAK_SCENARIO or r["metric"] != primary.get(r["test_case"]):
            continue
        lab = labels_of(r)
        ref = lab.get(labelkeys.PEAK_CELL_ID)
        if isinstance(ref, dict):  # a schedule: one peak per served size
            ref = ref.get(str(lab.get(labelkeys.FILE_SIZE_KB)))
        if ref not in tops:
            continue
        dims = _served(_dims(lab, dimensions.get(r["test_case"], ())))
        where = lab.get(labelkeys.ENV_PLATFORM, r["platform"])
        out[(r["platform"], r["test_case"], r["scenario"], dims)][r["role"]] = (where, tops[ref])
    return out


def _unsaturated_peak_cells(
    rows: list[dict[str, Any]], primary: dict[str, str]
) -> dict[Any, float]:
    """Solo-peak cell -> its top rate, of each whose sweep ran out of steps with its headline
    at the last step, served in full (`_top_served`): a lower bound, never a peak."""
    stopped: dict[Any, tuple[float, Any]] = {}  # peak cell -> (steps, stopped)
    for r in rows:
        if r["scenario"] == SOLO_PEAK_SCENARIO and r["metric"] == SWEEP_STEPS:
            stopped[r.get("cell_id")] = (r["value"], labels_of(r).get(labelkeys.STOPPED))
    tops: dict[Any, float] = {}  # peak cell -> its top rate, served in full
    for r in rows:
        if r["scenario"] != SOLO_PEAK_SCENARIO or r["metric"] != primary.get(r["test_case"]):
            continue
        n, why = stopped.get(r.get("cell_id"), (None, None))
        if why == MAX_STEPS and (top := _top_served(r, labels_of(r), n)) is not None:
            tops[r.get("cell_id")] = top
    return tops


def _top_served(row: dict[str, Any], labels: dict[str, Any], steps: float | None) -> float | None:
    """The offered rate of a valid sweep headline taken at its sweep's last step and served in
    full: the sweep ended on its schedule (lockstep: 100 % of a solo peak that may itself be
    a lower bound) before any side saturated, so no side limited it. None otherwise, and for
    a one-step point (a fixed rate is meant to be served in full)."""
    step, offered = labels.get(labelkeys.PEAK_STEP), labels.get(labelkeys.OFFERED_RATE)
    if not row["valid"] or not steps or steps < 2 or step is None or not offered:
        return None
    if int(step) != int(steps) - 1 or float(row["value"]) < SERVED_IN_FULL * float(offered):
        return None
    return float(offered)


def _mean_pair(pairs: list[tuple[float, float]]) -> tuple[float, float]:
    return (statistics.fmean(a for a, _b in pairs), statistics.fmean(b for _a, b in pairs))


def value_order(value: Any) -> tuple[int, Any]:
    """Sort key of a label value: numbers by value (2 KB before 10 KB), then text."""
    return (0, value) if isinstance(value, int | float) else (1, str(value))


def dims_order(dims: Dims) -> tuple:
    """Sort key of a sweep point, label by label (value_order)."""
    return tuple((k, value_order(v)) for k, v in dims)


def interference_matrix(stats: list[CellStats]) -> dict[str, dict[str, float]]:
    """victim (platform, and its sweep point when there is one) -> aggressor scenario ->
    target degradation % (solo excluded). Each point is a victim row of its own: one row per
    platform would keep whichever size was read last."""
    matrix: dict[str, dict[str, float]] = defaultdict(dict)
    for st in stats:
        if st.scenario != SOLO and st.degradation_pct is not None:
            victim = f"{st.platform} · {st.point}" if st.point else st.platform
            matrix[victim][f"{st.test_case} | {st.scenario}"] = st.degradation_pct
    return dict(matrix)
