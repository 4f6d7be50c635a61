#!/usr/bin/env python3
"""CV of the noisiest test cases of the default campaign, old settings vs new (issue 13, item 2).

    flock /tmp/vb-measure.lock python bench/stability.py --rounds 5

Each round runs two campaigns through virtbench's own runner (the code path of `virtbench
run`: platforms, pinning, sampler, store), one repetition each, alternating which goes first:
OLD, the default campaign's settings for these test cases before issue 13 (written out here,
with the old value of every key added since), and NEW, read from the shipped default campaign
(`campaigns/quick.toml`) so the bench measures what ships. Both run natively; the CPU suite
also in the default campaign's crun container (the issue measured container hpcc at 10.7%).
It prints per test case, platform and result (mbw method, fio direct mode): CV (stdev/mean of
the primary metric over the rounds, valid samples only), mean, seconds per cell, and whether
the CV is below 2%.

Measured output is in bench/README.md ("Stable measurements").
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import sys
import tempfile
import time
import tomllib
from collections import defaultdict
from pathlib import Path
from typing import Any

from _campaign import cell_seconds, cv_pct, run_here

from virtbench.campaign import loader
from virtbench.workloads import registry

TARGET_CV = 2.0  # percent
# suite -> the noisy test cases of the default campaign (issue 13)
CASES = {
    "cpu": ["stress-ng-cpu-matrixprod", "hpcc-linpack"],
    "memory": ["mbw"],
    "disk": ["fio-seq-write", "fio-rand-read"],
}
CONTAINER_SUITES = ["cpu"]
# quick.toml before issue 13 for these test cases, plus the old value of every key added since
OLD_CAMPAIGN: dict[str, Any] = {}
OLD_SUITES: dict[str, dict[str, Any]] = {
    "cpu": {"duration": 2, "n": 1000},
    "memory": {"array_mib": 64, "iterations": 5},
    "disk": {
        "size_mib": 64,
        "runtime": 1,
        "direct": [1, 0],
        "ramp_time": 0,
        "end_fsync": 0,
        "pre_read": 0,
    },
}
# what NEW changed, per test case (the table's "what changed" column)
CHANGED = {
    "stress-ng-cpu-matrixprod": "duration 2 -> 5 s",
    "hpcc-linpack": "N 1000 -> 2000",
    "mbw": "arrays 64 -> 256 MiB, 5 -> 30 copies",
    "fio-seq-write": "512 MiB, 2 s + 1 s ramp; buffered: 1 pass + fsync",
    "fio-rand-read": "512 MiB, 2 s + 1 s ramp; buffered: pre_read",
}
# a second figure shown beside the primary: stress-ng's rate per CPU second leaves out the
# time the worker waited for a CPU, so its CV is the workload's own and the difference is
# preemption by whatever else ran on the host
SECONDARY = {"stress-ng-cpu-matrixprod": "bogo_ops_per_cpu_s"}
# result dimensions within one cell, per test case
DIMS = {"mbw": ("method",), "fio-seq-write": ("direct",), "fio-rand-read": ("direct",)}


def toml_value(v: Any) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, list):
        return "[" + ", ".join(toml_value(x) for x in v) + "]"
    if isinstance(v, str):
        return json.dumps(v)
    return str(v)


def campaign_text(name: str, settings: dict[str, Any], suites: dict[str, dict[str, Any]]) -> str:
    registry.load_all()
    lines = ["[campaign]", f'name = "{name}"', "repetitions = 1", "warmup = 0"]
    lines += ["cell_timeout = 600", 'scenarios = ["solo"]']
    lines += [f"{k} = {toml_value(v)}" for k, v in settings.items()]
    lines += ["[[platforms]]", 'name = "native"', 'type = "native"']
    in_container = [x for x in CONTAINER_SUITES if x in CASES]
    if in_container:
        lines += ["[[platforms]]", 'name = "container"', 'type = "container"']
        lines += [f"suites = {toml_value(in_container)}"]
    for suite, body in suites.items():
        if suite not in CASES:
            continue
        known = {k for n in CASES[suite] for k in registry.WORKLOADS[n].params}
        lines += [f"[suites.{suite}]", f"test_cases = {toml_value(CASES[suite])}"]
        lines += [f"{k} = {toml_value(v)}" for k, v in body.items() if k in known]
    return "\n".join(lines) + "\n"


def new_settings() -> tuple[dict[str, Any], dict[str, dict[str, Any]]]:
    """The shipped default campaign's settings for CASES: campaign keys that change what a
    cell measures (pinning, warm-up) and each suite's keys these test cases take."""
    data = tomllib.loads(loader.builtin_path("quick").read_text())
    settings = {k: v for k, v in data["campaign"].items() if k in ("target_cpus",)}
    registry.load_all()
    suites: dict[str, dict[str, Any]] = {}
    for suite, names in CASES.items():
        if not names:
            continue
        known = {k for n in names for k in registry.WORKLOADS[n].params}
        body = data["suites"].get(suite, {})
        suites[suite] = {k: v for k, v in body.items() if k in known}
    return settings, suites


