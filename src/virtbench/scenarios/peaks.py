"""Solo peaks, the denominators of `load=PCT`: one solo run of the test case without a rate
limit on an environment, measured once per run and (platform, test case, params, CPU limit).

The CPU limit is part of the key because the same platform runs under different ones in one
run: a VM is unlimited as a target but inside a container target's shared 0.5-CPU budget as
its neighbour; a peak measured there is half of the unlimited one and must not become the
denominator of the VM's own pair cells. With no shared budget (`cpu_budget = "own"`) the
limit is the environment's own quota, which a weights cell lifts: its peak is the unlimited one.

This module is the one home of the rules: the key, the limit, how an attempt runs, which
value is the peak, when to measure again. `SoloPeaks` keeps them for as long as it lives (the
runner keeps one per run, and its subclass only stores each `Attempt` as a cell of its own;
runner/peaks.py). The peak is the best valid
sample of the test case's primary metric; a run that never saturated (a sweep that ran out of
steps with its top step served in full: `SoloPeakRetry.unsaturated`) has none, so it is measured
once more at once, its top rate at least twice the first one's (`SoloPeakRetry.top_rate_param`,
workloads/capabilities.py).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, replace
from typing import Any

from .. import labelkeys
from ..errors import WorkloadError
from ..platforms.base import Platform
from ..platforms.cpu_weight import own_quota
from ..results import Sample
from ..workloads.base import RunContext, Workload
from ..workloads.capabilities import SoloPeakRetry

PeakKey = tuple[str, str, str, str]  # (platform, test case, params as sorted JSON, CPU limit)


class Unsaturated(WorkloadError):
    """A solo peak's run that never saturated: no peak; `top_rate` is the highest rate it
    offered (its retry offers at least twice that)."""

    def __init__(self, message: str, top_rate: float) -> None:
        super().__init__(message)
        self.top_rate = top_rate


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


@dataclass(frozen=True)
class Attempt:
    """One measurement of a solo peak: `workload` alone on `platform` with `params`; with
    `top_rate`, the retry of a sweep that never saturated, offering at least that much at its
    top; `last`: the last attempt, whose unsaturated headline is kept as a lower bound."""

    platform: Platform
    workload: Workload
    params: dict[str, Any]
    ctx: RunContext
    top_rate: float | None = None
    last: bool = False

    def run(self, ctx: RunContext | None = None) -> list[Sample]:
        """A fresh instance's run (a capacity probe is measured again, never reused), in `ctx`
        (default: the attempt's)."""
        w, ctx = type(self.workload), ctx or self.ctx
        params = self.params
        if self.top_rate and isinstance(w, SoloPeakRetry):
            params = params | {w.top_rate_param: self.top_rate}
        ctx.log(
            f"measuring solo peak of {self.workload.name} on {self.platform.name}"
            + (f" (its top step at {self.top_rate:,.0f} or more)" if self.top_rate else "")
        )
        return w().run(self.platform, replace(ctx, params=params))

    def value(self, samples: list[Sample]) -> float:
        """The peak of its run's `samples` (`peak_value`)."""
        return peak_value(type(self.workload), samples, self.last)


def peak_value(workload: type[Workload], samples: list[Sample], last: bool = False) -> float:
    """The best valid primary sample, once a run that never saturated has its headline
    flagged invalid (in `samples`, which are stored so), or on the `last` attempt labelled a
    lower bound and kept; none: `Unsaturated` if it never saturated, else `WorkloadError`,
    with the invalid reasons."""
    top_rate = None
    if isinstance(workload, SoloPeakRetry):
        top_rate = workload.unsaturated(samples, labelkeys.PEAK_LOWER_BOUND if last else "invalid")
    primary = workload.primary().name
    mine = [s for s in samples if s.metric == primary]
    values = [s.value for s in mine if not s.labels.get(labelkeys.INVALID)]
    if values:
        return max(values)
    why = "; ".join(dict.fromkeys(str(s.labels[labelkeys.INVALID]) for s in mine))
    message = f"{workload.name}: no valid {primary} sample in the solo-peak run" + (
        f" ({why})" if why else ""
    )
    if top_rate:
        raise Unsaturated(message, top_rate)
    raise WorkloadError(message)


class SoloPeaks:
    """Solo peaks measured so far; each (platform, test case, params) is measured once."""

    def __init__(self) -> None:
        self.known: dict[PeakKey, Peak] = {}

    def get(
        self, platform: Platform, workload: Workload, params: dict[str, Any], ctx: RunContext
    ) -> Peak:
        key = peak_key(platform.name, workload.name, params, cpu_limit(platform))
        if key not in self.known:
            self.known[key] = self._attempts(platform, workload, params, ctx)
        return self.known[key]

    def _attempts(
        self, platform: Platform, workload: Workload, params: dict[str, Any], ctx: RunContext
    ) -> Peak:
        """Measured until known, every attempt recorded: a failed one once more at once (a
        failed peak fails the cell that needed it, and a fresh TCG guest's first sweep can
        fail alone: colocation-web's vm-virtio neighbour, ok in the next cell); a sweep that
        never saturated once more, probed again and reaching at least twice as high, whose
        own top step served in full is then kept as a lower bound (flagged) rather than fail
        every cell that needs it (an absolute sweep that tops out below the server)."""
        top, widened, failed = None, False, False
        while True:
            try:
                return self.measure(Attempt(platform, workload, params, ctx, top, last=widened))
            except Unsaturated as exc:
                widened, top = True, 2 * exc.top_rate
            except WorkloadError:
                if failed:
                    raise
                failed = True
            ctx.log(f"solo peak of {workload.name} on {platform.name}: measured again")

    def measure(self, attempt: Attempt) -> Peak:
        """One solo run (not stored)."""
        return Peak(attempt.value(attempt.run()))
