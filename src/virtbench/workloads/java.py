"""Java suite (seed 004's JVM level): SciMark 2.0 and a multi-threaded JMH benchmark on
Debian's OpenJDK 17, from jars fetched from Maven Central and verified at setup.

The JVM's settings are set explicitly (heap, collector, JIT mode: drivers/jvm.py) and stored
as labels. Steady state is kept apart from start-up: SciMark runs several times in one JVM
(the first run, JIT compilation under way, is its own figure, and so is the JVM's uptime when
main() ran and when the first result was out); JMH's first warm-up iteration is reported
beside the median of its measured ones.
"""

from __future__ import annotations

import statistics
from pathlib import Path

from .. import suites
from ..drivers import jmh, jvm, scimark
from ..java import cache
from ..platforms.base import Platform
from . import scimark_report
from .base import Metric, Param, RunContext, Sample, Workload, check
from .registry import register
from .scratch import Deadline, read_file, remove, scratch_dir

JVM_PARAMS = {
    "heap_mib": Param(256, "JVM heap in MiB (-Xms = -Xmx)", min=32, max=1 << 20),
    "gc": Param("g1", "garbage collector", choices=tuple(jvm.GCS)),
    "jit": Param("tiered", "JIT mode", choices=tuple(jvm.JITS)),
}


def _jvm_settings(ctx: RunContext) -> tuple[list[str], dict[str, str]]:
    heap = f"{int(ctx.params['heap_mib'])}m"
    p = ctx.params
    return jvm.flags(heap, p["gc"], p["jit"]), jvm.labels(heap, p["gc"], p["jit"])


def _put(platform: Platform, files: list[Path], workdir: str) -> list[str]:
    """Copy host files into the environment's scratch dir; their paths inside."""
    return [platform.put_file(str(f), f"{workdir}/{f.name}", 0o644) for f in files]


@register
class Scimark(Workload):
    suite = suites.JAVA
    name = "scimark"
    description = (
        "SciMark 2.0 (FFT, SOR, Monte Carlo, sparse matmult, LU; Mflops) on OpenJDK 17, run"
        " several times in one JVM: steady state (median of the runs after the first), the"
        " first run (JIT warm-up) and JVM start-up as their own figures"
    )
    tools = ("java",)
    metrics = (
        *scimark_report.METRICS,
        Metric("jvm_startup_ms", "ms", False),
        Metric("first_result_s", "s", False),
    )
    params = {**scimark_report.PARAMS, **JVM_PARAMS}

    def run(self, platform: Platform, ctx: RunContext) -> list[Sample]:
        deadline = Deadline(ctx.timeout)
        flags, labels = _jvm_settings(ctx)
        host_files = [cache.scimark_jar(), cache.harness_class()]
        workdir = scratch_dir(platform, "scimark")
        try:
            jar, _cls = _put(platform, host_files, workdir)
            argv = ["java", *flags, "-cp", f"{jar}:{workdir}", cache.HARNESS]
            argv += scimark_report.args(ctx.params)
            result = platform.exec(argv, cpus=ctx.cpus, timeout=deadline.left())
            check(result, self.name)
        finally:
            remove(platform, workdir)
        return self.parse_output(result.stdout, labels)

    def parse_output(self, text: str, labels: dict[str, str]) -> list[Sample]:
        report = scimark.parse(text, self.name)
        info = report.info
        jvm_view = {
            "vm": info.get("vm"),
            "gc_names": info.get("gc"),
            "jit_compiler": info.get("jit"),
            "max_heap_mib": info.get("max_heap_mib"),
            "jvm_cpus": info.get("cpus"),
        }
        extra = {}
        if "startup_ms" in info:
            extra["jvm_startup_ms"] = float(info["startup_ms"])
        if report.iterations[0].end_ms is not None:
            extra["first_result_s"] = report.iterations[0].end_ms / 1000.0
        return scimark_report.samples(self, report, {**labels, **jvm_view}, extra)


# JMH samples worth running as a multi-threaded JVM workload (benchmark, its @Param values)
JMH_BENCHMARKS = {
    # HashMap lookups of boxed keys, state per thread: scales with threads, exercises the
    # JIT (inlining, escape analysis) and memory access
    "maps-hashmap": (
        "org.openjdk.jmh.samples.JMHSample_35_Profilers.Maps.test",
        {"type": "hashmap"},
    ),
    "maps-treemap": (
        "org.openjdk.jmh.samples.JMHSample_35_Profilers.Maps.test",
        {"type": "treemap"},
    ),
    # one AtomicLong shared by every thread: cache-line contention between cores
    "atomic": ("org.openjdk.jmh.samples.JMHSample_35_Profilers.Atomic.test", {}),
}


@register
class JmhThreads(Workload):
    suite = suites.JAVA
    name = "jmh-threads"
    description = (
        "a JMH sample benchmark (OpenJDK's jmh-samples) in N threads of one forked JVM,"
        " throughput in ops/s: the median of the measured iterations, and the first warm-up"
        " iteration (JIT warm-up) as its own figure"
    )
    metrics = (
        Metric("ops_per_s", "ops/s", True, primary=True),
        Metric("first_warmup_ops_per_s", "ops/s", True),
    )
    params = {
        "benchmark": Param("maps-hashmap", "JMH sample benchmark", choices=tuple(JMH_BENCHMARKS)),
        "threads": Param(0, "benchmark threads; 0 = one per CPU the JVM sees", min=0, max=1024),
        "warmup_iterations": Param(3, "JMH warm-up iterations", min=1, max=100),
        "iterations": Param(5, "JMH measured iterations", min=1, max=100),
        "iteration_s": Param(1, "seconds per JMH iteration", min=1, max=600),
        **JVM_PARAMS,
    }
    tools = ("java",)

    def run(self, platform: Platform, ctx: RunContext) -> list[Sample]:
        deadline = Deadline(ctx.timeout)
        flags, labels = _jvm_settings(ctx)
        p = ctx.params
        benchmark, bench_params = JMH_BENCHMARKS[p["benchmark"]]
        workdir = scratch_dir(platform, "jmh")
        try:
            jars = _put(platform, cache.jmh_jars(), workdir)
            # the runner JVM itself only coordinates; the fork gets the settings under test
            java = ["java", "-Xmx128m", "-XX:-UsePerfData", f"-Djava.io.tmpdir={workdir}"]
            java += ["-cp", ":".join(jars)]
            argv = jmh.argv(
                java,
                benchmark,
                int(p["threads"]),
                int(p["warmup_iterations"]),
                int(p["iterations"]),
                int(p["iteration_s"]),
                flags,
                f"{workdir}/result.json",
                bench_params,
            )
            result = platform.exec(argv, cpus=ctx.cpus, timeout=deadline.left())
            check(result, self.name)
            text = read_file(platform, f"{workdir}/result.json", self.name)
        finally:
            remove(platform, workdir)
        return self.parse_output(text, result.stdout, labels, p["benchmark"])

    def parse_output(
        self, result_json: str, stdout: str, labels: dict[str, str], benchmark: str
    ) -> list[Sample]:
        r = jmh.parse(result_json, stdout, self.name)
        common = {**labels, **r.labels, "sample": benchmark, "jmh_score_error": r.score_error}
        samples = [self.sample("ops_per_s", statistics.median(r.iterations), **common)]
        if r.warmup:
            samples.append(self.sample("first_warmup_ops_per_s", r.warmup[0], **common))
        return samples
