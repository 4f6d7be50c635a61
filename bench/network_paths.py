#!/usr/bin/env python3
"""Network like-for-like (issue 11, seed 004 Table 4): native, a host-network, a NAT and a
bridge crun container measured by iperf3 over one client path, with every ratio to native
and NAT against host; ratios across paths are refused with the reason.

Run under the machine lock:
  flock /tmp/vb-measure.lock python bench/network_paths.py [--client-path bridge|host]
     [--repetitions 3] [--duration 2] [--keep DIR]
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

from _campaign import run_campaign

from virtbench.analysis.normalize import compare
from virtbench.report.data import ReportData
from virtbench.store.db import Store

CAMPAIGN = """
[campaign]
name = "network-paths"
repetitions = {reps}
warmup = 1
order = "interleaved"
cell_timeout = 120
baseline = "native"
scenarios = ["solo"]

[[platforms]]
name = "native"
type = "native"

[[platforms]]
name = "crun-host"
type = "container"
runtime = "crun"
network = "host"

[[platforms]]
name = "crun-nat"
type = "container"
runtime = "crun"
network = "nat"

[[platforms]]
name = "crun-bridge"
type = "container"
runtime = "crun"
network = "bridge"

{docker}
[suites.network]
test_cases = ["iperf3-tcp"]
duration = {duration}
reverse = true
client_path = "{path}"
"""


# seed 004's metal.aufs.host / metal.aufs.nat: Docker, its NAT through docker-proxy
DOCKER = """
[[platforms]]
name = "docker-host"
type = "container"
runtime = "docker"
network = "host"

[[platforms]]
name = "docker-nat"
type = "container"
runtime = "docker"
network = "nat"
docker_nat = "userland-proxy"
"""


def run(results: Path, path: str, reps: int, duration: float, docker: bool) -> float:
    f = results / "network-paths.toml"
    extra = DOCKER if docker else ""
    f.write_text(CAMPAIGN.format(reps=reps, duration=duration, path=path, docker=extra))
    out = run_campaign(f, results)
    if out.returncode not in (0, 1):
        out.print_tail(3000)
        sys.exit(out.returncode)
    return out.wall_s


def table(results: Path) -> None:
    store = Store.open_existing(results)
    run_id = store.resolve_run("latest")
    data = ReportData.load(store, run_id)
    heads = {g.key.platform: g for g in data.select(suite="network", primary=True)}
    print(f"run {run_id}: cells {[c.status for c in data.cells].count('ok')}/{len(data.cells)} ok")
    print(
        f"{'platform':<12} {'net_path':<12} {'Gbit/s':>8} {'± CI':>6} n  invalid  ratio to native"
    )
    for name in data.platforms:
        g = heads.get(name)
        if g is None:
            continue
        s = g.summary
        c = data.comparisons.get(g.key)
        why = data.incomparable.get(g.key)
        ratio = (
            f"{c.ratio:.3f} [{c.ratio_low:.3f}-{c.ratio_high:.3f}]"
            if c is not None and c.ratio_low is not None
            else (f"{c.ratio:.3f}" if c is not None else f"none: {why}")
        )
        mean = (s.mean or 0) / 1000
        half = (s.ci_half or 0) / 1000
        path = g.labels.get("net_path", "?")
        print(f"{name:<12} {path:<12} {mean:8.2f} {half:6.2f} {s.n}  {g.n_invalid}  {ratio}")
        for inv in g.invalid:
            print(f"{'':<12} invalid #{inv.repetition}: {inv.reason}")
    for nat_name, host_name in (("crun-nat", "crun-host"), ("docker-nat", "docker-host")):
        nat_vs_host(heads.get(nat_name), heads.get(host_name), nat_name, host_name)
    store.close()


def nat_vs_host(nat, host, nat_name: str, host_name: str) -> None:
    if nat and host:
        pn, ph = nat.labels.get("net_path"), host.labels.get("net_path")
        c = compare(nat, host) if pn == ph else None
        if c is None:
            print(f"{nat_name} vs {host_name}: no ratio (net_path {pn} vs {ph})")
        else:
            ci = "" if c.ratio_low is None else f" [{c.ratio_low:.3f}-{c.ratio_high:.3f}]"
            print(f"{nat_name} vs {host_name} (seed 004 Table 4), over {pn}: {c.ratio:.3f}{ci}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--client-path", default="bridge", choices=("bridge", "host", "loopback"))
    ap.add_argument("--repetitions", type=int, default=3)
    ap.add_argument("--duration", type=float, default=2)
    ap.add_argument("--docker", action="store_true", help="add Docker host and nat (proxy)")
    ap.add_argument("--keep", type=Path, help="keep the results directory here")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        results = args.keep or Path(tmp)
        results.mkdir(parents=True, exist_ok=True)
        wall = run(results, args.client_path, args.repetitions, args.duration, args.docker)
        print(f"client_path = {args.client_path}: {wall:.0f} s")
        table(results)


if __name__ == "__main__":
    main()
