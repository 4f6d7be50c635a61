"""container@vm for real: crun inside a TCG guest, driven only through the guest agent."""

from __future__ import annotations

import json
import subprocess
import time
from pathlib import Path

import pytest

from virtbench import cleanup, hostnet, tools
from virtbench.platforms import registry
from virtbench.platforms.base import PlatformSpec
from virtbench.platforms.vm import cleaner
from virtbench.platforms.vm.platform import VmPlatform
from virtbench.runner.run import provisioned

pytestmark = [
    pytest.mark.integration,
    pytest.mark.skipif(tools.which("qemu-system-x86_64") is None, reason="QEMU not installed"),
]

VM = PlatformSpec("vm", "vm", {"accel": "tcg", "network": "user"})


def test_crun_container_inside_a_vm():
    spec = PlatformSpec("crun@vm", "container", {"runtime": "crun", "storage": "volume"}, host=VM)
    with provisioned(spec) as c:
        assert c.kind == "container" and c.host is not None and c.host.kind == "vm"
        labels = c.labels()
        assert labels["stacked_on"] == "vm" and labels["host_accel_used"] == "tcg"
        r = c.exec(["sh", "-c", "hostname; cat /proc/1/cmdline; echo; cat /proc/self/cgroup"])
        assert r.ok, r.stderr
        name, init, cgroup = r.stdout.splitlines()[:3]
        assert name == c.instance and init.startswith("sleep")  # PID 1 is the container's
        assert cgroup == f"0::/virtbench/{c.instance}"  # crun's cgroup inside the guest
        assert c.exec(["sh", "-c", f"echo x > {c.workdir}/f && cat {c.workdir}/f"]).stdout == "x\n"
        r = c.exec(["false"])
        assert r.returncode == 1 and r.argv == ["false"]
        qemu_pid = c.accounting().extra["qemu_pid"]
        assert qemu_pid in cleaner.leftover_qemus()
    assert qemu_pid not in cleaner.leftover_qemus()


# --- one 1-vCPU guest on the host bridge shared by the tests below (one boot) ---------------
@pytest.fixture(scope="module")
def guest():
    vm = VmPlatform(
        PlatformSpec("vm", "vm", {"accel": "tcg", "network": "bridge", "vcpus": 1}), "vb-stk001"
    )
    with vm:
        yield vm
    assert "vb-stk001" not in cleaner.leftover_qemus().values()


def container(vm, name: str, instance: str, **opts):
    return registry.create(PlatformSpec(name, "container", opts), instance, host=vm)


def assert_host_clean(instance: str) -> None:
    """Nothing of the container stays on the host: links, nft tables, address leases, claim."""
    assert not any(p.name.startswith(instance) for p in Path("/sys/class/net").iterdir())
    assert not hostnet.nft_tables(instance)
    assert instance not in hostnet._leases().values()
    assert not cleanup.in_use(instance)


def test_cpu_weights_split_one_vcpu_about_4_to_1(guest):
    """Seed weights 1024 vs 256 in the guest's cgroup v2 (crun: cpu.weight 39 vs 10)."""
    hi = container(guest, "hi", "vb-stk0w1", cpu_weight=1024)
    lo = container(guest, "lo", "vb-stk0w2", cpu_weight=256)
    with hi, lo:
        assert hi.labels()["guest_cgroup"] == "v2"
        loops = [c.spawn(["sh", "-c", "while :; do :; done"]) for c in (hi, lo)]
        try:
            time.sleep(1)  # both loops running
            before = [c.guest_cgroup_stat()["usage_usec"] for c in (hi, lo)]
            time.sleep(5)
            after = [c.guest_cgroup_stat()["usage_usec"] for c in (hi, lo)]
        finally:
            for p in loops:
                p.stop(timeout=2)
    used = [b - a for a, b in zip(before, after, strict=True)]
    assert 2.5 < used[0] / used[1] < 6.0, used  # generous: 3.9 expected, TCG is noisy


def test_limits_land_in_the_guests_cgroup(guest):
    c = container(
        guest, "lim", "vb-stk0l1", cpu_quota_us=50000, memory_limit="64M", pids_max=50, cpuset=[0]
    )
    with c:
        r = (
            guest.exec(["sh", "-c", "cat cpu.max memory.max pids.max cpuset.cpus"], timeout=30)
            if False
            else guest.exec(
                ["sh", "-c", f"cd {c.guest_cgroup} && cat cpu.max memory.max pids.max cpuset.cpus"]
            )
        )
        assert r.stdout.split("\n")[:4] == ["50000 100000", str(64 << 20), "50", "0"], r.stdout
        r = c.exec(["sh", "-c", "head -c 200M /dev/zero | tail > /dev/null"])
        assert r.returncode == 137 and "OOM killer" in r.stderr


@pytest.mark.parametrize("mode", ["nat", "bridge"])
def test_network_modes_reach_a_server_in_the_container(guest, mode):
    instance = f"vb-stk0n{mode[0]}"
    c = container(guest, mode, instance, network=mode)
    with c:
        addr = c.accounting().extra["address"]
        assert addr.startswith("10.214." if mode == "nat" else "10.213.")
        server = c.spawn(["iperf3", "-s", "-1", "-p", "5201"])
        host, port = c.endpoint(5201)
        if mode == "bridge":
            assert (host, port) == (addr, 5201)  # directly on the host's bridge
        else:
            assert (host, port) == (guest.net.guest_ip, 5201 + 20000)  # the guest's DNAT
        out: dict = {}
        for _ in range(20):  # the server starts asynchronously in the guest
            r = subprocess.run(
                ["iperf3", "-c", host, "-p", str(port), "-t", "1", "-J"],
                capture_output=True,
                text=True,
                timeout=30,
            )
            out = json.loads(r.stdout or "{}")
            if r.returncode == 0 and "error" not in out:  # -J reports a refusal with exit 0
                break
            time.sleep(0.5)
        server.stop(timeout=2)
        assert out.get("end", {}).get("sum_received", {}).get("bits_per_second", 0) > 0, out
    assert_host_clean(instance)
