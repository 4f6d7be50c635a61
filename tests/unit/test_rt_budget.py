"""Splitting the real-time budget between a target and its antagonists (scenarios/rt_budget.py),
and lowering a running group's rt runtime (cgroups, on a fake v1 tree)."""

import pytest

from tests.unit.fake_rt import rt_group, rt_layout, rt_runtime
from virtbench import cgroups
from virtbench.errors import VirtbenchError
from virtbench.platforms.base import PlatformSpec
from virtbench.scenarios import rt_budget


@pytest.fixture
def layout(tmp_path, monkeypatch):
    return rt_layout(tmp_path, monkeypatch)


def test_lowering_a_group_writes_nested_then_group_then_parent(layout, monkeypatch):
    parent = layout.v1_mounts["cpu"] / cgroups.PARENT
    cg = cgroups.Cgroup.create("vb-rt1", rt_runtime_us="auto", layout=layout)
    rt_group(parent / "vb-rt1" / "libpod", 950_000)  # podman nests its own group
    order: list[str] = []
    real = cgroups.rt.rt_write
    monkeypatch.setattr(
        cgroups.rt,
        "rt_write",
        lambda path, value, **kw: (order.append(path.parent.name), real(path, value, **kw)),
    )
    assert cg.set_rt_runtime(475_000) == 475_000
    # the kernel refuses a parent below what its children hold: bottom-up when lowering
    assert order == ["libpod", "vb-rt1", cgroups.PARENT]
    assert rt_runtime(parent / "vb-rt1" / "libpod") == 475_000
    assert rt_runtime(parent / "vb-rt1") == 475_000 and rt_runtime(parent) == 475_000
    order.clear()
    assert cg.set_rt_runtime(950_000) == 950_000  # top-down when raising
    assert order == [cgroups.PARENT, "vb-rt1", "libpod"]


def test_a_shorter_period_goes_through_the_smaller_ratio(layout, monkeypatch):
    parent = layout.v1_mounts["cpu"] / cgroups.PARENT
    cg = cgroups.Cgroup.create("vb-rt1", rt_runtime_us="auto", layout=layout)
    writes: list[tuple[str, int]] = []
    real = cgroups.rt.rt_write
    monkeypatch.setattr(
        cgroups.rt,
        "rt_write",
        lambda path, value, **kw: (writes.append((path.name, value)), real(path, value, **kw)),
    )
    # 950000/1000000 -> 45238/95238: runtime first (45238/1000000 on the way, not 950000/95238)
    assert cg.set_rt_runtime(45_238, period_us=95_238) == 45_238
    assert writes[:2] == [("cpu.rt_runtime_us", 45_238), ("cpu.rt_period_us", 95_238)]
    assert rt_runtime(parent) == 475_000  # 45238/95238 in the parent's period, rounded up
    other = cgroups.Cgroup.create(
        "vb-rt2", rt_runtime_us="auto", rt_period_us=95_238, layout=layout
    )
    # the kernel's test (kernel/sched/rt.c tg_rt_schedulable): the children's ratios, each
    # rounded down to 20 bits, may not sum above the parent's
    ratio = lambda runtime, period: (runtime << 20) // period  # noqa: E731
    assert other.rt_runtime_us > 0
    held = rt_runtime(parent)
    assert ratio(45_238, 95_238) + ratio(other.rt_runtime_us, 95_238) <= ratio(held, 10**6)
    assert rt_runtime(parent) <= 950_000
    other.set_rt_runtime(0)
    writes.clear()
    assert cg.set_rt_runtime(950_000, period_us=1_000_000) == 950_000  # back: period first
    assert writes == [
        ("cpu.rt_runtime_us", 950_000),  # the parent
        ("cpu.rt_period_us", 1_000_000),
        ("cpu.rt_runtime_us", 950_000),
    ]


def test_cap_to_free_grants_what_is_left(layout):
    cgroups.Cgroup.create("vb-rt1", rt_runtime_us=900_000, layout=layout)
    cg = cgroups.Cgroup.create("vb-rt2", rt_runtime_us=0, layout=layout)
    assert cg.set_rt_runtime(300_000, cap_to_free=True) == 50_000


class _Target:
    """A provisioned container target as rt_budget sees it."""

    def __init__(self, held: int, options: dict | None = None) -> None:
        self.held = (held, 1_000_000)
        self.name = "vb-target"
        self.spec = PlatformSpec("container", "container", options or {})
        self.calls: list[tuple[int, int | None, bool]] = []
        self.free_after = None  # what is free when restoring (None: all of it)

    def rt_budget(self):
        return self.held

    def set_rt_budget(self, runtime_us: int, period_us=None, cap_to_free: bool = False):
        self.calls.append((runtime_us, period_us, cap_to_free))
        if cap_to_free and self.free_after is not None:
            runtime_us = min(runtime_us, self.free_after)
        self.held = (runtime_us, period_us or 1_000_000)
        return runtime_us


