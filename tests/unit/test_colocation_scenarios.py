"""Co-location scenario parsing and engine behaviour with fake platforms (no host changes)."""

import contextlib
import threading
import time

import pytest

from tests.unit.fakes import FakePlatform
from virtbench.cpubudget import BudgetFacts
from virtbench.errors import VirtbenchError
from virtbench.platforms.base import PlatformSpec
from virtbench.scenarios import colocation_engine as engine
from virtbench.scenarios import memory_check, registry
from virtbench.scenarios.base import ScenarioEnv
from virtbench.workloads.base import Metric, Param, RunContext, Workload


@pytest.mark.parametrize(
    "text",
    [
        "weights:0:1:1",
        "weights:1:-2:1",
        "weights:1:1",
        "weights:x:1:1",
        "many:0",
        "idle-neighbours",
        "idle-neighbours:99",
        "identical:load=0",
        "identical:bogus=1",
        "heterogeneous",
        "different:abc",
        "startup:1:native:-1",
    ],
)
def test_bad_scenarios_name_what_is_allowed(text):
    with pytest.raises(ValueError, match=r"scenario '[a-z-]+'"):
        registry.parse(text)


def test_good_scenarios_and_platform_refs():
    assert registry.parse("idle-neighbours:3:vm").platform_refs() == ["vm"]
    assert registry.parse("heterogeneous:container").platform_refs() == ["container"]
    assert registry.parse("identical:load=50").load == 50
    w = registry.parse("weights:0.5:1:2")
    assert (w.host_shares, w.target_shares, w.neighbour_shares) == (512, 1024, 2048)
    assert registry.parse("startup:2").delay == 2.0


MEMINFO = "MemTotal: 4000000 kB\nMemAvailable:    2097152 kB\n"  # 2048 MiB


def test_memory_checked_before_anything_starts():
    vm = PlatformSpec("vm", "vm", {"memory_mib": 1024})
    plans = [engine.EnvPlan("target")] + [engine.EnvPlan(f"neighbour-{i}", vm) for i in (1, 2)]
    # each VM: its guest memory + QEMU's own overhead (memory_check.OVERHEAD_MIB)
    with pytest.raises(VirtbenchError, match=r"need about 2560 MiB .* only 1536 MiB"):
        memory_check.check_memory(plans, "idle-neighbours:2:vm", MEMINFO)
    memory_check.check_memory(plans[:2], "idle-neighbours:1:vm", MEMINFO)  # 1280 fits
    # a stacked platform needs its host's memory too
    stacked = PlatformSpec("c@vm", "container", {}, host=PlatformSpec("vm", "vm", {}))
    # the vm schema's memory_mb default, plus QEMU's overhead
    assert memory_check.spec_mib(stacked) == 64 + 1024 + memory_check.OVERHEAD_MIB["vm"]


class FakeWorkload(Workload):
    suite = "cpu"
    name = "fake"
    description = "returns its rate param"
    metrics = (Metric("ops", "ops/s", True, primary=True),)
    params = {"rate": Param(0), "size_kb": Param(1)}
    rate_param, size_param = "rate", "size_kb"

    def run(self, platform, ctx):
        time.sleep(0.2)  # long enough for the engine's overlap check to be meaningful
        value = ctx.params["rate"] or 1000.0 * ctx.params["size_kb"]
        return [self.sample("ops", value, on=platform.name)]


def _env(log, fail_on=None):
    target = FakePlatform("target", log)

    @contextlib.contextmanager
    def new_platform(spec, role):
        if role == fail_on:
            raise VirtbenchError("boom")
        log.append(f"up {role}")
        try:
            yield FakePlatform(spec.name, log)
        finally:
            log.append(f"down {role}")

    specs = {"native": PlatformSpec("native", "native"), "other": PlatformSpec("other", "native")}
    ctx = RunContext(params={"rate": 0, "size_kb": 1})
    return ScenarioEnv(target, FakeWorkload(), ctx, new_platform, platforms=specs)


