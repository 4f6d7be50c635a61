"""Container start-up (create -> first instruction) through virtbench against the runtime's
own CLI by hand, and CPU/memory overhead of a crun host-network container vs native, measured
side by side in one run.

Reference: `RUNTIME run --bundle B` on a bundle prepared beforehand (the shared image as a
read-only root, host network, `date +%s.%N` as the process), timed from just before the
command to the time `date` reads: what the runtime itself costs. virtbench's figure is
`container-startup` on the same runtime. Each round runs both, in the opposite order to the
round before, so host drift hits both alike; intervals are Student-t 95% CIs over rounds
(analysis/stats.py).

Targets (issue 3): crun start-up median <= 50 ms; CPU and memory within 3% of native.
Run as root: python bench/container_startup.py [--starts 20] [--reps 5]
"""

from __future__ import annotations

import argparse
import json
import re
import secrets
import shutil
import statistics
import subprocess
import tempfile
import time
from collections.abc import Callable
from contextlib import contextmanager
from pathlib import Path

from _campaign import ratios

from virtbench.analysis.stats import summarize
from virtbench.images import rootfs
from virtbench.platforms.base import PlatformSpec
from virtbench.platforms.container.platform import ContainerPlatform
from virtbench.platforms.native import NativePlatform
from virtbench.workloads.base import RunContext
from virtbench.workloads.lifecycle import PROBE, ContainerStartup, parse_probe

BY_HAND = ("crun", "runc")  # runtimes whose CLI is the OCI one: `run --bundle DIR ID`


def ci(values: list[float]) -> str:
    s = summarize(values)
    half = f"± {s.ci_half:.3f}" if s.ci_half is not None else "(no CI: n < 2)"
    return f"{s.mean:.3f} {half} (95% CI, Student t, n={s.n})"


@contextmanager
def bundle(runtime: str, argv: list[str] | None = None):
    """An OCI bundle made once, before anything is timed: `RUNTIME spec`, the image as a
    read-only root, the host's network namespace, argv (default: the probe) as the process."""
    tree = rootfs.existing()
    if tree is None:
        raise SystemExit("the image is not built: run virtbench images build")
    d = Path(tempfile.mkdtemp(prefix="vb-bench-bundle-"))
    try:
        subprocess.run([runtime, "spec"], cwd=d, check=True)
        spec = json.loads((d / "config.json").read_text())
        spec["root"] = {"path": str(tree), "readonly": True}
        spec["process"]["args"] = list(argv or PROBE)
        spec["process"]["terminal"] = False
        spec["linux"]["namespaces"] = [
            ns for ns in spec["linux"]["namespaces"] if ns["type"] != "network"
        ]
        (d / "config.json").write_text(json.dumps(spec))
        yield d
    finally:
        shutil.rmtree(d, ignore_errors=True)


def by_hand(runtime: str, bundle_dir: Path, starts: int) -> list[float]:
    """ms from just before `RUNTIME run` to the probe's first instruction, per start."""
    out = []
    for _ in range(starts):
        name = f"vb-bench-{secrets.token_hex(3)}"
        t0 = time.time()
        r = subprocess.run(
            [runtime, "run", "--bundle", str(bundle_dir), name],
            capture_output=True,
            text=True,
            timeout=60,
        )
        if r.returncode != 0:
            subprocess.run([runtime, "delete", "-f", name], capture_output=True)
            raise SystemExit(f"{runtime} run failed: {r.stderr.strip()[-300:]}")
        out.append((parse_probe(r.stdout) - t0) * 1e3)
    return out


PHASES = ("runtime_startup_ms", "prepare_ms", "startup_ms")


def through_virtbench(runtime: str, starts: int, network: str) -> dict[str, list[float]]:
    """Per-start values of each phase of `container-startup` (PHASES)."""
    opts = {"runtime": runtime, "network": network}
    p = ContainerPlatform(PlatformSpec(runtime, "container", opts), "vb-bench1")
    with p:
        s = ContainerStartup().run(p, RunContext(params={"starts": starts}, timeout=60))
    return {x.metric: x.labels["values"] for x in s if x.metric in PHASES}


