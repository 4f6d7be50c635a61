"""Idle neighbours lend a busy target no CPU weight (issue 38): real crun containers in one
shared budget, solo and beside three idle ones.

CFS hands a group's weight to its runnable children, so when a shared budget weighed one
default weight per environment inside it, three sleeping neighbours' weights went to the lone
busy target: its budget weighed 4096 against the host's tasks (its own wrk, softirq work)
where its solo's weighed 1024, and a 70 kB target served 10 % less at the same CPU
(docs/colocation.md). Now the budget weighs its busy environments only, and every sample says
what it weighed. About 30 s.
"""

import os
from pathlib import Path

import pytest

from virtbench import cgroups

from .campaign_run import run_rows
from .owned import Owned

pytestmark = [
    pytest.mark.integration,
    pytest.mark.skipif(os.geteuid() != 0, reason="needs root (containers, cgroups)"),
]

CAMPAIGN = """
[campaign]
name = "idle-weight-it"
repetitions = 1
warmup = 0
cell_timeout = 180
scenarios = ["solo", "idle-neighbours:3"]

[[platforms]]
name = "container"
type = "container"
network = "bridge"
cpu_quota_us = 50000

[suites.web]
test_cases = ["wrk-max"]
file_sizes = [1]
duration = 3
"""


def test_idle_neighbours_leave_the_targets_budget_its_solo_weight(tmp_path: Path, monkeypatch):
    owned = Owned(monkeypatch)
    rows = run_rows(tmp_path, CAMPAIGN)
    one = "cpu.shares 1024" if cgroups.version() == "v1" else "cpu.weight 100"
    target = {
        r["scenario"]: r["labels"]
        for r in rows
        if r["role"] == "target" and r["metric"] == "requests_per_s"
    }
    assert set(target) == {"solo", "idle-neighbours:3"}
    assert len(target["idle-neighbours:3"]["cpu_budget_members"]) == 4  # all in one budget
    # alone and beside three sleeping neighbours the budget weighed one environment's weight
    assert target["solo"]["cpu_budget_weight"] == one
    assert target["idle-neighbours:3"]["cpu_budget_weight"] == one
    idle_cpu = [
        r["value"]
        for r in rows
        if r["scenario"] == "idle-neighbours:3"
        and r["role"].startswith("neighbour-")
        and r["metric"] == "cpu_util"
    ]
    assert len(idle_cpu) == 3 and max(idle_cpu) < 1.0  # they were idle
    assert owned.leftovers() == []
