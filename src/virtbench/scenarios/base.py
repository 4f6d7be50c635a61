"""The scenario contract: what runs beside the target, and how it is placed.

A scenario is written in campaigns as `kind[:arg[:arg...]]`, e.g. `solo`,
`idle-neighbours:3`, `antagonist:memory-load`, `weights:0.5:1:1`.
"""

from __future__ import annotations

import abc
from collections.abc import Callable
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from typing import ClassVar

from ..cgroups import CpuBudget
from ..cpubudget import BudgetFacts
from ..metrics.sampler import Sampler
from ..platforms.base import Platform, PlatformSpec
from ..workloads.base import RunContext, Sample, Workload
from .peaks import SoloPeaks


@dataclass
class ScenarioEnv:
    target: Platform  # provisioned by the runner
    workload: Workload
    ctx: RunContext
    # provisions another environment (a neighbour) and tears it down on exit:
    # new_platform(spec, role) or, inside a shared CPU budget, new_platform(spec, role, budget=)
    new_platform: Callable[..., AbstractContextManager[Platform]]
    # the campaign's [[platforms]] by name, so a neighbour can be of another platform type
    platforms: dict[str, PlatformSpec] = field(default_factory=dict)
    # the cell's one sampler, owned by the runner and already watching role "target"; a
    # scenario adds its other roles to it (its t0 is the cell's time axis). The default is
    # not running (a scenario run outside the runner samples nothing)
    sampler: Sampler = field(default_factory=Sampler)
    # the run's solo peaks, the denominators of load=PCT (the runner stores each one)
    solo_peaks: SoloPeaks = field(default_factory=SoloPeaks)
    # the shared CPU budget the target runs in (cgroups/budget.py; [campaign] cpu_budget =
    # "shared"): co-located neighbours join it for the cell. None: no budget
    budget: CpuBudget | None = None
    # what the cell's samples say of its budget (runner/budget.py `facts`): the shared one's,
    # or, without one, "own" where a quota makes it worth saying; None: nothing to say
    budget_facts: BudgetFacts | None = None


class Scenario(abc.ABC):
    kind: ClassVar[str]
    usage: ClassVar[str]
    description: ClassVar[str]
    # its neighbours join the target's shared CPU budget (co-location, cgroups/budget.py): the
    # runner then provisions the target inside one, for every cell of its group (solo too)
    shares_cpu_budget: ClassVar[bool] = False

    def __init__(self, args: list[str]) -> None:
        """Validate arguments; raise ValueError with a message naming what is allowed."""
        if args:
            raise ValueError(f"scenario '{self.kind}' takes no arguments (usage: {self.usage})")
        self.args = args

    def platform_refs(self) -> list[str]:
        """Platform names (campaign [[platforms]]) this scenario refers to, checked at load."""
        return []

    def text(self) -> str:
        """The scenario string as written in the campaign (for messages)."""
        return ":".join([self.kind, *self.args])

    @abc.abstractmethod
    def run(self, env: ScenarioEnv) -> list[Sample]:
        """Run the target workload under this scenario and return all roles' samples."""
