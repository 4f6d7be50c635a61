#!/usr/bin/env python3
"""virtbench's own overhead on a measured workload (target: at most 1%).

Alternates, in one run, the same sysbench cpu command run directly and run through
virtbench (runner + native platform + sampler + store), pinned to the same CPU, and prints
the ratio of their events/s. Usage: bench/overhead.py [--rounds 5] [--duration 5] [--cpu 1]
"""

from __future__ import annotations

import argparse
import os
import re
import resource
import statistics
import subprocess
import tempfile
import time
from pathlib import Path

from rich.console import Console

from virtbench.analysis.stats import summarize
from virtbench.campaign import loader
from virtbench.runner.run import Runner

CAMPAIGN = """
[campaign]
name = "overhead"
repetitions = 1
warmup = 0
target_cpus = [{cpu}]
[[platforms]]
name = "native"
type = "native"
[suites.cpu]
test_cases = ["sysbench-cpu-1t"]
duration = {duration}
"""


def direct(duration: int, cpu: int) -> float:
    argv = ["sysbench", "cpu", "--threads=1", f"--time={duration}", "--cpu-max-prime=20000", "run"]
    out = subprocess.run(
        argv,
        capture_output=True,
        text=True,
        check=True,
        preexec_fn=lambda: os.sched_setaffinity(0, {cpu}),
    ).stdout
    return float(re.search(r"events per second:\s*([\d.]+)", out).group(1))


OWN_CPU: list[float] = []  # virtbench's own CPU seconds per wall second, per run


def through_virtbench(duration: int, cpu: int, results: Path) -> float:
    before, t0 = resource.getrusage(resource.RUSAGE_SELF), time.monotonic()
    runner = Runner(results, Console(quiet=True))
    campaign = loader.parse(CAMPAIGN.format(duration=duration, cpu=cpu), "overhead.toml")
    run_id = runner.start(campaign)
    after, wall = resource.getrusage(resource.RUSAGE_SELF), time.monotonic() - t0
    # this process's threads (runner, sampler, store): not the measured child
    used = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    OWN_CPU.append(used / wall)
    rows = [r for r in runner.store.sample_rows(run_id) if r["metric"] == "events_per_s"]
    return rows[0]["value"]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--duration", type=int, default=5)
    ap.add_argument("--cpu", type=int, default=max(os.sched_getaffinity(0)))
    args = ap.parse_args()
    d, v = [], []
    with tempfile.TemporaryDirectory() as tmp:
        for i in range(args.rounds):
            # alternate which goes first so drift in host load hits both sides alike
            pair = [
                ("direct", lambda: direct(args.duration, args.cpu)),
                ("virtbench", lambda: through_virtbench(args.duration, args.cpu, Path(tmp))),
            ]
            if i % 2:
                pair.reverse()
            for name, fn in pair:
                (d if name == "direct" else v).append(fn())
            print(f"round {i + 1}: direct {d[-1]:.1f}  virtbench {v[-1]:.1f} events/s")
    ratio = statistics.mean(v) / statistics.mean(d)
    ratios = [a / b for a, b in zip(v, d, strict=True)]
    print(f"direct    mean {statistics.mean(d):.1f} events/s (stdev {statistics.stdev(d):.1f})")
    print(f"virtbench mean {statistics.mean(v):.1f} events/s (stdev {statistics.stdev(v):.1f})")
    print(
        f"ratio virtbench/direct = {ratio:.4f}  (overhead {100 * (1 - ratio):+.2f}%;"
        f" per-round ratios {min(ratios):.3f}..{max(ratios):.3f}; target: overhead <= 1%)"
    )
    own = statistics.mean(OWN_CPU)
    print(
        f"virtbench's own CPU while a cell runs: {100 * own:.2f}% of one CPU"
        " (runner, sampler, store; includes start-up and the host-facts probe of each run)"
    )
    paired = summarize(ratios)  # per-round pairs cancel slow drift in host load
    lo, hi = paired.mean - paired.ci_half, paired.mean + paired.ci_half
    verdict = "meets" if lo >= 0.99 else ("cannot show" if hi >= 0.99 else "MISSES")
    print(
        f"paired per-round ratio: mean {paired.mean:.4f}, 95% CI [{lo:.4f}, {hi:.4f}];"
        f" {verdict} the 1% target"
        + (" (CI wider than 2%: run more rounds on a quieter host)" if hi - lo > 0.02 else "")
    )


if __name__ == "__main__":
    main()
