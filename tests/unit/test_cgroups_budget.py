"""The shared CPU budget (cgroups/budget.py) and the runner's choice of it (runner/budget.py),
against fake v1/v2 trees: where the groups go, what quota lands where, weights, lifting,
labels and clean-up."""

import subprocess
from pathlib import Path

import pytest

from tests.unit.test_cgroups import _fake_v1, _fake_v2
from virtbench import cgroups, cleanup
from virtbench.cgroups import Cgroup, CpuBudget
from virtbench.cpubudget import BudgetFacts
from virtbench.errors import PlatformError
from virtbench.platforms.base import PlatformSpec
from virtbench.runner import budget as runner_budget


@pytest.fixture(autouse=True)
def _owners(tmp_path, monkeypatch):
    monkeypatch.setattr(cleanup, "OWNERS_DIR", tmp_path / "owners")


def test_v1_budget_carries_the_quota_and_children_live_inside(tmp_path):
    layout = _fake_v1(tmp_path)
    b = CpuBudget.create(50_000, layout=layout)
    assert b.name.startswith("vb-") and b.name.endswith("-cpu")
    assert cleanup.in_use(b.name)  # claimed: a concurrent `virtbench cleanup` spares it
    bdir = tmp_path / "cpu/virtbench" / b.name
    assert (bdir / "cpu.cfs_quota_us").read_text() == "50000"
    assert (bdir / "cpu.cfs_period_us").read_text() == "100000"
    assert b.facts() == BudgetFacts("shared", 50000, 100000)

    a = Cgroup.create(b.child("vb-aaaaaa"), layout=layout)
    c = Cgroup.create(b.child("vb-cccccc"), layout=layout)
    assert a.paths()["cpu"] == str(bdir / "vb-aaaaaa")
    assert (tmp_path / "pids/virtbench" / b.name / "vb-cccccc").is_dir()
    assert b.holds(a.paths()) and b.holds(c.paths())
    top = Cgroup.create("vb-outside", layout=layout)
    assert not b.holds(top.paths())
    assert not b.holds({})
    assert b.members() == ["vb-aaaaaa", "vb-cccccc"]
    # no quota of their own: the budget's is theirs
    assert not (bdir / "vb-aaaaaa/cpu.cfs_quota_us").exists()


def test_v1_weights_count_environments_not_groups(tmp_path):
    layout = _fake_v1(tmp_path)
    b = CpuBudget.create(50_000, layout=layout)
    Cgroup.create(b.child("vb-aaaaaa"), layout=layout)
    Cgroup.create(b.child("vb-bbbbbb"), layout=layout)
    Cgroup.create("vb-cccccc", layout=layout)
    # the budget weighs as its two environments, the parent as three environments
    assert (tmp_path / "cpu/virtbench" / b.name / "cpu.shares").read_text() == "2048"
    assert (tmp_path / "cpu/virtbench/cpu.shares").read_text() == "3072"


def test_v2_budget_delegates_to_its_children(tmp_path):
    layout = _fake_v2(tmp_path)
    b = CpuBudget.create(50_000, layout=layout)
    bdir = tmp_path / "virtbench" / b.name
    assert (bdir / "cpu.max").read_text() == "50000 100000"
    # the kernel offers the parent's controllers in a new group; the fake writes them
    (bdir / "cgroup.controllers").write_text("cpuset cpu io memory pids\n")
    (bdir / "cgroup.subtree_control").write_text("")
    child = Cgroup.create(b.child("vb-dddddd"), cpu_weight=1024, layout=layout)
    assert (bdir / "cgroup.subtree_control").read_text() == "+cpu +cpuset +memory +io +pids"
    assert child.paths() == {"unified": str(bdir / "vb-dddddd")}
    assert b.holds(child.paths())
    assert (bdir / "cpu.weight").read_text() == "100"  # one environment inside


def test_no_child_without_its_budget_and_names_checked(tmp_path):
    layout = _fake_v1(tmp_path)
    with pytest.raises(PlatformError, match="does not exist"):
        Cgroup.create("vb-gone-cpu/vb-eeeeee", layout=layout)  # never made without a quota
    assert not (tmp_path / "cpu/virtbench/vb-gone-cpu").exists()
    with pytest.raises(ValueError, match="vb-"):
        Cgroup("vb-ok/other", layout)


