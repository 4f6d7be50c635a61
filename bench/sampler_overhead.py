"""Co-location sampler overhead: CPU the 1 Hz sampler uses with 8 environments, as % of one CPU.

Target (issue 7): below 0.5 % of one CPU. Starts 8 native environments, each running a
4-thread idle process tree (sleep children), samples them at 1 Hz for DURATION seconds and
prints the sampler thread's own CPU time / wall time. Not a test: timing on a shared host.

    python bench/sampler_overhead.py [DURATION_S]
"""

from __future__ import annotations

import sys
import time

from virtbench.metrics.sampler import Sampler
from virtbench.platforms.base import PlatformSpec
from virtbench.platforms.native import NativePlatform

ENVS = 8


def main() -> None:
    duration = float(sys.argv[1]) if len(sys.argv) > 1 else 20.0
    platforms = []
    try:
        for i in range(ENVS):
            p = NativePlatform(PlatformSpec("native", "native"), f"vb-bench{i}")
            p.provision()
            platforms.append(p)
            # a small process tree per environment: a shell with three sleeping children
            p.spawn(["sh", "-c", "sleep 600 & sleep 600 & sleep 600 & wait"])
        time.sleep(0.5)
        points = []
        roles = {f"neighbour-{i + 1}": p for i, p in enumerate(platforms)}
        s = Sampler(lambda *a: points.append(a), interval=1.0)
        with s, s.window(roles):  # every role read in detail, as in a co-location cell
            t0 = time.monotonic()
            time.sleep(duration)
            wall = time.monotonic() - t0
        pct = 100.0 * s.own_cpu_s / wall
        per_tick_ms = 1000.0 * s.own_cpu_s / max(1, s.ticks)
        print(f"environments: {ENVS}, ticks: {s.ticks}, points recorded: {len(points)}")
        print(f"sampler CPU: {s.own_cpu_s * 1000:.1f} ms over {wall:.1f} s wall")
        print(f"per tick: {per_tick_ms:.2f} ms for {ENVS} environments + host")
        print(f"overhead: {pct:.3f} % of one CPU (target < 0.5 %) -> ratio {pct / 0.5:.2f}")
    finally:
        for p in platforms:
            p.teardown()


if __name__ == "__main__":
    main()
