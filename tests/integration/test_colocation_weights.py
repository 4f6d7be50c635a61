"""Weights shift web throughput between two real crun containers sharing one CPU (seed 003 §6).

Floating over both CPUs of this host, two containers' weights did nothing (1:1:1 / 1:4:1 /
1:1:4 gave 4,216 / 4,733 / 4,944 req/s). A weights cell pins both nginx servers to one shared
CPU and wrk to the other, keeps the campaign's half-CPU budget as the pair's one budget (the
weights divide it), gives each closed-loop client a backlog deep enough for the budget's
bursts, and labels all of it on every sample. Both directions are run (1024:256 and
256:1024), so a target/neighbour asymmetry cannot pass for a weight effect. About 70 s.

1 KB is the hard case: with wrk's 32 connections both servers drained their backlog early in
each 50 ms burst and split the CPU evenly (7,695 vs 7,685 req/s at 4:1); with the backlog
(1,000 connections) 12,296 vs 3,847 and 3,764 vs 11,423 (docs/colocation.md).
"""

import os
from pathlib import Path

import pytest

from .campaign_run import run_rows
from .owned import Owned

pytestmark = [
    pytest.mark.integration,
    pytest.mark.skipif(os.geteuid() != 0, reason="needs root (containers, cgroups)"),
]

CAMPAIGN = """
[campaign]
name = "weights-it"
repetitions = 1
warmup = 0
cell_timeout = 180
scenarios = ["weights:1:1:0.25", "weights:1:0.25:1"]

[[platforms]]
name = "container"
type = "container"
network = "bridge"
cpu_quota_us = 50000

[suites.web]
test_cases = ["wrk-max"]
file_sizes = [1, 50]
duration = 6
"""

# 1024 vs 256 shares is 4:1 of the shared CPU; softirq work (not charged to either group)
# blurs that: measured 3.0-3.5x (1 KB) and 3.2-4.0x (50-70 KB), ask for 1.3x
MARGIN = 1.3


def test_heavier_container_serves_more_on_a_shared_cpu(tmp_path: Path, monkeypatch):
    owned = Owned(monkeypatch)
    rows = run_rows(tmp_path, CAMPAIGN)
    rps = {
        (r["scenario"], r["labels"]["file_size_kb"], r["role"]): r
        for r in rows
        if r["metric"] == "requests_per_s" and r["role"] in ("target", "neighbour-1")
    }
    assert {k[1] for k in rps} == {1, 50}
    for row in rps.values():
        labels = row["labels"]
        assert labels["placement"] == "shared-cpu"
        assert labels["env_cpus"] and labels["env_cpus"][0] not in labels["client_cpus"]
        # the campaign's half CPU is the pair's one shared budget (docs/colocation.md): the
        # weights divide it, as an identical pair divides it equally
        assert (labels["cpu_budget"], labels["cpu_budget_quota_us"]) == ("shared", 50000)
        assert len(labels["cpu_budget_members"]) == 2
        assert labels["connections"] == 1000, labels.get("backlog_connections")
        assert labels["backlog_connections"].startswith("32 -> 1000")
        assert row["valid"], row.get("invalid_reason")
    for size in (1, 50):
        heavy_target = rps["weights:1:1:0.25", size, "target"]["value"]
        light_neighbour = rps["weights:1:1:0.25", size, "neighbour-1"]["value"]
        light_target = rps["weights:1:0.25:1", size, "target"]["value"]
        heavy_neighbour = rps["weights:1:0.25:1", size, "neighbour-1"]["value"]
        figures = (
            f"{size} KB: 1024:256 -> {heavy_target:.0f} vs {light_neighbour:.0f} req/s; "
            f"256:1024 -> {light_target:.0f} vs {heavy_neighbour:.0f} req/s"
        )
        print(figures)
        assert heavy_target > MARGIN * light_neighbour, figures
        assert heavy_neighbour > MARGIN * light_target, figures
    assert owned.leftovers() == []
