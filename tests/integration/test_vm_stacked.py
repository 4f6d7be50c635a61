"""container@vm for real: crun inside a TCG guest, driven only through the guest agent."""

from __future__ import annotations

import pytest

from virtbench import tools
from virtbench.platforms.base import PlatformSpec
from virtbench.platforms.vm import cleaner
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
