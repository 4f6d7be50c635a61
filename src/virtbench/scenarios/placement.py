"""Placement of a target and its neighbours on host CPUs (seed 001 §6.3), and `pinned`.

Placements:
  free      nobody is pinned (the scheduler decides; seed 001 scenarios 1, 5, 6, 7);
  affinity  the target is pinned to one CPU, neighbours to the other CPUs round-robin
            (seed 001 scenario 2, and "All-to-All" with pinning);
  same-cpu  the target and every neighbour are pinned to the same CPU (scenarios 3, 4).

The target CPU is `cpu=N` if given, else the first of the campaign's `target_cpus`, else the
highest-numbered CPU this process may use (CPU 0 usually takes more interrupts).

Scenario `pinned[:cpu=N]`: the target alone, pinned to one CPU (seed 001 scenario 2).
"""

from __future__ import annotations

import dataclasses
import os
from dataclasses import dataclass

from .. import parsing
from ..errors import VirtbenchError
from ..parsing import ParseError
from .base import Scenario, ScenarioEnv
from .registry import register

PLACEMENTS = ("free", "affinity", "same-cpu")


@dataclass
class Placement:
    mode: str
    target: list[int] | None
    neighbours: list[list[int] | None]

    def labels(self) -> dict[str, object]:
        return {"placement": self.mode, "target_cpus": self.target}


def host_cpus() -> list[int]:
    return sorted(os.sched_getaffinity(0))


def parse_cpu(value: str, what: str = "cpu") -> int:
    """Validate `cpu=N` against the CPUs of this host (ValueError names the allowed ones)."""
    cpus = host_cpus()
    try:
        cpu = parsing.integer(value, text=True)
    except ParseError:
        cpu = -1
    if cpu not in cpus:
        raise ValueError(
            f"{what}={value}: not a CPU of this host; allowed: {', '.join(map(str, cpus))}"
        )
    return cpu


def place(
    mode: str,
    k: int,
    target_cpu: int | None = None,
    campaign_cpus: list[int] | None = None,
    cpus: list[int] | None = None,
) -> Placement:
    """CPUs for the target and k neighbours under `mode`."""
    if mode not in PLACEMENTS:
        raise ValueError(f"unknown placement '{mode}'; allowed: {', '.join(PLACEMENTS)}")
    cpus = cpus if cpus is not None else host_cpus()
    if mode == "free":
        return Placement(mode, campaign_cpus, [None] * k)
    t = target_cpu
    if t is None:
        t = campaign_cpus[0] if campaign_cpus else cpus[-1]
    if mode == "same-cpu":
        return Placement(mode, [t], [[t] for _ in range(k)])
    others = [c for c in cpus if c != t]
    if not others:
        raise VirtbenchError(
            f"placement 'affinity' needs a CPU besides the target's CPU {t}; "
            f"this host offers only {cpus}"
        )
    return Placement(mode, [t], [[others[i % len(others)]] for i in range(k)])


@register
class Pinned(Scenario):
    kind = "pinned"
    usage = "pinned[:cpu=N]"
    description = "the target alone, pinned to one CPU (seed 001 scenario 2, one-to-one)"

    def __init__(self, args: list[str]) -> None:
        self.args = args
        try:
            pos, opts = parsing.key_values(args, ("cpu",))
        except ParseError as exc:
            raise ValueError(f"scenario 'pinned': {exc}; usage: {self.usage}") from None
        if pos:
            raise ValueError(f"scenario 'pinned': unexpected {pos[0]!r}; usage: {self.usage}")
        self.cpu = parse_cpu(opts["cpu"]) if "cpu" in opts else None

    def run(self, env: ScenarioEnv):
        p = place("same-cpu", 0, self.cpu, env.ctx.cpus)
        p.mode = "pinned"
        ctx = dataclasses.replace(env.ctx, cpus=p.target)
        samples = env.workload.run(env.target, ctx)
        for s in samples:
            s.labels.update(p.labels())
        return samples
