"""Issue 16 on the real CLI and host: servers bind only to their client's address (item 7),
SIGTERM exits 143 (item 4), a SIGKILLed run is shown as lost and resumes (item 5)."""

from __future__ import annotations

import contextlib
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

pytestmark = pytest.mark.integration

NETWORK = """
[campaign]
name = "bind"
repetitions = 1
warmup = 0
cell_timeout = 120
scenarios = ["solo"]

[[platforms]]
name = "native"
type = "native"

[suites.network]
test_cases = ["iperf3-tcp", "sockperf-tcp-rr"]
duration = 3

[suites.web]
test_cases = ["wrk-max"]
file_sizes = [1]
duration = 2
"""

CPU = """
[campaign]
name = "sig"
repetitions = 3
warmup = 0
cell_timeout = 60
scenarios = ["solo"]

[[platforms]]
name = "native"
type = "native"

[suites.cpu]
test_cases = ["sysbench-cpu-1t"]
duration = 2
"""

SERVERS = ("iperf3", "sockperf", "nginx")


def _start(tmp_path: Path, text: str) -> tuple[subprocess.Popen, Path]:
    campaign = tmp_path / "c.toml"
    campaign.write_text(text)
    results = tmp_path / "res"
    proc = subprocess.Popen(
        [sys.executable, "-m", "virtbench.cli", "run", str(campaign), "--no-report"]
        + ["--results-dir", str(results)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    return proc, results


def _ancestors(pid: int) -> set[int]:
    seen = set()
    while pid > 1 and pid not in seen:
        seen.add(pid)
        try:
            pid = int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[1])
        except (OSError, IndexError):
            break
    return seen


def test_native_servers_listen_on_loopback_only(tmp_path):
    proc, _ = _start(tmp_path, NETWORK)
    seen: dict[str, set[str]] = {}
    while proc.poll() is None:
        out = subprocess.run(["ss", "-ltnpH"], capture_output=True, text=True).stdout
        for line in out.splitlines():
            local = line.split()[3]
            for name in SERVERS:
                pids = [int(p) for p in _pids_of(line, name)]
                if any(proc.pid in _ancestors(p) for p in pids):
                    seen.setdefault(name, set()).add(local)
        time.sleep(0.1)
    assert proc.returncode == 0, proc.stderr.read()
    assert set(seen) == set(SERVERS), f"servers never seen listening: {seen}"
    for name, addrs in seen.items():
        wide = {a for a in addrs if a.startswith(("0.0.0.0:", "*:", "[::]:"))}
        assert not wide, f"{name} listens on every address: {wide}"
        assert all(a.startswith("127.0.0.1:") for a in addrs), (name, addrs)


def _pids_of(ss_line: str, name: str) -> list[str]:
    # users:(("iperf3",pid=123,fd=3),...)
    return [
        part.split("pid=")[1].split(",")[0]
        for part in ss_line.split("((")[-1].split("),(")
        if part.startswith(f'"{name}"') and "pid=" in part
    ]


def _wait_ok(db: Path, n: int, limit: float = 60) -> None:
    deadline = time.monotonic() + limit
    while time.monotonic() < deadline:
        if db.exists():
            # the file exists a moment before the run has made its tables (a fast host)
            with contextlib.suppress(sqlite3.OperationalError), sqlite3.connect(db, timeout=1) as c:
                if c.execute("SELECT count(*) FROM cells WHERE status='ok'").fetchone()[0] >= n:
                    return
        time.sleep(0.2)
    raise AssertionError("no cell finished in time")


def test_sigterm_exits_143_and_marks_the_cell_interrupted(tmp_path):
    proc, results = _start(tmp_path, CPU)
    _wait_ok(results / "virtbench.db", 1)
    time.sleep(0.5)  # into the next cell
    proc.send_signal(signal.SIGTERM)
    proc.communicate(timeout=60)
    assert proc.returncode == 143
    with sqlite3.connect(results / "virtbench.db") as c:
        assert c.execute("SELECT status FROM runs").fetchone()[0] == "interrupted"
        statuses = [r[0] for r in c.execute("SELECT status FROM cells ORDER BY seq")]
    assert "running" not in statuses and "interrupted" in statuses, statuses


def test_sigkilled_run_is_lost_then_resumes(tmp_path):
    proc, results = _start(tmp_path, CPU)
    _wait_ok(results / "virtbench.db", 1)
    time.sleep(0.5)
    proc.kill()
    proc.communicate(timeout=30)
    vb = [sys.executable, "-m", "virtbench.cli"]
    listed = subprocess.run(
        [*vb, "results", "--list", "--results-dir", str(results)], capture_output=True, text=True
    )
    run_id, _name, status, _at = listed.stdout.strip().split("\t")
    assert status == "lost"
    exported = subprocess.run(
        [*vb, "results", "--results-dir", str(results)], capture_output=True, text=True
    )
    assert "incomplete: lost" in exported.stderr and exported.stdout
    resumed = subprocess.run(
        [*vb, "run", "--resume", run_id, "--no-report", "--results-dir", str(results)],
        capture_output=True,
        text=True,
    )
    assert resumed.returncode == 0, resumed.stderr
    with sqlite3.connect(results / "virtbench.db") as c:
        assert c.execute("SELECT status FROM runs").fetchone()[0] == "finished"
        assert [r[0] for r in c.execute("SELECT status FROM cells")] == ["ok"] * 3


MODES = """
[campaign]
name = "bind-modes"
repetitions = 1
warmup = 0
cell_timeout = 120
scenarios = ["solo"]

[[platforms]]
name = "c-host"
type = "container"
network = "host"

[[platforms]]
name = "c-bridge"
type = "container"
network = "bridge"

[[platforms]]
name = "c-nat"
type = "container"
network = "nat"

[[platforms]]
name = "vm"
type = "vm"
accel = "tcg"
vcpus = 1
memory_mb = 384

[suites.network]
test_cases = ["iperf3-tcp", "sockperf-udp-rr"]
duration = 2

[suites.web]
test_cases = ["wrk-max"]
file_sizes = [1]
duration = 1
"""


def test_bound_servers_reach_their_clients_on_every_network_mode(tmp_path):
    proc, results = _start(tmp_path, MODES)
    _out, err = proc.communicate(timeout=600)
    assert proc.returncode == 0, err
    with sqlite3.connect(results / "virtbench.db") as c:
        rows = c.execute("SELECT platform, test_case, status, error FROM cells").fetchall()
    assert all(r[2] == "ok" for r in rows), [r for r in rows if r[2] != "ok"]
