"""Where the environments of a weights cell run: all on one shared host CPU (seed 003 §6).

A CPU weight decides something only while its environments want the same CPU at the same
time: left to float over a small host, environments each find a CPU of their own and their
weights do nothing (measured: docs/colocation.md "Weights need contention"). So a weights
cell pins every environment to one shared CPU and the load generators to the other CPUs,
records that on every sample, and refuses up front when the environments cannot share a CPU.

The shared CPU is `cpu=N` if given, else the first of the campaign's `target_cpus` that every
environment may use, else the highest-numbered such CPU (CPU 0 usually takes more
interrupts). The load generators get the campaign's `client_cpus` (or every other CPU of the
host) minus the shared one; on a one-CPU host they share it, and the label says so.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from ..cgroups.budget import CpuBudget
from ..errors import VirtbenchError
from ..platforms import registry as platform_registry
from ..platforms.base import PlatformSpec
from .placement import host_cpus

SHARED = "shared-cpu"  # labels["placement"] of a weights cell
# where the load generators go: every CPU but the shared one, or anywhere (campaign's)
CLIENTS = ("other", "all")
# server CPU of about the cheapest request a web workload makes (a 1 KB static file in a
# container, docs/colocation.md), to size the backlog that keeps a quota's burst busy
BACKLOG_US_PER_REQUEST = 50
MAX_BACKLOG_CONNECTIONS = 10_000  # per client; nginx allows 16,384 per worker


@dataclass(frozen=True)
class SharedCpu:
    cpu: int  # the host CPU every environment of the cell is pinned to
    client_cpus: list[int] | None  # where the load generators run (None: anywhere)
    client_host: bool = False  # they run on the campaign's client host: its CPUs, not ours

    @property
    def env_cpus(self) -> list[int]:
        return [self.cpu]

    def labels(self) -> dict[str, object]:
        out: dict[str, object] = {
            "placement": SHARED,
            "env_cpus": self.env_cpus,
            "client_cpus": self.client_cpus,
        }
        if self.client_host:
            out["clients_on"] = "client host"
        elif self.client_cpus is None or self.cpu in self.client_cpus:
            out["placement_note"] = "the load generators may run on the shared CPU too"
        return out


def allowed_cpus(spec: PlatformSpec, cpus: list[int]) -> tuple[list[int], str | None]:
    """Host CPUs an environment of `spec` may be pinned to, and the option that limits them,
    as its platform type says (`Platform.pinnable_cpus`: a container's `cpuset`; a VM's
    `vcpu_pin` is overridden by the cell's CPUs). A platform inside a VM runs where its VM's
    vCPUs run (its own cpuset names guest CPUs)."""
    if spec.host is not None:
        return allowed_cpus(spec.host, cpus)
    return platform_registry.get(spec.type).pinnable_cpus(spec, cpus)


def guest_quota(spec: PlatformSpec) -> str | None:
    """A CFS quota the host cannot lift for the cell: one inside its VM guest."""
    quota = platform_registry.get(spec.type).guest_cpu_quota(spec)
    if quota is None or spec.host is None:
        return None
    return f"cpu_quota_us = {quota} inside its VM '{spec.host.name}'"


def shared_cpu(
    specs: dict[str, PlatformSpec],
    what: str,
    requested: int | None = None,
    target_cpus: list[int] | None = None,
    client_cpus: list[int] | None = None,
    cpus: list[int] | None = None,
    clients: str = "other",
    client_host: bool = False,
) -> SharedCpu:
    """One CPU every environment (role -> its platform spec) may use, and the clients' CPUs.

    Raises VirtbenchError naming the scenario, each environment's CPUs and the option that
    limits them when they have no CPU in common, or when a quota would keep them apart."""
    host = sorted(cpus if cpus is not None else host_cpus())
    allowed: dict[str, list[int]] = {}
    why: dict[str, str] = {}
    for role, spec in specs.items():
        allowed[role], reason = allowed_cpus(spec, host)
        if reason:
            why[role] = f"platform '{spec.name}' option {reason}"
        if q := guest_quota(spec):
            raise VirtbenchError(
                f"scenario '{what}': {role} (platform '{spec.name}') cannot contend for the CPU "
                f"by weight: {q} caps it from inside the guest; remove that option for weights"
            )
    common = [c for c in host if all(c in a for a in allowed.values())]
    if not common:
        each = "; ".join(
            f"{role} may run on CPUs {allowed[role] or 'none'}"
            + (f" ({why[role]})" if role in why else "")
            for role in specs
        )
        raise VirtbenchError(
            f"scenario '{what}': its environments must share one CPU for the weights to "
            f"decide anything, but they have none in common: {each}; give them a common CPU"
        )
    if requested is not None:
        if requested not in common:
            raise VirtbenchError(
                f"scenario '{what}': cpu={requested} is not a CPU every environment may use; "
                f"allowed: {', '.join(map(str, common))}"
            )
        cpu = requested
    else:
        preferred = [c for c in (target_cpus or []) if c in common]
        cpu = preferred[0] if preferred else common[-1]
    if client_host:  # its clients cannot take this host's CPU: client_cpus are that host's
        return SharedCpu(cpu, client_cpus, client_host=True)
    if clients == "all":  # the campaign's client CPUs as they are (None: unpinned)
        return SharedCpu(cpu, client_cpus)
    return SharedCpu(cpu, [c for c in (client_cpus or host) if c != cpu] or [cpu])


def backlog_connections(budget: CpuBudget | None, configured: object) -> int | None:
    """Connections each closed-loop client of a weights cell keeps open, or None to keep the
    configured count.

    A quota shorter than its period runs the pair in bursts (50 ms at a whole CPU's speed,
    then nothing). 32 connections are about 1 ms of 1 KB requests: each server drains its
    backlog early in the burst and then waits for its client, the two never want the CPU at
    once, and the weights divide nothing. Enough requests outstanding to fill a whole burst
    keep both runnable (measured: docs/colocation.md "A backlog that fills the budget's
    bursts")."""
    if budget is None or not isinstance(configured, int) or budget.quota_us >= budget.period_us:
        return None
    need = min(math.ceil(budget.quota_us / BACKLOG_US_PER_REQUEST), MAX_BACKLOG_CONNECTIONS)
    return need if need > configured else None
