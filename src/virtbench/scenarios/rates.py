"""Offered rates of co-located environments as a % of each one's own solo peak (`load=PCT`).

The solo peak is measured once per run and environment by a solo run of the same test case
without a rate limit, and cached in this process.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from ..errors import VirtbenchError, WorkloadError
from ..platforms.base import Platform
from .base import ScenarioEnv

# The parameter of a workload that sets its offered rate (absolute, per second); `load=PCT`
# scenarios set it to PCT % of the environment's solo peak.
RATE_PARAM = "rate"
# Names a workload may give its served file size (KiB); `different:SIZE` sets it.
SIZE_PARAMS = ("file_sizes", "file_kb", "file_size_kb", "size_kb", "file_size")

# solo peaks measured in this process: (platform name, test case, params) -> value
_PEAKS: dict[tuple[str, str, str], float] = {}


def solo_peak(env: ScenarioEnv, platform: Platform, params: dict[str, Any]) -> float:
    """The environment's solo peak of the primary metric, measured once per run and cached."""
    w = env.workload
    unlimited = {k: v for k, v in params.items() if k != RATE_PARAM} | {
        RATE_PARAM: type(w).params[RATE_PARAM].default
    }
    key = (platform.name, w.name, repr(sorted(unlimited.items())))
    if key not in _PEAKS:
        env.ctx.log(f"measuring solo peak of {w.name} on {platform.name}")
        samples = type(w)().run(platform, replace(env.ctx, params=unlimited))
        primary = type(w).primary().name
        values = [s.value for s in samples if s.metric == primary and not s.labels.get("invalid")]
        if not values:
            raise WorkloadError(f"{w.name}: no valid {primary} sample in the solo-peak run")
        _PEAKS[key] = max(values)
    return _PEAKS[key]


def apply_load(
    env: ScenarioEnv, platform: Platform, params: dict[str, Any], load_pct: float | None
) -> dict[str, Any]:
    """`params` with the rate set to `load_pct` % of the environment's solo peak."""
    if load_pct is None:
        return params
    w = type(env.workload)
    if RATE_PARAM not in w.params:
        raise VirtbenchError(
            f"load=PCT needs a workload with a '{RATE_PARAM}' parameter; test case {w.name} "
            f"has: {', '.join(sorted(w.params)) or 'none'}"
        )
    sizes = next((v for k in SIZE_PARAMS if isinstance(v := params.get(k), list)), [])
    if len(set(sizes)) > 1:  # each size has its own peak, but one rate would apply to all
        raise VirtbenchError(
            f"load=PCT: test case {w.name} serves several file sizes {sizes} KB with different "
            "solo peaks, but one offered rate applies to all; use one file size "
            "(e.g. suites.web.file_sizes = [1]) in campaigns with load=PCT or many:N"
        )
    peak = solo_peak(env, platform, params)
    rate = max(1.0, peak * load_pct / 100.0)
    default = w.params[RATE_PARAM].default
    return params | {RATE_PARAM: int(rate) if isinstance(default, int) else rate}
