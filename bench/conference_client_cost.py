"""How many conference users one client CPU carries: the clients' own CPU per user, from a
stored conference run (`virtbench run conference-quick` first), so a reader can size
`max_users` against the client CPUs before the clients, not the server, become the limit.

    flock /tmp/vb-measure.lock virtbench run conference-quick --results-dir /tmp/conf
    python bench/conference_client_cost.py --results-dir /tmp/conf

Prints per platform and user count the clients' CPU (all ffmpeg, % of one CPU), the slope
per user, and the users one client CPU carries below the client-health limit (90 %).
Reads the store only.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from virtbench.analysis import conference as conf
from virtbench.drivers.validity import CLIENT_SATURATED
from virtbench.errors import VirtbenchError
from virtbench.report.labels import parse_labels
from virtbench.store.db import Store


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
    print(f"run {run_id}: the clients' own CPU (all ffmpeg users, % of one CPU)")
    for platform, by_users in curve.items():
        pts = ", ".join(f"{u}: {sum(v) / len(v):.1f}%" for u, v in sorted(by_users.items()))
        print(f"  {platform}: {pts}")
        s = cost.get(platform)
        if s is None or not s.n or not s.mean:
            continue
        half = f" ± {s.ci_half:.2f}" if s.ci_half else ""
        carry = 100 * CLIENT_SATURATED / s.mean
        print(
            f"    {s.mean:.2f}{half} % of a CPU per user (n={s.n}): one client CPU carries"
            f" about {carry:.0f} users of this conference before {CLIENT_SATURATED:.0%}"
        )


if __name__ == "__main__":
    try:
        main()
    except VirtbenchError as exc:
        raise SystemExit(f"error: {exc}") from None
