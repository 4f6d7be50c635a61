#!/usr/bin/env python3
"""The JVM level (issue 15): virtbench's own overhead on a JVM workload (target <= 1%) and
JVM-in-container vs JVM-native, each with a 95% CI.

Alternates, in one run, SciMark 2.0's steady-state composite (the java suite's primary
figure: median of the runs after the first, in one JVM) measured three ways, in an order
that rotates each round: by hand (`java FLAGS -cp scimark.jar:HARNESS_DIR VbScimark ...` on
the host), through virtbench on native, and through virtbench in a crun container. Prints
the paired per-round ratios virtbench-native / by hand (harness overhead) and container /
native (both through virtbench, the same code path a campaign takes).
Usage: bench/jvm_overhead.py [--rounds 6] [--iterations 4] [--min-time 0.5]

Measured 26 Nov 2026 (2-core PVM guest, under the machine lock), 6 rounds, SciMark small:
  by hand 4,143 Mflops (CV 2.0%), virtbench native 4,162 (CV 1.4%), container 4,142 (CV 0.9%)
  virtbench native / by hand: 1.0047, 95% CI [0.9941, 1.0154]: meets the <= 1% target
  container / native: 0.9954, 95% CI [0.9817, 1.0091]: no JVM-in-crun cost this host can show
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import tempfile
from collections.abc import Callable
from pathlib import Path

from _campaign import cv_pct, one_value, paired_ratio, run_here

from virtbench.drivers import jvm
from virtbench.java import cache
from virtbench.workloads.java import Scimark

CAMPAIGN = """
[campaign]
name = "jvm-overhead"
repetitions = 1
warmup = 0
[[platforms]]
name = "target"
{platform}
[suites.java]
test_cases = ["scimark"]
iterations = {iterations}
min_time = {min_time}
"""
PLATFORMS = {
    "native": 'type = "native"',
    "container": 'type = "container"\nruntime = "crun"\nstorage = "overlay"\nnetwork = "host"',
}
PRIMARY = "composite_mflops"


def by_hand(iterations: int, min_time: float) -> float:
    flags = jvm.flags("256m", "g1", "tiered")  # the java suite's defaults
    cp = f"{cache.scimark_jar()}:{cache.harness_class().parent}"
    argv = ["java", *flags, "-cp", cp, cache.HARNESS, str(iterations), str(min_time)]
    out = subprocess.run(argv, capture_output=True, text=True, check=True).stdout
    samples = Scimark().parse_output(out, {})
    return next(s.value for s in samples if s.metric == PRIMARY)


def through_virtbench(platform: str, iterations: int, min_time: float, results: Path) -> float:
    text = CAMPAIGN.format(platform=PLATFORMS[platform], iterations=iterations, min_time=min_time)
    runner, run_id, _ = run_here(text, results, "jvm.toml")
    try:
        return one_value(runner.store, run_id, PRIMARY)  # a flagged figure stops the bench
    finally:
        runner.store.close()


def ratio_line(name: str, num: list[float], den: list[float]) -> str:
    s = paired_ratio(num, den)
    return (
        f"{name}: paired ratio {s.mean:.4f}, 95% CI [{s.ci_low:.4f}, {s.ci_high:.4f}]"
        f" (per round {s.minimum:.3f}..{s.maximum:.3f})"
    )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--rounds", type=int, default=6)
    ap.add_argument("--iterations", type=int, default=4)
    ap.add_argument("--min-time", type=float, default=0.5)
    args = ap.parse_args()
    values: dict[str, list[float]] = {"hand": [], "native": [], "container": []}
    with tempfile.TemporaryDirectory() as tmp:
        ways: dict[str, Callable[[], float]] = {
            "hand": lambda: by_hand(args.iterations, args.min_time),
            "native": lambda: through_virtbench(
                "native", args.iterations, args.min_time, Path(tmp)
            ),
            "container": lambda: through_virtbench(
                "container", args.iterations, args.min_time, Path(tmp)
            ),
        }
        order = list(ways)
        for i in range(args.rounds):
            turn = order[i % 3 :] + order[: i % 3]  # rotate who goes first
            for way in turn:
                values[way].append(ways[way]())
            print(f"round {i + 1}: " + "  ".join(f"{w} {values[w][-1]:.1f}" for w in order))
    for way in order:
        v = values[way]
        print(f"{way:9} mean {statistics.mean(v):.1f} Mflops (CV {cv_pct(v):.1f}%)")
    overhead = ratio_line("virtbench native / by hand", values["native"], values["hand"])
    print(overhead + "  (target: >= 0.99)")
    print(
        ratio_line(
            "container / native (JVM in crun vs JVM native)", values["container"], values["native"]
        )
    )


if __name__ == "__main__":
    main()
