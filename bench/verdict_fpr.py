#!/usr/bin/env python3
"""False-positive rate of virtbench's verdicts where the truth is known, under injected bursts.

One campaign per burst seed (and one quiet control): native, its A/A copy (`aa = true`:
native measured twice in the same rounds) and a crun container, on CPU and memory test
cases, interleaved, 5 rounds. The truth is "no difference" for every one of them: native
against itself, and a crun container on CPU and memory (no cost there; a quiet run gives
memory 1.008 [0.998-1.018], issue 36). So any `faster` or `slower` is a false call.

Each run is judged three ways, side by side on the same samples:
  old       the rule before issue 36 (a copy kept here): log-Welch interval per test case,
            decided when it excludes 1; suite score with independent variances;
  paired    analysis/ratios.py on every sample, disturbed cells included (disturbed = keep);
  virtbench what a user gets: paired, Holm, A/A floors, disturbed cells left out.

The bursts come from bench/_burst.py in a PID namespace of their own (a tenant virtbench
cannot see): random 0.5-3 s bursts of CPU spinning or 64 MiB memcpy, 0.5-3 s apart.

Run under the machine lock (about 5 minutes a seed):
    flock /tmp/vb-measure.lock python bench/verdict_fpr.py --seeds 1 2 3 --quiet-control
Options: --keep DIR keeps each run's results directory (DIR/seed-N) for the report.
"""

from __future__ import annotations

import argparse
import functools
import json
import math
import sys
import tempfile
from collections import Counter
from collections.abc import Iterable
from pathlib import Path

from _burst import Burst
from _campaign import run_campaign

from virtbench.analysis import groups as groups_mod
from virtbench.analysis import ratios, scores
from virtbench.analysis.floors import floor_function
from virtbench.analysis.groups import Group
from virtbench.analysis.normalize import against_baseline
from virtbench.analysis.stats import t_critical, welch_df
from virtbench.store.db import Store

CAMPAIGN = """
[campaign]
name = "verdict-fpr"
description = "A/A and crun vs native on CPU and memory: the truth is 'same'"
repetitions = 5
warmup = 0
order = "interleaved"
baseline = "native"
aa = true
cell_timeout = 120

[[platforms]]
name = "native"
type = "native"

[[platforms]]
name = "container"
type = "container"

[suites.cpu]
test_cases = ["sysbench-cpu-1t", "sysbench-cpu-all", "stress-ng-cpu-matrixprod"]
duration = 3

[suites.memory]
test_cases = ["mbw", "sysbench-memory-sweep"]
array_mib = 256
iterations = 10
block_sizes_kib = [16, 4096, 65536]
ops = "read"
"""
WRONG = (ratios.FASTER, ratios.SLOWER)


# --- the rule before issue 36, kept to measure against ---------------------------------
def old_interval(x: Group, b: Group) -> tuple[float, float, float] | None:
    """(ratio, low, high): log-Welch delta method on the means, independent samples."""
    sx, sb = x.summary, b.summary
    if sx.n < 2 or sb.n < 2 or not sx.mean or not sb.mean or sx.stdev is None:
        return None
    r = sx.mean / sb.mean if x.higher_is_better else sb.mean / sx.mean
    vx, vb = (sx.stdev / sx.mean) ** 2 / sx.n, (sb.stdev / sb.mean) ** 2 / sb.n  # type: ignore[operator]
    df = welch_df([vx, vb], [sx.n - 1, sb.n - 1]) or 1.0
    half = t_critical(df) * math.sqrt(vx + vb)
    return r, r * math.exp(-half), r * math.exp(half), vx + vb, df  # type: ignore[return-value]


def old_decided(lo: float, hi: float) -> bool:
    return lo > 1.0 or hi < 1.0


def old_score(entries: list[tuple[float, tuple]]) -> tuple[float, float, float]:
    """Weighted geomean with Σ w² var (independent test cases), Welch df."""
    logv = sum(w * math.log(e[0]) for w, e in entries)
    terms = [w * w * e[3] for w, e in entries]
    df = welch_df(terms, [e[4] for _, e in entries]) or 1.0
    half = t_critical(df) * math.sqrt(sum(terms))
    return math.exp(logv), math.exp(logv - half), math.exp(logv + half)


# --- judging one run ---------------------------------------------------------------------
@functools.cache  # each run is judged three ways from two readings of its store
def load(results: Path, keep_disturbed: bool) -> tuple[list[Group], dict, dict]:
    store = Store.open_existing(results)
    run_id = store.resolve_run("latest")
    run = store.run(run_id)
    rows = store.sample_rows(run_id)
    if keep_disturbed:
        rows = [
            {**r, "valid": 1} if "disturbed" in (r.get("labels_json") or "") else r for r in rows
        ]
    groups = groups_mod.build(rows, store.description(run_id))
    host = json.loads(run.get("host_json") or "{}")
    flagged = {
        (r["platform"], r["cell_id"])
        for r in store.sample_rows(run_id)
        if '"disturbed"' in (r.get("labels_json") or "")
    }
    disturbed = Counter(platform for platform, _cell in flagged)
    store.close()
    return groups, host, {"run_id": run_id, "disturbed_cells": dict(disturbed)}


def primary(groups: Iterable[Group], platform: str) -> list[Group]:
    return [
        g for g in groups if g.key.platform == platform and g.primary and g.key.role == "target"
    ]