def test_neighbour_failing_to_start_tears_down_the_started_ones():
    log = []
    with pytest.raises(VirtbenchError, match="neighbour-3 .* failed to start: boom"):
        registry.parse("idle-neighbours:3:other").run(_env(log, fail_on="neighbour-3"))
    assert log == ["up neighbour-1", "up neighbour-2", "down neighbour-2", "down neighbour-1"]


def test_roles_loads_and_sizes():
    log = []
    samples = registry.parse("different:10:load=50").run(_env(log))
    ops = {s.role: s for s in samples if s.metric == "ops"}
    # each environment at 50 % of its own solo peak: target 1 kB -> 500, neighbour 10 kB -> 5000
    assert ops["target"].value == 500
    assert ops["neighbour-1"].value == 5000
    assert ops["neighbour-1"].labels["load_pct"] == 50
    assert not any(s.labels.get("invalid") for s in samples)
    assert log == ["up neighbour-1", "down neighbour-1"]


def test_unknown_neighbour_platform_is_a_clear_error():
    with pytest.raises(VirtbenchError, match="no platform 'nope' .* allowed: native, other"):
        registry.parse("heterogeneous:nope").run(_env([]))


def test_load_needs_a_rate_parameter():
    env = _env([])
    env.workload = type("NoRate", (FakeWorkload,), {"params": {"size_kb": Param(1)}})()
    with pytest.raises(VirtbenchError, match="needs a workload with a 'rate' parameter"):
        registry.parse("identical:load=10").run(env)


def test_coverage():
    assert engine._coverage((0, 10), (5, 20)) == 0.5
    assert engine._coverage((0, 10), (-1, 11)) == 1.0
    assert engine._coverage((0, 10), (20, 30)) == 0.0


def test_measured_window_from_series_points_not_set_up():
    # a sweep reporting 3 series at the end of each 2 s step, after 3 s of set-up
    e = engine._Env(engine.EnvPlan("neighbour-1"), None)
    e.window = (0.0, 9.5)
    e.marks = [t + d for t in (5.0, 7.0, 9.0) for d in (0.0, 0.001, 0.002)]
    assert engine._measured(e) == pytest.approx((3.0, 9.0))
    e.marks = [5.0]  # one point says nothing about when measuring began
    assert engine._measured(e) == (0.0, 9.5)


def test_overlap_checks_both_measured_windows():
    target = engine._Env(engine.EnvPlan("target"), None)
    other = engine._Env(engine.EnvPlan("neighbour-1"), None)
    target.window, other.window = (0.0, 10.0), (1.0, 10.2)
    share, gap = engine._overlap(target, other)
    assert (share, gap) == (pytest.approx(0.9), pytest.approx(1.0))
    # the target's own set-up (before its first step) does not count once steps are known;
    # what is left is the neighbour's last 0.2 s, within the slack
    target.marks = [3.0, 5.0, 7.0, 9.0]
    share, gap = engine._overlap(target, other)
    assert (share, gap) == (pytest.approx(9 / 9.2), pytest.approx(0.2))
    assert gap < engine.COVERAGE_SLACK_S


def test_idle_neighbours_and_startup_plans():
    env = _env([])
    idle = registry.parse("idle-neighbours:2:other").plans(env)
    assert [(p.role, p.spec.name, p.activity, p.start_after_s) for p in idle[1:]] == [
        ("neighbour-1", "other", "idle", None),
        ("neighbour-2", "other", "idle", None),
    ]
    late = registry.parse("startup:2::0.5").plans(env)  # empty PLATFORM: the target's own
    assert [(p.role, p.spec, p.activity, p.start_after_s) for p in late[1:]] == [
        ("neighbour-1", env.target.spec, "idle", 0.5),
        ("neighbour-2", env.target.spec, "idle", 0.5),
    ]
    assert idle[0].role == late[0].role == "target"
    # an empty PLATFORM is an error for idle-neighbours (it takes no DELAY_S to skip to)
    with pytest.raises(VirtbenchError, match="no platform '' in the campaign"):
        registry.parse("idle-neighbours:2:").plans(env)


