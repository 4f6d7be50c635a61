"""Docker as the container engine, end to end with the real dockerd: sysbench-cpu and iperf3
in host and NAT networks (userland proxy and iptables DNAT), overlay and volume storage,
limits, accounting; a run killed mid-cell leaves nothing once docker's cleaner ran (~2 min)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from virtbench import cgroups, cleanup, tools
from virtbench.platforms.base import PlatformSpec
from virtbench.platforms.container import docker, dockerd, storage
from virtbench.platforms.container.platform import ContainerPlatform
from virtbench.platforms.container.storage import STATE_DIR, remove_state
from virtbench.workloads import registry
from virtbench.workloads.base import RunContext

pytestmark = [
    pytest.mark.integration,
    pytest.mark.skipif(tools.which("dockerd") is None, reason="docker.io not installed"),
]


def _ctx(name: str, **params) -> RunContext:
    w = registry.load_all()[name]
    full = {k: v.default for k, v in w.params.items()} | params
    cpus = sorted(os.sched_getaffinity(0))
    server, client = ([cpus[-1]], [cpus[0]]) if len(cpus) > 1 else (None, None)
    return RunContext(params=full, cpus=server, client_cpus=client, timeout=120)


def _run(platform, name: str, **params):
    return registry.load_all()[name]().run(platform, _ctx(name, **params))


def _primary(samples, name):
    metric = registry.load_all()[name].primary().name
    (head,) = [s for s in samples if s.metric == metric and s.role == "target"]
    return head


@pytest.mark.parametrize(
    "network, storage, nat",
    [
        ("host", "overlay", None),
        ("nat", "volume", None),
        ("nat", "overlay", "iptables"),
        ("bridge", "volume", None),
    ],
)
def test_docker_cpu_network_storage_limits(network, storage, nat):
    name = f"vb-itdk{network[0]}{storage[0]}{(nat or 'p')[0]}"
    opts = {"runtime": "docker", "network": network, "storage": storage, "pids_max": 300}
    opts |= {"cpu_weight": 512} | ({"docker_nat": nat} if nat else {})
    eng = docker.Docker(network, nat)
    with ContainerPlatform(PlatformSpec(name, "container", opts), name) as p:
        r = p.exec(["sh", "-c", "cat /sys/fs/cgroup/pids/pids.max; stat -f -c %T /data"])
        assert r.ok, r.stderr
        limit, fstype = r.stdout.split()
        assert limit == "300"  # the docker run flag reached the container's group
        # overlay: Docker's copy-on-write layer; volume: a Docker volume (the host's fs)
        assert (fstype == "overlayfs") == (storage == "overlay"), fstype
        assert p.exec(["cat", p.put_file("/etc/hostname")]).ok  # copied into layer/volume
        acct = p.accounting()
        assert name in acct.cgroups["cpu"] and acct.extra["init_pid"] in acct.pids
        assert bool(acct.net_ifaces) == (network != "host")
        cpu = _primary(_run(p, "sysbench-cpu-1t", duration=1), "sysbench-cpu-1t")
        assert cpu.value > 0 and not cpu.labels.get("invalid")
        net = _primary(_run(p, "iperf3-tcp", duration=2), "iperf3-tcp")
        assert net.value > 0, net.labels
        labels = p.labels()
        assert labels["runtime"] == "docker" and labels["docker_daemon"] in ("virtbench", "user")
        if network == "nat":
            assert labels["docker_nat"] == (nat or dockerd.PROXY)
            host_port = p.endpoint(p.server_ports()[0])[1]
            # the label is what the host shows: docker-proxy only with the userland proxy
            proxied = any(
                host_port - docker.PORT_BLOCK < q <= host_port + docker.PORT_BLOCK
                for q in docker.proxy_ports()
            )
            assert proxied == (labels["docker_nat"] == dockerd.PROXY)
    assert name not in eng.list_ids()
    assert eng._docker("volume", "inspect", name).returncode != 0
    assert name not in cgroups.leftovers() and not (STATE_DIR / name).exists()


def test_cold_start_is_a_docker_run():
    opts = {"runtime": "docker"}
    p = ContainerPlatform(PlatformSpec("d", "container", opts), "vb-itdkcs")
    t = p.cold_start(["sh", "-c", "echo hi"])
    assert t.result.ok and t.result.stdout.strip() == "hi", t.result.stderr
    assert t.exited_at > t.created_at


CAMPAIGN = """
[campaign]
name = "docker-crash"
repetitions = 1
warmup = 0
cell_timeout = 120

