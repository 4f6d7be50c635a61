"""Share the host's real-time budget between a target and its antagonists for one cell.

On cgroup v1 with CONFIG_RT_GROUP_SCHED, SCHED_FIFO/RR inside a container needs real-time
runtime granted to the container's group (cgroups.Cgroup.set_rt_runtime), and all groups share
one budget: the host's sched_rt_runtime_us (950000 of every 1000000 µs per CPU by default).
The container platform's default `rt_runtime_us = "auto"` grants the target everything that
is free when the runner provisions it, so antagonist containers started later by a scenario
got 0 µs and could not become SCHED_RR (the quantum scenarios failed).

`split()` re-divides the budget when the antagonists run with a real-time policy: the pool is
what the target holds plus what is free; the target and every antagonist environment that
needs a budget (a platform type with the RtBudget capability, its `rt_runtime_us` option left
at "auto") get an equal share, and the target's own grant is restored after the antagonists
are torn down. Budgets set explicitly (`rt_runtime_us = 300000`) are respected and taken out
of the pool. The budget arithmetic is the cgroup layer's (cgroups/rt.py); this is the policy.

RT throttling, and why the period is shortened: a group may run SCHED_FIFO/RR tasks for
`runtime` µs of every `period` on each CPU, so a busy-looping probe stalls for about
(period - runtime) once per period, and each group's period runs on its own timer (two groups
sharing a CPU do not run out together). So each share keeps its ratio pool/n but gets the
period p for which a lone busy task stalls no longer than a native one: p * (1 - ratio) =
host period - host runtime (split_period). The target's own share runs on a short period
(TARGET_PERIOD_US), so that its own stall lies below the competitor's quantum and the quantum
decides, as natively; the antagonists keep p (a short one would cut their quantum). The
measurements behind both choices: docs/latency.md "Scenario 3".

Labels on every sample of such a cell: rt_budget_us / rt_budget_period_us (granted),
rt_budget_split (n), rt_budget_pool_us, and rt_throttle_stall_us (period - runtime, the
throttling stall a busy task of the group can see: maxima up to about that size may be the
budget, not the platform). Labels of the target: rt_budget_period_us / rt_budget_us /
rt_throttle_stall_us are its own; rt_budget_neighbour_period_us is the antagonists' period.
"""

from __future__ import annotations

import contextlib
import dataclasses
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

from .. import cgroups, labelkeys
from ..errors import PlatformError, VirtbenchError
from ..platforms import registry as platform_registry
from ..platforms.base import Platform, PlatformSpec
from ..platforms.capabilities import RtBudget

OPTION = "rt_runtime_us"
PERIOD_OPTION = "rt_period_us"
TARGET_PERIOD_US = 10_000  # the target's share runs on this period (see the module doc)


@dataclass
class Split:
    specs: list[PlatformSpec]  # the antagonists' specs, with their granted rt_runtime_us
    labels: dict[str, Any] = field(default_factory=dict)  # for the target's samples
    neighbour_labels: list[dict[str, Any]] = field(default_factory=list)  # one per spec


def needs_budget(spec: PlatformSpec) -> bool:
    """Does an environment of `spec` hold its own rt budget (a host-level container)?"""
    if spec.host is not None:  # nested inside a VM: the guest's budget, not the host's
        return False
    try:
        cls = platform_registry.get(spec.type)
    except PlatformError:  # an unknown type fails later with its own message
        return False
    return issubclass(cls, RtBudget)


def _auto(spec: PlatformSpec) -> bool:
    return spec.options.get(OPTION, cgroups.RT_AUTO) == cgroups.RT_AUTO


def _free() -> tuple[int, int, int] | None:
    """(µs free for a new group, period, the host's own rt runtime): cgroups.headroom."""
    return cgroups.headroom(cgroups.Layout.detect())


