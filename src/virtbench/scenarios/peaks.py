"""Solo peaks, the denominators of `load=PCT`: one solo run of the test case without a rate
limit on an environment, measured once per run and (platform, test case, params, CPU limit).

The CPU limit is part of the key because the same platform runs under different ones in one
run: a VM is unlimited as a target but inside a container target's shared 0.5-CPU budget as
its neighbour; a peak measured there is half of the unlimited one and must not become the
denominator of the VM's own pair cells. With no shared budget (`cpu_budget = "own"`) the
limit is the environment's own quota, which a weights cell lifts: its peak is the unlimited one.

`SoloPeaks` keeps them for as long as it lives (the runner keeps one per run, and its subclass
stores each measurement as a cell of its own; runner/peaks.py). The peak is the best valid
sample of the test case's primary metric.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, replace
from typing import Any

from ..errors import WorkloadError
from ..platforms.base import Platform
from ..platforms.cpu_weight import own_quota
from ..results import Sample
from ..workloads.base import RunContext, Workload

PeakKey = tuple[str, str, str, str]  # (platform, test case, params as sorted JSON, CPU limit)


@dataclass(frozen=True)
class Peak:
    value: float
    cell_id: str | None = None  # the stored cell that measured it (None: not stored)


def peak_key(platform: str, test_case: str, params: dict[str, Any], limit: str = "") -> PeakKey:
    return (platform, test_case, json.dumps(params, sort_keys=True, default=str), limit)


def cpu_limit(platform: Platform) -> str:
    """The CFS quota in effect for the environment now ("": none), stored with a peak as
    `peak_cpu_limit`: its shared CPU budget's, else its own cgroup's (`cpu_budget = "own"`),
    which a weights cell lifts for its scene (a lifted quota reads ""; a lifted budget would
    read "max" or -1)."""
    budget = platform.cpu_budget()
    if budget is not None:
        return f"cpu quota {budget.quota_in_effect()}"
    own = own_quota(platform)
    return f"cpu quota {own}" if own is not None else ""


def run_solo(
    platform: Platform, workload: Workload, params: dict[str, Any], ctx: RunContext
) -> list[Sample]:
    ctx.log(f"measuring solo peak of {workload.name} on {platform.name}")
    return type(workload)().run(platform, replace(ctx, params=params))


def peak_value(workload: type[Workload], samples: list[Sample]) -> float:
    primary = workload.primary().name
    values = [s.value for s in samples if s.metric == primary and not s.labels.get("invalid")]
    if not values:
        raise WorkloadError(f"{workload.name}: no valid {primary} sample in the solo-peak run")
    return max(values)


class SoloPeaks:
    """Solo peaks measured so far; each (platform, test case, params) is measured once."""

    def __init__(self) -> None:
        self.known: dict[PeakKey, Peak] = {}

    def get(
        self, platform: Platform, workload: Workload, params: dict[str, Any], ctx: RunContext
    ) -> Peak:
        key = peak_key(platform.name, workload.name, params, cpu_limit(platform))
        if key not in self.known:
            try:
                self.known[key] = self.measure(platform, workload, params, ctx)
            except WorkloadError as exc:
                # once more, at once: a failed peak fails the cell that needed it, and a
                # fresh TCG guest's first sweep can fail alone (colocation-web: a vm-virtio
                # neighbour's, then ok in the next cell). Both attempts are recorded
                ctx.log(f"solo peak of {workload.name} on {platform.name} failed ({exc}); again")
                self.known[key] = self.measure(platform, workload, params, ctx)
        return self.known[key]

    def measure(
        self, platform: Platform, workload: Workload, params: dict[str, Any], ctx: RunContext
    ) -> Peak:
        """One solo run of `workload` with `params` on `platform` (not stored)."""
        return Peak(peak_value(type(workload), run_solo(platform, workload, params, ctx)))
