"""CPU suite: sysbench cpu (1 thread and all cores)."""

from __future__ import annotations

import os
import re

from ..errors import WorkloadError
from .base import Metric, Param, RunContext, Workload
from .registry import register

_EPS = re.compile(r"events per second:\s*([\d.]+)")


class _SysbenchCpu(Workload):
    suite = "cpu"
    tools = ("sysbench",)
    metrics = (Metric("events_per_s", "events/s", True, primary=True),)
    params = {
        "duration": Param(5, "seconds per run", min=1, max=3600),
        "max_prime": Param(20000, "sysbench --cpu-max-prime", min=100, max=10_000_000),
    }

    def threads(self, ctx: RunContext) -> int:
        raise NotImplementedError

    def command(self, ctx, platform):
        p = ctx.params
        return [
            "sysbench",
            "cpu",
            f"--threads={self.threads(ctx)}",
            f"--time={p['duration']}",
            f"--cpu-max-prime={p['max_prime']}",
            "run",
        ]

    def parse(self, result, ctx):
        m = _EPS.search(result.stdout)
        if not m:
            raise WorkloadError(f"{self.name}: no 'events per second' in sysbench output")
        return [self.sample("events_per_s", float(m.group(1)), threads=self.threads(ctx))]


@register
class SysbenchCpu1(_SysbenchCpu):
    name = "sysbench-cpu-1t"
    description = "sysbench cpu prime search, 1 thread: single-core throughput"

    def threads(self, ctx):
        return 1


@register
class SysbenchCpuAll(_SysbenchCpu):
    name = "sysbench-cpu-all"
    description = "sysbench cpu prime search, one thread per available CPU"

    def threads(self, ctx):
        return len(ctx.cpus) if ctx.cpus else os.cpu_count() or 1