def judge_run(results: Path) -> dict[str, dict[str, Counter]]:
    """rule -> platform -> Counter of verdicts over its primary test cases and suite scores."""
    out: dict[str, dict[str, Counter]] = {}
    for rule in ("old", "paired", "virtbench"):
        groups, host, _ = load(results, keep_disturbed=rule != "virtbench")
        by_key = {g.key: g for g in groups}
        floor_of = (
            floor_function(groups, "native", host)
            if rule == "virtbench"
            else (lambda _k: (ratios.DEFAULT_FLOOR, ""))
        )
        comps = against_baseline(groups, "native", floor_of)
        geo = scores.geomeans(groups, comps, "native")
        per: dict[str, Counter] = {}
        for platform in ("native-aa", "container"):
            tally: Counter = Counter()
            entries: dict[str, list] = {}
            for g in primary(groups, platform):
                base = by_key.get(g.key.on("native"))
                if base is None:
                    continue
                if rule == "old":
                    iv = old_interval(g, base)
                    if iv is None:
                        tally["case:undecided"] += 1
                        continue
                    wrong = old_decided(iv[1], iv[2]) and abs(iv[0] - 1.0) > 0
                    tally["case:" + ("wrong" if wrong else "right")] += 1
                    entries.setdefault(g.key.suite, []).append((g.key.test_case, iv))
                    continue
                c = comps.get(g.key)
                if c is None:
                    continue
                tally["case:" + ("wrong" if c.decision in WRONG else "right")] += 1
                tally[f"case:{c.decision}"] += 1
            if rule == "old":
                for _suite, es in entries.items():
                    per_tc = Counter(tc for tc, _ in es)
                    weighted = [(1.0 / (len(per_tc) * per_tc[tc]), iv) for tc, iv in es]
                    _v, lo, hi = old_score(weighted)
                    tally["score:" + ("wrong" if old_decided(lo, hi) else "right")] += 1
            else:
                for s in geo:
                    if s.platform == platform and s.suite != "all" and s.value is not None:
                        tally["score:" + ("wrong" if s.decision in WRONG else "right")] += 1
            per[platform] = tally
        out[rule] = per
    return out


def rate(t: Counter, what: str) -> str:
    n = t[f"{what}:wrong"] + t[f"{what}:right"]
    return f"{t[f'{what}:wrong']}/{n}" if n else "-"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--seeds", type=int, nargs="+", default=[1, 2, 3])
    ap.add_argument("--quiet-control", action="store_true", help="also one run without bursts")
    ap.add_argument(
        "--workers", type=int, default=1, help="burst processes (CPU spin or memcpy) at once"
    )
    ap.add_argument("--keep", type=Path, help="keep the results directories here")
    ap.add_argument("--judge", type=Path, nargs="+", help="only judge kept results directories")
    args = ap.parse_args()
    runs: list[tuple[str, Path]] = []
    with tempfile.TemporaryDirectory() as tmp:
        root = args.keep or Path(tmp)
        if args.judge:
            runs = [(p.name, p) for p in args.judge]
        else:
            plan = [*(f"seed-{s}" for s in args.seeds), *(["quiet"] if args.quiet_control else [])]
            campaign = root / "verdict-fpr.toml"
            root.mkdir(parents=True, exist_ok=True)
            campaign.write_text(CAMPAIGN)
            for name in plan:
                results = root / name
                results.mkdir(parents=True, exist_ok=True)
                seed = None if name == "quiet" else int(name.split("-")[1])
                print(
                    f"{name}: running the campaign"
                    + (f" under bursts (seed {seed})" if seed else ""),
                    flush=True,
                )
                if seed is None:
                    out = run_campaign(campaign, results)
                else:
                    with Burst(seed=seed, workers=args.workers, pidns=True):
                        out = run_campaign(campaign, results)
                if out.returncode not in (0, 1):
                    out.print_tail(3000)
                    sys.exit(out.returncode)
                print(f"{name}: {out.wall_s:.0f} s", flush=True)
                runs.append((name, results))
        totals: dict[tuple[str, str], Counter] = {}
        row = "{:<8} {:<10} {:<10} {:>11} {:>12}  {}"
        print(
            "\n" + row.format("run", "platform", "rule", "cases wrong", "scores wrong", "disturbed")
        )
        for name, results in runs:
            judged = judge_run(results)
            _g, _h, info = load(results, keep_disturbed=False)
            for rule, per in judged.items():
                for platform, t in per.items():
                    totals.setdefault((rule, platform), Counter()).update(t)
                    dist = info["disturbed_cells"].get(platform, 0)
                    print(row.format(name, platform, rule, rate(t, "case"), rate(t, "score"), dist))
        print("\nover all runs (false calls / judged; the truth is 'same' everywhere):")
        for (rule, platform), t in sorted(totals.items()):
            n = t["case:wrong"] + t["case:right"]
            pct = 100.0 * t["case:wrong"] / n if n else float("nan")
            verdicts = (
                ", ".join(f"{t['case:' + v]} {v}" for v in ratios.VERDICTS) if rule != "old" else ""
            )
            print(
                f"  {rule:<10} {platform:<10} test cases {rate(t, 'case')} ({pct:.1f}%),"
                f" suite scores {rate(t, 'score')}" + (f"; {verdicts}" if verdicts else "")
            )


if __name__ == "__main__":
    main()
