"""Platform capabilities (platforms/capabilities.py): who offers what, the CpuWeight knob and
the clear error when a platform lacks what a scenario or workload needs."""

from __future__ import annotations

from contextlib import ExitStack
from types import SimpleNamespace

import pytest

from tests.unit.fakes import FakePlatform
from virtbench.errors import PlatformError, WorkloadError
from virtbench.platforms import capabilities as caps
from virtbench.platforms import cpu_weight
from virtbench.platforms.base import Accounting, ExecResult, PlatformSpec
from virtbench.platforms.container.platform import ContainerPlatform
from virtbench.platforms.native import NativePlatform
from virtbench.platforms.vm.platform import VmPlatform
from virtbench.platforms.vm.stacked import StackedContainer
from virtbench.scenarios import weights
from virtbench.workloads.base import RunContext
from virtbench.workloads.lifecycle import ContainerStartup
from virtbench.workloads.vm_lifecycle import VmBoot, VmImageCreate

ALL = (
    caps.CpuWeight,
    caps.RtBudget,
    caps.ColdStart,
    caps.FreshBoot,
    caps.DiskImages,
    caps.BackendThreads,
    caps.VcpuThreads,
)
OFFERS = {
    NativePlatform: {caps.CpuWeight},
    ContainerPlatform: {caps.CpuWeight, caps.RtBudget, caps.ColdStart},
    VmPlatform: {caps.CpuWeight, caps.FreshBoot, caps.DiskImages, caps.BackendThreads}
    | {caps.VcpuThreads},
    # through its VM: it runs on the guest's vCPUs, whose host threads are CFS tasks (each
    # neighbour of a container@vm gets a VM of its own), so host RR competition is not in effect
    StackedContainer: {caps.CpuWeight, caps.BackendThreads, caps.VcpuThreads},
}


@pytest.mark.parametrize("cls", list(OFFERS))
def test_each_platform_offers_what_applies_to_it(cls):
    assert {c for c in ALL if issubclass(cls, c)} == OFFERS[cls]


def test_a_missing_capability_names_the_platform_and_the_need():
    with pytest.raises(PlatformError, match=r"the weights scenario \(target\) needs a CPU weight"):
        weights.apply([(FakePlatform("target", []), 256, "target")], None, ExitStack())
    with pytest.raises(WorkloadError, match="platform 'box' \\(type fake\\) does not offer"):
        VmBoot().run(FakePlatform("box", []), RunContext(params={}))
    with pytest.raises(WorkloadError, match="vm-image-create needs creating VM disk images"):
        VmImageCreate().run(FakePlatform("box", []), RunContext(params={}))


class _Grouped(FakePlatform):
    def __init__(self, cgroups):
        super().__init__("target", [])
        self.cgroups = cgroups

    def accounting(self):
        return Accounting(cgroups=self.cgroups)


def test_weight_on_the_own_cgroup_is_set_and_restored(tmp_path):
    (tmp_path / "cpu.shares").write_text("1024\n")
    p = _Grouped({"cpu": str(tmp_path)})
    with cpu_weight.weighted(p, 256, "its own cgroup") as label:
        assert (tmp_path / "cpu.shares").read_text() == "256"
        assert label == f"cpu.shares=256 on its own cgroup {tmp_path}"
    assert (tmp_path / "cpu.shares").read_text() == "1024"
    (tmp_path / "cpu.weight").write_text("100\n")
    with cpu_weight.weighted(_Grouped({"unified": str(tmp_path)}), 256, "x") as label:
        assert label == f"cpu.weight=10 on x {tmp_path}"  # v2: the shares scale converted
    assert (tmp_path / "cpu.weight").read_text() == "100"


def test_stacked_container_passes_its_vms_back_end_threads_on():
    group = caps.ThreadGroup([10], [11, 12], "/sys/fs/cgroup/cpu/virtbench/vb-vm")
    vm = SimpleNamespace(backend_threads=lambda: group)
    assert StackedContainer.backend_threads(SimpleNamespace(host=vm)) is group
    assert StackedContainer.backend_threads(SimpleNamespace(host=object())) is None