class FakeBudget:
    """A shared CPU budget as the engine sees it (cgroups/budget.CpuBudget's surface)."""

    def __init__(self):
        self.inside: list[str] = ["vb-target"]
        self.periods = 0

    def facts(self):
        return BudgetFacts("shared", 50000, 100000)

    def members(self):
        return list(self.inside)

    def throttled(self):
        self.periods += 10
        return {"nr_periods": self.periods, "nr_throttled": self.periods // 2}

    def weight(self):
        return "cpu.shares 1024"


def _budget_env(log, budget, note=None):
    env = _env(log)
    calls = []

    @contextlib.contextmanager
    def new_platform(spec, role, budget=None):
        calls.append((role, budget))
        if budget is not None:
            budget.inside.append(f"vb-{role}")
        yield FakePlatform(spec.name, log)

    env.new_platform = new_platform
    env.budget, env.budget_facts = budget, BudgetFacts(note) if note else None
    return env, calls


@pytest.mark.parametrize("scenario", ["identical", "idle-neighbours:2:other", "many:3"])
def test_every_neighbour_joins_the_targets_budget_and_samples_say_so(scenario):
    budget = FakeBudget()
    env, calls = _budget_env([], budget)
    samples = registry.parse(scenario).run(env)
    assert calls and all(b is budget for _role, b in calls)  # each provisioned inside it
    ops = [s for s in samples if s.metric == "ops"]
    shared = {"cpu_budget": "shared", "cpu_budget_quota_us": 50000, "cpu_budget_period_us": 100000}
    assert ops and all(shared.items() <= s.labels.items() for s in samples)
    assert ops[0].labels["cpu_budget_members"] == budget.members()  # target + neighbours
    assert len(budget.members()) == 1 + len(calls)
    assert ops[0].labels["cpu_budget_throttled"] == "5/10 periods"  # during the scene only


def test_without_a_budget_neighbours_are_provisioned_as_before_and_labelled():
    env, calls = _budget_env([], None, note="own")
    samples = registry.parse("identical").run(env)
    assert calls == [("neighbour-1", None)]
    assert {s.labels["cpu_budget"] for s in samples} == {"own"}
    env, _ = _budget_env([], None)  # no quota anywhere: nothing fixed to share
    assert {s.labels["cpu_budget"] for s in registry.parse("identical").run(env)} == {"none"}


def test_a_weights_cell_keeps_the_shared_budget_its_weights_divide(monkeypatch):
    from virtbench.scenarios import weights as weights_mod

    monkeypatch.setattr(weights_mod, "apply", lambda *a, **k: {})  # fakes have no cgroups
    budget = FakeBudget()
    env, calls = _budget_env([], budget)
    samples = registry.parse("weights:1:4:1:cpu=0").run(env)
    assert calls and all(b is budget for _role, b in calls)
    said = {(s.labels["cpu_budget"], s.labels["cpu_budget_quota_us"]) for s in samples}
    assert said == {("shared", 50000)}


def test_engine_stores_each_summary_per_point_the_target_served():
    """The target's points (monotonic times) become the summaries' windows on the cell's axis,
    every role's readings cut by them and labelled with the point."""
    from virtbench.metrics.sampler import Window

    t0 = 1000.0  # the sampler's start (monotonic)
    target = engine._Env(engine.EnvPlan("target"), FakePlatform("target", []))
    target.points = [({"file_size_kb": 1}, t0 + 1, t0 + 5), ({"file_size_kb": 70}, t0 + 6, t0 + 10)]
    w = Window()
    for t in range(1, 11):
        w.keep("target", "cpu_util", 10.0 if t <= 5 else 50.0, "%", (t - 1.0, float(t)))
    out = engine._collect([target], target, w, {"cpu_budget": "none"}, {}, t0)
    cpu = {s.labels["file_size_kb"]: s for s in out if s.metric == "cpu_util"}
    assert set(cpu) == {1, 70}
    assert (cpu[1].value, cpu[1].labels["n"]) == (10.0, 4)  # (1, 5]: t = 2..5
    assert (cpu[70].value, cpu[70].labels["n"]) == (50.0, 4)  # (6, 10]: t = 7..10


def test_summaries_at_a_point_whose_target_result_is_invalid_are_flagged_too():
    """A size whose window the neighbour did not share (or a NIC stall) flags the target's
    result there; every role's readings at that size say so as well, the other size's not."""
    from virtbench.metrics.sampler import Window
    from virtbench.workloads.base import Sample

    t0 = 1000.0
    target = engine._Env(engine.EnvPlan("target"), FakePlatform("target", []))
    target.points = [({"file_size_kb": 1}, t0 + 1, t0 + 5), ({"file_size_kb": 70}, t0 + 6, t0 + 10)]
    stall = "step window not shared: neighbour-1 90 %"
    bad = {"file_size_kb": 70, "invalid": stall}
    target.samples = [
        Sample("requests_per_s", 900.0, "req/s", True, "target", {"file_size_kb": 1}),
        Sample("requests_per_s", 90.0, "req/s", True, "target", bad),
    ]
    w = Window()
    for role in ("target", "neighbour-1"):
        for t in range(1, 11):
            w.keep(role, "cpu_util", 10.0, "%", (t - 1.0, float(t)))
    out = engine._collect([target], target, w, {"cpu_budget": "none"}, {}, t0)
    flags = {
        (s.role, s.labels["file_size_kb"]): s.labels.get("invalid")
        for s in out
        if s.metric == "cpu_util"
    }
    assert flags[("target", 1)] is None and flags[("neighbour-1", 1)] is None
    assert (
        flags[("target", 70)]
        == flags[("neighbour-1", 70)]
        == (f"the target's result at this point: {stall}")
    )


def test_wrk_max_pairs_run_each_size_in_lockstep_without_a_rate_schedule():
    from types import SimpleNamespace

    from virtbench.workloads.web import HttperfSweep, WrkMax

    busy = [SimpleNamespace(plan=engine.EnvPlan(r)) for r in ("target", "neighbour-1")]
    for workload in (WrkMax(), HttperfSweep()):
        lockstep = engine._lockstep(SimpleNamespace(workload=workload), busy)
        assert lockstep is not None and lockstep.names == ["target", "neighbour-1"]
    assert engine._lockstep(SimpleNamespace(workload=WrkMax()), busy[:1]) is None  # alone
    from virtbench.workloads.capabilities import RateSchedule, StepsTogether

    assert isinstance(WrkMax(), StepsTogether) and isinstance(HttperfSweep(), StepsTogether)
    # its pairs get no schedule of rates (no solo peak)
    assert not isinstance(WrkMax, RateSchedule) and isinstance(HttperfSweep, RateSchedule)


def test_storm_overlap_is_labelled_per_point_the_target_served():
    from types import SimpleNamespace

    from virtbench.workloads.base import Sample

    one = Sample("requests_per_s", 900.0, "req/s", True, "target", {"file_size_kb": 1})
    big = Sample("requests_per_s", 300.0, "req/s", True, "target", {"file_size_kb": 70})
    client = Sample("client_cpu", 50.0, "%", False, "client", {"file_size_kb": 1})
    points = [({"file_size_kb": 1}, 100.0, 110.0), ({"file_size_kb": 70}, 110.0, 120.0)]
    target = SimpleNamespace(points=points, samples=[one, big, client])
    # two newcomers starting 102-108 and 105-112 (overlapping: counted once), one that failed
    late = [SimpleNamespace(window=(102.0, 108.0)), SimpleNamespace(window=(105.0, 112.0))]
    late.append(SimpleNamespace(window=None))
    engine._label_storm(target, late)
    assert one.labels["storm_overlap_s"] == 8.0 and one.labels["point_s"] == 10.0
    assert big.labels["storm_overlap_s"] == 2.0
    assert "storm_overlap_s" not in client.labels
    engine._label_storm(SimpleNamespace(points=points, samples=[client]), [])  # no storm: no-op
    assert engine._union_s([(0, 1), (0.5, 2), (3, 4), (5, 5)]) == 3.0


class DyingWorkload(FakeWorkload):
    """Measures one point, then its server dies on the platform named `dies_on`."""

    dies_on = "other"

    def run(self, platform, ctx):
        done = super().run(platform, ctx)
        if platform.name == self.dies_on:
            from virtbench.errors import WorkloadError

            raise WorkloadError("the server exited mid-run", samples=done)
        return done


@pytest.mark.parametrize("dies_on", ["other", "target"])
def test_what_an_environment_measured_before_it_failed_is_kept_not_dropped(dies_on, monkeypatch):
    from virtbench.errors import WorkloadError

    env = _env([])
    env.workload = DyingWorkload()
    monkeypatch.setattr(DyingWorkload, "dies_on", dies_on)  # the engine makes its own instances
    scenario = registry.parse("heterogeneous:other")
    if dies_on == "other":  # a neighbour died: the cell stands, every result flagged
        out = scenario.run(env)
    else:  # the target died: the cell fails and carries what was measured
        with pytest.raises(WorkloadError, match="mid-run") as exc:
            scenario.run(env)
        out = exc.value.samples
    ops = {s.role: s for s in out if s.metric == "ops"}
    assert set(ops) == {"target", "neighbour-1"}
    if dies_on == "other":
        assert "neighbour-1: the server exited" in ops["neighbour-1"].labels["invalid"]


class SizesWorkload(FakeWorkload):
    """Serves each size of a list one after another, reporting each as a point."""

    params = {"rate": Param(0), "size_kb": Param([1])}

    def run(self, platform, ctx):
        out = []
        for size in ctx.params["size_kb"]:
            start = time.monotonic()
            time.sleep(0.1)
            ctx.point({"file_size_kb": size}, start, time.monotonic())
            out.append(self.sample("ops", 1000.0 * size, file_size_kb=size))
        return out


def sizes_env(log=None, workload=None, sizes=(1, 70)):
    """A fake env whose workload serves `sizes` one after another (SizesWorkload)."""
    env = _env([] if log is None else log)
    env.workload = workload or SizesWorkload()
    env.ctx = RunContext(params={"rate": 0, "size_kb": list(sizes)})
    return env


def refuse_second_scene(monkeypatch):
    """The memory check refuses the second scene's newcomers (the 70 kB storm)."""
    from virtbench.scenarios import neighbours

    calls = []

    def check(plans, what, meminfo=None):
        calls.append(what)
        if len(calls) == 2:
            raise VirtbenchError("need about 1600 MiB, only 900 MiB available")

    monkeypatch.setattr(neighbours, "check_memory", check)


def test_a_start_up_storm_runs_once_per_size_each_newcomer_labelled_with_it():
    """Seed 003 Fig. 14 started the newcomers beside a 1 kB and beside a 70 kB target: with
    one storm per cell, the 70 kB figure was the target after the storm."""
    log: list[str] = []
    env = sizes_env(log)
    out = registry.parse("startup:1:native:0").run(env)
    assert log.count("up neighbour-1") == 2 and log.count("down neighbour-1") == 2
    assert log.index("down neighbour-1") < log.index("up neighbour-1", 1)  # torn down between
    news = {s.labels["file_size_kb"]: s for s in out if s.metric == "startup_s"}
    assert set(news) == {1, 70}
    one, big = news[1].labels["scene_s"], news[70].labels["scene_s"]
    assert one[0] < one[1] <= big[0] < big[1]  # each storm inside its own size's scene
    ops = {s.labels["file_size_kb"]: s for s in out if s.metric == "ops" and s.role == "target"}
    assert set(ops) == {1, 70}
    assert all(s.labels["storm_per_size"] and "storm_overlap_s" in s.labels for s in ops.values())


def test_a_size_that_fails_keeps_the_sizes_measured_before_it(monkeypatch):
    from virtbench.errors import WorkloadError

    class FailsAt70(SizesWorkload):
        def run(self, platform, ctx):
            if ctx.params["size_kb"] == [70]:
                raise WorkloadError("nginx died", samples=[])
            return super().run(platform, ctx)

    env = sizes_env(workload=FailsAt70())
    with pytest.raises(WorkloadError, match="nginx died") as exc:
        registry.parse("startup:1:native:0").run(env)
    kept = [s for s in exc.value.samples if s.metric == "ops"]
    assert [s.labels["file_size_kb"] for s in kept] == [1]


@pytest.mark.parametrize("scenario", ["identical:load=50", "different:10:load=50"])
def test_the_targets_solo_peak_is_measured_before_any_neighbour_is_up(scenario):
    """Measured once the neighbours were provisioned, a booted idle TCG guest beside the
    target in the shared budget took its share of the solo peak."""
    from virtbench.scenarios.peaks import Peak, SoloPeaks

    log: list[str] = []

    class LoggedPeaks(SoloPeaks):
        def measure(self, attempt):
            log.append(f"peak {attempt.platform.name}")
            return Peak(1000.0)

    env = _env(log)
    env.solo_peaks = LoggedPeaks()
    registry.parse(scenario).run(env)
    assert log[0] == "peak target" and log.index("peak target") < log.index("up neighbour-1")
    # identical: measured once, read again inside the scene; different: the neighbour's own
    # peak at its size is measured on its environment, once that exists
    assert log.count("peak target") == (1 if scenario.startswith("identical") else 2)


def test_a_later_size_failing_with_a_virtbench_error_keeps_the_sizes_before_it(monkeypatch):
    """Review: only a WorkloadError carried the earlier sizes; a VirtbenchError in a later
    scene (the memory check before its newcomers, a neighbour failing to provision) lost
    them (runner/cell.measure keeps no samples of a VirtbenchError)."""
    from virtbench.errors import WorkloadError

    refuse_second_scene(monkeypatch)
    env = sizes_env()
    with pytest.raises(WorkloadError, match="only 900 MiB") as exc:
        registry.parse("startup:1:native:0").run(env)
    kept = [s for s in exc.value.samples if s.metric == "ops"]
    assert [s.labels["file_size_kb"] for s in kept] == [1]


def test_a_newcomer_says_how_much_of_its_start_up_the_target_was_serving():
    env = sizes_env(sizes=(1,))
    out = registry.parse("startup:1:native:0").run(env)
    (new,) = [s for s in out if s.metric == "startup_s"]
    assert 0 <= new.labels["under_load_s"] <= new.value + 1e-3


def test_a_target_that_hit_the_time_limit_makes_a_timeout_not_a_failure():
    """Review: the engine re-raised the target's error without its cause, so the runner's
    timed_out() (which follows __cause__) never saw the WorkloadTimeout."""
    from virtbench.errors import WorkloadError, WorkloadTimeout
    from virtbench.runner.cell import timed_out

    class TimesOut(FakeWorkload):
        def run(self, platform, ctx):
            raise WorkloadTimeout("wrk timed out after 40 s")

    env = _env([])
    env.workload = TimesOut()
    with pytest.raises(WorkloadError) as exc:
        registry.parse("identical").run(env)
    assert timed_out(exc.value)


def test_start_up_newcomers_are_listed_as_members_of_the_budget_they_booted_in():
    """cq-1127: the label listed the target alone (read before the storm), so two VMs that
    booted inside the container's half CPU looked as if they had booted outside it."""
    budget = FakeBudget()
    env, calls = _budget_env([], budget)
    # the newcomers boot at once, each in its own thread, in no set order: make neighbour-1
    # the last one into the budget (a slower boot), so the label must wait for every newcomer
    second_in = threading.Event()
    new_platform = env.new_platform

    @contextlib.contextmanager
    def n1_last(spec, role, budget=None):
        if role == "neighbour-1":
            assert second_in.wait(timeout=10)
        with new_platform(spec, role, budget) as p:
            if role == "neighbour-2":
                second_in.set()
            yield p

    env.new_platform = n1_last
    samples = registry.parse("startup:2:native:0").run(env)
    assert [role for role, b in calls if b is budget] == ["neighbour-2", "neighbour-1"]
    (members,) = {tuple(s.labels["cpu_budget_members"]) for s in samples}
    assert sorted(members) == ["vb-neighbour-1", "vb-neighbour-2", "vb-target"]


def test_an_interrupted_storm_leaves_no_newcomer_behind(monkeypatch):
    """Ctrl-C while the storm waits for its newcomers: one still being provisioned and one
    still waiting for its DELAY_S are both gone (or never made) once run() has raised.
    Ordered by events, not sleeps: neighbour-1's boot ends only once the group is closing,
    neighbour-2's DELAY_S only after run() has raised."""
    from virtbench.scenarios.neighbours import Neighbours

    log: list[str] = []
    env = _env(log)
    made, closing, delay_over = threading.Event(), threading.Event(), threading.Event()
    new_platform = env.new_platform

    @contextlib.contextmanager
    def slow(spec, role):
        if role == "neighbour-1":  # a VM booting until the interrupted scene tears down
            made.set()
            assert closing.wait(timeout=10)
        with new_platform(spec, role) as p:
            yield p

    stop = Neighbours.stop

    def stop_closing(group):  # the group's exit: closed to new starts, then stop()
        closing.set()
        return stop(group)

    one = engine._Storm._one
    late: dict[str, engine._Env] = {}
    tried = threading.Event()

    def delayed(storm, e):
        late[e.plan.role] = e
        if e.plan.role == "neighbour-2":  # its DELAY_S: over once run() has raised
            assert delay_over.wait(timeout=10)
        try:
            one(storm, e)
        finally:
            if e.plan.role == "neighbour-2":
                tried.set()

    def interrupted(storm):
        assert made.wait(timeout=10)
        raise KeyboardInterrupt

    env.new_platform = slow
    monkeypatch.setattr(Neighbours, "stop", stop_closing)
    monkeypatch.setattr(engine._Storm, "_one", delayed)
    monkeypatch.setattr(engine._Storm, "join", interrupted)
    plans = [engine.EnvPlan("target")] + [
        engine.EnvPlan(f"neighbour-{i}", PlatformSpec("native", "native"), "idle", **late_by)
        for i, late_by in ((1, {"start_after_s": 0}), (2, {"start_after_s": 0}))
    ]
    with pytest.raises(KeyboardInterrupt):
        engine.run(env, plans, "startup:2:native:0", {})
    # before run() raised: neighbour-1, made while the group closed, was torn down
    assert log == ["up neighbour-1", "down neighbour-1"]
    assert "the group was closed" in (late["neighbour-1"].error or "")
    delay_over.set()  # neighbour-2's thread now tries to start it: refused, nothing made
    assert tried.wait(timeout=10)
    assert "the group was closed" in (late["neighbour-2"].error or "")
    assert log == ["up neighbour-1", "down neighbour-1"]


class RateSizesWorkload(SizesWorkload):
    """SizesWorkload that serves its offered rate when it has one (fixed-rate mode)."""

    def run(self, platform, ctx):
        out = super().run(platform, ctx)
        for s in out:
            s.value = ctx.params["rate"] or s.value
        return out


def test_startup_takes_load_pct_after_its_positional_arguments():
    s = registry.parse("startup:1:vm:10:load=90")
    assert (s.k, s.platform_ref, s.delay, s.load) == (1, "vm", 10.0, 90)
    assert registry.parse("startup:2:load=90").load == 90
    assert registry.parse("startup:2:vm:10").load is None  # as before: no load
    # the cells' scenario strings (campaign expansion, resume) are the text as written
    assert registry.parse("startup:2:vm-virtio").text() == "startup:2:vm-virtio"
    with pytest.raises(ValueError, match="scenario 'startup': load must be"):
        registry.parse("startup:1:vm:10:load=0")
    with pytest.raises(ValueError, match="scenario 'idle-neighbours'"):
        registry.parse("idle-neighbours:1:load=50")  # idle neighbours have no load


def test_a_fixed_rate_storm_offers_each_size_its_share_of_that_sizes_solo_peak():
    """Seed 003 Fig. 14: the target served a fixed rate, ~90 % of its maximum, at 1 kB and at
    70 kB (900 and 150 req/s), each size its own storm, with its own solo peak."""
    from virtbench.scenarios.peaks import SoloPeaks

    log: list[str] = []

    class LoggedPeaks(SoloPeaks):
        def measure(self, attempt):
            log.append(f"peak {attempt.platform.name} {attempt.params['size_kb']}")
            return super().measure(attempt)

    env = sizes_env(log, workload=RateSizesWorkload())
    env.solo_peaks = LoggedPeaks()
    out = registry.parse("startup:1:native:0:load=50").run(env)
    ops = {s.labels["file_size_kb"]: s for s in out if s.metric == "ops" and s.role == "target"}
    # 50 % of each size's own solo peak (1000 x size), never one rate for both sizes
    assert {size: s.value for size, s in ops.items()} == {1: 500, 70: 35000}
    assert all(s.labels["load_pct"] == 50 for s in ops.values())
    assert {size: s.labels["solo_peak"] for size, s in ops.items()} == {1: 1000, 70: 70000}
    assert {size: s.labels["env_params"]["rate"] for size, s in ops.items()} == {1: 500, 70: 35000}
    # each size's peak is measured before that size's newcomer is up (solo, as identical's)
    assert log[:2] == ["peak target [1]", "up neighbour-1"]
    assert log.index("peak target [70]") < log.index("up neighbour-1", 2)
    news = [s for s in out if s.metric == "startup_s"]
    assert sorted(s.labels["file_size_kb"] for s in news) == [1, 70]


def test_a_storm_without_load_offers_no_rate_as_before():
    env = sizes_env(workload=RateSizesWorkload())
    out = registry.parse("startup:1:native:0").run(env)
    ops = [s for s in out if s.metric == "ops" and s.role == "target"]
    assert sorted(s.value for s in ops) == [1000, 70000]
    assert not any("load_pct" in s.labels or "solo_peak" in s.labels for s in out)


@pytest.mark.parametrize("scenario", ["startup:1:native:0:load=90", "identical:load=10"])
def test_load_on_a_workload_without_a_rate_knob_names_scenario_test_case_and_allowed(scenario):
    """wrk-max runs closed-loop at its maximum: it has no rate to set to PCT %. Refused before
    anything is provisioned or measured."""
    log: list[str] = []
    env = _env(log)
    env.workload = type("NoRate", (FakeWorkload,), {"name": "norate", "params": {}})()
    with pytest.raises(VirtbenchError) as exc:
        registry.parse(scenario).run(env)
    text = str(exc.value)
    assert f"scenario '{scenario}'" in text and "test case norate" in text
    assert "needs a workload with a 'rate' parameter" in text and "allowed:" in text
    assert log == []


def test_idle_neighbours_are_marked_idle_for_the_scene_only(monkeypatch):
    """The engine tells the cgroup layer which groups hold idle neighbours, so their weights
    do not go to the busy target (cgroups.idle_weight); busy neighbours keep theirs."""
    from virtbench.platforms.base import Accounting

    marked: list[list[str]] = []

    @contextlib.contextmanager
    def idle_weight(dirs, layout=None):
        marked.append(list(dirs))
        yield

    monkeypatch.setattr(engine, "idle_weight", idle_weight)
    monkeypatch.setattr(
        FakePlatform,
        "accounting",
        lambda self: Accounting(cgroups={"cpu": f"/cg/virtbench/vb-b-cpu/vb-{self.name}"}),
    )
    log: list[str] = []
    registry.parse("idle-neighbours:2:other").run(_env(log))
    assert marked == [["/cg/virtbench/vb-b-cpu/vb-other", "/cg/virtbench/vb-b-cpu/vb-other"]]
    marked.clear()
    registry.parse("identical").run(_env(log))
    assert marked == [[]]  # a busy pair: nothing idle
