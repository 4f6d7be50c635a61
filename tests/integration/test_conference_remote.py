"""The conference's users on a client host, with real parts: the target host and the client
host are network namespaces of this machine each running a real sshd (fleet_hosts.py);
`virtbench run` runs in the target's namespace, nginx-rtmp natively there, the ffmpeg users
on the client host through one SSH session's agent (serving/remote_streams.py). Faults: the
client host unreachable, ffmpeg missing there. Run under the machine lock."""

from __future__ import annotations

import json
import shutil
import sqlite3
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from .fleet_hosts import SSHD, fleet

pytestmark = [
    pytest.mark.integration,
    pytest.mark.skipif(not Path(SSHD).exists(), reason="needs openssh-server"),
    pytest.mark.skipif(shutil.which("ssh") is None, reason="needs an ssh client"),
    pytest.mark.skipif(shutil.which("ffmpeg") is None, reason="needs ffmpeg"),
]

CAMPAIGN = """
[campaign]
name = "conf-remote"
repetitions = 1
warmup = 0
cell_timeout = 120
scenarios = ["solo"]
client_host = "c1"
client_inventory = "{inventory}"
[[platforms]]
name = "native"
type = "native"
[suites.conference]
test_cases = ["conference-rtmp"]
# steps of 5 s measured: shorter ones make a 5 fps stream's frame count a frame (~10 %) off
join_interval = 8.0
settle = 3.0
max_users = 3
publish = 2
"""

AGENT_MARK = "PR_SET_PDEATHSIG"  # a line of the agent's code, in its argv


def _left() -> str:
    """ffmpeg users or stream agents still running anywhere on this machine."""
    out = []
    for pattern in ("ffmpeg.*rtmp://", AGENT_MARK):
        r = subprocess.run(["pgrep", "-af", pattern], capture_output=True, text=True)
        out += [ln for ln in r.stdout.splitlines() if "pgrep" not in ln]
    return "\n".join(out)


def _run(netns: str, camp: Path, results: Path, timeout: float = 300):
    return subprocess.run(
        ["ip", "netns", "exec", netns, sys.executable, "-m", "virtbench.cli", "run", str(camp),
         "--results-dir", str(results), "--no-report", "--allow-concurrent"],
        capture_output=True, text=True, timeout=timeout,
    )  # fmt: skip


def _listening(netns: str, seen: list[str], done: threading.Event) -> None:
    """Collect nginx's listening sockets in the target's namespace while the run goes."""
    while not done.wait(0.5):
        r = subprocess.run(["ip", "netns", "exec", netns, "ss", "-ltnpH"],
                           capture_output=True, text=True)  # fmt: skip
        seen += [ln.split()[3] for ln in r.stdout.splitlines() if '"nginx"' in ln]


def test_users_on_the_client_host(tmp_path):
    results = tmp_path / "res"
    seen: list[str] = []
    done = threading.Event()
    with fleet(tmp_path / "hosts", ["t1", "c1"]) as f:
        target, client = f.hosts
        camp = tmp_path / "conf.toml"
        camp.write_text(CAMPAIGN.format(inventory=f.inventory(tmp_path / "inventory.ini")))
        watch = threading.Thread(target=_listening, args=(target.netns, seen, done))
        watch.start()
        try:
            out = _run(target.netns, camp, results)
        finally:
            done.set()
            watch.join()
        sshd_log = (client.home / "sshd.log").read_text()
    assert out.returncode == 0, out.stdout + out.stderr
    assert f"Accepted publickey for root from {target.address}" in sshd_log
    # nginx listened on the one address the client host reaches the target at
    assert seen and {s.rsplit(":", 1)[0] for s in seen} == {target.address}, seen
    con = sqlite3.connect(results / "virtbench.db")
    status, labels = con.execute("SELECT status, labels_json FROM cells").fetchone()
    assert status == "ok", labels
    facts = json.loads(labels)["client"]
    assert facts["host"] == "c1" and facts["target_address"] == target.address
    assert facts["cpus"] and facts["agent_rtt_ms"] < 50
    rows = con.execute("SELECT metric, value, valid, labels_json FROM samples").fetchall()
    by = {(m, json.loads(lab).get("users")): (v, ok) for m, v, ok, lab in rows}
    served = by[("users_served", None)]
    assert served[1] and served[0] >= 2, rows  # 3 unless a busy host saturated the third
    for users in (2, 3):
        delivery, ok = by.get(("delivery_ratio", users), (0, 0))
        if users <= served[0]:
            assert ok and delivery > 0.9, (users, delivery)
    # the viewers' bytes counted at their sockets on the client host: 2 webcams + desktop
    # (256 kbit/s each) viewed 5 times at 3 users
    assert by[("server_out_kbps", 2)][0] > 500
    assert by[("client_cpu_pct", 2)][0] > 0  # the users' own CPU, read on the client host
    assert _left() == ""


def test_ffmpeg_missing_on_the_client_host(tmp_path):
    """The client host's PATH has no ffmpeg: the cell fails naming the host and the package,
    the server is stopped, nothing is left running there."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for d in ("/usr/sbin", "/usr/bin", "/sbin", "/bin"):
        for p in Path(d).iterdir():
            if p.name != "ffmpeg" and not (bin_dir / p.name).exists():
                (bin_dir / p.name).symlink_to(p)
    results = tmp_path / "res"
    with fleet(tmp_path / "hosts", ["t1", "c1"]) as f:
        target, client = f.hosts
        f.kill_all(client)
        conf = client.home / "sshd_config"
        conf.write_text(conf.read_text() + f"SetEnv PATH={bin_dir}\n")
        f.start_sshd(client)
        camp = tmp_path / "conf.toml"
        camp.write_text(CAMPAIGN.format(inventory=f.inventory(tmp_path / "inventory.ini")))
        out = _run(target.netns, camp, results, timeout=120)
        nginx = subprocess.run(["ip", "netns", "exec", target.netns, "ss", "-ltnpH"],
                               capture_output=True, text=True).stdout  # fmt: skip
    assert out.returncode == 0, out.stdout + out.stderr  # a failed cell is recorded
    status, error = (
        sqlite3.connect(results / "virtbench.db")
        .execute("SELECT status, error FROM cells")
        .fetchone()
    )
    assert status == "failed", error
    assert "client host c1" in error and "ffmpeg" in error, error
    assert "apt-get install ffmpeg" in error and "Traceback" not in error, error
    assert '"nginx"' not in nginx
    assert _left() == ""


def test_unreachable_client_host_fails_before_measuring(tmp_path):
    results = tmp_path / "res"
    with fleet(tmp_path / "hosts", ["t1"]) as f:
        inv = f.inventory(
            tmp_path / "inventory.ini", extra="\n[clients]\nc1 ansible_host=10.217.14.99\n"
        )
        camp = tmp_path / "conf.toml"
        camp.write_text(CAMPAIGN.format(inventory=inv))
        out = _run(f.hosts[0].netns, camp, results, timeout=120)
    assert out.returncode == 2, out.stdout + out.stderr
    assert "client host c1 (10.217.14.99) is unreachable over SSH" in out.stderr
    assert "Traceback" not in out.stderr
    assert _left() == ""
