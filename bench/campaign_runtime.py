#!/usr/bin/env python3
"""Measured run time of a campaign: its wall time and the time of each cell (issue 12).

    flock /tmp/vb-measure.lock python bench/campaign_runtime.py colocation-web-quick

Runs `virtbench run CAMPAIGN` (a built-in name or a file) into a results directory (a
temporary one unless --results-dir), then reads the run's cells from the store and prints
the wall time, each cell's time (started_at..finished_at, as the runner stored them), and the
mean time per (platform, scenario) with its spread, which is what a campaign header quotes
when it estimates a longer variant from measured cells. Run it under the measurement lock.
"""

from __future__ import annotations

import argparse
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path

DB_NAME = "virtbench.db"  # store/db.py


def cells(results_dir: Path) -> list[tuple]:
    """(platform, scenario, repetition, status, seconds) of the latest run's cells."""
    conn = sqlite3.connect(str(results_dir / DB_NAME))
    try:
        run = conn.execute("SELECT run_id FROM runs ORDER BY started_at DESC LIMIT 1").fetchone()
        if run is None:
            return []
        return conn.execute(
            "SELECT platform, scenario, repetition, status, finished_at - started_at "
            "FROM cells WHERE run_id = ? ORDER BY seq",
            run,
        ).fetchall()
    finally:
        conn.close()


def summary(rows: list[tuple]) -> list[str]:
    """One line per (platform, scenario): cells, mean ± stdev seconds."""
    by: dict[tuple[str, str], list[float]] = defaultdict(list)
    for platform, scenario, _rep, _status, secs in rows:
        if secs is not None:
            by[platform, scenario].append(secs)
    out = []
    for (platform, scenario), secs in by.items():
        sd = statistics.stdev(secs) if len(secs) > 1 else 0.0
        out.append(
            f"  {platform:<14} {scenario:<26} {len(secs)} cell(s) "
            f"{statistics.mean(secs):7.1f} s ± {sd:.1f}"
        )
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("campaign", help="a built-in campaign name or a .toml file")
    ap.add_argument("--results-dir", type=Path, help="keep the results here")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        results = args.results_dir or Path(tmp)
        start = time.monotonic()
        cmd = [sys.executable, "-m", "virtbench.cli", "run", args.campaign]
        cmd += ["--results-dir", str(results), "--no-report"]
        out = subprocess.run(cmd, capture_output=True, text=True)
        wall = time.monotonic() - start
        rows = cells(results) if (results / DB_NAME).exists() else []
    if out.returncode != 0:
        print(out.stdout[-2000:], out.stderr[-2000:])
    failed = [r for r in rows if r[3] != "ok"]
    total = sum(r[4] or 0.0 for r in rows)
    print(
        f"campaign {args.campaign}: {wall:.0f} s wall ({wall / 60:.1f} min), {len(rows)} cells "
        f"({total:.0f} s in cells), {len(failed)} not ok; exit {out.returncode}"
    )
    for platform, scenario, rep, status, secs in rows:
        when = f"{secs:6.1f} s" if secs is not None else "     - s"
        print(f"  cell {platform:<14} {scenario:<26} rep {rep:<3} {status:<8} {when}")
    print("per (platform, scenario):")
    print("\n".join(summary(rows)))
    sys.exit(out.returncode)


if __name__ == "__main__":
    main()
