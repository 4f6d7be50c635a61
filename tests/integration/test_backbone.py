"""End to end on the native host: the real CLI runs a tiny real campaign; store, export,
report, resume after Ctrl-C."""

import csv
import io
import json
import signal
import sqlite3
import subprocess
import sys
import time

import pytest

from virtbench.export import CONTRACT

pytestmark = pytest.mark.integration

TINY = """
[campaign]
name = "tiny"
repetitions = {reps}
warmup = 0
cell_timeout = 60
scenarios = ["solo"]

[[platforms]]
name = "native"
type = "native"

[suites.cpu]
test_cases = ["sysbench-cpu-1t"]
duration = {duration}
max_prime = 20011  # unusual, so pgrep finds only this test's sysbench
"""


def vb(*args, **kw):
    return subprocess.run(
        [sys.executable, "-m", "virtbench.cli", *args], capture_output=True, text=True, **kw
    )


def write_campaign(tmp_path, reps=2, duration=1):
    path = tmp_path / "tiny.toml"
    path.write_text(TINY.format(reps=reps, duration=duration))
    return path


def test_tiny_campaign_store_export_report(tmp_path):
    results = tmp_path / "res"
    out = vb("run", str(write_campaign(tmp_path)), "--results-dir", str(results))
    assert out.returncode == 0, out.stderr
    db = sqlite3.connect(results / "virtbench.db")
    assert db.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    status, host = db.execute("SELECT status, host_json FROM runs").fetchone()
    assert status == "finished"
    host = json.loads(host)
    for key in ("cpu_model", "cores", "memory_bytes", "kernel", "cgroup", "tool_versions"):
        assert key in host
    assert "sysbench" in host["tool_versions"]
    assert [r[0] for r in db.execute("SELECT status FROM cells")] == ["ok", "ok"]

    exported = vb("results", "--run", "latest", "--format", "jsonl", "--results-dir", str(results))
    assert exported.returncode == 0, exported.stderr
    rows = [json.loads(line) for line in exported.stdout.splitlines()]
    target = [r for r in rows if r["metric"] == "events_per_s"]
    assert len(target) == 2
    for r in target:
        assert list(r)[: len(CONTRACT)] == list(CONTRACT)
        assert r["platform"] == "native" and r["suite"] == "cpu" and r["role"] == "target"
        assert r["higher_is_better"] is True and r["value"] > 0 and r["unit"] == "events/s"
    assert sorted(r["repetition"] for r in target) == [1, 2]

    as_csv = vb("results", "--format", "csv", "--results-dir", str(results))
    header = next(csv.reader(io.StringIO(as_csv.stdout)))
    assert header[: len(CONTRACT)] == list(CONTRACT)

    report = vb("report", "latest", "--results-dir", str(results))
    assert report.returncode == 0, report.stderr
    assert "sysbench-cpu-1t" in report.stdout  # the Markdown summary
    html = list((results / "reports").glob("*.html"))
    assert html and "sysbench-cpu-1t" in html[0].read_text()


def test_ctrl_c_then_resume_loses_and_duplicates_nothing(tmp_path):
    results = tmp_path / "res"
    campaign = write_campaign(tmp_path, reps=4, duration=2)
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "virtbench.cli",
            "run",
            str(campaign),
            "--results-dir",
            str(results),
            "--no-report",
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        # a shell without job control starts background jobs with SIGINT ignored, and Python
        # then never raises KeyboardInterrupt: the run must get Ctrl-C as a terminal gives it
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )
    db_path = results / "virtbench.db"
    deadline = time.monotonic() + 60
    done = 0
    while time.monotonic() < deadline and done < 1:  # wait until one cell is committed
        time.sleep(0.3)
        if db_path.exists():
            with sqlite3.connect(db_path) as db:
                done = db.execute("SELECT count(*) FROM cells WHERE status='ok'").fetchone()[0]
    assert done >= 1
    proc.send_signal(signal.SIGINT)
    stdout, stderr = proc.communicate(timeout=30)
    assert "resume" in stdout + stderr
    with sqlite3.connect(db_path) as db:
        run_id, status = db.execute("SELECT run_id, status FROM runs").fetchone()
        assert status == "interrupted"
        ok_before = db.execute("SELECT count(*) FROM cells WHERE status='ok'").fetchone()[0]
    assert ok_before < 4
    leftovers = subprocess.run(
        ["pgrep", "-f", "cpu-max-prime=20011"], capture_output=True, text=True
    )
    assert leftovers.stdout.strip() == "", "sysbench left running after Ctrl-C"

    resumed = vb("run", "--resume", run_id, "--results-dir", str(results), "--no-report")
    assert resumed.returncode == 0, resumed.stderr
    with sqlite3.connect(db_path) as db:
        assert db.execute("SELECT status FROM runs").fetchone()[0] == "finished"
        reps = [
            r[0]
            for r in db.execute(
                "SELECT c.repetition FROM samples s JOIN cells c USING (cell_id)"
                " WHERE s.metric = 'events_per_s' ORDER BY c.repetition"
            )
        ]
    assert reps == [1, 2, 3, 4]


def test_bad_campaign_is_a_clear_error_not_a_traceback(tmp_path):
    bad = tmp_path / "bad.toml"
    bad.write_text("[suites.cpu]\nduration = 'long'\n")
    out = vb("run", str(bad), "--results-dir", str(tmp_path / "r"))
    assert out.returncode == 2
    assert "bad.toml: key 'suites.cpu.duration'" in out.stderr
    assert "Traceback" not in out.stderr


def test_unwritable_results_dir_is_a_clear_error(tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("x")
    out = vb("run", str(write_campaign(tmp_path)), "--results-dir", str(blocker / "sub"))
    assert out.returncode == 2 and "not writable" in out.stderr
    assert "Traceback" not in out.stderr
