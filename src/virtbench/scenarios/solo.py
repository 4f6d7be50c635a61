"""`solo`: the target alone on the host — the reference every interference figure divides by."""

from __future__ import annotations

from .base import Scenario, ScenarioEnv
from .registry import register


@register
class Solo(Scenario):
    kind = "solo"
    usage = "solo"
    description = "the target alone, no neighbours"

    def run(self, env: ScenarioEnv):
        # read the target in detail while it runs (scheduler counters, exe/s, µs/exe), as
        # co-location scenarios do, so the report can set 0 neighbours beside 1..3 (seed 003
        # Figs. 1-2, 5-10) and the sampling overhead is the same in both
        with env.sampler.window({"target": env.target}):
            return env.workload.run(env.target, env.ctx)
