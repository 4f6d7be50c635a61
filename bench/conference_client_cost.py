"""How many conference users one client CPU carries: the clients' own CPU per user, from a
stored conference run (`virtbench run conference-quick` first), so a reader can size
`max_users` against the client CPUs before the clients, not the server, become the limit.

    flock /tmp/vb-measure.lock virtbench run conference-quick --results-dir /tmp/conf
    python bench/conference_client_cost.py --results-dir /tmp/conf

Prints per platform and user count the clients' CPU (all ffmpeg, % of one CPU), the slope
per user, and the cost per viewed stream (a user's cost grows with the streams it watches, so
that is the figure that sizes another conference): the streams one client CPU carries below
the client-health limit (90 %). Reads the store only.
"""

from __future__ import annotations

import argparse
from collections import defaultdict
from pathlib import Path

from virtbench.analysis import conference as conf
from virtbench.analysis.stats import Summary, summarize
from virtbench.errors import VirtbenchError
from virtbench.report.labels import parse_labels
from virtbench.store.db import Store
from virtbench.validity import CLIENT_SATURATED


def per_stream(rows: list[dict]) -> dict[str, Summary]:
    """platform -> the clients' CPU slope over the streams viewed, one slope per cell."""
    streams = {
        (r["cell_id"], r["labels"].get("users")): r["value"]
        for r in rows
        if r["metric"] == "streams_viewed" and r["valid"]
    }
    pts: dict[tuple[str, str], list[tuple[float, float]]] = defaultdict(list)
    for r in rows:
        key = (r["cell_id"], r["labels"].get("users"))
        if r["metric"] == "client_cpu_total_pct" and r["valid"] and key in streams:
            pts[(r["platform"], r["cell_id"])].append((streams[key], r["value"]))
    slopes: dict[str, list[float]] = defaultdict(list)
    for (platform, _cell), xy in pts.items():
        if (k := conf.slope(xy)) is not None:
            slopes[platform].append(k)
    return {p: summarize(v) for p, v in slopes.items()}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--results-dir", type=Path, default=Path("results"))
    ap.add_argument("--run", default=None, help="run id (default: the newest)")
    args = ap.parse_args()
    store = Store(str(args.results_dir / "virtbench.db"))
    run_id = store.resolve_run(args.run or "latest")
    rows = store.sample_rows(run_id)
    parse_labels(rows)
    rows = conf.rows_of(rows)
    curve = conf.curve(rows, "client_cpu_total_pct", role="client")
    cost = conf.per_user(rows, "client_cpu_total_pct", role="client")
    streams = per_stream(rows)
    print(f"run {run_id}: the clients' own CPU (all ffmpeg users, % of one CPU)")
    for platform, by_users in curve.items():
        pts = ", ".join(f"{u}: {sum(v) / len(v):.1f}%" for u, v in sorted(by_users.items()))
        print(f"  {platform}: {pts}")
        s = cost.get(platform)
        if s is None or not s.n or not s.mean:
            continue
        half = f" ± {s.ci_half:.2f}" if s.ci_half else ""
        print(f"    {s.mean:.2f}{half} % of a CPU per user in this conference (n={s.n})")
        st = streams.get(platform)
        if st is not None and st.n and st.mean:
            half = f" ± {st.ci_half:.3f}" if st.ci_half else ""
            carry = 100 * CLIENT_SATURATED / st.mean
            print(
                f"    {st.mean:.3f}{half} % per viewed stream (n={st.n}): one client CPU"
                f" carries about {carry:.0f} viewed streams before {CLIENT_SATURATED:.0%}"
            )


if __name__ == "__main__":
    try:
        main()
    except VirtbenchError as exc:
        raise SystemExit(f"error: {exc}") from None
