"""Weights shift web throughput between two real crun containers sharing one CPU (seed 003 §6).

Floating over both CPUs of this host, two containers' weights did nothing (1:1:1 / 1:4:1 /
1:1:4 gave 4,216 / 4,733 / 4,944 req/s). A weights cell now pins both nginx servers to one
shared CPU and wrk to the other, lifts the campaign's half-CPU budget for the cell, and
labels the placement on every sample. Both directions are run (1024:256 and 256:1024), so a
target/neighbour asymmetry cannot pass for a weight effect. About 40 s.

50 KB files, because there the servers' CPU is what the pair contends for. Measured under the
lock (6 s wrk each): 50 KB 3,160 vs 1,657 and 1,726 vs 2,892 req/s (1.9x, 1.7x), and in this
test's own run 6,505 vs 2,399 and 2,192 vs 6,468 (2.7x, 3.0x); at 1 KB the
two load generators on the other CPU ran at 88 % of it and the shift was 1.06-1.38x (right
direction, too close to the noise for a test: docs/colocation.md).
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
cell_timeout = 120
scenarios = ["weights:1:1:0.25", "weights:1:0.25:1"]

[[platforms]]
name = "container"
type = "container"
network = "bridge"
cpu_quota_us = 50000

[suites.web]
test_cases = ["wrk-max"]
file_sizes = [50]
duration = 6
"""

# 1024 vs 256 shares is 4:1 of the shared CPU; softirq work (not charged to either group)
# and the closed-loop clients on the other CPU blur that: measured 1.7-1.9x, ask for 1.3x
MARGIN = 1.3


def test_heavier_container_serves_more_on_a_shared_cpu(tmp_path: Path, monkeypatch):
    owned = Owned(monkeypatch)
    rows = run_rows(tmp_path, CAMPAIGN)
    rps = {
        (r["scenario"], r["role"]): r
        for r in rows
        if r["metric"] == "requests_per_s" and r["role"] in ("target", "neighbour-1")
    }
    for row in rps.values():
        labels = row["labels"]
        assert labels["placement"] == "shared-cpu"
        assert labels["env_cpus"] and labels["env_cpus"][0] not in labels["client_cpus"]
        # the campaign's half CPU is the pair's one shared budget (docs/colocation.md): the
        # weights divide it, as an identical pair divides it equally
        assert labels["cpu_budget"] == "shared:50000/100000"
        assert len(labels["cpu_budget_members"]) == 2
        assert row["valid"], row.get("invalid_reason")
    heavy_target = rps["weights:1:1:0.25", "target"]["value"]
    light_neighbour = rps["weights:1:1:0.25", "neighbour-1"]["value"]
    light_target = rps["weights:1:0.25:1", "target"]["value"]
    heavy_neighbour = rps["weights:1:0.25:1", "neighbour-1"]["value"]
    figures = (
        f"1024:256 -> {heavy_target:.0f} vs {light_neighbour:.0f} req/s; "
        f"256:1024 -> {light_target:.0f} vs {heavy_neighbour:.0f} req/s"
    )
    print(figures)
    assert heavy_target > MARGIN * light_neighbour, figures
    assert heavy_neighbour > MARGIN * light_target, figures
    assert owned.leftovers() == []
