"""A results directory that fills up: the run stops with a clear error, keeps every finished
cell, and can be resumed once there is room."""

import sqlite3
import subprocess
import sys

import pytest

pytestmark = pytest.mark.integration

CAMPAIGN = """
[campaign]
repetitions = 200
warmup = 0
[suites.cpu]
test_cases = ["sysbench-cpu-1t"]
duration = 1
max_prime = 200
"""


@pytest.fixture
def small_fs(tmp_path):
    mnt = tmp_path / "full"
    mnt.mkdir()
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=300k", "tmpfs", str(mnt)], check=True)
    yield mnt
    subprocess.run(["umount", "-l", str(mnt)], check=False)


def test_full_results_dir_stops_cleanly_and_keeps_cells(tmp_path, small_fs):
    campaign = tmp_path / "many.toml"
    campaign.write_text(CAMPAIGN)
    out = subprocess.run(
        [
            sys.executable,
            "-m",
            "virtbench.cli",
            "run",
            str(campaign),
            "--results-dir",
            str(small_fs),
            "--no-report",
        ],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert out.returncode == 2, out.stderr
    assert "full" in out.stderr and "--resume" in out.stderr, out.stderr
    assert "Traceback" not in out.stderr
    db = sqlite3.connect(small_fs / "virtbench.db")
    ok = db.execute("SELECT count(*) FROM cells WHERE status = 'ok'").fetchone()[0]
    samples = db.execute("SELECT count(*) FROM samples WHERE metric = 'events_per_s'").fetchone()[0]
    assert ok >= 1 and samples == ok  # every finished cell kept, whole
