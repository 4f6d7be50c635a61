#!/usr/bin/env python3
"""Performance target of issue 5: on native loopback with fixed pinning, the httperf sweep's
peak throughput for 1 KB files reaches >= 90% of wrk's closed-loop maximum against the same
nginx with the same pinning. Prints the ratios per round and their median; not a test.

Which wrk figure the target means: wrk with the SAME connection behaviour as the sweep
(`--calls` requests per connection; 1 = a new connection per request, as in the papers, and
wrk then sends `Connection: close`). Only then do both tools ask the server for the same
work per request (a TCP set-up and tear-down each), so only then is the ratio a statement
about the open-loop sweep finding the server's limit. wrk with keep-alive is printed beside
it for information: it measures a different, cheaper request and is typically 2-4x higher.

wrk runs before AND after each sweep; the target ratio divides by their mean, so a
neighbour's load that changes during the round shows up as a wide wrk spread rather than as
a wrong ratio. Both tools use the same client CPUs (wrk one thread per client CPU, the sweep
one httperf process per client CPU unless --clients says otherwise).

    python bench/web_sweep_vs_wrk.py [--rounds 3] [--calls 1] [--server-cpu 1 --client-cpus 0]

With --vs-default-buffer each round also sweeps with httperf's own 16 KB receive buffer and
prints the ratio of the two peaks (the `recv_buffer` param: 0 sizes it to two replies): at
100 KB the default left the client's window, not the server, as the limit.
"""

from __future__ import annotations

import argparse
import os
import statistics
import time
from dataclasses import replace

from virtbench.drivers import httperf
from virtbench.platforms.base import PlatformSpec
from virtbench.platforms.native import NativePlatform
from virtbench.serving.loadgen import raise_nofile
from virtbench.workloads.base import RunContext
from virtbench.workloads.web import HttperfSweep, SweepState


def _cpus(text: str) -> list[int]:
    return [int(c) for c in text.split(",") if c.strip()]


