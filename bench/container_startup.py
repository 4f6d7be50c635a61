"""Container start-up (create -> first instruction) per runtime, and CPU/memory overhead of a
crun host-network overlay container vs native, measured side by side in one run.

Targets (issue 3): crun start-up median <= 50 ms; CPU and memory within 3% of native.
Run as root: python bench/container_startup.py [--starts 20] [--reps 5]
"""

from __future__ import annotations

import argparse
import re
import statistics

from virtbench.platforms.base import PlatformSpec
from virtbench.platforms.container.platform import ContainerPlatform
from virtbench.platforms.native import NativePlatform
from virtbench.workloads.base import RunContext
from virtbench.workloads.lifecycle import ContainerStartup


def ci95(values: list[float]) -> float:
    if len(values) < 2:
        return float("nan")
    return 1.96 * statistics.stdev(values) / len(values) ** 0.5


def startup(runtime: str, starts: int, network: str = "host") -> list[float]:
    opts = {"runtime": runtime, "network": network}
    p = ContainerPlatform(PlatformSpec(runtime, "container", opts), "vb-bench1")
    with p:
        s = ContainerStartup().run(p, RunContext(params={"starts": starts}, timeout=60))
    return s[0].labels["values"]


def throughput(p, argv: list[str], pattern: str) -> float:
    r = p.exec(argv, cpus=[1])
    return float(re.search(pattern, r.stdout).group(1))


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--starts", type=int, default=20)
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--runtimes", default="crun,runc,runsc,podman", help="comma-separated")
    ap.add_argument("--network", default="host", choices=("host", "bridge", "nat"))
    ap.add_argument("--startup-only", action="store_true", help="skip the overhead ratios")
    a = ap.parse_args()
    for rt in a.runtimes.split(","):
        net = a.network if rt != "runsc" else "host"  # runsc cannot join our netns
        v = startup(rt, a.starts, net)
        q = statistics.quantiles(v, n=4) if len(v) > 1 else [v[0]] * 3
        print(
            f"start-up {rt:6s} {net:6s} median {statistics.median(v):7.1f} ms  "
            f"(IQR {q[0]:.1f}..{q[2]:.1f}, min {min(v):.1f}, max {max(v):.1f}, n={len(v)})"
        )
    if a.startup_only:
        return
    tests = {
        "sysbench-cpu": (["sysbench", "cpu", "--time=3", "run"], r"events per second:\s*([\d.]+)"),
        "sysbench-mem": (
            ["sysbench", "memory", "--memory-total-size=4G", "run"],
            r"\(([\d.]+) MiB/sec\)",
        ),
    }
    nat = NativePlatform(PlatformSpec("native", "native", {}), "vb-bench-n")
    con = ContainerPlatform(PlatformSpec("crun", "container", {}), "vb-bench2")
    with nat, con:
        for name, (argv, pat) in tests.items():
            ratios = []
            for _ in range(a.reps):  # alternate so host noise hits both alike
                n = throughput(nat, argv, pat)
                c = throughput(con, argv, pat)
                ratios.append(c / n)
            m = statistics.mean(ratios)
            print(f"{name}: container/native = {m:.3f} ± {ci95(ratios):.3f} (95% CI, n={a.reps})")


if __name__ == "__main__":
    main()
