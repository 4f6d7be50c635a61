"""A fleet on one machine, with real parts: each host is a network namespace running a real
OpenSSH server on a private bridge; Ansible (ansible-core through ansible-runner) really
connects over SSH, ships the project, starts the campaign and polls it."""

from __future__ import annotations

import json
import shutil
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

from .fleet_hosts import SSHD, fleet

pytestmark = [
    pytest.mark.integration,
    pytest.mark.skipif(not Path(SSHD).exists(), reason="needs openssh-server"),
    pytest.mark.skipif(shutil.which("ssh") is None, reason="needs an ssh client"),
]

TINY = """
[campaign]
name = "fleet-tiny"
repetitions = {reps}
warmup = 0
cell_timeout = 60
scenarios = ["solo"]

[[platforms]]
name = "native"
type = "native"

[suites.cpu]
test_cases = ["sysbench-cpu-1t"]
duration = 1
max_prime = 20023  # unusual, so pgrep finds only this test's sysbench
"""

FAST = ["--poll-interval", "1", "--lost-after", "1"]


def vb(*args: str, **kw) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "virtbench.cli", *args], capture_output=True, text=True, **kw
    )


def campaign(tmp_path: Path, reps: int) -> Path:
    path = tmp_path / "fleet-tiny.toml"
    path.write_text(TINY.format(reps=reps))
    return path


def record(results: Path) -> dict:
    (path,) = (results / "fleet").glob("*/fleet.json")
    return json.loads(path.read_text())


def cells(db: Path) -> list[tuple]:
    con = sqlite3.connect(db)
    try:
        return con.execute("SELECT seq, status FROM cells ORDER BY seq").fetchall()
    finally:
        con.close()


def target_samples(db: Path, run_id: str = "%") -> int:
    con = sqlite3.connect(db)
    try:
        q = (
            "SELECT COUNT(*) FROM samples s JOIN cells c USING (cell_id) WHERE c.run_id LIKE ?"
            " AND s.role = 'target' AND s.metric = 'events_per_s'"
        )
        return con.execute(q, (run_id,)).fetchone()[0]
    finally:
        con.close()


def test_every_host_runs_and_its_results_arrive(tmp_path):
    results = tmp_path / "res"
    with fleet(tmp_path / "hosts", ["h1", "h2", "h3"]) as f:
        inv = f.inventory(tmp_path / "inventory.ini")
        out = vb(
            "fleet",
            "run",
            str(campaign(tmp_path, 1)),
            "-i",
            str(inv),
            "--results-dir",
            str(results),
            *FAST,
        )
    assert out.returncode == 0, out.stdout + out.stderr
    rec = record(results)
    assert set(rec["hosts"]) == {"h1", "h2", "h3"}
    fleet_dir = results / "fleet" / rec["fleet_id"]
    for host, st in rec["hosts"].items():
        assert st["status"] == "ok", (host, st)
        assert st["run_id"] and st["started_at"] <= st["ended_at"]
        assert cells(fleet_dir / f"{host}.db") == [(0, "ok")]
        assert target_samples(fleet_dir / f"{host}.db") == 1
        # where its time went (fleet.json, per host): a first run ships and installs
        t = st["timings"]
        for phase in ("check_s", "transfer_s", "install_s", "start_s", "status_s"):
            assert t[phase] > 0, (host, t)
        assert t["polls"] >= 1 and t["campaign_s"] > 0 and t["gather_s"] >= 0, (host, t)
    assert "h1" in out.stdout and "ok" in out.stdout  # the summary table
    # one store holds every host's run
    runs = sqlite3.connect(results / "virtbench.db").execute("SELECT run_id FROM runs").fetchall()
    assert sorted(r for (r,) in runs) == sorted(st["run_id"] for st in rec["hosts"].values())
    assert target_samples(results / "virtbench.db") == 3