def main() -> None:
    cpus = sorted(os.sched_getaffinity(0))
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--calls", type=int, default=1, help="requests per connection (both tools)")
    ap.add_argument("--size", type=int, default=1, help="file size in KB")
    ap.add_argument("--server-cpu", type=int, default=cpus[-1])
    ap.add_argument("--client-cpus", type=_cpus, default=[cpus[0]], help="e.g. 0 or 0,2")
    ap.add_argument("--clients", type=int, default=0, help="httperf processes (0: per CPU)")
    ap.add_argument("--connections", type=int, default=32, help="wrk connections")
    ap.add_argument("--duration", type=float, default=3.0, help="wrk seconds")
    ap.add_argument("--step-duration", type=float, default=2.0, help="sweep seconds per step")
    ap.add_argument("--hog", action="store_true", help="httperf --hog (see the hog param)")
    ap.add_argument(
        "--client-closes",
        action="store_true",
        help="httperf closes (no 'Connection: close'; TIME_WAIT on client ports)",
    )
    ap.add_argument("--recv-buffer", type=int, default=0, help="httperf bytes (0: two replies)")
    ap.add_argument(
        "--vs-default-buffer",
        action="store_true",
        help="each round also sweeps with httperf's 16 KB default receive buffer",
    )
    ap.add_argument("--verbose", action="store_true", help="print every sweep step")
    a = ap.parse_args()

    w = HttperfSweep()
    params = {k: p.default for k, p in w.params.items()}
    params |= {
        "file_sizes": [a.size],
        "calls_per_conn": a.calls,
        "start_fraction": 0.5,
        "step_fraction": 0.1,
        "max_fraction": 1.5,
        "step_duration": a.step_duration,
        "probe_connections": a.connections,
        "hog": a.hog,
        "clients": a.clients,
        "server_closes": not a.client_closes,
        "recv_buffer": a.recv_buffer,
    }
    log = print if a.verbose else (lambda msg: None)
    ctx = RunContext(params=params, cpus=[a.server_cpu], client_cpus=a.client_cpus, log=log)
    threads = len(a.client_cpus)
    nofile = raise_nofile()
    ratios: list[float] = []
    ratios_ka: list[float] = []
    ratios_buf: list[float] = []
    no_valid = 0
    print(
        f"nginx on CPU {a.server_cpu}, clients on CPU(s) {a.client_cpus}, {a.size} KB,"
        f" {a.calls} request(s)/connection, httperf processes"
        f" {a.clients or len(a.client_cpus)}, --hog {'on' if a.hog else 'off'},"
        f" {'httperf' if a.client_closes else 'server'} closes; load {os.getloadavg()[0]:.1f}"
    )
    native = NativePlatform(PlatformSpec("native", "native"), "vb-bench-web")
    with native, w.nginx(native, ctx, [a.size]) as served:
        for rnd in range(1, a.rounds + 1):
            before, run_b = w.wrk_run(served, a.size, ctx, threads, a.connections, a.duration)
            samples: list = []
            state = SweepState(served, a.size, ctx, samples, time.monotonic(), nofile)
            w.sweep_one(state)
            after, run_a = w.wrk_run(served, a.size, ctx, threads, a.connections, a.duration)
            ka, run_k = w.wrk_run(served, a.size, ctx, threads, a.connections, a.duration, 0)
            peak = next(s for s in samples if s.metric == "peak_throughput")
            stopped = next(s for s in samples if s.metric == "steps").labels["stopped"]
            invalid = sum(
                1 for s in samples if s.metric == "reply_rate" and s.labels.get("invalid")
            )
            wrk_same = statistics.fmean([before.req_per_s, after.req_per_s])
            ratio, ratio_ka = peak.value / wrk_same, peak.value / ka.req_per_s
            if peak.labels.get("invalid"):
                no_valid += 1  # a flagged figure is not the server's limit: left out
            else:
                ratios.append(ratio)
                ratios_ka.append(ratio_ka)
            busiest = max(
                (s.value for s in samples if s.metric == "client_cpu_pct" and "step" in s.labels),
                default=0.0,
            )
            if a.vs_default_buffer:
                small = replace(ctx, params=params | {"recv_buffer": httperf.RECV_BUFFER_DEFAULT})
                other: list = []
                w.sweep_one(SweepState(served, a.size, small, other, time.monotonic(), nofile))
                dflt = next(s for s in other if s.metric == "peak_throughput")
                ratios_buf.append(peak.value / dflt.value)
                print(
                    f"round {rnd}: sweep peak {peak.value:6.0f} req/s with --recv-buffer"
                    f" {state.recv_bytes}, {dflt.value:6.0f} with"
                    f" httperf's default {httperf.RECV_BUFFER_DEFAULT}: ratio"
                    f" {ratios_buf[-1]:.3f}"
                )
            print(
                f"round {rnd}: wrk same-conn {before.req_per_s:6.0f}/{after.req_per_s:6.0f}"
                f" req/s (before/after, client CPU {run_b.cpu_util:.0%}/{run_a.cpu_util:.0%});"
                f" wrk keep-alive {ka.req_per_s:6.0f} ({run_k.cpu_util:.0%});"
                f" sweep peak {peak.value:6.0f} at offered {peak.labels['offered_rate']:.0f}"
                f" ({invalid} invalid steps, httperf CPU up to {busiest:.0f}% (busy-polls);"
                f" stopped:"
                f" {stopped}); ratio {ratio:.3f} (vs keep-alive {ratio_ka:.3f})"
                + (
                    f"  [peak invalid: {peak.labels['invalid']}]"
                    if peak.labels.get("invalid")
                    else ""
                )
            )
    if ratios_buf:
        print(
            f"median ratio sweep peak sized / httperf-default receive buffer ="
            f" {statistics.median(ratios_buf):.3f} (min {min(ratios_buf):.3f},"
            f" max {max(ratios_buf):.3f}, n={len(ratios_buf)})"
        )
    print(f"rounds without any valid sweep step (left out of the medians): {no_valid}")
    if not ratios:
        print("no round gave a valid sweep peak: no ratio")
        return
    print(
        f"median ratio sweep peak / wrk same connection behaviour = {statistics.median(ratios):.3f}"
        f" (min {min(ratios):.3f}, max {max(ratios):.3f}, n={len(ratios)}; target >= 0.90)"
    )
    print(
        f"median ratio sweep peak / wrk keep-alive = {statistics.median(ratios_ka):.3f}"
        f" (min {min(ratios_ka):.3f}, max {max(ratios_ka):.3f}; information only: a keep-alive"
        " request skips the TCP set-up the sweep pays for)"
    )


if __name__ == "__main__":
    main()
