#!/usr/bin/env python3
"""The results store under load, SQLite (WAL) vs PostgreSQL (a throwaway local cluster).

1. Inserts per second from 8 concurrent writers: each process commits cells the way the
   runner does (one transaction per cell: its samples and status) into one run.
   PostgreSQL runs with fsync on (a real server's default); SQLite as the store opens it
   (WAL, synchronous=NORMAL: no fsync per commit).
2. Report and export time on a store holding 1 million samples (synthetic: a run of
   CELLS cells of real test cases, bulk loaded; the load itself is not what is timed).

Needs root (the cluster runs as the postgres user). Usage:
  bench/store_pg.py [--writers 8] [--cells 100] [--samples 50] [--total 1000000]
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # tests.pgserver

from tests import pgserver  # noqa: E402
from virtbench import export  # noqa: E402
from virtbench.report import build  # noqa: E402
from virtbench.results import Sample  # noqa: E402
from virtbench.runner.describe import describe  # noqa: E402
from virtbench.store.db import Store  # noqa: E402

RUN = "20250101-000000-5eed"
CASES = ("sysbench-cpu-1t", "stress-ng-qsort", "mbw", "fio-rand-read", "iperf3-tcp")
PLATFORMS = ("native", "container", "vm", "container@vm")
SCENARIOS = ("solo", "idle-neighbours:3", "antagonist:memory-load")


def _cell_rows(run_id: str, n: int) -> list[tuple]:
    rows = []
    for i in range(n):
        tc = CASES[i % len(CASES)]
        plat = PLATFORMS[(i // len(CASES)) % len(PLATFORMS)]
        scen = SCENARIOS[(i // (len(CASES) * len(PLATFORMS))) % len(SCENARIOS)]
        rep = i // (len(CASES) * len(PLATFORMS) * len(SCENARIOS)) + 1
        spec = json.dumps({"name": plat, "type": plat.split("@")[0]})
        rows.append((f"{run_id}/{i:05d}", run_id, i, plat, spec, "cpu", tc, scen, rep, "{}"))
    return rows


def _new_run(store: Store, run_id: str, cells: int) -> list[tuple]:
    store.create_run(run_id, "bench", "", "", None, {}, {}, "0", description=describe(CASES))
    rows = _cell_rows(run_id, cells)
    store.add_cells(rows)
    return rows


def _primary(test_case: str) -> tuple[str, str]:
    m = next(m for m in describe([test_case]).metrics if m.primary)
    return m.metric, m.unit


def _writer(location: str, worker: int, cells: int, samples: int, start: float) -> float:
    st = Store(location)
    while time.time() < start:  # every writer starts together
        time.sleep(0.001)
    for i in range(cells):
        seq = worker * cells + i
        cid = f"{RUN}/{seq:05d}"
        metric, unit = _primary(CASES[seq % len(CASES)])
        st.start_cell(cid)
        out = [Sample(metric, 1000.0 + k, unit, True, labels={"k": k}) for k in range(samples)]
        st.finish_cell(RUN, cid, "ok", out, [], labels={"params": {}})
    st.close()
    return time.time()


def writers(location: str, n: int, cells: int, samples: int) -> str:
    st = Store(location)
    _new_run(st, RUN, n * cells)
    st.close()
    start = time.time() + 1.0
    with multiprocessing.get_context("fork").Pool(n) as pool:
        ends = pool.starmap(_writer, [(location, w, cells, samples, start) for w in range(n)])
    wall = max(ends) - start
    total = n * cells
    return (
        f"{total} cells, {total * samples} samples in {wall:.2f} s: {total / wall:.0f} cells/s,"
        f" {total * samples / wall:.0f} samples/s"
    )


def _bulk(store: Store, run_id: str, rows: list[tuple], per_cell: int) -> None:
    """Samples straight into the table (COPY on PostgreSQL): set-up, not what is timed."""
    data = []
    for cid, _run, seq, *_ in rows:
        metric, unit = _primary(CASES[seq % len(CASES)])
        for k in range(per_cell):
            data.append((run_id, cid, "target", metric, 1000.0 + k % 97, unit, 1, 1, None, "{}"))
    cols = "run_id, cell_id, role, metric, value, unit, higher_is_better, valid,"
    cols += " invalid_reason, labels_json"
    if store.shared:
        with store.conn.conn.cursor() as cur, cur.copy(f"COPY samples ({cols}) FROM STDIN") as cp:
            for row in data:
                cp.write_row(row)
    else:
        with store.tx() as c:
            c.executemany(f"INSERT INTO samples ({cols}) VALUES ({', '.join('?' * 10)})", data)
    with store.tx() as c:
        c.execute("UPDATE cells SET status = 'ok' WHERE run_id = ?", (run_id,))


def big_store(location: str, total: int, cells: int) -> str:
    st = Store(location)
    run_id = RUN.replace("5eed", "b16")
    t0 = time.time()
    _bulk(st, run_id, _new_run(st, run_id, cells), total // cells)
    load = time.time() - t0
    t0 = time.time()
    n = len(export.to_jsonl(st, run_id).splitlines())
    jsonl = time.time() - t0
    t0 = time.time()
    html, md = build.render(st, run_id)
    report = time.time() - t0
    st.close()
    return (
        f"{n} samples ({cells} cells; bulk load {load:.1f} s): report {report:.2f} s"
        f" (HTML {len(html) // 1024} KiB), results --format jsonl {jsonl:.2f} s"
    )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--writers", type=int, default=8)
    ap.add_argument("--cells", type=int, default=100, help="cells per writer")
    ap.add_argument("--samples", type=int, default=50, help="samples per cell")
    ap.add_argument("--total", type=int, default=1_000_000, help="samples of the big store")
    ap.add_argument("--big-cells", type=int, default=2_000, help="cells of the big store")
    args = ap.parse_args()
    why = pgserver.available()
    if why:
        sys.exit(f"cannot start PostgreSQL: {why}")
    with tempfile.TemporaryDirectory(prefix="vb-bench-") as tmp, pgserver.cluster(fsync=True) as pg:
        stores = {
            "sqlite": lambda name: str(Path(tmp) / f"{name}.db"),
            "postgresql": pg.create_db,
        }
        print(f"{args.writers} concurrent writers, one transaction per cell:")
        for name, make in stores.items():
            print(f"  {name:10s} {writers(make('w'), args.writers, args.cells, args.samples)}")
        print(f"store of {args.total} samples:")
        for name, make in stores.items():
            print(f"  {name:10s} {big_store(make('big'), args.total, args.big_cells)}")


if __name__ == "__main__":
    main()
