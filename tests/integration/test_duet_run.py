"""Issue 36 item 4 end to end: a native vs crun duet, one quick CPU case, 2 rounds. Both cells
of a round ran at the same time, on disjoint CPU sets swapped between rounds, as the stored
labels and windows say; and nothing of either platform is left behind."""

from __future__ import annotations

import os

import pytest

from .campaign_run import run_rows

pytestmark = pytest.mark.integration

DUET = """
[campaign]
name = "duet-it"
repetitions = 2
order = "duet"
warmup = 0
cell_timeout = 60

[[platforms]]
name = "native"
type = "native"

[[platforms]]
name = "crun"
type = "container"

[suites.cpu]
test_cases = ["sysbench-cpu-1t"]
duration = 1
"""


@pytest.mark.skipif(len(os.sched_getaffinity(0)) < 2, reason="duet needs two CPUs")
def test_both_cells_of_a_round_overlap_on_disjoint_cpus(tmp_path):
    rows = [r for r in run_rows(tmp_path, DUET) if r["metric"] == "events_per_s"]
    assert len(rows) == 4 and all(r["valid"] for r in rows)
    rounds: dict[int, dict[str, dict]] = {}
    for r in rows:
        rounds.setdefault(r["repetition"], {})[r["platform"]] = r["labels"]["duet"]
    assert set(rounds) == {1, 2}
    for pair in rounds.values():
        a, b = pair["native"], pair["crun"]
        assert (a["partner"], b["partner"]) == ("crun", "native")
        assert not set(a["cpus"].split(",")) & set(b["cpus"].split(","))  # disjoint sets
        # the two windows overlapped for (nearly) all of each cell's time
        both = min(a["end"], b["end"]) - max(a["start"], b["start"])
        assert both > 0.9 * (a["end"] - a["start"]) and both > 0.9 * (b["end"] - b["start"])
        assert a["overlap"] > 0.9 and b["overlap"] > 0.9
    assert rounds[1]["native"]["cpus"] == rounds[2]["crun"]["cpus"]  # swapped
    assert rounds[1]["crun"]["cpus"] == rounds[2]["native"]["cpus"]
