"""Offered rates of co-located environments as a % of each one's own solo peak (`load=PCT`).

A workload says which of its parameters is its offered rate (`OfferedRate.rate_param`), its
served file size (`ServedSizes.size_param`) and its lockstep schedule
(`RateSchedule.schedule_param`), workloads/capabilities.py; nothing is guessed from parameter
names. The solo peak comes from the run's `SoloPeaks` (`ScenarioEnv.solo_peaks`,
scenarios/peaks.py).
"""

from __future__ import annotations

from typing import Any

from ..drivers import sweep
from ..errors import VirtbenchError
from ..platforms.base import Platform
from ..workloads.base import Workload
from ..workloads.capabilities import OfferedRate, RateSchedule, ServedSizes
from .base import ScenarioEnv
from .peaks import Peak


def rate_param(w: type[Workload]) -> str | None:
    """The parameter that sets the workload's offered rate, if it declares one it has."""
    return w.rate_param if isinstance(w, OfferedRate) and w.rate_param in w.params else None


def size_param(w: type[Workload]) -> str | None:
    """The parameter that sets the workload's served file size, if it declares one it has."""
    return w.size_param if isinstance(w, ServedSizes) and w.size_param in w.params else None


def require_rate(w: type[Workload], what: str) -> str:
    """The workload's rate parameter; without one (wrk-max runs closed-loop at its maximum)
    `what` (the scenario) cannot set it to PCT % of a peak: an error naming the test case and
    the test cases of its suite that have one."""
    rate = rate_param(w)
    if rate is not None:
        return rate
    from ..workloads import registry  # every test case of the suite, for "allowed"

    said = w.rate_param if isinstance(w, OfferedRate) else None
    wanted = f"a '{said}' parameter" if said else "an offered-rate parameter"
    ok = sorted(x.name for x in registry.by_suite(w.suite) if rate_param(x))
    raise VirtbenchError(
        f"{what} needs a workload with {wanted} (OfferedRate.rate_param); test case {w.name} has "
        f"none (its parameters: {', '.join(sorted(w.params)) or 'none'}); allowed: test cases "
        f"with an offered rate ({', '.join(ok) or f'none in suite {w.suite}'}), or the "
        "scenario without load=PCT"
    )


def apply_load(
    env: ScenarioEnv, platform: Platform, params: dict[str, Any], load_pct: float | None
) -> tuple[dict[str, Any], Peak | None]:
    """`params` with the rate set to `load_pct` % of the environment's solo peak, and that
    peak (None without `load_pct`)."""
    if load_pct is None:
        return params, None
    w = type(env.workload)
    rate = require_rate(w, "load=PCT")
    size = size_param(w)
    sizes = params.get(size) if size else None
    sizes = sizes if isinstance(sizes, list) else []
    if len(set(sizes)) > 1:  # each size has its own peak, but one rate would apply to all
        raise VirtbenchError(
            f"load=PCT: test case {w.name} serves several file sizes {sizes} KB with different "
            "solo peaks, but one offered rate applies to all; use one file size "
            f"(e.g. suites.{w.suite}.{size} = [1]) in campaigns with load=PCT or many:N"
        )
    peak = env.solo_peaks.get(platform, env.workload, _unlimited(w, params), env.ctx)
    value = max(1.0, peak.value * load_pct / 100.0)
    default = w.params[rate].default
    return params | {rate: int(value) if isinstance(default, int) else value}, peak


def _unlimited(w: type[Workload], params: dict[str, Any]) -> dict[str, Any]:
    """The params of the solo run whose peak is the 100 % of load=PCT and of a schedule."""
    out = dict(params)
    if rate := rate_param(w):
        out[rate] = w.params[rate].default
    if schedule := schedule_param(w):
        out.pop(schedule, None)
    return out


def schedule_param(w: type[Workload]) -> str | None:
    """The run parameter that holds a lockstep schedule (set by the scenarios, never by a
    campaign), if the workload can sweep one together with others."""
    return w.schedule_param if isinstance(w, RateSchedule) else None


def apply_schedule(
    env: ScenarioEnv, platform: Platform, params: dict[str, Any]
) -> tuple[dict[str, Any], dict[str, Peak]]:
    """`params` with a lockstep schedule: for each served size, the sweep's fractions
    (start_fraction, step_fraction, max_fraction) of this environment's solo peak at that
    size (each size measured solo on its own: one peak per size, never a pooled one); and
    those peaks by size."""
    w = type(env.workload)
    size = size_param(w)
    sizes = params.get(size) if size else None
    sizes = sizes if isinstance(sizes, list) else [sizes]
    base = _unlimited(w, params)
    fractions = [float(params[k]) for k in ("start_fraction", "step_fraction", "max_fraction")]
    table, peaks = {}, {}
    for s in dict.fromkeys(sizes):
        one = base | (
            {size: [s] if isinstance(w.params[size].default, list) else s} if size else {}
        )
        peak = env.solo_peaks.get(platform, env.workload, one, env.ctx)
        table[str(s)] = sweep.schedule(peak.value, *fractions)
        peaks[str(s)] = peak
    return params | {schedule_param(w): table}, peaks  # type: ignore[dict-item]