def spread(values: list[float]) -> str:
    q = statistics.quantiles(values, n=10)
    lo, hi = min(values), max(values)
    return f"min {lo:.1f}, p10 {q[0]:.1f}, p50 {q[4]:.1f}, p90 {q[8]:.1f}, max {hi:.1f}"


def alternating(reps: int, first: Callable[[], float], second: Callable[[], float]):
    """(a, b) per round, `first` leading in even rounds and `second` in odd ones."""
    a, b = [], []
    for i in range(reps):
        if i % 2 == 0:
            a.append(first())
            b.append(second())
        else:
            b.append(second())
            a.append(first())
    return a, b


def startup(runtime: str, starts: int, reps: int, network: str) -> None:
    if runtime not in BY_HAND:
        v = through_virtbench(runtime, starts * reps, network)["runtime_startup_ms"]
        print(
            f"start-up {runtime:5s} {network}: virtbench median {statistics.median(v):.1f} ms"
            f" (n={len(v)}); no by-hand reference for this runtime's CLI"
        )
        return
    every: dict[str, list[float]] = {k: [] for k in PHASES}
    every_hand: list[float] = []

    def vb_round() -> dict[str, float]:
        phases = through_virtbench(runtime, starts, network)
        for k, v in phases.items():
            every[k].extend(v)
        return {k: statistics.median(v) for k, v in phases.items()}

    def hand_round() -> float:
        v = by_hand(runtime, b, starts)
        every_hand.extend(v)
        return statistics.median(v)

    with bundle(runtime) as b:
        by_hand(runtime, b, 1)  # page cache warm for both sides
        vb, hand = alternating(reps, vb_round, hand_round)
    run_part = [v["runtime_startup_ms"] for v in vb]
    print(f"start-up {runtime} (medians of {starts} starts per round, {reps} rounds, alternating)")
    print(f"  by hand ({runtime} run on a prepared bundle): {ci(hand)} ms")
    for k in PHASES:
        print(f"  virtbench {k} (network={network}): {ci([v[k] for v in vb])} ms")
    diff = [v - h for v, h in zip(run_part, hand, strict=True)]
    print(f"  virtbench runtime part - by hand: {ci(diff)} ms")
    print(f"  virtbench runtime part / by hand: {ci(ratios(run_part, hand))}")
    print("  per-start spread (ms), to see where two groups of values come from:")
    print(f"    by hand:            {spread(every_hand)}")
    for k in PHASES:
        print(f"    {k + ':':<20}{spread(every[k])}")


def throughput(p, argv: list[str], pattern: str) -> float:
    r = p.exec(argv, cpus=[1])
    return float(re.search(pattern, r.stdout).group(1))


def overhead(reps: int) -> None:
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
            c, n = alternating(
                reps,
                lambda argv=argv, pat=pat: throughput(con, argv, pat),
                lambda argv=argv, pat=pat: throughput(nat, argv, pat),
            )
            print(f"{name}: container/native = {ci(ratios(c, n))}")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--starts", type=int, default=20, help="starts per side and round")
    ap.add_argument("--reps", type=int, default=5, help="alternating rounds")
    ap.add_argument("--runtimes", default="crun", help="comma-separated (crun,runc,runsc)")
    ap.add_argument("--network", default="host", choices=("host", "bridge", "nat"))
    ap.add_argument("--startup-only", action="store_true", help="skip the overhead ratios")
    a = ap.parse_args()
    for rt in a.runtimes.split(","):
        startup(rt, a.starts, a.reps, a.network if rt != "runsc" else "host")
    if not a.startup_only:
        overhead(a.reps)


if __name__ == "__main__":
    main()
