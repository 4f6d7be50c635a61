"""Issue 13 item 1 end to end: a tiny native campaign with repetitions = "auto" stops on
precision or on its cap, says which on the console, stores it, and the report shows it."""

import sqlite3
import subprocess
import sys

import pytest

pytestmark = pytest.mark.integration

AUTO = """
[campaign]
name = "tiny-auto"
repetitions = "auto"
precision_pct = 1.0
min_repetitions = 3
max_repetitions = 5
budget_s = 60
warmup = 0
cell_timeout = 60
scenarios = ["solo"]

[[platforms]]
name = "native"
type = "native"

[suites.cpu]
test_cases = ["sysbench-cpu-1t"]
duration = 1
"""


def test_auto_repetitions_stop_on_precision_or_the_cap_and_say_which(tmp_path):
    campaign = tmp_path / "auto.toml"
    campaign.write_text(AUTO)
    results = tmp_path / "res"
    out = subprocess.run(
        [
            sys.executable,
            "-m",
            "virtbench.cli",
            "run",
            str(campaign),
            "--results-dir",
            str(results),
        ],
        capture_output=True,
        text=True,
    )
    assert out.returncode == 0, out.stderr
    assert "adaptive repetitions: each test case repeats until" in out.stdout  # the plan
    db = sqlite3.connect(results / "virtbench.db")
    reason, reps, pct, detail = db.execute(
        "SELECT reason, repetitions, precision_pct, detail FROM run_stops"
    ).fetchone()
    cells = db.execute("SELECT COUNT(*) FROM cells WHERE status = 'ok'").fetchone()[0]
    assert cells == reps and 3 <= reps <= 5
    if reason == "precision":
        assert pct <= 1.0 and "precision reached" in detail
    else:
        assert reason == "max-repetitions" and reps == 5 and "max_repetitions (5)" in detail
    assert detail in out.stdout  # said on the console as stored
    assert "adaptive repetitions (target ±1%)" in out.stdout  # the report's summary
    print(detail)
