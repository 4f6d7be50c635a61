#!/usr/bin/env python3
"""Fleet overhead: wall time of `virtbench fleet run` on N simulated hosts against the same
campaign run by `virtbench run` on this one host, N = 1, 2, 4, 8, and where the time goes.

Hosts are network namespaces with a real sshd each (tests/integration/fleet_hosts.py); they
share this machine's CPUs with each other and with the controller (Ansible). The campaign is
a fixed amount of work on one thread (`multicore-sysbench-cpu-time`, threads = [1]: a
sysbench job of E prime searches, timed), so N hosts on C cores cannot finish it faster than
max(1, N / C) x the one-host run: that is the "ideal" column. (A fixed-duration test such as
`sysbench-cpu-1t` would take the same wall time at any N and hide the sharing.) The rest is
the fleet's own cost.

Before the measured runs one priming fleet installs the project on all the hosts (the first
run on a host: ship the tarball, unpack, install): the measured runs are a fleet's steady
state, where a host whose project is unchanged gets two Ansible tasks (check, start). The
priming run's per-host transfer/install seconds are printed: the first-run cost.

Columns, per N (from the fleet's own record, fleet.json, and the hosts' stores): wall (the
CLI, start to exit), ideal, ratio = wall / ideal; then the wall split along the host that
finished last: start (CLI start -> its run's start: controller start-up, Ansible prepare,
virtbench run's own start), campaign (its run's span in its store) and after (its run's end
-> CLI exit: waiting for the next poll, the poll, the fetch, the import, exit); camp/ideal =
the longest campaign against max(1, N / C) x the one-host campaign (the measuring's own
sharing); prepare = the controller's wall in the prepare play; polls and their wall; gather
= the import of every host store; per host (mean): Ansible's task seconds, check / transfer
/ install / start / status / fetch.

Needs root; run under the machine lock:
  flock /tmp/vb-measure.lock bench/fleet_overhead.py [--hosts 1,2,4,8] [--reps 6]
      [--events 20000] [--poll-interval 10]

Measured 2026-11-26 13:20 UTC under the lock, one pass, 2-core host (docs/fleet.md, "What
a fleet costs"), `flock /tmp/vb-measure.lock bench/fleet_overhead.py --hosts 1,2,4,8
--reps 6 --events 20000 --poll-interval 10`:
  one host, virtbench run: 62.4 s wall, 61.8 s campaign
  priming fleet on 8 hosts (first install there): prepare 12.6 s; per host transfer 4.70 s,
  install 2.97 s
  N   wall  ideal ratio start campaign after camp/ideal prepare polls (wall)  gather
  1   70.7   62.4  1.13   2.3     61.7   6.6     1.00     1.2   6 (8.7)       0.00
  2   76.8   62.4  1.23   2.8     69.5   4.5     1.13     1.6   6 (14.4)      0.01
  4  154.9  124.9  1.24   4.0    148.5   2.4     1.20     2.5  11 (41.4)      0.01
  8  316.0  249.8  1.27   5.9    300.2   9.9     1.22     4.2  18 (130.2)     0.03
  per host, N = 1/2/4/8, check / transfer / install / start / status / fetch s:
  0.36/0.03/0.02/0.25/2.67/3.23; 0.52/0.03/0.02/0.37/4.56/5.57;
  0.84/0.07/0.04/0.64/16.67/11.51; 1.38/0.12/0.06/1.18/56.18/23.56
The fixed cost (start + after) stays under 16 s; the excess over the ideal is the polls'
CPU (ansible-playbook on the controller, SSH and the status command per host) taken from
the jobs on the same 2 cores: the campaign itself ran 13-22 % over the CPU sharing.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path

from _campaign import cli, run_campaign, run_span

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # tests.integration

from tests.integration.fleet_hosts import fleet  # noqa: E402

CAMPAIGN = """
[campaign]
name = "fleet-bench"
repetitions = {reps}
warmup = 0
cell_timeout = 900
scenarios = ["solo"]

[[platforms]]
name = "native"
type = "native"

