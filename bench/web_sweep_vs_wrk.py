#!/usr/bin/env python3
"""Performance target of issue 5: on native loopback with fixed pinning, the httperf sweep's
peak throughput for 1 KB files reaches >= 90% of wrk's closed-loop maximum against the same
nginx with the same pinning. Prints the ratio per round and the median; not a test.

Both tools use the same connection behaviour (calls_per_conn requests per connection;
1 = a new connection per request, as in the papers), else the comparison is meaningless.

    python bench/web_sweep_vs_wrk.py [--rounds 3] [--calls 1] [--server-cpu 1 --client-cpu 0]
"""

from __future__ import annotations

import argparse
import os
import statistics
import time

from virtbench.platforms.base import PlatformSpec
from virtbench.platforms.native import NativePlatform
from virtbench.workloads.base import RunContext
from virtbench.workloads.serving import raise_nofile
from virtbench.workloads.web import HttperfSweep


def main() -> None:
    cpus = sorted(os.sched_getaffinity(0))
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--calls", type=int, default=1, help="requests per connection (both tools)")
    ap.add_argument("--size", type=int, default=1, help="file size in KB")
    ap.add_argument("--server-cpu", type=int, default=cpus[-1])
    ap.add_argument("--client-cpu", type=int, default=cpus[0])
    ap.add_argument("--connections", type=int, default=32, help="wrk connections")
    ap.add_argument("--duration", type=float, default=3.0, help="wrk seconds")
    ap.add_argument("--hog", action="store_true", help="httperf --hog (see the hog param)")
    a = ap.parse_args()

    w = HttperfSweep()
    params = {k: p.default for k, p in w.params.items()}
    params |= {
        "file_sizes": [a.size],
        "calls_per_conn": a.calls,
        "start_fraction": 0.5,
        "step_fraction": 0.1,
        "max_fraction": 1.5,
        "step_duration": 2.0,
        "probe_connections": a.connections,
        "hog": a.hog,
    }
    ctx = RunContext(params=params, cpus=[a.server_cpu], client_cpus=[a.client_cpu])
    nofile = raise_nofile()
    ratios = []
    print(
        f"nginx on CPU {a.server_cpu}, clients on CPU {a.client_cpu}, {a.size} KB,"
        f" {a.calls} request(s)/connection, httperf --hog {'on' if a.hog else 'off'}"
    )
    native = NativePlatform(PlatformSpec("native", "native"), "vb-bench-web")
    with native, w.nginx(native, ctx, [a.size]) as served:
        for rnd in range(1, a.rounds + 1):
            res, run = w.wrk_run(served, a.size, ctx, 1, a.connections, a.duration)
            samples: list = []
            w.sweep_one(served, a.size, ctx, samples, time.monotonic(), nofile)
            peak = next(s for s in samples if s.metric == "peak_throughput")
            stopped = next(s for s in samples if s.metric == "steps").labels["stopped"]
            invalid = sum(
                1 for s in samples if s.metric == "reply_rate" and s.labels.get("invalid")
            )
            ratio = peak.value / res.req_per_s
            ratios.append(ratio)
            print(
                f"round {rnd}: wrk {res.req_per_s:8.0f} req/s (client CPU"
                f" {run.cpu_util:.0%})  sweep peak {peak.value:8.0f} req/s at offered"
                f" {peak.labels['offered_rate']:.0f} ({invalid} invalid steps;"
                f" stopped: {stopped})  ratio {ratio:.3f}"
                + (
                    f"  [peak invalid: {peak.labels['invalid']}]"
                    if peak.labels.get("invalid")
                    else ""
                )
            )
    print(
        f"median ratio sweep peak / wrk = {statistics.median(ratios):.3f}"
        f" (min {min(ratios):.3f}, max {max(ratios):.3f}, n={len(ratios)}; target >= 0.90)"
    )


if __name__ == "__main__":
    main()
