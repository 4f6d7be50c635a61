#!/usr/bin/env python3
"""Measured wall time of the shipped `rt-latency` campaign per platform (issue 11: native and
container under 15 minutes each on 2 cores).

Writes a copy of the campaign holding one platform at a time (native, container; `--vm` adds
the VM platform), runs it with `virtbench run` into a temporary results directory and prints
each platform's wall time against the 900 s budget. Run it under the measurement lock.
"""

from __future__ import annotations

import argparse
import re
import sys
import tempfile
import tomllib
from importlib import resources
from pathlib import Path

from _campaign import run_campaign

BUDGET_S = 900.0


def one_platform(text: str, name: str) -> str:
    """The campaign text with only the [[platforms]] block named `name`."""
    blocks = re.split(r"(?m)^(?=\[\[platforms\]\]|\[suites)", text)
    keep = [b for b in blocks if not b.startswith("[[platforms]]") or f'name = "{name}"' in b]
    return re.sub(r'(?m)^baseline = ".*"$', f'baseline = "{name}"', "".join(keep))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--vm", action="store_true", help="measure the VM platform too")
    ap.add_argument(
        "--results-dir",
        type=Path,
        help="keep the runs' store (virtbench.db) here to read their figures; default: a "
        "temporary directory, removed afterwards",
    )
    args = ap.parse_args()
    text = (resources.files("virtbench") / "campaigns" / "rt-latency.toml").read_text()
    platforms = [p["name"] for p in tomllib.loads(text)["platforms"]]
    wanted = [p for p in platforms if p != "vm" or args.vm]
    failed_any = False
    with tempfile.TemporaryDirectory() as scratch:
        tmp = Path(args.results_dir or scratch)
        tmp.mkdir(parents=True, exist_ok=True)
        for name in wanted:
            campaign = tmp / f"rt-latency-{name}.toml"
            campaign.write_text(one_platform(text, name))
            out = run_campaign(campaign, tmp)
            wall = out.wall_s
            cells = out.stdout.count("✓") + out.stdout.count("✗")
            failed = out.stdout.count("✗")
            failed_any |= out.returncode != 0 or failed > 0
            print(
                f"rt-latency {name}: {wall:.1f} s wall, {cells} cells, {failed} failed;"
                f" ratio to the {BUDGET_S:.0f} s budget = {wall / BUDGET_S:.2f} (target < 1)"
            )
            if out.returncode != 0:
                out.print_tail(1500)
    sys.exit(1 if failed_any else 0)


if __name__ == "__main__":
    main()
