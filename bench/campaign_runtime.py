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
import statistics
import sys
import tempfile
from collections import defaultdict
from pathlib import Path

from _campaign import CellTime, cell_times, run_campaign


def summary(rows: list[CellTime]) -> list[str]:
    """One line per (platform, scenario): cells, mean ± stdev seconds."""
    by: dict[tuple[str, str], list[float]] = defaultdict(list)
    for c in rows:
        if c.seconds is not None:
            by[c.platform, c.scenario].append(c.seconds)
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
        out = run_campaign(args.campaign, results)
        rows = cell_times(results)
    if out.returncode != 0:
        out.print_tail(2000)
    failed = [c for c in rows if c.status != "ok"]
    total = sum(c.seconds or 0.0 for c in rows)
    wall = out.wall_s
    print(
        f"campaign {args.campaign}: {wall:.0f} s wall ({wall / 60:.1f} min), {len(rows)} cells "
        f"({total:.0f} s in cells), {len(failed)} not ok; exit {out.returncode}"
    )
    for c in rows:
        when = f"{c.seconds:6.1f} s" if c.seconds is not None else "     - s"
        print(
            f"  cell {c.platform:<14} {c.scenario:<26} rep {c.repetition:<3} {c.status:<8} {when}"
        )
    print("per (platform, scenario):")
    print("\n".join(summary(rows)))
    sys.exit(out.returncode)


if __name__ == "__main__":
    main()
