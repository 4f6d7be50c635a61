"""A start-up storm beside a real crun container serving two file sizes: one storm per size.

Seed 003 Fig. 14 started the newcomers beside a 1 kB and beside a 70 kB target, each its own
experiment. With one storm per cell the second size ran after the newcomers were ready, so
its figure was the target after the storm. About 40 s.
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
name = "storm-it"
repetitions = 1
warmup = 0
cell_timeout = 180
scenarios = ["startup:2:container:1"]

[[platforms]]
name = "container"
type = "container"
network = "bridge"
cpu_quota_us = 50000

[suites.web]
test_cases = ["wrk-max"]
file_sizes = [1, 50]
duration = 5
"""


def test_every_size_has_its_own_storm(tmp_path: Path, monkeypatch):
    owned = Owned(monkeypatch)
    rows = run_rows(tmp_path, CAMPAIGN)
    news = [r for r in rows if r["metric"] == "startup_s"]
    by_size = {size: [r for r in news if r["labels"]["file_size_kb"] == size] for size in (1, 50)}
    assert {size: len(rs) for size, rs in by_size.items()} == {1: 2, 50: 2}
    for rs in by_size.values():
        for r in rs:
            lab = r["labels"]
            start, end = lab["scene_s"]
            assert start <= lab["started_at_s"] < lab["ready_at_s"] <= end
            assert 0 < r["value"] < 60
    one, fifty = (by_size[s][0]["labels"]["scene_s"] for s in (1, 50))
    assert one[1] <= fifty[0]  # the 50 KB storm began after the 1 KB scene ended
    served = {
        r["labels"]["file_size_kb"]: r
        for r in rows
        if r["metric"] == "requests_per_s" and r["role"] == "target"
    }
    assert set(served) == {1, 50}
    for r in served.values():  # both sizes measured during a storm, not after it
        assert r["labels"]["storm_per_size"] and r["labels"]["storm_overlap_s"] > 0, r["labels"]
        assert r["valid"], r.get("invalid_reason")
    assert owned.leftovers() == []
