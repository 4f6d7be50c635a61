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
        return env.workload.run(env.target, env.ctx)
