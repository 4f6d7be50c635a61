"""`solo`: the target alone on the host — the reference every interference figure divides by."""

from __future__ import annotations

from dataclasses import replace

from ..metrics.sampler import Span, summary_samples
from .base import Scenario, ScenarioEnv
from .registry import register

# suites whose solo cells are read in detail like their co-located cells (seeds 000 and 003
# are about web servers); other suites keep the lighter cpu_util-only sampling, so latency
# benchmarks and the store's size are unchanged; the conference suite's resource curves
# per user count (seed 002 Figs. 2-3) are these per-point summaries
DETAILED_SUITES = frozenset({"web", "conference"})


@register
class Solo(Scenario):
    kind = "solo"
    usage = "solo"
    description = "the target alone, no neighbours"

    def run(self, env: ScenarioEnv):
        if getattr(env.workload, "suite", None) not in DETAILED_SUITES:
            return env.workload.run(env.target, env.ctx)
        # read the target in detail while it runs (scheduler counters, exe/s, µs/exe), as
        # co-location scenarios do, so the report can set 0 neighbours beside 1..3 (seed 003
        # Figs. 1-2, 5-10) and the sampling overhead is the same in both; its summaries are
        # per served point like theirs (metrics/sampler.py summary_samples)
        points: list[Span] = []
        t0 = env.sampler.t0
        ctx = replace(env.ctx, point=lambda lab, a, b: points.append((dict(lab), a - t0, b - t0)))
        with env.sampler.window({"target": env.target}) as window:
            samples = env.workload.run(env.target, ctx)
        return samples + summary_samples(window, points, {})
