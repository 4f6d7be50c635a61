#!/usr/bin/env python3
"""Wall time of the default campaign on this host (target: under 3 minutes on 2 cores).

Runs `virtbench run` (the built-in default campaign) into a temporary results directory and
prints its wall time and the ratio to the 180 s budget. Issue 2's target is native's part of
the campaign; the campaign runs native and a container, and since issue 13 made its runs long
enough to be steady (bench/stability.py) the whole campaign takes about 222 s here (26 Nov
2026), its native half about 111 s.
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

from _campaign import run_campaign

BUDGET_S = 180.0


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        out = run_campaign(None, Path(tmp))
    wall = out.wall_s
    if out.returncode != 0:
        out.print_tail(2000)
        sys.exit(out.returncode)
    failed = out.stdout.count("✗")
    print(
        f"default campaign: {wall:.1f} s wall, {failed} failed cells;"
        f" ratio to the {BUDGET_S:.0f} s budget = {wall / BUDGET_S:.2f} (target < 1)"
    )


if __name__ == "__main__":
    main()