def one_run(results: Path, text: str, name: str) -> list[dict[str, Any]]:
    """The run's primary-metric target samples, each with its cell's seconds."""
    runner, run_id, _ = run_here(text, results, f"{name}.toml")
    cells = runner.store.cells(run_id)
    secs = {c.cell_id: cell_seconds(c) for c in cells if c.status == "ok"}
    for c in cells:
        if c.status != "ok":
            print(f"  {name}: cell {c.platform} {c.test_case} {c.status}: {c.error}", flush=True)
    stored = runner.store.sample_rows(run_id)
    runner.store.close()
    rows = []
    for r in stored:
        w = registry.WORKLOADS[r["test_case"]]
        wanted = (w.primary().name, SECONDARY.get(r["test_case"]))
        if r["role"] != "target" or r["metric"] not in wanted:
            continue
        labels = json.loads(r["labels_json"] or "{}")
        dims = tuple((d, labels.get(d)) for d in DIMS.get(r["test_case"], ()))
        if r["metric"] != w.primary().name:
            dims += (("metric", r["metric"]),)
        rows.append({**r, "dims": dims, "secs": secs.get(r["cell_id"])})
    return rows


def host_busy_s() -> float:
    """CPU seconds the host's CPUs spent busy since boot (/proc/stat: all but idle, iowait)."""
    fields = [int(x) for x in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]]
    return (sum(fields) - fields[3] - fields[4]) / os.sysconf("SC_CLK_TCK")


def own_cpu_s() -> float:
    """CPU seconds of this process and its reaped descendants (the runner, the workloads,
    crun and the containers' processes)."""
    return sum(
        r.ru_utime + r.ru_stime
        for r in (
            resource.getrusage(resource.RUSAGE_SELF),
            resource.getrusage(resource.RUSAGE_CHILDREN),
        )
    )


