"""container@vm dispatch and its option checks (no guest needed)."""

from __future__ import annotations

import pytest

from virtbench.errors import PlatformError
from virtbench.platforms.base import PlatformSpec
from virtbench.platforms.container.platform import ContainerPlatform
from virtbench.platforms.vm.stacked import StackedContainer


class StubHost:
    name = "vm"
    kind = "vm"


def test_a_container_with_a_host_runs_inside_it():
    c = ContainerPlatform(PlatformSpec("c@vm", "container", {}), "vb-abc123", host=StubHost())
    assert isinstance(c, StackedContainer) and c.kind == "container"
    assert c.workdir == "/data" and c.dir.endswith("/vb-abc123")


def test_without_host_it_is_the_plain_container_platform():
    c = ContainerPlatform(PlatformSpec("c", "container", {}), "vb-abc123")
    assert type(c) is ContainerPlatform


@pytest.mark.parametrize(
    "opts,needle",
    [({"runtime": "runsc"}, "allowed inside a VM: crun, runc"), ({"network": "nat"}, "nat")],
)
def test_unsupported_modes_inside_a_vm_are_clear_errors(opts, needle):
    with pytest.raises(PlatformError, match=needle):
        ContainerPlatform(PlatformSpec("c@vm", "container", opts), "vb-x", host=StubHost())


def test_config_is_the_container_platforms_spec():
    c = ContainerPlatform(
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
