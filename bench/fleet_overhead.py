#!/usr/bin/env python3
"""Fleet overhead: wall time of `virtbench fleet run` on N simulated hosts against the same
campaign run by `virtbench run` on this one host, N = 1, 2, 4, 8, and where the time goes.

Hosts are network namespaces with a real sshd each (tests/integration/fleet_hosts.py); they
share this machine's CPUs, so N hosts running a CPU-bound campaign at once cannot finish
faster than N/cores times one run: the "ideal" column is max(1, N / cores) x the one-host
run. The rest is the fleet's own cost: Ansible (prepare: ship the tarball, unpack, install
check, start; polls: the remote status and the store snapshot fetched every poll), and the
import of every host's store at the end (gather).

Needs root; run under the machine lock:
  flock /tmp/vb-measure.lock bench/fleet_overhead.py [--hosts 1,2,4,8] [--reps 2]
"""

from __future__ import annotations

import argparse
import json
import os
import sqlite3
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # tests.integration

from tests.integration.fleet_hosts import fleet  # noqa: E402

CAMPAIGN = """
[campaign]
name = "fleet-bench"
repetitions = {reps}
warmup = 0
cell_timeout = 120
scenarios = ["solo"]

[[platforms]]
name = "native"
type = "native"

[suites.cpu]
test_cases = ["sysbench-cpu-1t"]
duration = 2
max_prime = 20011
"""

# Ansible's task names (fleet/playbooks) grouped by what they spend time on
PHASES = {
    "transfer": ("ship the project", "fetch the results"),
    "install": ("install (install.sh --no-run)", "unpack the project", "make the directories"),
    "start": ("check root", "start the campaign"),
    "status": ("run status",),
}


def vb(*args: str) -> tuple[float, subprocess.CompletedProcess]:
    t0 = time.monotonic()
    out = subprocess.run(
        [sys.executable, "-m", "virtbench.cli", *args], capture_output=True, text=True
    )
    return time.monotonic() - t0, out


def cell_seconds(db: Path) -> float:
    con = sqlite3.connect(db)
    try:
        rows = con.execute("SELECT started_at, finished_at FROM cells").fetchall()
    finally:
        con.close()
    return sum(b - a for a, b in rows if a and b)


def one_host(tmp: Path, campaign: Path) -> tuple[float, float]:
    res = tmp / "local"
    wall, out = vb("run", str(campaign), "--results-dir", str(res), "--no-report")
    if out.returncode != 0:
        raise SystemExit(f"local run failed: {out.stdout}{out.stderr}")
    return wall, cell_seconds(res / "virtbench.db")


def fleet_run(tmp: Path, campaign: Path, n: int) -> dict:
    res = tmp / f"fleet{n}"
    names = [f"b{i}" for i in range(n)]
    with fleet(tmp / f"hosts{n}", names) as f:
        inv = f.inventory(tmp / f"inventory{n}.ini")
        wall, out = vb(
            "fleet", "run", str(campaign), "-i", str(inv), "--results-dir", str(res),
            "--poll-interval", "1", "--forks", str(max(n, 1)),
        )  # fmt: skip
    if out.returncode != 0:
        raise SystemExit(f"fleet run on {n} hosts failed: {out.stdout}{out.stderr}")
    (rec_path,) = (res / "fleet").glob("*/fleet.json")
    rec = json.loads(rec_path.read_text())
    spans = [h["ended_at"] - h["started_at"] for h in rec["hosts"].values()]
    cells = [cell_seconds(rec_path.parent / f"{h}.db") for h in rec["hosts"]]
    return {"wall": wall, "rec": rec, "host_span": max(spans), "cells": max(cells)}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--hosts", default="1,2,4,8")
    ap.add_argument("--reps", type=int, default=2)
    args = ap.parse_args()
    cores = len(os.sched_getaffinity(0))
    with tempfile.TemporaryDirectory(prefix="vb-fleet-bench-") as d:
        tmp = Path(d)
        campaign = tmp / "fleet-bench.toml"
        campaign.write_text(CAMPAIGN.format(reps=args.reps))
        base, base_cells = one_host(tmp, campaign)
        print(f"one host, virtbench run: {base:.1f} s wall ({base_cells:.1f} s in cells);"
              f" {cores} cores; campaign: sysbench-cpu-1t x {args.reps} reps of 2 s")  # fmt: skip
        head = (
            f"{'N':>2} {'wall s':>7} {'ratio':>6} {'ideal':>6} {'host run s':>10}"
            f" {'prepare s':>9} {'polls':>5} {'poll s':>6} {'gather s':>8}  per-host task seconds"
            " (mean: transfer / install / start / status)"
        )
        print(head)
        for n in [int(x) for x in args.hosts.split(",")]:
            r = fleet_run(tmp, campaign, n)
            t = r["rec"].get("timings", {})
            tasks = t.get("tasks", {})
            per = {k: sum(tasks.get(x, 0.0) for x in names) / n for k, names in PHASES.items()}
            ideal = max(1.0, n / cores)
            print(
                f"{n:>2} {r['wall']:>7.1f} {r['wall'] / base:>6.2f} {ideal:>6.2f}"
                f" {r['host_span']:>10.1f} {t.get('prepare_s', 0):>9.1f} {t.get('polls', 0):>5}"
                f" {t.get('poll_s', 0):>6.1f} {t.get('gather_s', 0):>8.2f}  "
                + " / ".join(f"{per[k]:.2f}" for k in PHASES),
                flush=True,
            )


if __name__ == "__main__":
    main()
