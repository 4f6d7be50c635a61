"""Lifecycle suite: how long a fresh instance takes to start and to go away (seed 003 §4.4).

`container-startup` asks the platform for cold starts of a fresh sibling instance whose first
process is `date +%s.%N`, and splits each start at the runtime's own command:

- `prepare_ms`: virtbench's preparation (cgroup, overlay, network, bundle), which a user's
  engine does too but in its own way, so it is reported apart;
- `runtime_startup_ms` (headline): from the runtime's create/run command to the wall-clock
  time the first process reads, i.e. the first instruction of the workload plus its exec and
  dynamic loading (well under 1 ms): what the isolation itself costs;
- `startup_ms`: both, from before anything of the instance existed.

Teardown is the time to remove everything again. Platforms without cold starts (native) run
the same probe as a plain process, the baseline any isolation layer adds to.
"""

from __future__ import annotations

import statistics
import time

from .. import labelkeys, suites
from ..errors import WorkloadError, WorkloadTimeout
from ..platforms.capabilities import ColdStart
from .base import Metric, Param, RunContext, Workload
from .registry import register

PROBE = ["date", "+%s.%N"]


def parse_probe(stdout: str) -> float:
    """Epoch seconds printed by the probe (`date +%s.%N`)."""
    for line in stdout.split():
        try:
            return float(line)
        except ValueError:
            continue
    raise WorkloadError(f"container-startup: no timestamp in probe output {stdout[-80:]!r}")


def _median_sample(w: Workload, metric: str, values_ms: list[float], **labels):
    return w.sample(
        metric,
        statistics.median(values_ms),
        **{
            labelkeys.N: len(values_ms),
            labelkeys.MIN: round(min(values_ms), 3),
            labelkeys.MAX: round(max(values_ms), 3),
            labelkeys.VALUES: [round(v, 3) for v in values_ms],
        },
        **labels,
    )


@register
class ContainerStartup(Workload):
    suite = suites.LIFECYCLE
    name = "container-startup"
    description = (
        "fresh instance: create -> first instruction of the workload, run to exit, teardown "
        "(median of `starts` cold starts)"
    )
    tools = ("date",)
    metrics = (
        Metric("runtime_startup_ms", "ms", False, primary=True),
        Metric("startup_ms", "ms", False),
        Metric("prepare_ms", "ms", False),
        Metric("run_ms", "ms", False),
        Metric("teardown_ms", "ms", False),
    )
    params = {"starts": Param(10, "cold starts per repetition (median reported)", 1, 1000)}

    def run(self, platform, ctx: RunContext):
        cold = platform.cold_start if isinstance(platform, ColdStart) else None
        startup, runtime, prepare, run, teardown = [], [], [], [], []
        for _ in range(int(ctx.params["starts"])):
            if cold is not None:
                t = cold(PROBE, timeout=ctx.timeout)
                if not t.result.ok:
                    tail = (t.result.stderr or t.result.stdout).strip()[-300:]
                    error = WorkloadTimeout if t.result.timed_out else WorkloadError
                    raise error(f"{self.name}: cold start failed: {tail}")
                first = parse_probe(t.result.stdout)
                # an engine that cannot say when its runtime began: after its preparation
                runtime_at = (
                    t.runtime_at if t.runtime_at is not None else t.created_at + t.prepare_s
                )
                startup.append((first - t.created_at) * 1e3)
                runtime.append((first - runtime_at) * 1e3)
                prepare.append((runtime_at - t.created_at) * 1e3)
                run.append((t.exited_at - t.created_at) * 1e3)
                teardown.append(t.teardown_s * 1e3)
            else:
                t0 = time.time()
                r = platform.exec(PROBE, timeout=ctx.timeout)
                done = time.time()
                if not r.ok:
                    error = WorkloadTimeout if r.timed_out else WorkloadError
                    raise error(f"{self.name}: probe failed: {r.stderr.strip()[-300:]}")
                startup.append((parse_probe(r.stdout) - t0) * 1e3)
                runtime.append(startup[-1])  # a process start: nothing to prepare
                run.append((done - t0) * 1e3)
        mode = "cold-start" if cold is not None else "exec"
        samples = [
            _median_sample(self, "runtime_startup_ms", runtime, mode=mode),
            _median_sample(self, "startup_ms", startup, mode=mode),
            _median_sample(self, "run_ms", run, mode=mode),
        ]
        if prepare:
            samples.append(_median_sample(self, "prepare_ms", prepare, mode=mode))
        if teardown:
            samples.append(_median_sample(self, "teardown_ms", teardown, mode=mode))
        if min(startup) < 0 or min(runtime) < 0:
            for s in samples:  # clocks disagree (e.g. a guest clock): not a valid figure
                s.labels[labelkeys.INVALID] = (
                    "probe clock earlier than the start: clocks not in sync"
                )
        return samples
