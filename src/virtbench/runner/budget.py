"""The shared CPU budget of a target and its co-located neighbours (cgroups/budget.py).

The runner provisions one target per group of cells and reuses it, so the budget lives as
long as the target: made just before it, removed just after it (also on Ctrl-C or an error;
after a SIGKILL the cgroups cleaner removes it). Solo cells run the target alone inside it,
co-location cells add their neighbours to it for the cell, so solo and pair cells have the
same budget: a pair divides what one environment had alone.

Its quota is the target's host-side `cpu_quota_us` (per `cpu_period_us`): the platform's own
for native, container and vm; for a container inside a VM, its VM's (the quota of the QEMU
process on the host). An environment inside the budget has no quota of its own.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

from ..cgroups import CpuBudget
from ..cgroups.budget import NONE, OWN, SHARED
from ..platforms.base import PlatformSpec

__all__ = ["NONE", "OWN", "SHARED", "for_target", "host_quota", "label", "note"]


def host_quota(spec: PlatformSpec) -> tuple[int, int | None] | None:
    """(quota µs, period µs or None) the host applies to the environment's processes."""
    opts = (spec.host or spec).options  # container@vm: on the host, its cost is its VM's
    quota = opts.get("cpu_quota_us")
    if quota is None:
        return None
    period = opts.get("cpu_period_us")
    return int(quota), (int(period) if period is not None else None)


def note(spec: PlatformSpec) -> str | None:
    """`labels.cpu_budget` of a target that runs in no budget, where a quota makes it worth
    saying ("own": its own quota); None: it has no quota at all."""
    if host_quota(spec) is not None:
        return OWN
    inner = spec.options.get("cpu_quota_us") if spec.host is not None else None
    if inner is not None:
        # the quota caps CPU time inside the guest; the host sees only the VM, which is free
        return (
            f"{OWN}: cpu_quota_us = {inner} inside its VM '{spec.host.name}' "  # type: ignore[union-attr]
            "(the host cannot share it; give the VM a cpu_quota_us to share a budget)"
        )
    return None


@contextlib.contextmanager
def for_target(spec: PlatformSpec, mode: str) -> Iterator[CpuBudget | None]:
    """The budget the target of `spec` is provisioned in (None: no budget), removed on exit."""
    quota = host_quota(spec)
    if mode != SHARED or quota is None:
        yield None
        return
    budget = CpuBudget.create(*quota)
    try:
        yield budget
    finally:
        budget.destroy()


def label(budget: CpuBudget | None, spec: PlatformSpec) -> str | None:
    """`labels.cpu_budget` of a cell's samples (None: nothing to say)."""
    return budget.label() if budget is not None else note(spec)
