"""Noise floors measured on the host: the smallest change worth calling, per test case.

An A/A measurement (the baseline platform measured twice in the same rounds: a campaign's
`aa = true`, or `virtbench calibrate`) gives each test case's floor: the farthest end of
the A/A ratio's 95% interval from 1, i.e. the largest change two identical environments
showed here. A run's own A/A twin decides its floors; else the host's last calibration
(kept with the run's host facts, `HOST_FACT`); else ratios.DEFAULT_FLOOR.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Callable, Iterable
from typing import Any

from ..naming import aa_twin as twin_name
from . import ratios
from .groups import Group, GroupKey
from .normalize import raw_estimate

HOST_FACT = "aa_floors"  # host facts key: {"run_id", "measured", "floors": [...]}
MIN_FLOOR = 0.005  # an A/A interval can be narrow by chance: never call a change under 0.5%

TestId = tuple[str, str, str, str, str]  # test case, metric, dims (JSON), scenario, role


def test_id(key: GroupKey) -> TestId:
    dims = json.dumps(sorted([k, str(v)] for k, v in key.dims))
    return (key.test_case, key.metric, dims, key.scenario, key.role)


def from_aa(groups: Iterable[Group], baseline: str) -> dict[TestId, float]:
    """Each test's floor from the baseline and its A/A twin in one run."""
    twin = twin_name(baseline)
    by_key = {g.key: g for g in groups}
    out: dict[TestId, float] = {}
    for key, g in by_key.items():
        if key.platform != twin:
            continue
        base = by_key.get(key.on(baseline))
        if base is None:
            continue
        r = raw_estimate(g, base)
        if r is None or r.low is None or r.high is None:
            continue
        out[test_id(key)] = max(MIN_FLOOR, 1.0 - r.low, r.high - 1.0)
    return out


def to_host_fact(floors: dict[TestId, float], run_id: str, measured: str) -> dict[str, Any]:
    rows = [
        {
            "test_case": t[0],
            "metric": t[1],
            "dims": t[2],
            "scenario": t[3],
            "role": t[4],
            "floor": f,
        }
        for t, f in sorted(floors.items())
    ]
    return {"run_id": run_id, "measured": measured, "floors": rows}


def from_host_fact(fact: Any) -> tuple[dict[TestId, float], str]:
    """(floors, where from) of a host fact; empty when absent or not of this shape."""
    if not isinstance(fact, dict) or not isinstance(fact.get("floors"), list):
        return {}, ""
    out: dict[TestId, float] = {}
    for row in fact["floors"]:
        try:
            key = (row["test_case"], row["metric"], row["dims"], row["scenario"], row["role"])
            value = float(row["floor"])
        except (KeyError, TypeError, ValueError):
            continue
        if all(isinstance(k, str) for k in key) and 0.0 < value < 1.0:
            out[key] = value  # type: ignore[assignment]
    return out, f"A/A calibration {fact.get('run_id', '?')} of {fact.get('measured', '?')}"


def floor_function(
    groups: Iterable[Group],
    baseline: str | None,
    host: dict[str, Any],
    default: float = ratios.DEFAULT_FLOOR,
) -> Callable[[GroupKey], tuple[float, str]]:
    """GroupKey -> (floor, source): the run's A/A twin, else the host's calibration, else
    the default. The twin itself is judged against the default floor (not its own). The
    floors are worked out when first asked for: most of a run's groups get no verdict, and
    `compare` needs only side A's."""
    twin = twin_name(baseline) if baseline else None

    @functools.cache
    def known() -> tuple[dict[TestId, float], dict[TestId, float], str]:
        own = from_aa(groups, baseline) if baseline else {}
        return own, *from_host_fact(host.get(HOST_FACT))

    def floor_of(key: GroupKey) -> tuple[float, str]:
        if key.platform == twin:
            return default, ""
        own, calibrated, source = known()
        tid = test_id(key)
        if tid in own:
            return own[tid], "A/A in this run"
        if tid in calibrated:
            return calibrated[tid], source
        return default, ""

    return floor_of
