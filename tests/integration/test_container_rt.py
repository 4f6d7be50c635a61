"""SCHED_FIFO inside a container on a host with RT group scheduling (v1 cpu.rt_runtime_us):
the container's group is granted real-time bandwidth, the parent is raised first and lowered
again at teardown."""

import pytest

from virtbench import cgroups
from virtbench.platforms.base import PlatformSpec
from virtbench.platforms.container.platform import ContainerPlatform

pytestmark = pytest.mark.integration


def _parent_rt() -> tuple[int, int]:
    """(parent's rt runtime, what its groups hold)."""
    layout = cgroups.Layout.detect()
    parent, _period = cgroups.rt_layout(layout)
    if not parent.is_dir():
        return 0, 0
    return cgroups.rt_of(parent)[0], sum(cgroups.rt_children(parent).values())


@pytest.mark.skipif(not cgroups.rt_supported(), reason="no RT group scheduling on this host")
@pytest.mark.parametrize("runtime", ["crun", "runc"])
def test_sched_fifo_in_container(runtime):
    name = {"crun": "vb-itrt01", "runc": "vb-itrt02"}[runtime]
    p = ContainerPlatform(PlatformSpec(name, "container", {"runtime": runtime}), name)
    with p:
        granted = p.labels()["rt_runtime_granted_us"]
        if granted == 0:
            pytest.skip("other virtbench groups hold the host's whole real-time budget")
        r = p.exec(["chrt", "-f", "99", "sh", "-c", "chrt -p $$"], timeout=30)
        assert r.ok, r.stderr
        assert "SCHED_FIFO" in r.stdout and "priority: 99" in r.stdout
        runtime_now, held = _parent_rt()
        assert runtime_now >= held >= granted
    runtime_after, held_after = _parent_rt()
    assert runtime_after == held_after  # the parent keeps no bandwidth nobody holds
    assert name not in cgroups.leftovers()


@pytest.mark.skipif(not cgroups.rt_supported(), reason="no RT group scheduling on this host")
def test_rt_runtime_zero_means_no_sched_fifo():
    p = ContainerPlatform(PlatformSpec("c", "container", {"rt_runtime_us": 0}), "vb-itrt03")
    with p:
        r = p.exec(["chrt", "-f", "99", "true"], timeout=30)
    assert not r.ok and "Operation not permitted" in r.stderr