def test_budget_and_children_are_leftovers_the_cleaner_removes(tmp_path, monkeypatch):
    monkeypatch.setattr(cleanup, "OWNERS_DIR", tmp_path / "owners")
    layout = _fake_v1(tmp_path)
    b = CpuBudget.create(50_000, layout=layout)
    Cgroup.create(b.child("vb-ffffff"), layout=layout)
    (tmp_path / "cpu/virtbench/vb-users").mkdir()  # someone else's, named like ours
    assert b.name in cgroups.leftovers(layout)
    # claimed by this (live) process: spared; the unclaimed one is left alone, said so
    assert cgroups.clean(layout) == ["left alone: cgroup virtbench/vb-users (no virtbench record)"]
    dead = subprocess.Popen(["true"])
    dead.wait()
    for claim in (tmp_path / "owners").iterdir():  # the owner died (its claims stay)
        claim.write_text(f"{dead.pid} 1\n")
    # the fake tree's files keep rmdir from working: the removal is what is asked of it
    removed: list[Path] = []
    import virtbench.cgroups.group as group_mod

    def rmdir_tree(d, deadline):
        removed.append(d)

    orig = group_mod._rmdir_tree
    group_mod._rmdir_tree = rmdir_tree
    try:
        out = cgroups.clean(layout)
    finally:
        group_mod._rmdir_tree = orig
    assert f"cgroup virtbench/{b.name}" in out
    assert tmp_path / "cpu/virtbench" / b.name in removed
    assert tmp_path / "cpu/virtbench/vb-users" not in removed  # the tree, children first inside


# --- runner/budget.py: which budget a target gets, and what its samples say ------------------
CON = PlatformSpec("con", "container", {"cpu_quota_us": 50000})
VM = PlatformSpec("vm", "vm", {"cpu_quota_us": 40000, "cpu_period_us": 80000})
FREE_VM = PlatformSpec("vm0", "vm", {})


@pytest.mark.parametrize(
    "spec,quota",
    [
        (CON, (50000, None)),
        (PlatformSpec("n", "native", {}), None),
        (PlatformSpec("c@vm", "container", {}, host=VM), (40000, 80000)),  # its VM's
        (PlatformSpec("c@vm0", "container", {"cpu_quota_us": 50000}, host=FREE_VM), None),
    ],
)
def test_host_quota(spec, quota):
    assert runner_budget.host_quota(spec) == quota


def test_notes_say_own_and_the_guest_quota_the_host_cannot_share():
    assert runner_budget.note(CON) == BudgetFacts("own")  # a quota, but no budget: its own
    assert runner_budget.facts(None, CON) == BudgetFacts("own")
    assert runner_budget.note(FREE_VM) is None  # nothing to say: no quota at all
    guest = PlatformSpec("c@vm0", "container", {"cpu_quota_us": 50000}, host=FREE_VM)
    said = runner_budget.note(guest)
    assert said.mode == "own"
    assert said.note.startswith("cpu_quota_us = 50000 inside its VM 'vm0'")


def test_only_groups_with_co_location_cells_get_a_budget():
    from virtbench.campaign.model import Settings
    from virtbench.runner.run import _budget_mode
    from virtbench.scenarios import registry

    campaign = type("C", (), {"settings": Settings()})
    cell = lambda text: type("Cell", (), {"parsed_scenario": registry.parse(text)})  # noqa: E731
    assert _budget_mode(campaign, [cell("solo"), cell("identical")]) == "shared"
    assert _budget_mode(campaign, [cell("solo")]) == "own"  # RT probes keep their bandwidth
    assert _budget_mode(campaign, [cell("antagonist:cpu-load")]) == "own"
    campaign.settings.cpu_budget = "own"
    assert _budget_mode(campaign, [cell("identical")]) == "own"


def test_for_target_makes_a_budget_only_when_shared_and_quota(tmp_path, monkeypatch):
    made = []

    class Fake:
        def __init__(self, q, p):
            made.append((q, p))
            self.destroyed = False

        def destroy(self):
            self.destroyed = True

    monkeypatch.setattr(runner_budget, "CpuBudget", type("B", (), {"create": Fake}))
    with runner_budget.for_target(CON, "own") as b:
        assert b is None
    with runner_budget.for_target(FREE_VM, "shared") as b:
        assert b is None
    with runner_budget.for_target(VM, "shared") as b:
        assert made == [(40000, 80000)]
    assert b.destroyed
    with pytest.raises(RuntimeError), runner_budget.for_target(CON, "shared") as b:
        raise RuntimeError("a crash in the group")
    assert b.destroyed  # removed on the way out of an error too


# --- the platforms make their host group inside the budget, with no quota of their own ---
def _detect_fake(monkeypatch, layout):
    monkeypatch.setattr(cgroups.Layout, "detect", classmethod(lambda cls, root=None: layout))