def test_vm_fresh_sibling_and_boot_phases():
    vm = VmPlatform(PlatformSpec("vm", "vm", {"vcpus": 2}), "vb-abc123")
    sibling = vm.fresh_sibling()
    assert type(sibling) is VmPlatform and sibling.spec is vm.spec
    assert sibling.instance.startswith("vb-") and sibling.instance != vm.instance
    with pytest.raises(PlatformError, match="not provisioned"):
        sibling.boot_phases()
    vm.machine = SimpleNamespace(timings={"boot_s": 3.0, "qmp_s": 0.2}, vcpu_threads=[7, 8])
    vm.accel_used = "tcg"
    assert vm.boot_phases() == caps.BootPhases(3.0, 0.2, {"accel_used": "tcg", "vcpus": 2})
    assert vm.vcpu_threads() == [7, 8]


class _Cold(FakePlatform):
    def cold_start(self, argv, timeout=60):
        result = ExecResult(argv, 0, "100.002\n", "", 0.01)
        return caps.StartupTiming(100.0, result, 100.005, 0.001, 0.003)


def test_container_startup_uses_cold_starts_where_offered():
    ctx = RunContext(params={"starts": 2})
    cold = {s.metric: s for s in ContainerStartup().run(_Cold("c", []), ctx)}
    assert cold["startup_ms"].labels["mode"] == "cold-start"
    assert cold["startup_ms"].value == pytest.approx(2.0)
    assert cold["teardown_ms"].value == pytest.approx(3.0)
    # no runtime_at from the engine: its runtime began after its 1 ms of preparation
    assert cold["prepare_ms"].value == pytest.approx(1.0)
    assert cold["runtime_startup_ms"].value == pytest.approx(1.0)


class _ColdTimed(FakePlatform):
    def cold_start(self, argv, timeout=60):
        result = ExecResult(argv, 0, "100.010\n", "", 0.01)
        return caps.StartupTiming(100.0, result, 100.012, 0.004, 0.003, runtime_at=100.006)


def test_container_startup_splits_preparation_from_the_runtime():
    ctx = RunContext(params={"starts": 3})
    by = {s.metric: s for s in ContainerStartup().run(_ColdTimed("c", []), ctx)}
    assert by["prepare_ms"].value == pytest.approx(6.0)
    assert by["runtime_startup_ms"].value == pytest.approx(4.0)
    assert by["startup_ms"].value == pytest.approx(10.0)
    assert ContainerStartup.primary().name == "runtime_startup_ms"
    with pytest.raises(WorkloadError, match="no timestamp"):  # the fake's exec prints nothing
        ContainerStartup().run(FakePlatform("n", []), ctx)


def test_stacked_container_runs_on_its_vms_vcpu_threads():
    vm = VmPlatform(PlatformSpec("vm", "vm", {"vcpus": 2}), "vb-abc124")
    vm.machine = SimpleNamespace(vcpu_threads=[7, 8])
    assert StackedContainer.vcpu_threads(SimpleNamespace(host=vm)) == [7, 8]
    assert StackedContainer.vcpu_threads(SimpleNamespace(host=object())) == []


class _Backed(FakePlatform):
    def __init__(self, group):
        super().__init__("target", [])
        self.group = group

    def backend_threads(self):
        return self.group


def test_the_back_end_group_joins_the_cells_shared_budget(tmp_path, monkeypatch):
    from tests.unit.test_cgroups import _fake_v1
    from virtbench import cleanup
    from virtbench.cgroups import CpuBudget, Layout

    monkeypatch.setattr(cleanup, "OWNERS_DIR", tmp_path / "owners")
    layout = _fake_v1(tmp_path)
    monkeypatch.setattr(Layout, "detect", classmethod(lambda cls: layout))
    # a fake tree's control files are plain files: rmdir cannot take them with the group
    gone: list[str] = []
    monkeypatch.setattr(weights.Cgroup, "destroy", lambda self: gone.append(self.name))
    budget = CpuBudget.create(100_000, layout=layout)
    home = tmp_path / "cpu/virtbench" / budget.name / "vb-vm"
    home.mkdir()
    group = caps.ThreadGroup([10], [11, 12], str(home))
    notes: dict = {}
    with weights._backend_group([(_Backed(group), "target")], 2048, notes, budget):
        (be,) = [d for d in home.parent.iterdir() if d.name.endswith("-be")]
        assert (be / "cpu.shares").read_text() == "2048"
        assert "inside the shared budget shared:100000/100000" in notes["host_weight_applied_to"]
    assert gone == [f"{budget.name}/{be.name}"]  # gone with the cell
    with weights._backend_group([(_Backed(group), "target")], 512, notes):
        # no budget: a top-level group, as before
        assert [d.name for d in (tmp_path / "cpu/virtbench").iterdir() if d.name.endswith("-be")]