HOST = 950_000  # the host's sched_rt_runtime_us of every 1000000


def _split(target, specs, free_us=0, realtime=True, log=None):
    return rt_budget.split(
        target,
        specs,
        realtime=realtime,
        what="antagonist:cpu-load:quantum=1ms",
        log=log,
        free=lambda: (free_us, 1_000_000, HOST),
    )


def test_split_period_keeps_the_native_throttle_bound():
    assert rt_budget.split_period(1_000_000, HOST, 0.95) == 1_000_000  # one group: as native
    p = rt_budget.split_period(1_000_000, HOST, 0.475)  # two groups
    assert p == 95_238 and round(p * (1 - 0.475)) == 50_000
    assert rt_budget.split_period(1_000_000, 1_000_000, 0.5) == 1_000_000  # no throttling


def test_target_and_antagonist_containers_get_equal_shares_and_target_is_restored():
    target = _Target(950_000)
    specs = [PlatformSpec("container", "container", {"rt_runtime_us": "auto"})] * 2
    with _split(target, specs) as s:
        pt, mine = s.labels["rt_budget_period_us"], s.labels["rt_budget_us"]
        assert target.held == (mine, pt) and s.labels["rt_budget_split"] == 3
        assert pt == rt_budget.TARGET_PERIOD_US  # the target's share on a short period
        assert abs(mine / pt - 0.95 / 3) < 1e-3  # a third of the host's budget each
        assert s.labels["rt_throttle_stall_us"] == pt - mine < 10_000
        p = s.labels["rt_budget_neighbour_period_us"]
        share = s.neighbour_labels[0]["rt_budget_us"]
        assert abs(share / p - 0.95 / 3) < 1e-3
        assert abs(s.neighbour_labels[0]["rt_throttle_stall_us"] - 50_000) <= 1  # as native
        for x in s.specs:
            assert (x.options["rt_runtime_us"], x.options["rt_period_us"]) == (share, p)
    assert target.held == (950_000, 1_000_000)
    assert target.calls[-1] == (950_000, 1_000_000, True)


def test_restore_short_of_the_original_is_logged():
    target = _Target(950_000)
    target.free_after = 600_000
    logged: list[str] = []
    with _split(target, [PlatformSpec("c", "container")], log=logged.append):
        pass
    assert target.held[0] == 600_000 and "restored to 600000" in logged[0]


def test_nothing_changes_without_realtime_antagonists_or_budgets():
    target = _Target(950_000)
    specs = [PlatformSpec("c", "container")]
    with _split(target, specs, realtime=False) as s:
        assert s.specs == specs and s.labels == {}
    native = [PlatformSpec("n", "native")]  # no rt_runtime_us option: no budget of its own
    with _split(target, native) as s:
        assert s.specs == native and s.labels == {} and target.calls == []
    with rt_budget.split(target, specs, realtime=True, what="x", free=lambda: None) as s:
        assert s.labels == {}  # no RT group scheduling (v2, or kernel without it)


def test_native_target_shares_only_what_is_free_among_antagonists():
    specs = [PlatformSpec("c", "container")] * 3
    with _split(object(), specs, free_us=900_000) as s:
        shares = {(x.options["rt_runtime_us"], x.options["rt_period_us"]) for x in s.specs}
        assert len(shares) == 1
        share, p = shares.pop()
        assert abs(share / p - 0.3) < 1e-3
        assert s.labels["rt_budget_target"] == "not shared"


def test_explicit_budgets_are_respected_and_taken_out_of_the_pool():
    target = _Target(950_000)
    specs = [
        PlatformSpec("c", "container", {"rt_runtime_us": 150_000}),
        PlatformSpec("c", "container"),
    ]
    with _split(target, specs) as s:
        assert s.specs[0].options == {"rt_runtime_us": 150_000}
        share, p = s.specs[1].options["rt_runtime_us"], s.specs[1].options["rt_period_us"]
        assert abs(share / p - 0.4) < 1e-3
        assert target.held[1] == 10_000 and abs(target.held[0] / 10_000 - 0.4) < 1e-3
        assert s.neighbour_labels[0] == {}
    fixed = _Target(500_000, {"rt_runtime_us": 500_000})
    with _split(fixed, [PlatformSpec("c", "container")], free_us=450_000) as s:
        opts = s.specs[0].options
        assert fixed.calls == [] and abs(opts["rt_runtime_us"] / opts["rt_period_us"] - 0.45) < 1e-4


def test_no_budget_left_is_a_clear_error():
    with (
        pytest.raises(VirtbenchError, match="none of the host's budget is free"),
        _split(object(), [PlatformSpec("c", "container")], free_us=0),
    ):
        pass
