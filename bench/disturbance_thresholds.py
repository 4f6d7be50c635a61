#!/usr/bin/env python3
"""Where a cell's disturbance reading lies on a quiet host and under another tenant's bursts:
the evidence for metrics/disturbance.py's thresholds (OUTSIDE_CPU_PCT, STEAL_PCT).

Runs the default campaign (or CAMPAIGN) once quiet, then once per seed with bench/_burst.py
spinning beside it (its own process group; `--pidns`: in a PID namespace of its own, so its
processes are visible to nothing but /proc/stat... when virtbench is itself namespaced; on the
host they are still named), and prints each cell's outside CPU, steal and PSI, then per
condition the min / median / max and how many cells the current thresholds flag.

    flock /tmp/vb-measure.lock python bench/disturbance_thresholds.py [--seeds 1] [--pidns]
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import statistics
import tempfile
import time
from pathlib import Path

from _burst import Burst
from _campaign import run_campaign

from virtbench.metrics import disturbance
from virtbench.store.db import DB_NAME, Store

KEYS = ("outside_cpu_pct", "steal_pct", "kernel_cpu_pct", "psi_cpu_pct", "psi_memory_pct")


def readings(results: Path) -> list[tuple[str, dict]]:
    """(cell, its disturbance label) of the latest run's measured cells."""
    store = Store(results / DB_NAME)
    run_id = store.resolve_run("latest")
    out: dict[str, tuple[str, dict]] = {}
    for row in store.sample_rows(run_id):
        label = json.loads(row["labels_json"] or "{}").get("disturbance")
        if label and row["cell_id"] not in out:
            where = f"{row['platform']} {row['test_case']} #{row['repetition']}"
            out[row["cell_id"]] = (where, label)
    return [out[k] for k in sorted(out)]


def show(name: str, cells: list[tuple[str, dict]]) -> None:
    print(f"\n== {name}: {len(cells)} cells")
    for where, label in cells:
        figures = " ".join(f"{k.removesuffix('_pct')}={label.get(k, '-')}" for k in KEYS)
        print(f"  {where:55s} {figures}  by {label.get('by')}")
    for key in KEYS:
        values = [float(lbl[key]) for _w, lbl in cells if key in lbl]
        if values:
            print(
                f"  {key:16s} min {min(values):5.1f} median {statistics.median(values):5.1f}"
                f" max {max(values):5.1f}"
            )
    flagged = [w for w, lbl in cells if disturbance.judge(lbl)]
    print(f"  flagged by the thresholds: {len(flagged)}/{len(cells)}")


def snapshot(dest: Path) -> None:
    """The files a disturbance reading reads, copied as they are now (unit-test data)."""
    for rel in (
        "proc/stat",
        "proc/uptime",
        *(f"proc/pressure/{r}" for r in disturbance.PSI_RESOURCES),
    ):
        with contextlib.suppress(OSError):
            text = Path("/", rel).read_text()
            Path(dest, rel).parent.mkdir(parents=True, exist_ok=True)
            Path(dest, rel).write_text(text)
    for pid in os.listdir("/proc"):
        if pid.isdigit():
            with contextlib.suppress(OSError):
                text = Path("/proc", pid, "stat").read_text()
                Path(dest, "proc", pid).mkdir(parents=True, exist_ok=True)
                Path(dest, "proc", pid, "stat").write_text(text)


def capture(dest: Path, seconds: float = 3.0) -> None:
    """tests/data/disturbance/: two snapshots `seconds` apart, quiet and under a burst (its
    own PID namespace: the unseen tenant); meta.json says which PID was virtbench's."""
    for name, burst in (
        ("quiet", None),
        ("burst", Burst(seed=7, on="9:9", off="0:0", kinds="cpu", workers=1, pidns=True)),
    ):
        with burst if burst is not None else contextlib.nullcontext():
            time.sleep(0.5 if burst is not None else 0)
            t0 = time.monotonic()
            snapshot(dest / name / "0")
            time.sleep(seconds)
            snapshot(dest / name / "1")
            meta = {"own_pid": os.getpid(), "seconds": time.monotonic() - t0}
            (dest / name / "meta.json").write_text(json.dumps(meta) + "\n")
    print(f"captured /proc snapshots into {dest}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("campaign", nargs="?", default=None)
    ap.add_argument("--seeds", type=int, default=1, help="burst runs, seeds 1..N")
    ap.add_argument("--pidns", action="store_true", help="the bursts in their own PID namespace")
    ap.add_argument("--no-quiet", action="store_true", help="skip the quiet run")
    ap.add_argument("--capture", type=Path, help="first capture /proc snapshots here")
    args = ap.parse_args()
    if args.capture:
        capture(args.capture)
    with tempfile.TemporaryDirectory(prefix="vb-dq-") as tmp:
        if not args.no_quiet:
            quiet = Path(tmp, "quiet")
            out = run_campaign(args.campaign, quiet)
            print(f"quiet run: exit {out.returncode}, {out.wall_s:.0f} s")
            show("quiet", readings(quiet))
        for seed in range(1, args.seeds + 1):
            burst = Path(tmp, f"burst-{seed}")
            with Burst(seed=seed, pidns=args.pidns):
                out = run_campaign(args.campaign, burst)
            print(f"burst run seed {seed}: exit {out.returncode}, {out.wall_s:.0f} s")
            show(f"bursts, seed {seed}{' (PID namespace)' if args.pidns else ''}", readings(burst))


if __name__ == "__main__":
    main()
