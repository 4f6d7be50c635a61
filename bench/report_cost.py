#!/usr/bin/env python3
"""What a full co-location campaign's report costs: wall time and peak resident memory of
`report.build.write` on a synthetic store shaped like a finished `colocation-web` run
(`_synthetic_coloc.py`: 144 cells and 69 solo-peak cells, 617,344 samples, 824,994 series
points). Measures the code it runs (PYTHONPATH): run it once per version to compare.

It measures no virtualization and needs no lock, but it is CPU-heavy for minutes: on a
shared host run it niced (`nice -n 19 ionice -c3`), and keep the store (--keep) so a second
version renders the same one (--store).

  nice -n 19 ionice -c3 python bench/report_cost.py [--reps 3] [--keep DIR | --store DB]
      [--output REPORT.html]

The report is rendered in a child process, so its peak RSS is the render's alone
(resource.getrusage in the child), not the store builder's.
"""

from __future__ import annotations

import argparse
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))  # _synthetic_coloc

import _synthetic_coloc  # noqa: E402

from virtbench.report import build as report_build  # noqa: E402
from virtbench.store.db import Store  # noqa: E402


def render(db: str, run_id: str, output: str) -> None:
    """In the child: render the report and print its cost."""
    t0 = time.monotonic()
    store = Store(db, read_only=True)
    try:
        path, _markdown = report_build.write(store, run_id, Path(output).parent, Path(output))
    finally:
        store.close()
    wall = time.monotonic() - t0
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    size = path.stat().st_size / 1e6
    print(f"report: {wall:.1f} s wall, peak RSS {rss:.0f} MiB, {size:.1f} MB of HTML", flush=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--reps", type=int, default=3, help="repetitions of each cell (store built)")
    ap.add_argument("--keep", type=Path, help="build the store in this directory and keep it")
    ap.add_argument("--store", help="render this store's run (built before with --keep)")
    ap.add_argument("--output", help="keep the report here (default: a temporary file)")
    ap.add_argument("--render", nargs=3, metavar=("DB", "RUN", "OUT"), help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.render:
        render(*args.render)
        return
    with tempfile.TemporaryDirectory(prefix="vb-report-cost-") as tmp:
        db = args.store or str((args.keep or Path(tmp)) / "virtbench.db")
        if args.store:
            run_id = Store(db, read_only=True).resolve_run("latest")
        else:
            t0 = time.monotonic()
            run_id, n = _synthetic_coloc.build(Path(db), args.reps)
            print(
                f"store {db}: run {run_id}, {n:,} samples, built in {time.monotonic() - t0:.0f} s"
            )
        out = args.output or str(Path(tmp) / "report.html")
        cmd = [sys.executable, __file__, "--render", db, run_id, out]
        subprocess.run(cmd, check=True)


if __name__ == "__main__":
    main()
