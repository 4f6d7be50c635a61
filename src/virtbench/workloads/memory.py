"""Memory suite: copy bandwidth (mbw) and a block-size sweep (sysbench memory) that shows the
cache levels the way seed 002's RAMspeed figure does (L1/L2/L3 plateaus, then DRAM)."""

from __future__ import annotations

import re
import time
from typing import Any

from ..errors import WorkloadError
from ..platforms.base import Platform
from .base import Metric, Param, RunContext, Sample, Workload, check
from .registry import register

# --- mbw -----------------------------------------------------------------------------------

# "AVG\tMethod: MEMCPY\tElapsed: 0.06434\tMiB: 256.00000\tCopy: 3979.103 MiB/s"
_MBW_LINE = re.compile(
    r"^(?P<it>\d+|AVG)\s+Method:\s+(?P<method>\w+)\s+Elapsed:\s+(?P<elapsed>[\d.]+)\s+"
    r"MiB:\s+(?P<mib>[\d.]+)\s+Copy:\s+(?P<rate>[\d.]+|inf)\s+MiB/s",
    re.M,
)
MBW_METHODS = {"memcpy": "-t0", "dumb": "-t1", "mcblock": "-t2"}


def parse_mbw(text: str, what: str) -> dict[str, dict[str, Any]]:
    """method (lower case) -> {"avg": MiB/s, "runs": [MiB/s, ...], "mib": array size}."""
    out: dict[str, dict[str, Any]] = {}
    for m in _MBW_LINE.finditer(text):
        entry = out.setdefault(m["method"].lower(), {"avg": None, "runs": [], "mib": None})
        rate = float(m["rate"])
        entry["mib"] = float(m["mib"])
        if m["it"] == "AVG":
            entry["avg"] = rate
        else:
            entry["runs"].append(rate)
    if not out:
        raise WorkloadError(f"{what}: no 'Method: ... Copy: ... MiB/s' lines in mbw output")
    for method, entry in out.items():
        if entry["avg"] is None:
            raise WorkloadError(f"{what}: no AVG line for method {method} in mbw output")
    return out


@register
class Mbw(Workload):
    suite = "memory"
    name = "mbw"
    description = "mbw memory copy bandwidth, one thread: memcpy, byte loop and 1 MiB-block memcpy"
    tools = ("mbw",)
    metrics = (Metric("bandwidth_mib_s", "MiB/s", True, primary=True),)
    params = {
        "array_mib": Param(256, "size of each of mbw's two arrays, MiB", min=1, max=65536),
        "iterations": Param(10, "copies per method (mbw -n); the AVG is reported", min=1, max=1000),
    }

    def command(self, ctx, platform):
        p = ctx.params
        return ["mbw", "-q", "-n", str(p["iterations"]), *MBW_METHODS.values(), str(p["array_mib"])]

    def parse(self, result, ctx):
        samples = []
        for method, entry in parse_mbw(result.stdout, self.name).items():
            s = self.sample(
                "bandwidth_mib_s",
                entry["avg"],
                method=method,
                array_mib=ctx.params["array_mib"],
                iterations=len(entry["runs"]),
            )
            # a copy faster than the clock can time reports inf; keep it, flagged
            if entry["avg"] == float("inf") or any(r == float("inf") for r in entry["runs"]):
                s.value = 0.0
                s.labels["invalid"] = (
                    "mbw timed a copy as 0 s (array too small): use a larger array"
                )
            samples.append(s)
        return samples


# --- sysbench memory block-size sweep ---------------------------------------------------------

_SB_RATE = re.compile(r"([\d.]+) MiB transferred \(\s*([\d.]+) MiB/sec\)")
_SB_TIME = re.compile(r"total time:\s+([\d.]+)s")
_SB_EVENTS = re.compile(r"total number of events:\s+(\d+)")

# 1 KiB .. 64 MiB in powers of two: 17 sizes; x read and write x 1 s = 34 s by default
DEFAULT_SWEEP_KIB = [2**i for i in range(17)]
OPS = {"read": ("read",), "write": ("write",), "both": ("read", "write")}


def parse_sysbench_memory(text: str, what: str) -> dict[str, float]:
    """{"mib": MiB moved, "mib_s": MiB/s, "time_s": seconds, "events": blocks moved}."""
    rate = _SB_RATE.search(text)
    total = _SB_TIME.search(text)
    events = _SB_EVENTS.search(text)
    if not (rate and total and events):
        raise WorkloadError(f"{what}: no 'MiB transferred (... MiB/sec)' in sysbench output")
    return {
        "mib": float(rate.group(1)),
        "mib_s": float(rate.group(2)),
        "time_s": float(total.group(1)),
        "events": float(events.group(1)),
    }


@register
class SysbenchMemorySweep(Workload):
    suite = "memory"
    name = "sysbench-memory-sweep"
    dimension_labels = ("block_size_bytes",)
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
        return [
            "sysbench",
            "memory",
            f"--threads={p['threads']}",
            f"--memory-block-size={kib}K",
            # time-bound, not size-bound: every point runs point_time seconds
            "--memory-total-size=100T",
            f"--memory-oper={op}",
            f"--memory-access-mode={p['access']}",
            f"--time={p['point_time']}",
            "run",
        ]

    def run(self, platform: Platform, ctx: RunContext) -> list[Sample]:
        sizes = list(ctx.params["block_sizes_kib"])
        if not sizes or not all(isinstance(k, int) for k in sizes):
            raise WorkloadError(f"{self.name}: block_sizes_kib must be whole KiB numbers: {sizes}")
        end = None if ctx.timeout is None else time.monotonic() + ctx.timeout
        samples = []
        for op in OPS[ctx.params["ops"]]:
            for kib in sizes:
                left = None if end is None else max(1.0, end - time.monotonic())
                argv = self.point_argv(ctx, kib, op)
                result = platform.exec(argv, cpus=ctx.cpus, timeout=left)
                check(result, f"{self.name} {op} {kib} KiB")
                samples.append(self.point_sample(result.stdout, ctx, kib, op))
        return samples

    def point_sample(self, text: str, ctx: RunContext, kib: int, op: str) -> Sample:
        r = parse_sysbench_memory(text, f"{self.name} {op} {kib} KiB")
        s = self.sample(
            "bandwidth_mib_s",
            r["mib_s"],
            block_size_bytes=kib * 1024,
            op=op,
            access=ctx.params["access"],
            threads=ctx.params["threads"],
        )
        # too few blocks moved to time (huge blocks on a slow platform): flag, keep
        if r["events"] < 10:
            s.labels["invalid"] = f"only {r['events']:.0f} blocks moved: raise point_time"
        return s