def test_lost_host_keeps_its_cells_and_resume_completes_it(tmp_path):
    results = tmp_path / "res"
    shared = tmp_path / "shared.db"  # --store: where every host's results are gathered
    reps = 8  # long enough that h2 is still running when lost
    with fleet(tmp_path / "hosts", ["h1", "h2"]) as f:
        inv = f.inventory(tmp_path / "inventory.ini")
        h2 = f.hosts[1]
        proc = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "virtbench.cli",
                "fleet",
                "run",
                str(campaign(tmp_path, reps)),
                "-i",
                str(inv),
                "--results-dir",
                str(results),
                "--store",
                str(shared),
                *FAST,
            ],
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )
        # lose h2 once the controller has fetched a store with a finished cell from it
        deadline = time.monotonic() + 120
        fetched = None
        while time.monotonic() < deadline and proc.poll() is None:
            found = list((results / "fleet").glob("*/h2.db"))
            if found and any(s == "ok" for _, s in cells(found[0])):
                fetched = found[0]
                break
            time.sleep(0.3)
        assert fetched is not None, "h2 never reported a finished cell"
        f.lose(h2)
        output, _ = proc.communicate(timeout=150)
        assert proc.returncode == 6, output
        rec = record(results)
        assert rec["hosts"]["h1"]["status"] == "ok", rec
        lost = rec["hosts"]["h2"]
        assert lost["status"] == "lost", rec
        assert "unreachable" in lost["message"] or "gone" in lost["message"], lost
        kept = [c for c in cells(fetched) if c[1] == "ok"]
        assert kept and lost["cells_done"] >= 1 and lost["run_id"]
        assert cells(fetched.with_name("h1.db")) == [(i, "ok") for i in range(reps)]

        f.restore(h2)  # the host is back: its run continues from its last finished cell
        stamp = Path(f"/tmp/vb-fleet-{h2.name}/installed")
        installed = stamp.stat().st_mtime_ns
        assert 1 <= target_samples(shared, lost["run_id"]) < reps  # its finished cells
        again = vb("fleet", "resume", rec["fleet_id"], "--results-dir", str(results),
                   "--store", str(shared), *FAST)  # fmt: skip
        reinstalled = stamp.stat().st_mtime_ns != installed
    assert again.returncode == 0, again.stdout + again.stderr
    rec2 = record(results)
    assert rec2["hosts"]["h2"]["status"] == "ok", rec2
    assert rec2["hosts"]["h2"]["run_id"] == lost["run_id"]  # the same run, continued
    # the project is unchanged since h2 installed it: no second install (its stamp holds)
    assert not reinstalled
    assert cells(fetched) == [(i, "ok") for i in range(reps)]
    assert target_samples(fetched) == reps  # no cell measured twice
    assert target_samples(shared, lost["run_id"]) == reps  # nor imported twice
    assert target_samples(shared) == 2 * reps


def test_host_without_root_and_unreachable_host_are_named(tmp_path):
    results = tmp_path / "res"
    with fleet(tmp_path / "hosts", ["h1", "h2"]) as f:
        # h2 connects as root but works as nobody; ghost has no machine behind its address
        inv = f.inventory(
            tmp_path / "inventory.ini",
            extra="\n[bench]\nh2 ansible_become=true ansible_become_method=su"
            " ansible_become_user=nobody ansible_become_flags='-s /bin/sh'\n"
            "ghost ansible_host=10.217.14.99\n",
        )
        out = vb("fleet", "run", str(campaign(tmp_path, 1)), "-i", str(inv), "--results-dir",
                 str(results), *FAST)  # fmt: skip
    assert out.returncode == 6, out.stdout + out.stderr
    hosts = record(results)["hosts"]
    assert hosts["h1"]["status"] == "ok", hosts
    assert hosts["h2"]["status"] == "failed" and "needs root on h2" in hosts["h2"]["message"]
    assert hosts["ghost"]["status"] == "lost"
    assert "unreachable while preparing" in hosts["ghost"]["message"]
    assert "10.217.14.99" in hosts["ghost"]["message"]
    assert "fleet resume" in out.stdout


def test_host_without_a_package_index_installs_from_the_shipped_wheelhouse(tmp_path):
    # issue 42: a lab host with no route out. The simulated host's netns has no route
    # beyond the fleet bridge; it installs into a venv of its own, from the wheelhouse the
    # controller shipped (pip --no-index), and runs the campaign with it
    results = tmp_path / "res"
    venv = "/tmp/vb-fleet-h1/venv"
    with fleet(tmp_path / "hosts", ["h1"]) as f:
        (h1,) = f.hosts
        probe = "import socket; socket.create_connection(('pypi.org', 443), 3)"
        out = subprocess.run(
            ["ip", "netns", "exec", h1.netns, "/usr/bin/python3", "-c", probe],
            capture_output=True,
            text=True,
        )
        assert out.returncode != 0, "the simulated host reaches the internet"
        inv = f.inventory(
            tmp_path / "inventory.ini",
            extra=f"virtbench_install=changed\nvirtbench_offline=true\nvirtbench_venv={venv}",
        )
        out = vb("fleet", "run", str(campaign(tmp_path, 1)), "-i", str(inv), "--results-dir",
                 str(results), *FAST)  # fmt: skip
        installed = subprocess.run(
            [f"{venv}/bin/python", "-c", "import virtbench, wasmtime, psycopg; print('ok')"],
            capture_output=True,
            text=True,
            cwd="/",
        )
    assert out.returncode == 0, out.stdout + out.stderr
    rec = record(results)
    st = rec["hosts"]["h1"]
    assert st["status"] == "ok", st
    assert target_samples(results / "fleet" / rec["fleet_id"] / "h1.db") == 1
    assert installed.stdout.strip() == "ok", installed.stderr
