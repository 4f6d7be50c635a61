"""client_path = "bridge" for real (issue 11): a native target and a crun bridge container,
both measured by iperf3 from a client netns on virtbench's bridge (2 s each, ~20 s in all).
Every sample records the bridge path; the client's netns, veth and hairpin table are gone
after the run; `virtbench cleanup` removes a client netns whose process died."""

from __future__ import annotations

import secrets
import subprocess
from pathlib import Path

import pytest

from virtbench import cleanup, hostnet
from virtbench.serving import netpath
from virtbench.tools import which

from .campaign_run import run_rows
from .owned import Owned

pytestmark = pytest.mark.integration

CAMPAIGN = """
[campaign]
name = "client-path"
repetitions = 1
warmup = 0
cell_timeout = 120
baseline = "native"
scenarios = ["solo"]

[[platforms]]
name = "native"
type = "native"

[[platforms]]
name = "crun-bridge"
type = "container"
runtime = "crun"
network = "bridge"

[suites.network]
test_cases = ["iperf3-tcp"]
duration = 2
reverse = true
client_path = "bridge"
"""


@pytest.fixture(scope="module", autouse=True)
def _tools():
    missing = [t for t in ("iperf3", "crun", "nsenter", "nft") if which(t) is None]
    if missing:
        pytest.skip(f"missing tools: {missing}")


def _left(name: str) -> list[str]:
    """What of the client namespace `name` still exists."""
    netns = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout
    links = subprocess.run(["ip", "-o", "link"], capture_output=True, text=True).stdout
    out = [f"netns {name}"] if name in netns.split() else []
    out += [f"link {name}-h"] if f" {name}-h@" in links or f" {name}-h:" in links else []
    out += [f"nft table {t}" for t in hostnet.nft_tables(name)]
    return out


def test_native_and_bridge_container_over_the_bridge_path(tmp_path: Path, monkeypatch):
    made: list[str] = []
    real = netpath.ClientNetns.create

    def create() -> netpath.ClientNetns:
        ns = real()
        made.append(ns.name)
        assert netpath.hostnet.netns_exists(ns.name)
        return ns

    monkeypatch.setattr(netpath.ClientNetns, "create", staticmethod(create))
    owned = Owned(monkeypatch)
    rows = run_rows(tmp_path, CAMPAIGN)
    heads = {r["platform"]: r for r in rows if r["metric"] == "throughput"}
    assert set(heads) == {"native", "crun-bridge"}, rows
    for r in rows:  # every sample, the client's CPU figure included
        assert r["labels"]["net_path"] == "bridge", r
    for r in heads.values():
        assert r["value"] > 0 and r["valid"], r
    # the client's CPU time still reaches the runner through nsenter (wait4 on the tool)
    client = [r for r in rows if r["metric"] == "client_cpu_pct"]
    assert len(client) == 2 and all(r["value"] > 1 for r in client), client
    assert len(made) == 1  # one client namespace for the run
    assert _left(made[0]) == []
    assert owned.leftovers() == []


def test_cleanup_removes_a_dead_runs_client_namespace():
    ns = netpath.ClientNetns.create()
    try:
        assert hostnet.netns_exists(ns.name) and hostnet.link_exists(f"{ns.name}-h")
        (cleanup.OWNERS_DIR / ns.name).write_text("999999999 0\n")  # its process "died"
        removed = hostnet.clean()
        assert f"netns {ns.name}" in removed and f"link {ns.name}-h" in removed
        assert _left(ns.name) == []
    finally:
        ns.close()


def test_web_client_on_the_bridge_reaches_native_nginx():
    """The web suite's client (wrk) takes the same path (serving/server.py, loadgen.py)."""
    if which("wrk") is None or which("nginx") is None:
        pytest.skip("wrk or nginx missing")
    from virtbench.platforms.base import PlatformSpec
    from virtbench.platforms.native import NativePlatform
    from virtbench.workloads import registry
    from virtbench.workloads.base import RunContext

    w = registry.load_all()["wrk-max"]
    params = {k: p.default for k, p in w.params.items()}
    params |= {"file_sizes": [1], "duration": 1, "connections": 4, "client_path": "bridge"}
    try:
        with NativePlatform(PlatformSpec("native", "native"), "vb-itest-np") as p:
            samples = w().run(p, RunContext(params=params, timeout=60))
        name = netpath.client_netns().name
    finally:
        netpath.close()
    assert {s.labels["net_path"] for s in samples} == {"bridge"}
    assert next(s for s in samples if s.metric == "requests_per_s").value > 0
    assert _left(name) == []


LOW_MAC = "02:00:00:00:00:01"  # below any MAC the kernel draws for a veth or tap


def test_host_network_container_after_a_bridge_port_left():
    """Issue 38's regression: a host-network crun container unreachable over client_path =
    "bridge" ("Connection timed out" after readiness passed). A bridge whose MAC was never set
    takes its lowest port's MAC: while a bridge or nat container's veth had it, the client's
    netns learned the gateway (10.213.0.1) at that MAC, and once the veth left the bridge
    dropped every frame sent there for the 15-45 s the entry stayed REACHABLE. Here a stand-in
    port with the lowest MAC is on the bridge during the first measurement and gone before the
    second, as a nat container's cell and then a host-network one in the same round."""
    if which("wrk") is None or which("nginx") is None or which("crun") is None:
        pytest.skip("wrk, nginx or crun missing")
    from virtbench.naming import NAME_PREFIX
    from virtbench.platforms.base import PlatformSpec
    from virtbench.platforms.container.platform import ContainerPlatform
    from virtbench.workloads import registry
    from virtbench.workloads.base import RunContext

    w = registry.load_all()["wrk-max"]
    params = {k: p.default for k, p in w.params.items()}
    params |= {"file_sizes": [1], "duration": 1, "connections": 4, "client_path": "bridge"}
    stand_in = NAME_PREFIX + secrets.token_hex(3)
    spec = PlatformSpec("crun-host", "container", {"runtime": "crun", "network": "host"})
    runs = []
    try:
        with ContainerPlatform(spec, "vb-itest-ch") as p:
            netpath.client_netns()
            cleanup.claim(stand_in)
            hostnet.create_netns(stand_in)
            hostnet.attach_netns(stand_in, stand_in)
            subprocess.run(["ip", "link", "set", f"{stand_in}-h", "address", LOW_MAC], check=True)
            runs.append(w().run(p, RunContext(params=params, timeout=60)))
            _remove(stand_in)  # the port leaves, as a nat container torn down after its cell
            runs.append(w().run(p, RunContext(params=params, timeout=60)))
    finally:
        _remove(stand_in)
        netpath.close()
    for samples in runs:
        rps = next(s for s in samples if s.metric == "requests_per_s")
        assert rps.value > 0, rps


def _remove(owner: str) -> None:
    hostnet.detach(owner)
    hostnet.delete_netns(owner)
    cleanup.release(owner)
