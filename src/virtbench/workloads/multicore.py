"""Multicore suite (seed 004 Table 2): how the cpu and memory tools scale with threads.

Every test case sweeps `threads` (default [0]: 1, 2, 4 ... up to twice the CPUs the
environment sees, and that CPU count itself, so the fall past saturation shows) and labels
each point `threads`. Both directions of seed 004's pts/multicore: rates (higher is better)
and the time to finish a fixed job (lower is better). `efficiency` = rate at N / (N x rate at
1 thread), 1.0 being perfect scaling; it needs the 1-thread point in the same cell.
"""

from __future__ import annotations

from typing import Any

from .. import labelkeys, suites
from ..drivers import stress_ng, sysbench
from ..errors import WorkloadError
from ..platforms import stall
from ..platforms.base import Platform
from .base import Metric, Param, RunContext, Sample, Workload
from .registry import register
from .scratch import Deadline, read_file, remove, scratch_dir

STALL_S = 10  # these tools compute from start to end
MAX_THREADS = 1024
EFFICIENCY = Metric("efficiency", "ratio", True)
DURATION = Param(3, "seconds per thread count", min=1, max=3600)
MAX_PRIME = Param(20000, "sysbench --cpu-max-prime", min=100, max=10_000_000)


def default_threads(cpus: int) -> list[int]:
    """1, 2, 4 ... up to 2 x cpus, with cpus itself: [1, 2, 4] for 2 CPUs."""
    out, n = {cpus}, 1
    while n <= 2 * cpus:
        out.add(n)
        n *= 2
    return sorted(out)


class _Multicore(Workload):
    suite = suites.MULTICORE
    dimension_labels = (labelkeys.THREADS,)
    rate_metric: str  # the metric efficiency is computed from
    params = {
        "threads": Param(
            [0], "thread counts to sweep; 0 = 1, 2, 4 .. 2 x the CPUs it sees", min=0, max=1024
        ),
    }

    def thread_counts(self, platform: Platform, ctx: RunContext) -> list[int]:
        counts = list(ctx.params["threads"])
        if not counts or any(not isinstance(n, int) or not 0 <= n <= MAX_THREADS for n in counts):
            raise WorkloadError(f"{self.name}: threads must be integers 0..{MAX_THREADS}: {counts}")
        out = {n for n in counts if n > 0}
        if 0 in counts:
            out.update(default_threads(_cpus_seen(platform, ctx)))
        return sorted(out)

    def point(self, platform: Platform, ctx: RunContext, threads: int, left) -> list[Sample]:
        raise NotImplementedError

    def run(self, platform: Platform, ctx: RunContext) -> list[Sample]:
        deadline = Deadline(ctx.timeout)
        samples: list[Sample] = []
        for n in self.thread_counts(platform, ctx):
            samples += self.point(platform, ctx, n, deadline.left())
        return samples + self.efficiency(samples)

    def efficiency(self, samples: list[Sample]) -> list[Sample]:
        """rate(N) / (N x rate(1)) per point, from this cell's valid 1-thread point."""
        m = self.metric(self.rate_metric)
        rates = {
            s.labels[labelkeys.THREADS]: s.value
            for s in samples
            if s.metric == m.name and labelkeys.INVALID not in s.labels
        }
        one = rates.get(1)
        if not one:
            return []
        out = []
        for n, v in sorted(rates.items()):
            # a time: work per second is 1/time, so efficiency = t(1) / (N x t(N))
            ratio = (v / one if m.higher_is_better else one / v) / n if v > 0 else 0.0
            out.append(self.sample(EFFICIENCY.name, ratio, **{labelkeys.THREADS: n}))
        return out


def _cpus_seen(platform: Platform, ctx: RunContext) -> int:
    """CPUs the environment itself has (a VM's vCPUs), or the pinned set."""
    if ctx.cpus:
        return len(ctx.cpus)
    r = platform.exec(["nproc"], timeout=30)
    if r.ok and r.stdout.strip().isdigit():
        return int(r.stdout.strip())
    raise WorkloadError(f"nproc failed in the environment: {(r.stderr or r.stdout).strip()}")


def _run(platform: Platform, ctx: RunContext, argv: list[str], what: str, left) -> str:
    result = stall.exec_watched(platform, argv, idle_s=STALL_S, cpus=ctx.cpus, timeout=left)
    stall.check_watched(result, what)
    return result.stdout


class _Sysbench(_Multicore):
    tools = ("sysbench",)


