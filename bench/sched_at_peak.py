#!/usr/bin/env python3
"""How the target was scheduled at its peak, per scenario and file size, from a stored run.

    python bench/sched_at_peak.py /work/runs/cw-vm-virtio-a --scenarios solo idle-neighbours:3

Reads the latest run's store (measures nothing). For each cell and file size it takes the
sweep step that served the most (reply_rate) and reads the target's scheduler metrics at that
step; the table gives their mean over the repetitions. Why: "idle TCG guests are not free"
(docs/colocation.md) showed up as a higher cost per request at the same CPU; the switches
and blocked time say how the target's vCPU thread was scheduled meanwhile.
"""

from __future__ import annotations

import argparse
import statistics
import sys
from collections import defaultdict
from pathlib import Path
from typing import Any

from _campaign import latest_run

from virtbench.analysis.colocation import labels_of
from virtbench.store.db import Store

METRICS = (
    "reply_rate",
    "cpu_util",
    "vcpu_cpu_util",
    "backend_cpu_util",
    "exe_per_s",
    "cpu_us_per_exe",
    "vol_switches_per_s",
    "invol_switches_per_s",
    "sched_run_pct",
    "sched_wait_pct",
    "sched_blocked_pct",
)

Point = tuple[str, Any, Any]  # (cell, file size, step)


def at_peaks(rows: list[dict[str, Any]], scenarios: set[str]) -> dict[tuple[str, str, Any], dict]:
    """(platform, scenario, file size) -> metric -> [value at each cell's peak step]; also
    'throttled'."""
    points: dict[Point, dict[str, float]] = defaultdict(dict)
    scenario_of: dict[str, tuple[str, str]] = {}  # cell -> (platform, scenario)
    throttled: dict[Point, str] = {}
    for r in rows:
        labels = labels_of(r)
        if r["role"] != "target" or r["scenario"] not in scenarios or "step" not in labels:
            continue
        key = (r["cell_id"], labels.get("file_size_kb"), labels["step"])
        points[key][r["metric"]] = r["value"]
        scenario_of[r["cell_id"]] = (r["platform"], r["scenario"])
        if "cpu_budget_throttled" in labels:
            throttled[key] = labels["cpu_budget_throttled"]
    peak: dict[tuple[str, Any], Point] = {}
    for key, values in points.items():
        best = peak.get(key[:2])
        if "reply_rate" in values and (
            best is None or values["reply_rate"] > points[best]["reply_rate"]
        ):
            peak[key[:2]] = key
    out: dict[tuple[str, str, Any], dict] = defaultdict(lambda: defaultdict(list))
    for (cell, size), key in peak.items():
        group = out[(*scenario_of[cell], size)]
        for metric in METRICS:
            if metric in points[key]:
                group[metric].append(points[key][metric])
        if key in throttled:
            group["throttled"].append(throttled[key])
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("results", type=Path, help="a results directory (its latest run)")
    ap.add_argument("--scenarios", nargs="+", default=["solo", "idle-neighbours:3"])
    args = ap.parse_args()
    latest = latest_run(args.results)
    if latest is None:
        sys.exit(f"error: {args.results}: no run stored")
    store = Store.open_existing(args.results)
    try:
        rows = store.sample_rows(latest[0]["run_id"])
    finally:
        store.close()
    table = at_peaks(rows, set(args.scenarios))
    if not table:
        sys.exit(f"error: no target sweep steps of {', '.join(args.scenarios)} in {args.results}")
    print(f"run {latest[0]['run_id']}: the target at each cell's peak step, mean of repetitions")
    print("platform     scenario            KB  " + " ".join(f"{m[:14]:>14}" for m in METRICS))
    for platform, scenario, size in sorted(table, key=lambda k: (k[0], k[2] or 0, k[1])):
        group = table[platform, scenario, size]
        cols = (
            f"{statistics.mean(group[m]):14.1f}" if group.get(m) else f"{'-':>14}" for m in METRICS
        )
        print(f"{platform:<12} {scenario:<18} {size!s:>3}  " + " ".join(cols))
        if group.get("throttled"):
            print(f"{'':<36}budget ran out: {', '.join(group['throttled'])}")


if __name__ == "__main__":
    main()
