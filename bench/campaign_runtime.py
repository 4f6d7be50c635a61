#!/usr/bin/env python3
"""Measured run time of a campaign: its wall time and the time of each cell (issue 12).

    flock /tmp/vb-measure.lock python bench/campaign_runtime.py colocation-web-quick

Runs `virtbench run CAMPAIGN` (a built-in name or a file) into a results directory (a
temporary one unless --results-dir), then reads the run's cells from the store and prints
the wall time, each cell's time (started_at..finished_at, as the runner stored them), and the
mean time per (platform, scenario) with its spread, which is what a campaign header quotes
when it estimates a longer variant from measured cells. Run it under the measurement lock.

A campaign longer than one sitting is measured in pieces (the runner's own interrupt and
resume, as a user would do it):

    flock /tmp/vb-measure.lock python bench/campaign_runtime.py consolidation \
        --results-dir /work/runs/consolidation-full --stop-after 7200
    # later, as often as needed:
    flock /tmp/vb-measure.lock python bench/campaign_runtime.py consolidation \
        --results-dir /work/runs/consolidation-full --stop-after 7200 --resume

Each piece's wall time goes to RESULTS/runtime-pieces.jsonl; when the run has finished, the
campaign's run time is their sum (it includes each piece's start-up and the cell that an
interrupt cut short and the next piece ran again, which is printed too).

Where a results directory cannot outlive a sitting, a piece can instead be a copy of the
campaign whose other platforms have `suites = []` (hosts and neighbours only; written by
bench/one_platform.py): it runs one
platform's cells beside the same neighbours, and measures again the neighbours' solo peaks
its cells need (a little more than those cells cost inside the whole run).
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
from collections import defaultdict
from pathlib import Path

from _campaign import CellTime, CliRun, cell_times, run_campaign

import virtbench
from virtbench.runner.states import DONE
from virtbench.store.db import DB_NAME, Store

PIECES = "runtime-pieces.jsonl"


def summary(rows: list[CellTime]) -> list[str]:
    """One line per (platform, scenario): cells, mean ± stdev seconds. Finished cells only:
    an interrupted or lost cell's time is the part before the cut (its piece says so)."""
    by: dict[tuple[str, str], list[float]] = defaultdict(list)
    for c in rows:
        if c.seconds is not None and c.status in DONE:
            by[c.platform, c.scenario].append(c.seconds)
    out = []
    for (platform, scenario), secs in by.items():
        sd = statistics.stdev(secs) if len(secs) > 1 else 0.0
        out.append(
            f"  {platform:<14} {scenario:<26} {len(secs)} cell(s) "
            f"{statistics.mean(secs):7.1f} s ± {sd:.1f}"
        )
    return out


def _latest_run(results: Path) -> tuple[str, str] | None:
    """(run id, status) of the latest run stored in `results`, None without one."""
    if not (results / DB_NAME).exists():
        return None
    store = Store.open_existing(results)
    try:
        if not store.runs():
            return None
        run = store.run(store.resolve_run("latest"))
    finally:
        store.close()
    return run["run_id"], run["status"]


def _code_version() -> str:
    """The commit of the virtbench this process imports, which is what the piece's run
    imports (same interpreter and environment), not this script's tree; "-dirty" when its
    tracked files differ from that commit."""
    where = Path(virtbench.__file__).resolve().parent

    def git(*args: str) -> str:
        out = subprocess.run(["git", *args], cwd=where, capture_output=True, text=True)
        return out.stdout.strip() if out.returncode == 0 else ""

    head = git("rev-parse", "--short", "HEAD")
    if not head:
        return "unknown"
    return head + ("-dirty" if git("status", "--porcelain", "--untracked-files=no") else "")


def _record_piece(
    results: Path, run_id: str, out: CliRun, done: tuple[int, int], code: str
) -> list[dict]:
    """Append this piece to RESULTS/runtime-pieces.jsonl; all pieces of `run_id` so far."""
    path = results / PIECES
    piece = {
        "run_id": run_id,
        "started": out.started,
        "ended": out.ended,
        "wall_s": round(out.wall_s, 1),
        "exit": out.returncode,
        "cells_done_before": done[0],
        "cells_done_after": done[1],
        "code": code,  # as the piece started: what its run imported
    }
    with path.open("a") as f:
        f.write(json.dumps(piece) + "\n")
    lines = path.read_text().splitlines()
    return [p for p in map(json.loads, lines) if p["run_id"] == run_id]


def _finished(rows: list[CellTime]) -> int:
    return sum(c.status in DONE for c in rows)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("campaign", help="a built-in campaign name or a .toml file")
    ap.add_argument("--results-dir", type=Path, help="keep the results here")
    ap.add_argument(
        "--stop-after", type=float, help="interrupt the run after this many seconds (a piece)"
    )
    ap.add_argument(
        "--resume", action="store_true", help="continue the latest run in --results-dir"
    )
    args = ap.parse_args()
    if (args.resume or args.stop_after) and args.results_dir is None:
        ap.error("--resume and --stop-after need --results-dir (the pieces are kept there)")
    with tempfile.TemporaryDirectory() as tmp:
        results = args.results_dir or Path(tmp)
        resume = None
        if args.resume:
            latest = _latest_run(results)
            if latest is None:
                ap.error(f"--resume: no run stored in {results}")
            if latest[1] == "finished":
                ap.error(f"--resume: run {latest[0]} in {results} has finished already")
            resume = latest[0]
        before = _finished(cell_times(results)) if resume else 0
        code = _code_version()
        out = run_campaign(args.campaign, results, resume=resume, stop_after=args.stop_after)
        rows = cell_times(results)
        latest = _latest_run(results)
    if out.returncode not in (0, 130):
        out.print_tail(2000)
    failed = [c for c in rows if c.status in DONE and c.status != "ok"]
    total = sum(c.seconds or 0.0 for c in rows)
    wall = out.wall_s
    done = _finished(rows)
    print(
        f"campaign {args.campaign}: {wall:.0f} s wall ({wall / 60:.1f} min), {done} of "
        f"{len(rows)} cells finished ({total:.0f} s in cells), {len(failed)} not ok; "
        f"exit {out.returncode}"
    )
    if args.results_dir is not None and latest is not None:
        pieces = _record_piece(results, latest[0], out, (before, done), code)
        if len(pieces) > 1 or out.returncode == 130:
            summed = sum(p["wall_s"] for p in pieces)
            state = "finished" if latest[1] == "finished" else f"not finished ({latest[1]})"
            print(
                f"run {latest[0]}: {len(pieces)} piece(s), {summed:.0f} s "
                f"({summed / 3600:.2f} h) wall in all, {state}; pieces: "
                + ", ".join(
                    f"{p['wall_s']:.0f} s ({p['cells_done_before']}->{p['cells_done_after']} "
                    f"cells, code {p['code']})"
                    for p in pieces
                )
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