def split_period(period: int, host_runtime: int, ratio: float) -> int:
    """The rt period for groups that each hold `ratio` of the CPU, chosen so a busy task in
    one is stalled at most as long as a native one: (period - host_runtime), 50 ms by default.
    A group holding ratio r of period p stalls for p * (1 - r)."""
    bound = period - host_runtime
    if bound <= 0 or ratio >= 1:  # the host does not throttle, or one group holds it all
        return period
    return max(1000, min(period, round(bound / (1 - ratio))))


@contextlib.contextmanager
def split(
    target: Platform,
    specs: list[PlatformSpec],
    realtime: bool,
    what: str,
    log: Callable[[str], None] | None = None,
    free: Callable[[], tuple[int, int, int] | None] = _free,
) -> Iterator[Split]:
    """Give the target and each antagonist spec an equal share of the rt budget while the
    block runs (only if the antagonists run `realtime` and one of them needs a budget)."""
    # only antagonists with a budget of their own compete with the target for it
    info = free() if realtime and any(needs_budget(s) for s in specs) else None
    if info is None:
        yield Split(list(specs), {}, [{} for _ in specs])
        return
    free_us, period, host_runtime = info
    held = target.rt_budget() if isinstance(target, RtBudget) else None
    target_shares = held is not None and _auto(target.spec)
    sharing = [needs_budget(s) and _auto(s) for s in specs]
    explicit = sum(
        int(s.options[OPTION]) * period // int(s.options.get(PERIOD_OPTION) or period)
        for s, share in zip(specs, sharing, strict=True)
        if needs_budget(s) and not share
    )
    n = int(target_shares) + sum(sharing)
    if n == 0:
        yield Split(list(specs), {}, [{} for _ in specs])
        return
    held_norm = held[0] * period // held[1] if target_shares and held else 0
    pool = max(0, free_us + held_norm - explicit)  # µs per host period
    p = split_period(period, host_runtime, pool / (n * period))
    # µs per p; n µs less for rounding (the kernel compares runtime/period ratios and the
    # parent's budget is counted rounded up, cgroups.rt_children)
    share = max(0, pool - n) * p // (n * period)
    if share == 0:
        raise VirtbenchError(
            f"scenario '{what}': its real-time antagonists need real-time bandwidth, but none "
            f"of the host's budget is free (the target holds {held_norm} µs; other virtbench "
            f"groups hold the rest, see "
            f"/sys/fs/cgroup/cpu/{cgroups.PARENT}/*/cpu.rt_runtime_us); run it when they are "
            "done, or set rt_runtime_us on the platforms"
        )
    common: dict[str, Any] = {
        "rt_budget_pool_us": pool,
        labelkeys.RT_BUDGET_SPLIT: n,
        "rt_budget_period_us": p,
        "rt_budget_us": share,
        "rt_throttle_stall_us": p - share,
    }
    out_specs = [
        dataclasses.replace(s, options={**s.options, OPTION: share, PERIOD_OPTION: p})
        if shared
        else s
        for s, shared in zip(specs, sharing, strict=True)
    ]
    neighbour = [dict(common) if shared else {} for shared in sharing]
    if not target_shares:
        yield Split(out_specs, {**common, "rt_budget_target": "not shared"}, neighbour)
        return
    assert held is not None and isinstance(target, RtBudget)
    pt = min(p, TARGET_PERIOD_US)  # the same share of a short period
    granted = target.set_rt_budget(max(0, pool - n) * pt // (n * period), period_us=pt) or 0
    try:
        yield Split(
            out_specs,
            {
                **common,
                "rt_budget_period_us": pt,
                "rt_budget_us": granted,
                "rt_throttle_stall_us": pt - granted,
                labelkeys.RT_BUDGET_NEIGHBOUR_PERIOD_US: p,
            },
            neighbour,
        )
    finally:
        back = target.set_rt_budget(held[0], period_us=held[1], cap_to_free=True)
        if back != held[0] and log is not None:
            log(
                f"{target.name}: real-time budget restored to {back} µs, not {held[0]} µs "
                "(another virtbench group took the rest meanwhile); later cells say so in "
                "their platform labels"
            )