def table(results: dict[str, list[dict[str, Any]]]) -> list[str]:
    by: dict[tuple, dict[str, list[dict[str, Any]]]] = defaultdict(lambda: defaultdict(list))
    for which, rows in results.items():
        for r in rows:
            by[r["test_case"], r["platform"], r["dims"]][which].append(r)
    head = (
        "| test case | platform | result | what changed | CV before | CV after | mean before |"
        " mean after | s/cell before | s/cell after | CV < 2% |"
    )
    out = [head, "|" + "---|" * 11]
    order = [n for names in CASES.values() for n in names]
    for key in sorted(by, key=lambda k: (order.index(k[0]), k[1], str(k[2]))):
        tc, platform, dims = key
        cols = []
        for which in ("old", "new"):
            rows = by[key][which]
            vals = [r["value"] for r in rows if r["valid"]]
            secs = {r["cell_id"]: r["secs"] for r in rows if r["secs"] is not None}
            bad = len(rows) - len(vals)
            cols.append(
                (
                    cv_pct(vals) if vals else float("nan"),
                    statistics.mean(vals) if vals else float("nan"),
                    statistics.mean(secs.values()) if secs else float("nan"),
                    bad,
                    rows[0]["unit"] if rows else "",
                )
            )
        (cv0, m0, s0, bad0, unit), (cv1, m1, s1, bad1, _) = cols
        note = "".join(f" ({b} invalid {w})" for b, w in ((bad0, "before"), (bad1, "after")) if b)
        result = ", ".join(f"{k}={v}" for k, v in dims) or "-"
        out.append(
            f"| {tc} | {platform} | {result} | {CHANGED.get(tc, '')} | {cv0:.1f}% | {cv1:.1f}% |"
            f" {m0:,.0f} {unit} | {m1:,.0f} {unit} | {s0:.1f} | {s1:.1f} |"
            f" {'yes' if cv1 < TARGET_CV else 'no'}{note} |"
        )
    return out


def values(results: dict[str, list[dict[str, Any]]]) -> list[str]:
    """Each group's values in round order, so an outlier can be matched to its round."""
    by: dict[tuple, dict[str, list[float]]] = defaultdict(lambda: defaultdict(list))
    for which, rows in results.items():
        for r in rows:
            by[r["test_case"], r["platform"], r["dims"]][which].append(r["value"])
    out = []
    for (tc, platform, dims), v in by.items():
        result = ", ".join(f"{k}={x}" for k, x in dims) or "-"
        fmt = " ".join
        out.append(
            f"  {tc} {platform} {result}: {fmt(f'{x:.4g}' for x in v['old'])}"
            f" | {fmt(f'{x:.4g}' for x in v['new'])}"
        )
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument(
        "--budget-s", type=float, default=900, help="start no round that would end after this"
    )
    ap.add_argument("--only", nargs="+", metavar="TEST_CASE", help="measure only these")
    ap.add_argument("--results-dir", type=Path, help="keep the store here (default: temporary)")
    args = ap.parse_args()
    if args.only:
        for suite in list(CASES):
            CASES[suite] = [n for n in CASES[suite] if n in args.only]
            if not CASES[suite]:
                del CASES[suite]
    settings, suites = new_settings()
    texts = {
        "old": campaign_text("stability-old", OLD_CAMPAIGN, OLD_SUITES),
        "new": campaign_text("stability-new", settings, suites),
    }
    print("NEW settings (from quick.toml):", json.dumps({"campaign": settings, **suites}))
    results: dict[str, list[dict[str, Any]]] = {"old": [], "new": []}
    t0 = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="vb-stability-") as tmp:
        store_dir = args.results_dir or Path(tmp)
        done = 0
        for i in range(args.rounds):
            spent = time.monotonic() - t0
            if i and spent + spent / i > args.budget_s:
                print(f"stopping after {i} rounds: another would pass --budget-s")
                break
            # alternate which goes first so drift in host load hits both alike
            for which in ("old", "new") if i % 2 == 0 else ("new", "old"):
                t, busy, own = time.monotonic(), host_busy_s(), own_cpu_s()
                results[which] += one_run(store_dir, texts[which], f"stability-{which}")
                wall = time.monotonic() - t
                # what else ran on the host meanwhile (kernel threads working for the
                # workload too: writeback, I/O completion)
                others = (host_busy_s() - busy) - (own_cpu_s() - own)
                print(
                    f"round {i + 1} {which}: {wall:.0f} s, CPU outside the bench's processes"
                    f" {others:.1f} s ({100 * others / wall:.0f}% of one CPU)",
                    flush=True,
                )
            done += 1
    print(f"{done} rounds in {time.monotonic() - t0:.0f} s")
    print("\n".join(table(results)))
    print("values per round (old | new):")
    print("\n".join(values(results)))
    sys.stdout.flush()


if __name__ == "__main__":
    main()
