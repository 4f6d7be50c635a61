"""Docker vs crun on the same image (issue 15): start-up and steady-state overhead, side by side.

Both containers run the shared root filesystem (crun over an overlay of the tree, Docker from
the tree imported as `vb-rootfs:<key>`), host network, overlay storage, no limits.

- start-up: virtbench's `container-startup` cold start (`docker run` vs `crun run`: from
  nothing to the probe's first instruction), median of `--starts` per round;
- exec: wall time of `true` entered into the running container (`docker exec` vs `crun exec`),
  median of `--starts` per round;
- steady state: sysbench cpu events/s and sysbench memory MiB/s inside the running
  containers, pinned to the same CPU.

Rounds alternate which side goes first (container_startup.alternating); every figure is the
per-round ratio docker/crun with a Student-t 95% CI over rounds (analysis/stats.py).
Run as root, under the machine lock: python bench/docker_vs_crun.py [--reps 5] [--starts 10]

Measured 2026-11-24 on the 2-core development host under the lock (`--reps 4 --starts 5`,
docker 20.10.24 from docker.io with virtbench's own dockerd, crun 1.8.1; 43 s):

| figure | docker | crun | docker / crun (95% CI) |
|---|---|---|---|
| start-up (cold `run` to probe), ms | 264 ± 45 | 28.2 ± 4.9 | 9.5 ± 3.0 |
| exec `true`, ms | 89.5 ± 14.6 | 11.7 ± 3.3 | 7.7 ± 1.9 |
| sysbench cpu, events/s | 3444 ± 188 | 3454 ± 91 | 0.997 ± 0.070 |
| sysbench memory, MiB/s | 5893 ± 983 | 6069 ± 582 | 0.975 ± 0.203 |

Docker costs its daemon round trips at start and at every exec; once running, a process in
a Docker container runs as fast as in a crun one (both intervals include 1).
"""

from __future__ import annotations

import argparse
import statistics
import time

from _campaign import ratios
from container_startup import alternating, ci, throughput  # bench/: the same helpers

from virtbench.platforms.base import PlatformSpec
from virtbench.platforms.container.platform import ContainerPlatform
from virtbench.workloads.base import RunContext
from virtbench.workloads.lifecycle import ContainerStartup

STEADY = {
    "sysbench-cpu events/s": (
        ["sysbench", "cpu", "--time=3", "run"],
        r"events per second:\s*([\d.]+)",
    ),
    "sysbench-memory MiB/s": (
        ["sysbench", "memory", "--memory-total-size=2G", "run"],
        r"\(([\d.]+) MiB/sec\)",
    ),
}


def platform(runtime: str, instance: str) -> ContainerPlatform:
    return ContainerPlatform(PlatformSpec(runtime, "container", {"runtime": runtime}), instance)


def startup_ms(p: ContainerPlatform, starts: int) -> float:
    s = ContainerStartup().run(p, RunContext(params={"starts": starts}, timeout=60))
    return statistics.median(s[0].labels["values"])


def exec_ms(p: ContainerPlatform, starts: int) -> float:
    out = []
    for _ in range(starts):
        t = time.monotonic()
        if not p.exec(["true"]).ok:
            raise SystemExit(f"{p.name}: exec true failed")
        out.append((time.monotonic() - t) * 1e3)
    return statistics.median(out)


def report(what: str, d: list[float], c: list[float], unit: str) -> None:
    print(f"{what}:")
    print(f"  docker {ci(d)} {unit}")
    print(f"  crun   {ci(c)} {unit}")
    print(f"  docker / crun {ci(ratios(d, c))}")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--reps", type=int, default=5, help="alternating rounds")
    ap.add_argument("--starts", type=int, default=10, help="starts / execs per side and round")
    a = ap.parse_args()
    dk, cr = platform("docker", "vb-bdkd1"), platform("crun", "vb-bdkc1")
    t0 = time.monotonic()
    with dk, cr:
        print(f"docker {dk.labels()['runtime_version']} vs crun {cr.labels()['runtime_version']}")
        startup_ms(dk, 1), startup_ms(cr, 1)  # page cache and daemon warm for both
        d, c = alternating(
            a.reps, lambda: startup_ms(dk, a.starts), lambda: startup_ms(cr, a.starts)
        )
        report(f"start-up, median of {a.starts} cold starts per round", d, c, "ms")
        d, c = alternating(a.reps, lambda: exec_ms(dk, a.starts), lambda: exec_ms(cr, a.starts))
        report(f"exec `true`, median of {a.starts} per round", d, c, "ms")
        for name, (argv, pat) in STEADY.items():
            d, c = alternating(
                a.reps,
                lambda argv=argv, pat=pat: throughput(dk, argv, pat),
                lambda argv=argv, pat=pat: throughput(cr, argv, pat),
            )
            report(f"steady state {name} (CPU 1)", d, c, "")
    print(f"({a.reps} rounds, {time.monotonic() - t0:.0f} s)")


if __name__ == "__main__":
    main()
