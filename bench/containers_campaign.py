#!/usr/bin/env python3
"""The shipped `containers` campaign: its wall time, and every primary ratio's verdict
(faster / slower / same / undecided, docs/verdicts.md).

Run under the machine lock:  flock /tmp/vb-measure.lock python bench/containers_campaign.py
Options: --keep DIR keeps the results directory (store + HTML report) for a look in Chromium.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from collections import Counter
from pathlib import Path

from _campaign import run_campaign

from virtbench.analysis.ratios import VERDICTS
from virtbench.report.data import ReportData
from virtbench.store.db import Store


def run_containers(results: Path) -> tuple[float, int]:
    out = run_campaign("containers", results, report=True)  # the report: for --keep
    if out.returncode not in (0, 1):  # 1: some cells failed; their figures still count
        out.print_tail(3000)
        sys.exit(out.returncode)
    return out.wall_s, out.returncode


def ratio_table(results: Path) -> Counter[str]:
    store = Store.open_existing(results)
    run_id = store.resolve_run("latest")
    data = ReportData.load(store, run_id)
    cells = Counter(c.status for c in data.cells)
    print(f"run {run_id}: cells {dict(cells)}")
    head = f"{'platform':<14} {'test case':<22} {'metric':<16} {'dims':<34}"
    print(f"{head} ratio  95% CI          verdict")
    decisions: Counter[str] = Counter()
    for key, c in sorted(data.comparisons.items(), key=lambda kv: kv[0].sort_key()):
        if key.platform == data.baseline:
            continue
        group = next(g for g in data.groups if g.key == key)
        if not group.primary:
            continue
        ci = "-" if c.ratio_low is None else f"[{c.ratio_low:.3f}-{c.ratio_high:.3f}]"
        decisions[c.decision] += 1
        print(
            f"{key.platform:<14} {key.test_case:<22} {key.metric:<16} {key.dims_text:<34}"
            f" {c.ratio:5.3f} {ci:<15} {c.decision}"
        )
    for g in data.geomeans:
        if g.value is None:
            continue
        ci = "-" if g.low is None else f"[{g.low:.3f}-{g.high:.3f}]"
        where = "beside all" if g.beside else g.suite
        print(f"geomean {g.platform:<14} {where:<12} x{g.value:.3f} {ci} {g.decision}")
    store.close()
    return decisions


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--keep", type=Path, help="keep the results directory here")
    ap.add_argument("--table", type=Path, help="only print the ratio table of a kept directory")
    args = ap.parse_args()
    if args.table:
        ratio_table(args.table)
        return
    with tempfile.TemporaryDirectory() as tmp:
        results = args.keep or Path(tmp)
        results.mkdir(parents=True, exist_ok=True)
        wall, rc = run_containers(results)
        decisions = ratio_table(results)
    total = sum(decisions.values())
    print(
        f"containers campaign: {wall:.0f} s wall ({wall / 60:.1f} min), exit {rc};"
        f" primary ratios ({total}): " + ", ".join(f"{decisions[v]} {v}" for v in VERDICTS)
    )


if __name__ == "__main__":
    main()
