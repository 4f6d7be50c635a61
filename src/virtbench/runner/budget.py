"""The shared CPU budget of a target and its co-located neighbours (cgroups/budget.py).

The runner provisions one target per group of cells and reuses it, so the budget lives as
long as the target: made just before it (and given to it through `platforms.registry.create`),
removed just after it (also on Ctrl-C or an error; after a SIGKILL the cgroups cleaner
removes it). Solo cells run the target alone inside it, co-location cells add their
neighbours to it for the cell, so solo and pair cells have the same budget: a pair divides
what one environment had alone.

Its quota is the one the host puts on the target (`Platform.host_cpu_quota`): the platform's
own for native, container and vm; for a container inside a VM, its VM's (the quota of the
QEMU process on the host). An environment inside the budget has no quota of its own.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

from ..cgroups import CpuBudget
from ..cpubudget import NONE, OWN, SHARED, BudgetFacts
from ..platforms import registry as platform_registry
from ..platforms.base import PlatformSpec

__all__ = ["NONE", "OWN", "SHARED", "facts", "for_target", "host_quota", "note"]


def host_quota(spec: PlatformSpec) -> tuple[int, int | None] | None:
    """(quota µs, period µs or None) the host applies to the environment's processes."""
    outer = spec.host or spec  # container@vm: on the host, its cost is its VM's
    return platform_registry.get(outer.type).host_cpu_quota(outer)


def note(spec: PlatformSpec) -> BudgetFacts | None:
    """The budget of a target that runs in no shared one, where a quota makes it worth saying
    ("own": its own quota); None: it has no quota at all."""
    if host_quota(spec) is not None:
        return BudgetFacts(OWN)
    inner = platform_registry.get(spec.type).guest_cpu_quota(spec)
    if inner is not None and spec.host is not None:
        # the quota caps CPU time inside the guest; the host sees only the VM, which is free
        return BudgetFacts(
            OWN,
            note=f"cpu_quota_us = {inner} inside its VM '{spec.host.name}' "
            "(the host cannot share it; give the VM a cpu_quota_us to share a budget)",
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


def facts(budget: CpuBudget | None, spec: PlatformSpec) -> BudgetFacts | None:
    """The budget a cell's samples state (None: nothing to say)."""
    return budget.facts() if budget is not None else note(spec)