[suites.multicore]
test_cases = ["multicore-sysbench-cpu-time"]
threads = [1]
events = {events}
max_prime = 20011
"""

TASKS = ("check_s", "transfer_s", "install_s", "start_s", "status_s", "fetch_s")


def one_host(tmp: Path, campaign: Path) -> tuple[float, float]:
    res = tmp / "local"
    out = run_campaign(campaign, res)
    if out.returncode != 0:
        raise SystemExit(f"local run failed: {out.stdout}{out.stderr}")
    a, b = run_span(res / "virtbench.db")
    return out.wall_s, b - a


def fleet_run(f, tmp: Path, campaign: Path, n: int, tag: str, poll: float) -> dict:
    res = tmp / f"fleet-{tag}"
    inv = f.inventory(tmp / f"inventory-{tag}.ini")
    names = ",".join(h.name for h in f.hosts[:n])
    out = cli(
        "fleet", "run", str(campaign), "-i", str(inv), "--limit", names,
        "--results-dir", str(res), "--poll-interval", str(poll), "--forks", str(n),
    )  # fmt: skip
    if out.returncode != 0:
        raise SystemExit(f"fleet run on {n} hosts failed: {out.stdout}{out.stderr}")
    (rec_path,) = (res / "fleet").glob("*/fleet.json")
    rec = json.loads(rec_path.read_text())
    ends = {h: run_span(rec_path.parent / f"{h}.db") for h in rec["hosts"]}
    last = max(ends, key=lambda h: ends[h][1])
    start, end = ends[last]
    hosts = rec["hosts"].values()
    per = {k: sum(h["timings"].get(k, 0.0) for h in hosts) / n for k in TASKS}
    return {
        "wall": out.wall_s,
        "start": start - out.started,
        "campaign": end - start,
        "after": out.ended - end,
        "longest": max(b - a for a, b in ends.values()),
        "t": rec.get("timings", {}),
        "per": per,
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--hosts", default="1,2,4,8")
    ap.add_argument("--reps", type=int, default=6, help="cells of the campaign")
    ap.add_argument("--events", type=int, default=20000, help="prime searches per cell")
    ap.add_argument("--poll-interval", type=float, default=10.0)
    args = ap.parse_args()
    counts = [int(x) for x in args.hosts.split(",")]
    cores = len(os.sched_getaffinity(0))
    with tempfile.TemporaryDirectory(prefix="vb-fleet-bench-") as d:
        tmp = Path(d)
        campaign = tmp / "fleet-bench.toml"
        campaign.write_text(CAMPAIGN.format(reps=args.reps, events=args.events))
        tiny = tmp / "fleet-prime.toml"
        tiny.write_text(CAMPAIGN.format(reps=1, events=100))
        print(
            f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}; {cores} cores; campaign:"
            f" multicore-sysbench-cpu-time, 1 thread, {args.events} events x {args.reps} cells,"
            f" native; --poll-interval {args.poll_interval:g}, --forks N",
            flush=True,
        )
        base, base_camp = one_host(tmp, campaign)
        print(f"one host, virtbench run: {base:.1f} s wall, {base_camp:.1f} s campaign", flush=True)
        with fleet(tmp / "hosts", [f"b{i}" for i in range(max(counts))]) as f:
            p = fleet_run(f, tmp, tiny, max(counts), "prime", args.poll_interval)
            print(
                f"priming fleet on {max(counts)} hosts (first install there): prepare"
                f" {p['t'].get('prepare_s', 0):.1f} s; per host transfer"
                f" {p['per']['transfer_s']:.2f} s, install {p['per']['install_s']:.2f} s",
                flush=True,
            )
            print(
                "| N | wall s | ideal s | ratio | start s | campaign s | after s | camp/ideal"
                " | prepare s | polls (s) | gather s | per host: check / transfer / install"
                " / start / status / fetch s |\n|" + "---|" * 12,
                flush=True,
            )
            for n in counts:
                r = fleet_run(f, tmp, campaign, n, f"n{n}", args.poll_interval)
                share = max(1.0, n / cores)
                ideal = share * base
                t = r["t"]
                print(
                    f"| {n} | {r['wall']:.1f} | {ideal:.1f} | {r['wall'] / ideal:.2f}"
                    f" | {r['start']:.1f} | {r['campaign']:.1f} | {r['after']:.1f}"
                    f" | {r['longest'] / (share * base_camp):.2f}"
                    f" | {t.get('prepare_s', 0):.1f}"
                    f" | {t.get('polls', 0)} ({t.get('poll_s', 0):.1f})"
                    f" | {t.get('gather_s', 0):.2f} | "
                    + " / ".join(f"{r['per'][k]:.2f}" for k in TASKS)
                    + " |",
                    flush=True,
                )


if __name__ == "__main__":
    main()
