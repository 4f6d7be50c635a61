"""What a duet campaign (`order = "duet"`) must be, checked when it is loaded.

A duet run measures the baseline A and one other platform B at the same time, each pinned
to its own CPU set (campaign/rounds.py, runner/duet.py). That only measures A and B, rather
than one disturbing the other, when the two sets are disjoint and everything each cell runs
stays inside its set. So the loader refuses, naming the key:

- fewer than two usable CPUs, or `duet_cpus` that overlap, differ in size or leave the host;
- more or fewer than two measured platforms;
- a platform whose processes a CPU set cannot hold: a VM (QEMU's main loop and I/O threads
  run outside its pinned vCPUs) and anything stacked on one, gVisor (runsc ignores the exec
  pinning: its sentry schedules the tool's threads itself);
- a scenario other than `solo` (neighbours and antagonists would need CPUs of their own);
- a test case that runs tools on the host (web, network clients; qemu-img): they run
  outside both sets, and the pair's two would compete;
- A and B running different test cases (a cell without its partner is no duet).

A test case that uses every CPU (`sysbench-cpu-all`, stress-ng with `workers = 0`, the
multicore suite) runs with one thread per CPU of its set: the workloads already size
themselves by the pinned CPUs (RunContext.cpus), their `threads` label says so, and both
sides of a pair get sets of the same size. Refusing them instead would leave the multicore
cases without the one order that pairs their rounds.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any

from ..errors import CampaignError
from ..platforms import registry as platform_registry
from ..platforms.capabilities import BackendThreads
from ..workloads import registry as workload_registry
from .model import Campaign

KEY = "campaign.duet_cpus"


def default_sets(usable: list[int]) -> list[list[int]]:
    """The usable CPUs split into two halves of equal size (an odd one left out: sets of
    different sizes would give the two sides different machines)."""
    half = len(usable) // 2
    return [usable[:half], usable[half : 2 * half]]


def check(
    campaign: Campaign, raw_sets: Any, parse_cpus: Callable[[str, Any], list[int] | None]
) -> None:
    """Validate a duet campaign and set `settings.duet_cpus`; `parse_cpus(key, value)` is
    the loader's CPU-list parser (this host's CPUs, errors naming the key)."""
    file, s = campaign.file, campaign.settings
    if s.order != "duet":
        if raw_sets is not None:
            raise CampaignError(file, KEY, 'is only read with order = "duet"', raw_sets)
        return
    s.duet_cpus = _sets(file, raw_sets, parse_cpus)
    if s.target_cpus is not None:
        raise CampaignError(
            file,
            "campaign.target_cpus",
            'cannot be set with order = "duet": each cell of a pair is pinned to its duet_cpus set',
            s.target_cpus,
        )
    _two_platforms(campaign)
    _solo_only(campaign)
    _no_host_clients(campaign)


def _sets(
    file: str, raw: Any, parse_cpus: Callable[[str, Any], list[int] | None]
) -> list[list[int]]:
    if raw is None:
        usable = sorted(os.sched_getaffinity(0))
        sets = default_sets(usable)
        if not sets[0]:
            raise CampaignError(
                file,
                "campaign.order",
                "duet runs two platforms at once on disjoint CPU sets; this host has "
                f"{len(usable)} usable CPU, so they cannot be disjoint",
                "duet",
                ["sequential", "random", "interleaved"],
            )
        return sets
    if not isinstance(raw, list) or len(raw) != 2:
        raise CampaignError(
            file, KEY, "must be two CPU lists, one per side of the pair", raw, ["[[0], [1]]"]
        )
    sets = [parse_cpus(f"{KEY}[{i}]", v) or [] for i, v in enumerate(raw)]
    common = sorted(set(sets[0]) & set(sets[1]))
    if common:
        raise CampaignError(
            file, KEY, f"the two sets must be disjoint; both hold CPU {common}", raw
        )
    if len(sets[0]) != len(sets[1]):
        raise CampaignError(
            file,
            KEY,
            "the two sets must have as many CPUs each (the sides swap sets every round, and "
            "a test case using every CPU of its set would run another thread count)",
            raw,
        )
    return sets


def _two_platforms(campaign: Campaign) -> None:
    file, a = campaign.file, campaign.settings.baseline
    measured = [
        (i, p)
        for i, p in enumerate(campaign.platforms)
        if any(campaign.runs(p.name, t.suite) for t in campaign.tests)
    ]
    names = [p.name for _, p in measured]
    if len(measured) != 2 or a not in names:
        raise CampaignError(
            file,
            "platforms",
            f'order = "duet" measures exactly two platforms at once, the baseline ({a}) and '
            f"one other; this campaign measures {len(measured)}: {', '.join(names)}",
            allowed=[
                "the baseline and one other platform (others may only host or have suites = [])"
            ],
        )
    for i, p in measured:
        # host back-end threads (QEMU's main loop and I/O threads) run outside its CPU set
        if p.host is not None or issubclass(platform_registry.get(p.type), BackendThreads):
            raise CampaignError(
                file,
                f"platforms[{i}].type",
                f"platform '{p.name}' cannot run in a duet: a VM's QEMU threads besides its "
                "vCPUs run outside the CPU set, on the partner's CPUs",
                p.type if p.host is None else f"{p.type} on {p.host.name}",
                ["native", "container (not runtime = runsc)"],
            )
        if p.options.get("runtime") == "runsc":
            raise CampaignError(
                file,
                f"platforms[{i}].runtime",
                f"platform '{p.name}' cannot run in a duet: gVisor does not honour the "
                "pinning of what it runs, so its threads would reach the partner's CPUs",
                "runsc",
            )
    (ia, pa), (ib, pb) = measured
    only_a = [t.test_case for t in campaign.tests if campaign.runs(pa.name, t.suite)]
    only_b = [t.test_case for t in campaign.tests if campaign.runs(pb.name, t.suite)]
    if only_a != only_b:
        i, p = (ib, pb) if len(only_b) < len(only_a) else (ia, pa)
        raise CampaignError(
            file,
            f"platforms[{i}].suites",
            f"in a duet both platforms run the same test cases (each cell needs its partner); "
            f"{pa.name} runs {', '.join(only_a) or 'none'}, {pb.name} "
            f"{', '.join(only_b) or 'none'}",
            allowed=["the same suites on both platforms"],
        )


def _solo_only(campaign: Campaign) -> None:
    other = [s.text() for s in campaign.scenarios if s.kind != "solo"]
    if other:
        raise CampaignError(
            campaign.file,
            "campaign.scenarios",
            'order = "duet" runs solo scenarios only: co-location and antagonist scenarios '
            f"need CPUs beside the pair's two sets ({', '.join(other)})",
            other,
            ["solo"],
        )


def _no_host_clients(campaign: Campaign) -> None:
    workloads = workload_registry.load_all()
    clients = [
        t for t in campaign.tests if t.test_case in workloads and workloads[t.test_case].host_tools
    ]
    if clients:
        t = clients[0]
        raise CampaignError(
            campaign.file,
            f"suites.{t.suite}.test_cases",
            'order = "duet" cannot place test cases that run tools on the host (a load '
            "generator, qemu-img): they run outside both CPU sets, where the pair's two "
            "would compete: " + ", ".join(c.test_case for c in clients),
            allowed=["test cases without a host-side client (cpu, memory, disk, ...)"],
        )
