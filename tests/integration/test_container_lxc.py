"""LXC as the container engine (`runtime = "lxc"`): sysbench-cpu, iperf3 and the start-up test
case through the CLI on nat+overlay and bridge+volume; limits reach LXC's payload group; a run
killed mid-cell leaves nothing once the cleaners ran, and Ctrl-C leaves nothing at all.

Other runs share this host: leftovers are looked for by this run's own instance names (its
owner claims), and the targeted cleanup spares every object not of this run."""

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from virtbench import cgroups, cleanup, hostnet, tools
from virtbench.platforms.base import PlatformSpec
from virtbench.platforms.container import lxc
from virtbench.platforms.container.platform import ContainerPlatform
from virtbench.platforms.container.storage import STATE_DIR
from virtbench.store.db import Store

from .test_container_crash import _processes, _watchdogs

pytestmark = [
    pytest.mark.integration,
    pytest.mark.skipif(tools.which("lxc-start") is None, reason="lxc not installed"),
]

PLATFORMS = """
[[platforms]]
name = "lxc-nat"
type = "container"
runtime = "lxc"
network = "nat"
storage = "overlay"

[[platforms]]
name = "lxc-bridge-volume"
type = "container"
runtime = "lxc"
network = "bridge"
storage = "volume"
cpu_weight = 512
"""

CAMPAIGN = (
    """
[campaign]
name = "lxc"
repetitions = 1
warmup = 0
order = "sequential"
cell_timeout = 120
"""
    + PLATFORMS
    + """
[suites.cpu]
test_cases = ["sysbench-cpu-1t"]
duration = 2

[suites.network]
test_cases = ["iperf3-tcp"]
duration = 2

[suites.lifecycle]
test_cases = ["container-startup"]
starts = 5
"""
)


def _cli(*args: str, **kw) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "virtbench.cli", *args], capture_output=True, text=True, **kw
    )


def test_lxc_sysbench_iperf3_startup(tmp_path):
    campaign = tmp_path / "lxc.toml"
    campaign.write_text(CAMPAIGN)
    out = _cli("run", str(campaign), "--results-dir", str(tmp_path), "--no-report", timeout=600)
    assert out.returncode == 0, out.stdout + out.stderr
    st = Store.open_existing(tmp_path)
    run_id = st.resolve_run("latest")
    cells = st.cells(run_id)
    assert len(cells) == 6
    assert all(c.status == "ok" for c in cells), [(c.test_case, c.error) for c in cells]
    for c in cells:
        plat = json.loads(c.labels_json)["platform"]
        assert plat["runtime"] == "lxc" and plat["apparmor"] == "unconfined"
    rows = st.sample_rows(run_id)
    figures = {
        (r["platform"], r["metric"]): round(r["value"], 2)
        for r in rows
        if r["role"] == "target"
        and r["metric"] in ("events_per_s", "throughput", "startup_ms", "teardown_ms")
    }
    print(f"lxc figures: {figures}")
    for plat in ("lxc-nat", "lxc-bridge-volume"):
        assert figures[(plat, "events_per_s")] > 0
        assert figures[(plat, "throughput")] > 0
        assert 0 < figures[(plat, "startup_ms")] < 5000
    st.close()


def test_limits_reach_payload_group_and_accounting():
    name = "vb-itlx01"
    opts = {"runtime": "lxc", "network": "bridge", "pids_max": 200, "cpu_weight": 256}
    with ContainerPlatform(PlatformSpec(name, "container", opts), name) as p:
        r = p.exec(["sh", "-c", "echo $$; sysbench --version"])
        assert r.ok, r.stderr
        # the limits reached LXC's payload group, inside the vb- group the sampler reads
        # (like crun's, the container has no cgroupfs of its own mounted)
        acc = p.accounting()
        payload = {c: Path(d) / f"lxc.payload.{name}" for c, d in acc.cgroups.items()}
        if cgroups.version() == "v1":
            assert (payload["pids"] / "pids.max").read_text().strip() == "200"
            assert (payload["cpu"] / "cpu.shares").read_text().strip() == "256"
            assert p.accounting().extra["init_pid"] in acc.pids
        else:
            assert (payload["unified"] / "pids.max").read_text().strip() == "200"
        if cgroups.rt_supported() and p.labels().get("rt_runtime_granted_us"):
            assert p.exec(["chrt", "-f", "50", "true"]).ok  # the rt budget reached it too
        proc = p.spawn(["sleep", "60"])
        for _ in range(100):
            if proc.pid:
                break
            time.sleep(0.05)
        acc = p.accounting()
        assert proc.pid and proc.pid in acc.pids  # a host pid, found in the vb- group
        assert acc.net_ifaces == [f"{name}-h"] and hostnet.link_exists(f"{name}-h")
        assert proc.stop(timeout=2).returncode != 0 and proc.poll() is not None
    assert name not in cgroups.leftovers()
    assert not (lxc.LXCPATH / name).exists() and not (STATE_DIR / name).exists()
    assert not hostnet.link_exists(f"{name}-h")