[[platforms]]
name = "d-nat"
type = "container"
runtime = "docker"
network = "nat"
storage = "volume"

[suites.network]
test_cases = ["iperf3-tcp"]
duration = 30
"""


def _docker_names() -> set[str]:
    return set(docker.Docker().list_ids())


def test_killed_run_leaves_nothing_after_docker_cleanup(tmp_path):
    """SIGKILL mid-cell (watchdog too); docker's cleaner removes the container, its volume,
    the network and virtbench's dockerd if that run started it."""
    (tmp_path / "c.toml").write_text(CAMPAIGN)
    # this process is done with virtbench's dockerd (the tests above claimed it, maybe with
    # the other docker_nat): stopped unless another run uses it, so the run below starts its own
    dockerd.release()
    daemon_before = dockerd.own_pid()
    before = _docker_names()
    run = subprocess.Popen(
        [sys.executable, "-m", "virtbench.cli", "run", str(tmp_path / "c.toml"), "--no-report"]
        + ["--results-dir", str(tmp_path / "results")],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 300  # the first run imports the image
        new: set[str] = set()
        while time.monotonic() < deadline and run.poll() is None and not new:
            new = _docker_names() - before if dockerd.current() else set()
            time.sleep(0.5)
        time.sleep(3)  # iperf3 under way
        assert new and run.poll() is None, "the run ended before it could be killed"
        for proc in Path("/proc").iterdir():  # its watchdog would clean up: a crash takes it
            try:
                argv = (proc / "cmdline").read_bytes().split(b"\0")
            except OSError:
                continue
            if b"virtbench.watchdog" in argv and str(run.pid).encode() in argv:
                os.kill(int(proc.name), signal.SIGKILL)
        os.kill(run.pid, signal.SIGKILL)
        run.wait()
    finally:
        if run.poll() is None:
            run.kill()
    started_daemon = daemon_before is None and dockerd.own_pid() is not None
    assert new <= _docker_names(), "the killed run's container should still exist"
    removed = docker.clean()  # docker's own cleaner only: other runs share this host
    assert not new & _docker_names(), removed
    eng = docker.Docker()
    if eng.daemon is not None:
        assert all(eng._docker("volume", "inspect", n).returncode != 0 for n in new)
        if not _docker_names():
            assert eng._docker("network", "inspect", docker.NETWORK).returncode != 0
    if started_daemon and not dockerd._live_claims():
        assert dockerd.own_pid() is None, removed
    for name in new:  # the rest of that run (cgroup, bundle dir) is the generic cleaners'
        assert not cleanup.in_use(name)
        cgroups.Cgroup.attach(name).destroy()
        remove_state(STATE_DIR / name)


def test_stopped_daemon_leaves_no_mount_or_chains():
    """A dockerd exits leaving the host netns it bind-mounts under its exec root (the sandbox
    of host-network containers) and its iptables chains: once virtbench's is stopped, neither
    is left (the chains when it made them)."""
    if dockerd._user_dockerd() is not None:
        pytest.skip("a dockerd virtbench did not start runs here")
    dockerd.release()  # the tests above: stopped unless another virtbench process uses it
    if dockerd._live_claims():
        pytest.skip("another virtbench process uses virtbench's dockerd")
    chains_before = dockerd.docker_chains()
    name = "vb-itdkleft"
    with ContainerPlatform(PlatformSpec(name, "container", {"runtime": "docker"}), name) as p:
        assert p.exec(["true"]).ok
        assert dockerd.own_pid() is not None
        assert storage.mounts_under(dockerd.EXEC_ROOT), "no netns mount: this shows nothing"
        made = dockerd.CHAINS_MARK.exists()
        assert made or chains_before  # chains absent before it started are its
    dockerd.release()
    assert dockerd.own_pid() is None
    assert storage.mounts_under(dockerd.EXEC_ROOT) == []
    if made:
        assert dockerd.docker_chains() == {} and not dockerd.CHAINS_MARK.exists()
