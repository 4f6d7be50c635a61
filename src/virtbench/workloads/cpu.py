"""CPU suite: sysbench cpu (1 thread and all cores), stress-ng CPU stressors, LINPACK via hpcc."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from .. import labelkeys, ownedtmp, suites
from ..drivers import hpcc, stress_ng, sysbench
from ..errors import WorkloadError
from ..platforms import stall
from ..platforms.base import Platform
from .base import Metric, Param, RunContext, Sample, Workload, check
from .registry import register
from .scratch import Deadline, read_file, remove, scratch_dir


class _SysbenchCpu(Workload):
    suite = suites.CPU
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
        return sysbench.cpu_argv(self.threads(ctx), p["duration"], p["max_prime"])

    def parse(self, result, ctx):
        events_per_s = sysbench.parse_cpu(result.stdout, self.name)
        return [self.sample("events_per_s", events_per_s, **{labelkeys.THREADS: self.threads(ctx)})]


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

    _online: int | None = None  # CPUs the environment itself sees (a VM's vCPUs)

    def threads(self, ctx):
        if ctx.cpus:
            return len(ctx.cpus)
        return self._online or os.cpu_count() or 1

    def run(self, platform, ctx):
        # ask the environment, not the host: a 1-vCPU guest must not run 2 threads
        if not ctx.cpus:
            r = platform.exec(["nproc"], timeout=30)
            if r.ok and r.stdout.strip().isdigit():
                self._online = int(r.stdout.strip())
        return super().run(platform, ctx)


# --- helpers for workloads that leave files in the environment --------------------------------


# --- stress-ng -------------------------------------------------------------------------------


class _StressNg(Workload):
    suite = suites.CPU
    tools = ("stress-ng",)
    metrics = (
        Metric("bogo_ops_per_s", "bogo-ops/s", True, primary=True),  # real (wall) time
        Metric("bogo_ops_per_cpu_s", "bogo-ops/s", True),  # per usr+sys CPU second
    )
    params = {
        "duration": Param(5, "seconds per run", min=1, max=3600),
        "workers": Param(1, "stress-ng instances; 0 = one per CPU", min=0, max=1024),
    }
    stressor: str  # the stress-ng stressor (its YAML 'stressor' key)
    extra_args: tuple[str, ...] = ()

    def workers(self, ctx: RunContext) -> int:
        n = int(ctx.params["workers"])
        if n > 0:
            return n
        # -1: stress-ng counts the online CPUs of the environment it runs in (a VM's vCPUs)
        return len(ctx.cpus) if ctx.cpus else -1

    def run(self, platform: Platform, ctx: RunContext) -> list[Sample]:
        deadline = Deadline(ctx.timeout)
        workdir = scratch_dir(platform, "stress-ng")
        report = f"{workdir}/metrics.yaml"
        argv = stress_ng.argv(
            self.stressor,
            self.workers(ctx),
            self.extra_args,
            ctx.params["duration"],
            workdir,
            report,
        )
        try:
            check(platform.exec(argv, cpus=ctx.cpus, timeout=deadline.left()), self.name)
            text = read_file(platform, report, self.name)
        finally:
            remove(platform, workdir)
        return self.parse_yaml(text, ctx)

    def parse_yaml(self, text: str, ctx: RunContext) -> list[Sample]:
        m = stress_ng.parse_rates(text, self.stressor, self.name)
        n = self.workers(ctx)
        labels: dict[str, Any] = {
            labelkeys.STRESSOR: self.stressor,
            labelkeys.WORKERS: n if n > 0 else "all-online",
            labelkeys.BOGO_OPS: m.get("bogo-ops"),
            labelkeys.WALL_S: m.get("wall-clock-time"),
        }
        if self.extra_args:
            labels[labelkeys.ARGS] = " ".join(self.extra_args)
        samples = [
            self.sample("bogo_ops_per_s", m[stress_ng.REAL_TIME_RATE], **labels),
            self.sample("bogo_ops_per_cpu_s", m[stress_ng.CPU_TIME_RATE], **labels),
        ]
        invalid = stress_ng.too_few_ops(m)
        if invalid:  # keep them, flagged
            for s in samples:
                s.labels[labelkeys.INVALID] = invalid
        return samples


@register
class StressNgMatrixprod(_StressNg):
    name = "stress-ng-cpu-matrixprod"
    description = "stress-ng cpu, method matrixprod: floating point matrix product, cache heavy"
    stressor = "cpu"
    extra_args = ("--cpu-method", "matrixprod")


@register
class StressNgInt64(_StressNg):
    name = "stress-ng-cpu-int64"
    description = "stress-ng cpu, method int64: 64-bit integer ALU operations"
    stressor = "cpu"
    extra_args = ("--cpu-method", "int64")


@register
class StressNgQsort(_StressNg):
    name = "stress-ng-qsort"
    description = "stress-ng qsort: sorting 32-bit integers, branchy and memory bound"
    stressor = "qsort"


# --- LINPACK (HPL) through hpcc ----------------------------------------------------------------

# hpcc computes from start to end: this long without CPU means it waits for something that
# will not come (see drivers/hpcc.py), so the cell fails now with the reason
HPCC_STALL_S = 10


class _Hpcc(Workload):
    suite = suites.CPU
    tools = ("hpcc",)

    def hpcc_output(self, platform: Platform, ctx: RunContext, ns: int | list[int]) -> str:
        """Run hpcc once on HPL problem size(s) `ns`; its hpccoutf.txt."""
        deadline = Deadline(ctx.timeout)
        workdir = scratch_dir(platform, "hpcc")
        out = f"{workdir}/hpccoutf.txt"
        try:
            with ownedtmp.tempdir("hpcc") as tmp:
                inf = Path(tmp) / "hpccinf.txt"
                inf.write_text(hpcc.input_file(ns, int(ctx.params["nb"])))
                platform.put_file(str(inf), f"{workdir}/hpccinf.txt", 0o644)
            result = stall.exec_watched(
                platform,
                hpcc.argv(workdir),
                idle_s=HPCC_STALL_S,
                cpus=ctx.cpus,
                timeout=deadline.left(),
            )
            if stall.stall_reason(result):
                tail = platform.exec(["sh", "-c", 'tail -n 3 "$1"', "sh", out], timeout=30)
                stall.check_watched(result, self.name, tail.stdout or result.stderr)
            check(result, self.name)
            return read_file(platform, out, self.name)
        finally:
            remove(platform, workdir)


@register
class HpccLinpack(_Hpcc):
    name = "hpcc-linpack"
    description = (
        "LINPACK (HPL) GFLOPS from the HPC Challenge suite, one process with the system BLAS;"
        " DGEMM, STREAM triad, RandomAccess and FFT come from the same run"
    )
    metrics = (
        Metric("hpl_gflops", "GFLOPS", True, primary=True),
        Metric("dgemm_gflops", "GFLOPS", True),
        Metric("stream_triad_gbs", "GB/s", True),
        Metric("random_access_gups", "GUP/s", True),
        Metric("fft_gflops", "GFLOPS", True),
    )
    params = {
        "n": Param(
            3000, "HPL problem size N (8*N^2 bytes; time grows as N^3)", min=100, max=100_000
        ),
        "nb": Param(80, "HPL block size NB", min=1, max=1024),
    }

    def run(self, platform: Platform, ctx: RunContext) -> list[Sample]:
        return self.parse_output(self.hpcc_output(platform, ctx, int(ctx.params["n"])))

    def parse_output(self, text: str) -> list[Sample]:
        r = hpcc.parse(text, self.name)
        samples = []
        for metric, value in r.figures.items():
            s = self.sample(metric, value, **r.labels)
            if r.invalid:
                s.labels[labelkeys.INVALID] = r.invalid
            samples.append(s)
        return samples


@register
class HpccLinpackSweep(_Hpcc):
    name = "hpcc-linpack-sweep"
    description = (
        "LINPACK (HPL) GFLOPS for each matrix order in `orders`, one hpcc run (seed 002 Fig. 4:"
        " GFLOPS vs order)"
    )
    dimension_labels = (labelkeys.ORDER,)
    ignored_labels = (labelkeys.HPL_TIME_S,)  # differs per order: a fact, never a result's identity
    metrics = (Metric("hpl_gflops", "GFLOPS", True, primary=True),)
    params = {
        "orders": Param(
            [500, 1000, 2000, 4000],
            f"HPL matrix orders N, up to {hpcc.MAX_PROBLEM_SIZES} (time grows as N^3)",
            min=100,
            max=100_000,
        ),
        "nb": Param(80, "HPL block size NB", min=1, max=1024),
    }

    def run(self, platform: Platform, ctx: RunContext) -> list[Sample]:
        orders = list(ctx.params["orders"])
        if not orders or not all(isinstance(n, int) for n in orders):
            raise WorkloadError(f"{self.name}: orders must be whole numbers, got {orders!r}")
        if len(orders) > hpcc.MAX_PROBLEM_SIZES:
            raise WorkloadError(
                f"{self.name}: at most {hpcc.MAX_PROBLEM_SIZES} orders, got {len(orders)}"
            )
        return self.parse_sweep(self.hpcc_output(platform, ctx, orders))

    def parse_sweep(self, text: str) -> list[Sample]:
        samples = []
        for run in hpcc.parse_hpl_runs(text, self.name):
            s = self.sample(
                "hpl_gflops",
                run.gflops,
                **{
                    labelkeys.ORDER: run.n,
                    labelkeys.NB: run.nb,
                    labelkeys.PROCESSES: run.processes,
                    labelkeys.HPL_TIME_S: run.time_s,
                },
            )
            if not run.passed:
                s.labels[labelkeys.INVALID] = "HPL residual check FAILED"
            samples.append(s)
        return samples
