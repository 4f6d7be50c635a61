#!/usr/bin/env python3
"""Seed 000's layering cost, paired: nginx 1 KB in a VM vs in a container inside that VM.

The `layering` campaign provisions a fresh VM per platform and runs the platforms one after
the other, so on a shared host the drift between groups is as large as the effect. This
script boots ONE guest, starts crun containers in it (guest network with the files on the
overlay root or on a volume; a bridge in the guest) and alternates the real wrk-max workload
between the VM itself and each container round by round (the order rotates), so every ratio
compares runs seconds apart on the same guest. Prints each round and the container/VM
ratios: geometric mean of the per-round ratios with a 95% CI, and their median.

Under TCG (no working KVM) the guest's CPU cost dominates; only the ratios mean something.
Usage: bench/layering.py [--rounds 6] [--duration 3] [--server-cpu 1] [--client-cpu 0]
"""

from __future__ import annotations

import argparse
import contextlib
import math
import os
import statistics

from _campaign import ratios

from virtbench.analysis.stats import summarize
from virtbench.platforms import registry
from virtbench.platforms.base import Platform, PlatformSpec
from virtbench.platforms.registry import load_all
from virtbench.platforms.vm.platform import VmPlatform
from virtbench.runner.run import instance_name
from virtbench.workloads.base import RunContext
from virtbench.workloads.web import WrkMax


def req_per_s(w: WrkMax, p: Platform, ctx: RunContext) -> float:
    samples = w.run(p, ctx)
    s = next(s for s in samples if s.metric == "requests_per_s")
    if s.labels.get("invalid"):
        print(f"  ({p.name}: invalid sample kept: {s.labels['invalid']})")
    return s.value


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--rounds", type=int, default=6)
    ap.add_argument("--duration", type=float, default=3.0)
    ap.add_argument("--server-cpu", type=int, default=1)
    ap.add_argument("--client-cpu", type=int, default=0)
    a = ap.parse_args()
    load_all()
    w = WrkMax()
    params = {k: p.default for k, p in w.params.items()} | {
        "file_sizes": [1],
        "duration": a.duration,
    }
    ctx = RunContext(params=params, cpus=[a.server_cpu], client_cpus=[a.client_cpu])
    vm = VmPlatform(
        PlatformSpec("vm", "vm", {"accel": "auto", "vcpus": 1, "network": "bridge"}),
        instance_name(),
    )
    # host network with the files on the overlay root (Docker's default data path) or on a
    # volume, and a bridge in the guest (the paper's LXC set-up): what each layer costs
    names = ["vm", "crun-in-vm-host", "crun-in-vm-host-volume", "crun-in-vm-bridge"]
    values: dict[str, list[float]] = {n: [] for n in names}
    with vm:
        opts = [{"network": "host"}, {"network": "host", "storage": "volume"}]
        opts.append({"network": "bridge"})
        ctrs = [
            registry.create(PlatformSpec(n, "container", o), instance_name(), host=vm)
            for n, o in zip(names[1:], opts, strict=True)
        ]
        with contextlib.ExitStack() as stack:
            for c in ctrs:
                stack.enter_context(c)
            envs: dict[str, Platform] = dict(zip(names, [vm, *ctrs], strict=True))
            print(f"accel {vm.accel_used}; load {os.getloadavg()[0]:.1f}; warming up each once")
            for n in names:
                req_per_s(w, envs[n], ctx)  # a fresh TCG guest translates nginx first
            for r in range(a.rounds):
                k = r % len(names)
                order = names[k:] + names[:k]  # rotate so drift hits all alike
                for n in order:
                    values[n].append(req_per_s(w, envs[n], ctx))
                print(
                    f"round {r + 1}: "
                    + "  ".join(f"{n} {values[n][-1]:7.1f}" for n in names)
                    + f"  req/s (load {os.getloadavg()[0]:.1f})"
                )
    for n in names:
        print(f"{n:22s} mean {statistics.mean(values[n]):7.1f} req/s, median "
              f"{statistics.median(values[n]):7.1f} (n={len(values[n])})")  # fmt: skip
    for n in names[1:]:
        per_round = ratios(values[n], values["vm"])
        # ratios are skewed (a round where the host stalls one side gives 0.05 or 20):
        # average them in log space, the CI back-transformed, and show the median too
        s = summarize([math.log(r) for r in per_round])
        gm, lo, hi = (math.exp(x) for x in (s.mean, s.mean - s.ci_half, s.mean + s.ci_half))
        print(
            f"{n}/vm = {gm:.3f} [95% CI {lo:.3f}-{hi:.3f}] (geometric mean of per-round ratios, "
            f"n={s.n}; median {statistics.median(per_round):.3f}): layering cost "
            f"{100 * (1 - gm):+.1f}% of throughput (seed 000 on Xen: 26-29%)"
        )
    if vm.accel_used == "tcg":
        print("NOTE: TCG is binary translation, not hardware-assisted virtualization.")


if __name__ == "__main__":
    main()