def test_native_group_inside_the_budget_without_its_own_quota(tmp_path, monkeypatch):
    from virtbench.platforms.native import NativePlatform

    layout = _fake_v1(tmp_path)
    _detect_fake(monkeypatch, layout)
    spec = PlatformSpec("n", "native", {"cpu_quota_us": 50000})
    alone = NativePlatform(spec, "vb-111111")
    own = alone._make_cgroup()
    assert (Path(own.paths()["cpu"]) / "cpu.cfs_quota_us").read_text() == "50000"
    b = CpuBudget.create(50_000, layout=layout)
    inside = NativePlatform(spec, "vb-222222", budget=b)  # given when made, never set after
    cg = inside._make_cgroup()
    assert b.holds(cg.paths())
    assert not (Path(cg.paths()["cpu"]) / "cpu.cfs_quota_us").exists()  # the budget's is its
    said = inside.labels()
    assert (said["cpu_budget"], said["cpu_budget_quota_us"], said["cpu_budget_period_us"]) == (
        "shared",
        50000,
        100000,
    )
    assert "cpu_budget" not in alone.labels()


def test_vm_qemu_group_inside_the_budget_without_its_own_quota(tmp_path, monkeypatch):
    from virtbench.platforms.vm.platform import VmPlatform

    layout = _fake_v1(tmp_path)
    _detect_fake(monkeypatch, layout)
    b = CpuBudget.create(40_000, layout=layout)
    spec = PlatformSpec("vm", "vm", {"cpu_quota_us": 40000, "cpu_weight": 512})
    vm = VmPlatform(spec, "vb-3", budget=b)
    cg = vm._make_cgroup()
    assert b.holds(cg.paths())
    d = Path(cg.paths()["cpu"])
    assert (d / "cpu.shares").read_text() == "512"  # its weight stays its own
    assert not (d / "cpu.cfs_quota_us").exists()


def test_provisioned_refuses_a_platform_that_stayed_outside_the_budget(tmp_path, monkeypatch):
    from tests.unit.fakes import FakePlatform
    from virtbench.runner import run as runner_run

    layout = _fake_v1(tmp_path)
    b = CpuBudget.create(50_000, layout=layout)
    log: list[str] = []
    made: list[FakePlatform] = []

    def create(spec, instance, host=None, budget=None):
        p = FakePlatform(spec.name, log)
        p.budget = budget  # what create() was given: a platform takes it when it is made
        p.teardown = lambda: log.append("down")  # type: ignore[method-assign]
        made.append(p)
        return p

    monkeypatch.setattr(runner_run.platform_registry, "create", create)
    outside = "did not make its cgroup inside the shared CPU"
    with pytest.raises(PlatformError, match=outside), runner_run.provisioned(CON, b):
        pass
    assert made[0].budget is b  # it was asked to
    assert log == ["down"]  # and torn down when it did not


def test_idle_neighbours_lend_the_busy_target_no_weight(tmp_path):
    """CFS gives a group's weight to its runnable children: three idle neighbours' default
    weights made a lone busy target's budget weigh 4096 against the host's tasks where alone
    it weighed 1024 (a 70 kB container served 10 % less beside them, issue 38)."""
    layout = _fake_v1(tmp_path)
    b = CpuBudget.create(50_000, layout=layout)
    bdir = tmp_path / "cpu/virtbench" / b.name
    Cgroup.create(b.child("vb-target"), layout=layout)
    idle = [Cgroup.create(b.child(f"vb-idle{i}"), layout=layout) for i in range(3)]
    top_idle = Cgroup.create("vb-idletop", layout=layout)  # an idle neighbour of its own quota
    assert (bdir / "cpu.shares").read_text() == "4096"
    assert (tmp_path / "cpu/virtbench/cpu.shares").read_text() == "5120"
    dirs = [g.paths()["cpu"] for g in [*idle, top_idle]]
    with cgroups.idle_weight(dirs, layout):
        assert (bdir / "cpu.shares").read_text() == "1024"  # as the solo's budget
        assert (tmp_path / "cpu/virtbench/cpu.shares").read_text() == "1024"
        assert b.weight() == "cpu.shares 1024"
    # the scene over, they count again (a busy pair weighs two)
    assert (bdir / "cpu.shares").read_text() == "4096"
    assert (tmp_path / "cpu/virtbench/cpu.shares").read_text() == "5120"


def test_idle_weight_of_nothing_touches_no_cgroup(tmp_path, monkeypatch):
    monkeypatch.setattr(cgroups.Layout, "detect", lambda: pytest.fail("read the host"))
    with cgroups.idle_weight([]):
        pass


def test_throttle_count_says_the_budgets_weight(tmp_path):
    """What the budget weighed against the host's tasks, beside how often it ran out."""
    budget = CpuBudget.create(50_000, layout=_fake_v1(tmp_path))
    d = tmp_path / "cpu/virtbench" / budget.name
    (d / "cpu.stat").write_text("nr_periods 10\nnr_throttled 2\nthrottled_time 0\n")
    count = cgroups.ThrottleCount(budget)
    (d / "cpu.shares").write_text("1024\n")
    assert count.labels()["cpu_budget_weight"] == "cpu.shares 1024"
