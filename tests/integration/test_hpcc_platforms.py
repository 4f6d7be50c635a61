"""hpcc (LINPACK) completes where it used to stall at 0% CPU: a NAT container, a TCG VM and a
container in that VM (issue 11). Tiny orders: this checks that it runs, not how fast."""

from __future__ import annotations

import time

import pytest

from virtbench import tools
from virtbench.errors import WorkloadError
from virtbench.platforms import registry
from virtbench.platforms.base import PlatformSpec
from virtbench.platforms.container.platform import ContainerPlatform
from virtbench.platforms.vm.platform import VmPlatform
from virtbench.workloads.base import RunContext
from virtbench.workloads.cpu import HpccLinpack, HpccLinpackSweep

pytestmark = pytest.mark.integration


def _linpack(platform, n: int = 300) -> float:
    w = HpccLinpack()
    params = {k: p.default for k, p in w.params.items()} | {"n": n}
    by = {s.metric: s for s in w.run(platform, RunContext(params=params, timeout=240))}
    assert "invalid" not in by["hpl_gflops"].labels
    return by["hpl_gflops"].value


@pytest.mark.parametrize("network", ["nat", "bridge"])
def test_hpcc_in_an_isolated_network_container(network):
    name = {"nat": "vb-ithp01", "bridge": "vb-ithp02"}[network]
    p = ContainerPlatform(PlatformSpec(name, "container", {"network": network}), name)
    with p:
        t = time.monotonic()
        assert _linpack(p) > 0
        assert time.monotonic() - t < 30  # was: 10 s per hostname lookup, minutes in all
        got = p.exec(["getent", "ahosts", name], timeout=5)  # getaddrinfo, as Open MPI
        assert got.ok and "127.0.1.1" in got.stdout
        w = HpccLinpackSweep()
        params = {"orders": [200, 400], "nb": 80}
        samples = w.run(p, RunContext(params=params, timeout=120))
        assert [s.labels["order"] for s in samples] == [200, 400]


@pytest.mark.skipif(tools.which("qemu-system-x86_64") is None, reason="QEMU not installed")
def test_hpcc_in_a_tcg_vm_and_a_container_inside_it():
    vm = VmPlatform(PlatformSpec("vm", "vm", {"accel": "tcg", "network": "nat"}), "vb-ithp03")
    with vm:
        assert _linpack(vm, n=200) > 0
        inner = registry.create(
            PlatformSpec("crun@vm", "container", {"network": "nat"}), "vb-ithp04", host=vm
        )
        with inner:
            assert _linpack(inner, n=200) > 0


def test_a_stalled_hpcc_fails_in_seconds_with_the_reason():
    """Without /etc/hosts the NAT container stalls hpcc again: the watchdog stops it."""
    name = "vb-ithp05"
    p = ContainerPlatform(PlatformSpec(name, "container", {"network": "nat"}), name)
    with p:
        assert p.exec(["rm", "-f", "/etc/hosts"], timeout=10).ok
        t = time.monotonic()
        with pytest.raises(WorkloadError, match=r"hpcc-linpack: stalled after \d+s: no CPU used"):
            _linpack(p)
        assert time.monotonic() - t < 30  # the cell timeout here is 240 s
