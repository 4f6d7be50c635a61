"""Memory suite: copy bandwidth (mbw) and a block-size sweep (sysbench memory) that shows the
cache levels the way seed 002's RAMspeed figure does (L1/L2/L3 plateaus, then DRAM)."""

from __future__ import annotations

from .. import labelkeys, suites
from ..drivers import mbw, sysbench
from ..errors import WorkloadError
from ..platforms.base import Platform
from .base import Metric, Param, RunContext, Sample, Workload, check
from .registry import register
from .scratch import Deadline


@register
class Mbw(Workload):
    suite = suites.MEMORY
    name = "mbw"
    description = "mbw memory copy bandwidth, one thread: memcpy, byte loop and 1 MiB-block memcpy"
    tools = ("mbw",)
    metrics = (Metric("bandwidth_mib_s", "MiB/s", True, primary=True),)
    params = {
        "array_mib": Param(256, "size of each of mbw's two arrays, MiB", min=1, max=65536),
        "iterations": Param(10, "copies per method (mbw -n); the AVG is reported", min=1, max=1000),
    }

    def command(self, ctx, platform):
        return mbw.argv(ctx.params["iterations"], ctx.params["array_mib"])

    def parse(self, result, ctx):
        samples = []
        for method, entry in mbw.parse(result.stdout, self.name).items():
            s = self.sample(
                "bandwidth_mib_s",
                entry["avg"],
                **{
                    labelkeys.METHOD: method,
                    labelkeys.ARRAY_MIB: ctx.params["array_mib"],
                    labelkeys.ITERATIONS: len(entry["runs"]),
                },
            )
            invalid = mbw.untimed(entry)
            if invalid:  # keep it, flagged
                s.value = 0.0
                s.labels[labelkeys.INVALID] = invalid
            samples.append(s)
        return samples


# --- sysbench memory block-size sweep ---------------------------------------------------------

# 1 KiB .. 64 MiB in powers of two: 17 sizes; x read and write x 1 s = 34 s by default
DEFAULT_SWEEP_KIB = [2**i for i in range(17)]
OPS = {"read": ("read",), "write": ("write",), "both": ("read", "write")}


@register
class SysbenchMemorySweep(Workload):
    suite = suites.MEMORY
    name = "sysbench-memory-sweep"
    dimension_labels = (labelkeys.BLOCK_SIZE_BYTES,)
    description = (
        "sysbench memory bandwidth per block size, 1 KiB to 64 MiB, read and write: the cache"
        " levels show as plateaus (like RAMspeed in seed 002)"
    )
    tools = ("sysbench",)
    metrics = (Metric("bandwidth_mib_s", "MiB/s", True, primary=True),)
    params = {
        "block_sizes_kib": Param(
            DEFAULT_SWEEP_KIB, "block sizes to sweep, KiB", min=1, max=4 * 1024 * 1024
        ),
        "ops": Param("both", "operations to measure", choices=tuple(OPS)),
        "access": Param("seq", "sysbench --memory-access-mode", choices=("seq", "rnd")),
        "point_time": Param(1, "seconds per (block size, op) point", min=1, max=600),
        "threads": Param(1, "sysbench threads", min=1, max=1024),
    }

    def point_argv(self, ctx: RunContext, kib: int, op: str) -> list[str]:
        p = ctx.params
        return sysbench.memory_argv(p["threads"], kib, op, p["access"], p["point_time"])

    def run(self, platform: Platform, ctx: RunContext) -> list[Sample]:
        sizes = list(ctx.params["block_sizes_kib"])
        if not sizes or not all(isinstance(k, int) for k in sizes):
            raise WorkloadError(f"{self.name}: block_sizes_kib must be whole KiB numbers: {sizes}")
        deadline = Deadline(ctx.timeout)
        samples = []
        for op in OPS[ctx.params["ops"]]:
            for kib in sizes:
                argv = self.point_argv(ctx, kib, op)
                result = platform.exec(argv, cpus=ctx.cpus, timeout=deadline.left())
                check(result, f"{self.name} {op} {kib} KiB")
                samples.append(self.point_sample(result.stdout, ctx, kib, op))
        return samples

    def point_sample(self, text: str, ctx: RunContext, kib: int, op: str) -> Sample:
        r = sysbench.parse_memory(text, f"{self.name} {op} {kib} KiB")
        s = self.sample(
            "bandwidth_mib_s",
            r["mib_s"],
            **{
                labelkeys.BLOCK_SIZE_BYTES: kib * 1024,
                labelkeys.OP: op,
                labelkeys.ACCESS: ctx.params["access"],
                labelkeys.THREADS: ctx.params["threads"],
            },
        )
        invalid = sysbench.too_few_blocks(r)
        if invalid:  # keep it, flagged
            s.labels[labelkeys.INVALID] = invalid
        return s
