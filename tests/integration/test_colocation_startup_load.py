"""A start-up storm beside a real crun container serving a fixed rate: `startup:…:load=90`.

Seed 003 Fig. 14 ran the target at a fixed request rate, ~90 % of its maximum (900 req/s at
1 kB), while new guests started next to it, and divided its throughput by that rate. Here the
target's solo peak at 1 KB is measured first (a short httperf sweep, its own `solo-peak`
cell), then it serves 90 % of it for 6 s while one container newcomer starts 2 s in.
About 30 s.
"""

import os
from pathlib import Path

import pytest
from click.testing import CliRunner

from virtbench.cli import cli

from .campaign_run import run_rows
from .owned import Owned

pytestmark = [
    pytest.mark.integration,
    pytest.mark.skipif(os.geteuid() != 0, reason="needs root (containers, cgroups)"),
]

SCENARIO = "startup:1:container:2:load=90"
CAMPAIGN = f"""
[campaign]
name = "storm-load-it"
repetitions = 1
warmup = 0
cell_timeout = 180
scenarios = ["{SCENARIO}"]

[[platforms]]
name = "container"
type = "container"
network = "bridge"
cpu_quota_us = 50000

[suites.web]
test_cases = ["httperf-sweep"]
file_sizes = [1]
# the solo peak's sweep, short: a 1 s wrk probe, then 50, 75, 100 % of it for 1 s each
mode = "capacity"
probe_duration = 1
start_fraction = 0.5
step_fraction = 0.25
max_fraction = 1.0
step_duration = 1.0
# the fixed-rate step (load=90 sets `rate`): long enough for the newcomer 2 s in
duration = 6
"""


def test_a_fixed_rate_target_beside_a_start_up_storm(tmp_path: Path, monkeypatch):
    owned = Owned(monkeypatch)
    rows = run_rows(tmp_path, CAMPAIGN)
    cell = [r for r in rows if r["scenario"] == SCENARIO]
    # the target's solo peak at 1 KB, measured once, in a solo-peak cell of its own
    peaks = [
        r["value"]
        for r in rows
        if r["scenario"] == "solo-peak"
        and r["metric"] == "peak_throughput"
        and r["role"] == "target"
        and r["valid"]
    ]
    assert peaks, "no valid solo peak"
    (step,) = [r for r in cell if r["metric"] == "reply_rate" and r["role"] == "target"]
    lab = step["labels"]
    assert lab["phase"] == "fixed-rate" and lab["load_pct"] == 90 and lab["file_size_kb"] == 1
    assert lab["solo_peak"] == pytest.approx(max(peaks))
    # offered 90 % of that peak, and it served something of it
    assert lab["offered_rate"] == pytest.approx(0.9 * max(peaks), rel=0.01, abs=1.0)
    assert 0 < step["value"] <= lab["offered_rate"] * 1.1
    # one newcomer, started while the target served its fixed rate
    (new,) = [r for r in cell if r["metric"] == "startup_s"]
    nl = new["labels"]
    assert 0 < new["value"] < 30 and nl["file_size_kb"] == 1
    run0, run1 = nl["target_run_s"]
    assert run0 <= nl["started_at_s"] < run1 and nl["under_load_s"] > 0
    assert lab["storm_overlap_s"] > 0  # the step had the newcomer starting in it
    # the report divides this storm by the rate offered, and the table says the load
    report = tmp_path / "r.html"
    res = CliRunner().invoke(
        cli, ["report", "latest", "--results-dir", str(tmp_path), "--output", str(report)]
    )
    assert res.exit_code == 0, res.output
    html = report.read_text()
    assert "90 % of its solo peak" in html and "offered rate" in html
    assert owned.leftovers() == []
