#!/usr/bin/env python3
"""VM platform targets: boot-to-ready time and the CPU overhead of a VM vs native.

1. Boots `--boots` fresh 1-vCPU guests one after the other and prints the median boot time
   (QEMU start -> guest agent answers) per accelerator (target: TCG <= 5 s, KVM <= 1 s).
2. Keeps one guest up and alternates sysbench cpu (1 thread) natively and inside it, both
   pinned to the same host CPU, and prints the ratio VM/native with a 95% CI.

accel = "auto" uses KVM only where a probe boots a guest with it. Under TCG the figure is the
cost of QEMU's binary translator - full virtualization WITHOUT hardware assist - and says
nothing about KVM's overhead. Usage: bench/vm_overhead.py [--boots 5] [--rounds 5]
"""

from __future__ import annotations

import argparse
import os
import re
import statistics

from _campaign import paired_ratio

from virtbench.platforms.base import PlatformSpec
from virtbench.platforms.procs import run_host
from virtbench.platforms.registry import load_all
from virtbench.platforms.vm import accel
from virtbench.platforms.vm.platform import VmPlatform
from virtbench.runner.run import instance_name

SYSBENCH = ["sysbench", "cpu", "--threads=1", "--cpu-max-prime=20000", "run"]
_EPS = re.compile(r"events per second:\s*([\d.]+)")


def vm(accel_name: str, **opts) -> VmPlatform:
    spec = PlatformSpec("bench-vm", "vm", {"accel": accel_name, "vcpus": 1} | opts)
    return VmPlatform(spec, instance_name())


def boots(accel_name: str, n: int) -> list[float]:
    out = []
    for _ in range(n):
        with vm(accel_name, network="user") as p:
            out.append(p.machine.timings["boot_s"])
    return out


def eps(stdout: str) -> float:
    m = _EPS.search(stdout)
    if not m:
        raise SystemExit(f"no events/s in sysbench output: {stdout[-300:]}")
    return float(m.group(1))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--boots", type=int, default=5)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--duration", type=int, default=5)
    ap.add_argument("--cpu", type=int, default=max(os.sched_getaffinity(0)))
    args = ap.parse_args()
    load_all()
    usable, why = accel.probe_kvm()
    print(f"KVM probe: {'usable' if usable else 'NOT usable'} ({why})")
    accels = ["tcg"] + (["kvm"] if usable else [])
    for a in accels:
        times = boots(a, args.boots)
        target = 5.0 if a == "tcg" else 1.0
        print(
            f"boot-to-ready accel={a} 1 vCPU: median {statistics.median(times):.2f} s "
            f"(min {min(times):.2f}, max {max(times):.2f}, n={len(times)}; target <= {target} s)"
        )
    used = "kvm" if usable else "tcg"
    native, guest = [], []
    cmd = [*SYSBENCH[:3], f"--time={args.duration}", *SYSBENCH[3:]]
    with vm(used, network="user", vcpu_pin=[args.cpu]) as p:
        for i in range(args.rounds):
            pair = [("native", lambda: run_host(cmd, cpus=[args.cpu])), ("vm", lambda: p.exec(cmd))]
            if i % 2:
                pair.reverse()  # alternate the order so host load drift hits both alike
            for name, fn in pair:
                r = fn()
                (native if name == "native" else guest).append(eps(r.stdout))
            print(f"round {i + 1}: native {native[-1]:.1f}  vm {guest[-1]:.1f} events/s")
    ratios = paired_ratio(guest, native)
    print(
        f"native mean {statistics.mean(native):.1f} events/s (stdev {statistics.stdev(native):.1f})"
    )
    print(
        f"vm     mean {statistics.mean(guest):.1f} events/s (stdev {statistics.stdev(guest):.1f})"
    )
    print(
        f"sysbench cpu ratio vm/native (accel={used}) = {ratios.mean:.3f} "
        f"± {ratios.ci_half:.3f} (95% CI of per-round ratios, n={ratios.n}); "
        f"slowdown {1 / ratios.mean:.1f}x"
    )
    if used == "tcg":
        print("NOTE: TCG is binary translation (full virtualization without hardware assist),")
        print("      not KVM: this ratio is not the overhead of hardware-assisted virtualization.")


if __name__ == "__main__":
    main()
