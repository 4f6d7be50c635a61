"""podman as the container engine: the same overlay root, limits, exec/spawn, network modes."""

import time

import pytest

from virtbench import cgroups, hostnet, tools
from virtbench.platforms.base import PlatformSpec
from virtbench.platforms.container.platform import ContainerPlatform
from virtbench.platforms.container.runtimes import get as get_runtime
from virtbench.platforms.container.storage import STATE_DIR

pytestmark = [
    pytest.mark.integration,
    pytest.mark.skipif(tools.which("podman") is None, reason="podman not installed"),
]


@pytest.mark.parametrize("network", ["host", "bridge"])
def test_podman_exec_spawn_limits(network):
    name = {"host": "vb-itpm01", "bridge": "vb-itpm02"}[network]
    opts = {"runtime": "podman", "network": network, "pids_max": 200}
    with ContainerPlatform(PlatformSpec(name, "container", opts), name) as p:
        r = p.exec(["sh", "-c", "cat /sys/fs/cgroup/pids/pids.max; sysbench --version"])
        assert r.ok, r.stderr
        assert r.stdout.split()[0] == "200"  # the limit reached the container's group
        if cgroups.rt_supported() and p.labels().get("rt_runtime_granted_us"):
            assert p.exec(["chrt", "-f", "99", "true"]).ok
        proc = p.spawn(["sleep", "60"])
        for _ in range(100):
            if proc.pid:
                break
            time.sleep(0.05)
        assert proc.pid and proc.pid in p.accounting().pids  # a host pid, not the inner one
        assert proc.stop(timeout=2).returncode != 0 and proc.poll() is not None
        assert bool(p.accounting().net_ifaces) == (network == "bridge")
    assert name not in cgroups.leftovers()
    assert name not in get_runtime("podman").list_ids()
    assert not hostnet.netns_exists(name) and not (STATE_DIR / name).exists()
