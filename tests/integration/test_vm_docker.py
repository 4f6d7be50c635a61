"""Docker inside a TCG guest (container@vm, runtime docker), for real: virtbench starts dockerd
in the guest, imports the guest's root as the image, runs sysbench cpu and an iperf3 round trip
from the host over the guest's network (host) and a published port (nat: userland proxy, then
iptables DNAT after a daemon restart), and stops it all with the VM. One boot; minutes under
TCG (dockerd start and the image import dominate)."""

from __future__ import annotations

import os
import time

import pytest

from virtbench import tools
from virtbench.platforms import registry
from virtbench.platforms.base import PlatformSpec
from virtbench.platforms.container import docker, dockerd
from virtbench.platforms.vm import cleaner, guestdocker
from virtbench.platforms.vm.platform import VmPlatform
from virtbench.workloads import registry as workloads
from virtbench.workloads.base import RunContext

pytestmark = [
    pytest.mark.integration,
    pytest.mark.skipif(tools.which("qemu-system-x86_64") is None, reason="QEMU not installed"),
]


@pytest.fixture(scope="module")
def guest():
    vm = VmPlatform(
        PlatformSpec("vm", "vm", {"accel": "tcg", "network": "bridge", "vcpus": 1}), "vb-dkv001"
    )
    with vm:
        yield vm
    assert "vb-dkv001" not in cleaner.leftover_qemus().values()


def _run(platform, name: str, **params):
    w = workloads.load_all()[name]
    full = {k: v.default for k, v in w.params.items()} | params
    cpus = sorted(os.sched_getaffinity(0))
    server, client = ([cpus[-1]], [cpus[0]]) if len(cpus) > 1 else (None, None)
    ctx = RunContext(params=full, cpus=server, client_cpus=client, timeout=300)
    samples = w().run(platform, ctx)
    (head,) = [s for s in samples if s.metric == w.primary().name and s.role == "target"]
    return head


def _container(vm, instance: str, **opts):
    spec = PlatformSpec(instance, "container", {"runtime": "docker", **opts})
    return registry.create(spec, instance, host=vm)


def test_docker_host_network_overlay_runs_cpu_and_network(guest):
    t0 = time.monotonic()
    c = _container(guest, "vb-dkvh1", network="host", storage="overlay", pids_max=200)
    with c:
        provisioned = time.monotonic() - t0
        r = c.exec(["stat", "-fc", "%T", "/data"])
        assert r.ok and r.stdout.strip() == "overlayfs", r.stderr  # Docker's overlay2 layer
        assert len(c._cgroup_leaf) == 64  # Docker's group /virtbench/<id> in the guest
        r = guest.exec(["cat", f"{c.guest_cgroup}/pids.max", f"{c.guest_cgroup}/cgroup.procs"])
        assert r.ok and r.stdout.split()[0] == "200", r.stderr  # its --pids-limit
        assert c.guest_cgroup_stat()["usage_usec"] > 0
        copied = c.put_file("/etc/hostname", "/data/in/hostname", 0o600)  # docker cp
        r = c.exec(["stat", "-c", "%a", copied])
        assert r.ok and r.stdout.strip() == "600", r.stderr
        labels = c.labels()
        assert labels["docker_storage_driver"] == "overlay2", labels
        assert labels["runtime_version"] and labels["docker_start_s"] > 0
        assert labels["docker_image"] in ("seeded", "imported") and labels["stacked_on"] == "vm"
        cpu = _run(c, "sysbench-cpu-1t", duration=2)
        assert cpu.value > 0 and not cpu.labels.get("invalid")
        net = _run(c, "iperf3-tcp", duration=2)
        assert net.value > 0 and not net.labels.get("invalid"), net.labels
        print(
            f"\ndocker@vm: provision {provisioned:.1f} s (dockerd {labels['docker_start_s']} s,"
            f" image {labels['docker_image']} {labels.get('docker_import_s', '')});"
            f" sysbench {cpu.value:.1f} {cpu.unit};"
            f" iperf3 host {net.value:.3g} {net.unit}"
        )
    r = guest.exec([*guestdocker.CLI, "ps", "-aq"], timeout=60)
    assert r.ok and not r.stdout.strip()  # the container is gone, the daemon still up


@pytest.mark.parametrize("nat", [dockerd.PROXY, dockerd.IPTABLES])
def test_docker_nat_volume_reaches_a_published_port(guest, nat):
    c = _container(guest, f"vb-dkvn{nat[0]}", network="nat", storage="volume", docker_nat=nat)
    t0 = time.monotonic()
    with c:
        provisioned = time.monotonic() - t0
        assert c.exec(["stat", "-fc", "%T", "/data"]).stdout.strip() != "overlayfs"  # volume
        labels = c.labels()
        assert labels["docker_nat"] == nat
        port = c.server_ports()[0]
        host, outer = c.endpoint(port)
        inner, published = c.docker.ports[c.instance]
        assert (host, outer) == (guest.net.guest_ip, published + port - inner)
        proxies = c.docker._proxy_ports()
        assert any(published <= p < published + docker.PORT_BLOCK for p in proxies) == (
            nat == dockerd.PROXY
        )
        net = _run(c, "iperf3-tcp", duration=2)
        assert net.value > 0 and not net.labels.get("invalid"), net.labels
        print(f"\ndocker@vm nat {nat}: provision {provisioned:.1f} s; iperf3 {net.value:.3g}")


def test_vm_teardown_stops_dockerd(guest):
    assert guest.exec(["pgrep", "-x", "dockerd"]).ok  # started by the tests above
    guestdocker.stop(guest)  # what the VM's teardown hook runs
    assert not guest.exec(["pgrep", "-x", "dockerd"]).ok
    assert not guest.exec(["pgrep", "-x", "containerd"]).ok
