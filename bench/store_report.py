#!/usr/bin/env python3
"""The store under a fleet's load, both back ends (SQLite WAL, PostgreSQL with fsync on, a
throwaway local cluster), timed through the CLI a user runs:

1. inserts per second from 8 concurrent writers, one transaction per cell as the runner
   commits (bench/store_pg.py's writers, reused);
2. `virtbench report RUN` on one run of 1 million samples (synthetic, bulk loaded);
3. `virtbench fleet report --run ...` on 100 hosts' runs of 10,000 samples each (1 million
   in all): hosts side by side, one row per host.

Each command runs as its own process: wall time and peak resident memory (wait4).
Needs root (the cluster runs as the postgres user). Run under the machine lock:
  flock /tmp/vb-measure.lock bench/store_report.py [--total 1000000] [--hosts 100]
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # tests.pgserver
sys.path.insert(0, str(Path(__file__).resolve().parent))  # store_pg

import store_pg  # noqa: E402

from tests import pgserver  # noqa: E402
from virtbench.store.db import Store  # noqa: E402

HYPERVISORS = ("kvm", "xen", "vmware", "microsoft")


def cli(*args: str) -> tuple[float, float]:
    """(wall seconds, peak RSS MiB) of one virtbench command."""
    t0 = time.monotonic()
    p = subprocess.Popen(
        [sys.executable, "-m", "virtbench.cli", *args],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    _, status, usage = os.wait4(p.pid, 0)
    wall = time.monotonic() - t0
    if os.waitstatus_to_exitcode(status) != 0:
        raise SystemExit(f"virtbench {' '.join(args)} failed: {p.stderr.read().decode()[-800:]}")
    return wall, usage.ru_maxrss / 1024


def load_runs(location: str, runs: int, total: int, cells_per_run: int) -> tuple[list[str], float]:
    """`runs` runs of total/runs samples each, each with its own host facts."""
    st = Store(location)
    ids = []
    t0 = time.time()
    for h in range(runs):
        run_id = f"20250101-{h:06d}-b16{h % 10}"
        facts = {"fleet_host": f"host{h:04d}", "hypervisor": HYPERVISORS[h % 4]}
        st.create_run(run_id, "bench", "", "", None, facts, {}, "0",
                      description=store_pg.describe(store_pg.CASES))  # fmt: skip
        rows = store_pg._cell_rows(run_id, cells_per_run)
        st.add_cells(rows)
        store_pg._bulk(st, run_id, rows, total // runs // cells_per_run)
        ids.append(run_id)
    st.close()
    return ids, time.time() - t0


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--writers", type=int, default=8)
    ap.add_argument("--total", type=int, default=1_000_000)
    ap.add_argument("--hosts", type=int, default=100)
    args = ap.parse_args()
    why = pgserver.available()
    if why:
        sys.exit(f"cannot start PostgreSQL: {why}")
    with tempfile.TemporaryDirectory(prefix="vb-bench-") as tmp, pgserver.cluster(fsync=True) as pg:
        stores = {"sqlite": lambda name: str(Path(tmp) / f"{name}.db"), "postgresql": pg.create_db}
        print(f"{args.writers} concurrent writers, one transaction per cell (100 cells each):")
        for name, make in stores.items():
            print(f"  {name:10s} {store_pg.writers(make('w'), args.writers, 100, 50)}", flush=True)
        print(f"`virtbench report` of one run of {args.total} samples (2,000 cells):")
        for name, make in stores.items():
            loc = make("big")
            (run_id,), load = load_runs(loc, 1, args.total, 2000)
            wall, rss = cli("report", run_id, "--store", loc, "--output", f"{tmp}/{name}.html")
            print(f"  {name:10s} {wall:6.1f} s, peak {rss:5.0f} MiB (bulk load {load:.0f} s)",
                  flush=True)  # fmt: skip
        print(f"`virtbench fleet report` of {args.hosts} hosts' runs, {args.total} samples:")
        for name, make in stores.items():
            loc = make("fleet")
            ids, load = load_runs(loc, args.hosts, args.total, 20)
            runs = [a for r in ids for a in ("--run", r)]
            wall, rss = cli("fleet", "report", *runs, "--store", loc)
            print(f"  {name:10s} {wall:6.1f} s, peak {rss:5.0f} MiB (bulk load {load:.0f} s)",
                  flush=True)  # fmt: skip


if __name__ == "__main__":
    main()
