"""container@vm dispatch and its option checks (no guest needed)."""

from __future__ import annotations

import pytest

from virtbench.errors import PlatformError
from virtbench.platforms import registry
from virtbench.platforms.base import PlatformSpec
from virtbench.platforms.container.platform import ContainerPlatform
from virtbench.platforms.vm.stacked import StackedContainer


class StubHost:
    name = "vm"
    kind = "vm"
    options = {"vcpus": 1}


def test_a_container_with_a_host_runs_inside_it():
    c = registry.create(PlatformSpec("c@vm", "container", {}), "vb-abc123", host=StubHost())
    assert isinstance(c, StackedContainer) and c.kind == "container"
    assert c.workdir == "/data" and c.dir.endswith("/vb-abc123")


def test_without_host_it_is_the_plain_container_platform():
    c = registry.create(PlatformSpec("c", "container", {}), "vb-abc123")
    assert type(c) is ContainerPlatform


@pytest.mark.parametrize(
    "opts,needle",
    [
        ({"runtime": "runsc"}, "allowed inside a VM: crun, runc"),
        ({"runtime": "podman"}, "allowed inside a VM: crun, runc"),
        ({"publish_port_offset": -1}, "publish_port_offset = -1 is out of range; allowed: 0"),
        ({"cpu_weight": 1}, "cpu_weight = 1 is out of range; allowed: 2..262144"),
    ],
)
def test_unsupported_modes_inside_a_vm_are_clear_errors(opts, needle):
    with pytest.raises(PlatformError, match=needle):
        registry.create(PlatformSpec("c@vm", "container", opts), "vb-x", host=StubHost())


def test_config_is_the_container_platforms_spec():
    c = registry.create(
        PlatformSpec("c@vm", "container", {"storage": "volume", "cpu_weight": 256}),
        "vb-abc123",
        host=StubHost(),
    )
    cfg = c._config()
    assert cfg["root"]["path"] == f"{c.dir}/rootfs"
    assert cfg["linux"]["cgroupsPath"] == "/virtbench/vb-abc123"
    assert cfg["linux"]["resources"]["cpu"]["shares"] == 256
    assert any(m["destination"] == "/data" and m["type"] == "bind" for m in cfg["mounts"])
    assert not any(n["type"] == "network" for n in cfg["linux"]["namespaces"])


def test_a_cpuset_names_guest_cpus():
    c = registry.create(
        PlatformSpec("c@vm", "container", {"cpuset": [1]}), "vb-abc123", host=StubHost()
    )
    with pytest.raises(PlatformError, match=r"cpuset = \[1\].*allowed: 0..0 \(its vcpus = 1\)"):
        c._check_cpuset()


def test_bridge_and_nat_join_the_guest_netns():
    from virtbench.platforms.vm import innernet

    c = registry.create(
        PlatformSpec("c@vm", "container", {"network": "nat"}), "vb-abc123", host=StubHost()
    )
    c.net = innernet.InnerAttachment("nat", "10.214.0.2", "/run/netns/vb-abc123")
    namespaces = c._config()["linux"]["namespaces"]
    assert {"type": "network", "path": "/run/netns/vb-abc123"} in namespaces


def test_bridge_needs_a_vm_host():
    c = registry.create(
        PlatformSpec("c@vm", "container", {"network": "bridge"}), "vb-abc123", host=StubHost()
    )
    with pytest.raises(PlatformError, match="network = .bridge. needs a vm host"):
        c._attach("bridge")


def test_layering_campaign_stacks_containers_on_its_vm():
    from virtbench.campaign import loader

    c = loader.load("layering")
    by_name = {p.name: p for p in c.platforms}
    assert c.settings.baseline == "vm" and by_name["vm"].type == "vm"
    stacked = [p for p in c.platforms if p.host is not None]
    assert {p.options["network"] for p in stacked} == {"host", "bridge"}
    assert all(p.host is by_name["vm"] for p in stacked)
    assert {t.test_case for t in c.tests} == {"wrk-max", "httperf-sweep", "sysbench-cpu-1t"}


def test_bad_vm_option_is_a_campaign_error_at_load():
    from virtbench.campaign import loader
    from virtbench.errors import CampaignError

    text = (
        '[[platforms]]\nname = "v"\ntype = "vm"\nvcpus = 4096\n'
        '[suites.cpu]\ntest_cases = ["sysbench-cpu-1t"]\n'
    )
    with pytest.raises(CampaignError, match=r"platforms\[0\]\.vcpus") as exc:
        loader.parse(text, "c.toml")
    assert "4096" in str(exc.value) and "1.." in str(exc.value)