# --- killed mid-cell, and Ctrl-C ----------------------------------------------------------
KILL_CAMPAIGN = """
[campaign]
name = "lxc-kill"
repetitions = 1
warmup = 0
cell_timeout = 120

[[platforms]]
name = "lxc-nat"
type = "container"
runtime = "lxc"
network = "nat"

[suites.network]
test_cases = ["iperf3-tcp"]
duration = 30
"""


def _objects(names: set[str]) -> set[str]:
    """This run's host objects (by its instance names): groups, links, nft tables, state,
    mounts, LXC containers, address leases."""
    objs = {f"cgroup {n}" for n in cgroups.leftovers()}
    objs |= {f"link {p.name}" for p in Path("/sys/class/net").iterdir()}
    objs |= {f"nft {t}" for t in hostnet.nft_tables()}
    for d, what in ((STATE_DIR, "state"), (lxc.LXCPATH, "lxc")):
        if d.is_dir():
            objs |= {f"{what} {p.name}" for p in d.iterdir()}
    for line in Path("/proc/self/mountinfo").read_text().splitlines():
        if str(STATE_DIR) in line.split()[4]:
            objs.add(f"mount {line.split()[4]}")
    if hostnet.IPAM.is_dir():
        objs |= {f"lease {p.read_text().strip()}" for p in hostnet.IPAM.iterdir()}
    return {o for o in objs if any(n in o for n in names)}


def _start_and_wait(tmp_path) -> tuple[subprocess.Popen, set[str]]:
    campaign = tmp_path / "kill.toml"
    campaign.write_text(KILL_CAMPAIGN)
    run = subprocess.Popen(
        [sys.executable, "-m", "virtbench.cli", "run", str(campaign), "--no-report"]
        + ["--results-dir", str(tmp_path / "results")],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        # Ctrl-C as a terminal gives it, even under a shell that started us with SIGINT ignored
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )
    deadline = time.monotonic() + 120
    names: set[str] = set()
    while time.monotonic() < deadline and run.poll() is None:
        if cleanup.OWNERS_DIR.is_dir():
            names = {
                f.name
                for f in cleanup.OWNERS_DIR.iterdir()
                if f.read_text().split()[:1] == [str(run.pid)]
            }
        # mid-cell: the published port's nft table exists (iperf3 is running)
        if names and any(o.startswith("nft ") for o in _objects(names)):
            break
        time.sleep(0.2)
    time.sleep(1)
    assert run.poll() is None and names, "the run ended before it could be stopped"
    return run, names


# the registered cleaners, run so that they spare everything not of this run (other
# engineers' runs and their deliberate leftovers share this host)
TARGETED_CLEANUP = """
import sys
from virtbench import cleanup, cleanup_all
names = sys.argv[1:]
real = cleanup.in_use
cleanup.in_use = lambda n: real(n) or not any(n.startswith(m) for m in names)
for line in cleanup_all.run_all():
    print(line)
"""


def test_sigkill_mid_cell_then_cleaners_leave_nothing(tmp_path):
    run, names = _start_and_wait(tmp_path)
    try:
        created = _objects(names)
        kinds = {o.split()[0] for o in created}
        assert {"cgroup", "link", "nft", "state", "mount", "lxc", "lease"} <= kinds, created
        for pid in _watchdogs(run.pid):  # a crash that takes the watchdog down too
            os.kill(pid, signal.SIGKILL)
        os.kill(run.pid, signal.SIGKILL)
        run.wait()
    finally:
        if run.poll() is None:
            run.kill()
    assert _processes(names), "the killed run's LXC container should still be running"
    out = subprocess.run(
        [sys.executable, "-c", TARGETED_CLEANUP, *sorted(names)], capture_output=True, text=True
    )
    assert out.returncode == 0, out.stderr
    assert any("lxc container" in ln for ln in out.stdout.splitlines()), out.stdout
    left = _objects(names)
    assert not left, f"cleanup left: {left}\n{out.stdout}"
    assert not _processes(names)


def test_ctrl_c_mid_cell_leaves_nothing(tmp_path):
    run, names = _start_and_wait(tmp_path)
    try:
        run.send_signal(signal.SIGINT)
        run.wait(timeout=60)
    finally:
        if run.poll() is None:
            run.kill()
    time.sleep(0.5)
    assert not _objects(names), _objects(names)
    assert not _processes(names)
