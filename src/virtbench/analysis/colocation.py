"""Derived co-location metrics (seeds 000 and 003), from the store's sample rows only.

- normalized throughput: value / the same environment's solo value (seed 003 §3.4)
- degradation %: 100 * (1 - normalized) for higher-is-better metrics (seed 003 Table 2)
- aggregated throughput: the sum over all environments of a cell (seed 003 §3.4)
- aggregated throughput ratio: sum over environments of value / own solo peak (§5.2)
- Jain's fairness index between environments: (sum x)^2 / (n * sum x^2), 1 = fair
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

from ..results import SOLO_PEAK_SCENARIO
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


def _labels(row: dict[str, Any]) -> dict[str, Any]:
    try:
        return json.loads(row.get("labels_json") or "{}")
    except ValueError:
        return {}


def cell_stats(rows: list[dict[str, Any]], primary: dict[str, str]) -> list[CellStats]:
    """One CellStats per (platform, test case, scenario) for each test case's primary metric.

    `rows` are `Store.sample_rows`; `primary` maps test case -> primary metric name.
    """
    # (platform, tc, scenario) -> repetition -> role -> [values]
    groups: dict[tuple[str, str, str], dict[int, dict[str, list[float]]]] = defaultdict(
        lambda: defaultdict(lambda: defaultdict(list))
    )
    env_platform: dict[tuple[str, str, str, str], str] = {}
    meta: dict[tuple[str, str, str], tuple[str, bool]] = {}
    invalid: dict[tuple[str, str, str], int] = defaultdict(int)
    for r in rows:
        if r["metric"] != primary.get(r["test_case"]) or r["role"] == "client":
            continue
        if r["scenario"] == SOLO_PEAK_SCENARIO:  # a reference, not a co-location scenario
            continue
        key = (r["platform"], r["test_case"], r["scenario"])
        meta[key] = (r["unit"], bool(r["higher_is_better"]))
        if not r["valid"]:
            if r["role"] == "target":
                invalid[key] += 1
            continue
        groups[key][r["repetition"]][r["role"]].append(float(r["value"]))
        env_platform[(*key, r["role"])] = _labels(r).get("env_platform", r["platform"])
    solo_means = {
        (p, tc): statistics.fmean(v for rep in reps.values() for v in rep.get("target", []))
        for (p, tc, sc), reps in groups.items()
        if sc == SOLO and any(rep.get("target") for rep in reps.values())
    }
    out = []
    for key in sorted(set(groups) | set(invalid)):
        platform, tc, scenario = key
        reps = groups.get(key, {})
        target = [v for rep in reps.values() for v in rep.get("target", [])]
        unit, hib = meta[key]
        st = CellStats(
            platform, tc, scenario, primary[tc], unit, hib,
            statistics.fmean(target) if target else float("nan"),
            cov(target), len(target), invalid.get(key, 0),
        )  # fmt: skip
        solo = solo_means.get((platform, tc))
        if solo and target:
            st.solo_mean = solo
            st.normalized = normalized(st.target_mean, solo)
            st.degradation_pct = degradation_pct(st.target_mean, solo, hib)
        sums, ratios, fair = [], [], []
        for rep in reps.values():
            roles = {role: statistics.fmean(v) for role, v in rep.items() if v}
            if "target" not in roles:
                continue
            st.environments = max(st.environments, len(roles))
            sums.append(aggregated(roles.values()))
            if len(roles) > 1:
                fair.append(jain(list(roles.values())))
            peaks = [solo_means.get((env_platform.get((*key, r), platform), tc)) for r in roles]
            if all(peaks):
                ratios.append(aggregated_ratio(list(roles.values()), peaks))  # type: ignore[arg-type]
        st.aggregated = statistics.fmean(sums) if sums else None
        st.aggregated_ratio = statistics.fmean(ratios) if ratios else None
        st.jain = statistics.fmean(fair) if fair else None
        out.append(st)
    return out


def interference_matrix(stats: list[CellStats]) -> dict[str, dict[str, float]]:
    """victim platform -> aggressor scenario -> target degradation % (solo excluded)."""
    matrix: dict[str, dict[str, float]] = defaultdict(dict)
    for st in stats:
        if st.scenario != SOLO and st.degradation_pct is not None:
            matrix[st.platform][f"{st.test_case} | {st.scenario}"] = st.degradation_pct
    return dict(matrix)