@register
class MulticoreSysbenchCpu(_Sysbench):
    name = "multicore-sysbench-cpu"
    description = "sysbench cpu prime search at 1..N threads: events/s and scaling efficiency"
    rate_metric = "events_per_s"
    metrics = (Metric("events_per_s", "events/s", True, primary=True), EFFICIENCY)
    params = {**_Multicore.params, "duration": DURATION, "max_prime": MAX_PRIME}

    def point(self, platform, ctx, threads, left):
        p = ctx.params
        argv = sysbench.cpu_argv(threads, p["duration"], p["max_prime"])
        text = _run(platform, ctx, argv, f"{self.name} {threads} threads", left)
        return [
            self.sample(
                "events_per_s", sysbench.parse_cpu(text, self.name), **{labelkeys.THREADS: threads}
            )
        ]


@register
class MulticoreSysbenchCpuTime(_Sysbench):
    name = "multicore-sysbench-cpu-time"
    description = (
        "time to finish a fixed sysbench cpu job (`events` prime searches) shared by 1..N"
        " threads: lower is better, like seed 004's pts/multicore build and encode times"
    )
    rate_metric = "elapsed_s"
    metrics = (Metric("elapsed_s", "s", False, primary=True), EFFICIENCY)
    params = {
        **_Multicore.params,
        "events": Param(2000, "prime searches in the job", min=10, max=100_000_000),
        "max_prime": MAX_PRIME,
    }

    def point(self, platform, ctx, threads, left):
        p = ctx.params
        argv = sysbench.cpu_events_argv(threads, p["events"], p["max_prime"])
        text = _run(platform, ctx, argv, f"{self.name} {threads} threads", left)
        seconds, done = sysbench.parse_total_time(text, self.name)
        s = self.sample(
            "elapsed_s", seconds, **{labelkeys.THREADS: threads, labelkeys.EVENTS: p["events"]}
        )
        if done < p["events"]:
            s.labels[labelkeys.INVALID] = f"only {done} of {p['events']} events done"
        return [s]


@register
class MulticoreStressNgMatrixprod(_Multicore):
    name = "multicore-stress-ng-matrixprod"
    description = "stress-ng cpu matrixprod with 1..N workers: bogo-ops/s and scaling efficiency"
    tools = ("stress-ng",)
    rate_metric = "bogo_ops_per_s"
    metrics = (Metric("bogo_ops_per_s", "bogo-ops/s", True, primary=True), EFFICIENCY)
    params = {**_Multicore.params, "duration": DURATION}

    def point(self, platform, ctx, threads, left):
        workdir = scratch_dir(platform, "stress-ng")
        report = f"{workdir}/metrics.yaml"
        extra = ("--cpu-method", "matrixprod")
        argv = stress_ng.argv("cpu", threads, extra, ctx.params["duration"], workdir, report)
        what = f"{self.name} {threads} workers"
        try:
            _run(platform, ctx, argv, what, left)
            m = stress_ng.parse_rates(read_file(platform, report, what), "cpu", what)
        finally:
            remove(platform, workdir)
        # only labels that are the same at every point: a varying one (the bogo-op count)
        # would split the curve into one group per point
        labels: dict[str, Any] = {labelkeys.THREADS: threads}
        invalid = stress_ng.too_few_ops(m)
        if invalid:
            labels[labelkeys.INVALID] = invalid
        return [self.sample("bogo_ops_per_s", m[stress_ng.REAL_TIME_RATE], **labels)]


@register
class MulticoreSysbenchMemory(_Sysbench):
    name = "multicore-sysbench-memory"
    description = (
        "sysbench memory bandwidth at 1..N threads, blocks past the caches: MiB/s and scaling"
        " efficiency (the memory bus saturates before the CPUs do)"
    )
    rate_metric = "bandwidth_mib_s"
    metrics = (Metric("bandwidth_mib_s", "MiB/s", True, primary=True), EFFICIENCY)
    params = {
        **_Multicore.params,
        "block_kib": Param(16384, "block per thread, KiB (past the caches)", min=1, max=4194304),
        "op": Param("read", "sysbench --memory-oper", choices=("read", "write")),
        "duration": DURATION,
    }

    def point(self, platform, ctx, threads, left):
        p = ctx.params
        argv = sysbench.memory_argv(threads, p["block_kib"], p["op"], "seq", p["duration"])
        what = f"{self.name} {threads} threads"
        r = sysbench.parse_memory(_run(platform, ctx, argv, what, left), what)
        s = self.sample(
            "bandwidth_mib_s",
            r["mib_s"],
            **{
                labelkeys.THREADS: threads,
                labelkeys.OP: p["op"],
                labelkeys.BLOCK_KIB: p["block_kib"],
            },
        )
        invalid = sysbench.too_few_blocks(r)
        if invalid:
            s.labels[labelkeys.INVALID] = invalid
        return [s]
