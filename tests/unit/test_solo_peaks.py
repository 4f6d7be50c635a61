"""Solo peaks (the load=PCT denominators): measured once per run and key, stored as a cell of
their own (scenario solo-peak), read back on --resume, and named by the cells that used them."""

import contextlib
import json
from dataclasses import replace

import pytest

from tests.unit.fakes import FakePlatform
from virtbench.cpubudget import BudgetFacts
from virtbench.errors import WorkloadError
from virtbench.platforms.base import Accounting, PlatformSpec
from virtbench.platforms.cpu_weight import lifted_quota
from virtbench.runner.peaks import SCENARIO, StoredPeaks
from virtbench.scenarios import registry
from virtbench.scenarios.base import ScenarioEnv
from virtbench.scenarios.peaks import Peak, cpu_limit
from virtbench.store.db import Store
from virtbench.store.description import RunDescription
from virtbench.workloads.base import Metric, Param, RunContext, Workload

RUN = "20240101-000000-abcd"


class Rated(Workload):
    suite = "web"
    name = "rated"
    description = "1000 ops/s unlimited, else its rate"
    metrics = (Metric("ops", "ops/s", True, primary=True),)
    params = {"rate": Param(0)}
    rate_param = "rate"
    runs = 0
    fail = False
    fail_once = False

    def run(self, platform, ctx):
        type(self).runs += 1
        if type(self).fail or (type(self).fail_once and type(self).runs == 1):
            raise WorkloadError("rated: tool exited 1")
        ctx.series("ops", 0.5, 1000.0, "ops/s", "target")
        return [self.sample("ops", ctx.params["rate"] or 1000.0)]


@pytest.fixture
def store(tmp_path):
    Rated.runs, Rated.fail, Rated.fail_once = 0, False, False
    st = Store.in_dir(tmp_path)
    st.create_run(RUN, "t", "x.toml", "", 1, {}, {}, "0", description=RunDescription())
    st.add_cells([(f"{RUN}/0000", RUN, 0, "native", "{}", "web", "rated", "identical", 1, "{}")])
    return st


def _get(peaks):
    return peaks.get(FakePlatform("native", []), Rated(), {"rate": 0}, RunContext(params={}))


def test_measured_once_stored_as_its_own_cell_and_read_back_on_resume(store):
    peaks = StoredPeaks(store, RUN, lambda *a: None)
    first = _get(peaks)
    assert first == _get(peaks) == Peak(1000.0, f"{RUN}/0001") and Rated.runs == 1
    row = store.cells(RUN)[-1]
    assert (row.platform, row.test_case, row.scenario, row.status) == (
        "native",
        "rated",
        SCENARIO,
        "ok",
    )
    assert row.labels["solo_peak"] == 1000.0 and row.labels["params"] == {"rate": 0}
    samples = [r for r in store.sample_rows(RUN) if r["cell_id"] == first.cell_id]
    assert [(r["metric"], r["value"]) for r in samples] == [("ops", 1000.0)]
    series = {r["metric"] for r in store.series_rows(RUN) if r["cell_id"] == first.cell_id}
    assert "ops" in series
    assert _get(StoredPeaks(store, RUN, lambda *a: None)) == first and Rated.runs == 1


def test_a_failed_peak_fails_its_cell_and_is_kept_the_next_attempt_gets_its_own(store):
    # a failed peak's cell is the evidence of why (colocation-web lost it: the retry of a
    # vm-virtio peak in the next cell overwrote it)
    Rated.fail = True
    peaks = StoredPeaks(store, RUN, lambda *a: None)
    with pytest.raises(WorkloadError, match="solo peak of rated on native: rated: tool exited"):
        _get(peaks)
    assert Rated.runs == 2  # tried twice at once
    assert [r.status for r in store.cells(RUN)] == ["pending", "failed", "failed"]
    Rated.fail = False
    assert _get(peaks) == Peak(1000.0, f"{RUN}/0003")  # within the run
    assert [r.status for r in store.cells(RUN)] == ["pending", "failed", "failed", "ok"]
    assert _get(StoredPeaks(store, RUN, lambda *a: None)) == Peak(1000.0, f"{RUN}/0003")


def test_a_peak_that_fails_once_is_measured_again_at_once_both_recorded(store):
    Rated.fail_once = True
    assert _get(StoredPeaks(store, RUN, lambda *a: None)) == Peak(1000.0, f"{RUN}/0002")
    assert [r.status for r in store.cells(RUN)] == ["pending", "failed", "ok"]


def test_a_failed_peak_is_kept_on_resume_and_an_interrupted_one_measured_again_into_it(store):
    Rated.fail = True
    with pytest.raises(WorkloadError):
        _get(StoredPeaks(store, RUN, lambda *a: None))
    Rated.fail = False
    assert _get(StoredPeaks(store, RUN, lambda *a: None)) == Peak(1000.0, f"{RUN}/0003")
    store.start_cell(f"{RUN}/0003")  # as if a later run had been killed while measuring it
    row = store.cells(RUN)[-1]
    assert row.status == "running"
    assert _get(StoredPeaks(store, RUN, lambda *a: None)) == Peak(1000.0, f"{RUN}/0003")
    assert [r.status for r in store.cells(RUN)] == ["pending", "failed", "failed", "ok"]


def test_load_cells_name_the_peak_they_used(store):
    @contextlib.contextmanager
    def new_platform(spec, role):
        yield FakePlatform(spec.name, [])

    target = FakePlatform("native", [])
    env = ScenarioEnv(
        target,
        Rated(),
        RunContext(params={"rate": 0}),
        new_platform,
        solo_peaks=StoredPeaks(store, RUN, lambda *a: None),
    )
    samples = registry.parse("identical:load=50").run(env)
    ops = {s.role: s for s in samples if s.metric == "ops"}
    assert ops["target"].value == ops["neighbour-1"].value == 500  # 50 % of 1000
    for s in ops.values():
        assert s.labels["solo_peak"] == 1000.0 and s.labels["peak_cell_id"] == f"{RUN}/0001"
    assert Rated.runs == 3  # one peak (both run on platform "native"), then both at 50 %


class _Budget:
    def __init__(self, quota):
        self.quota = quota

    def quota_in_effect(self):
        return self.quota

    def facts(self):
        quota, period = (int(x) for x in self.quota.split())
        return BudgetFacts("shared", quota, period)

    def throttled(self):  # cpu.stat, 10 periods on at each read, half of them throttled
        self.periods = getattr(self, "periods", 0) + 10
        return {"nr_periods": self.periods, "nr_throttled": self.periods // 2}

    def weight(self):
        return "cpu.shares 1024"


def test_a_peak_inside_a_shared_budget_is_not_the_unlimited_peak(store):
    """A VM is unlimited as a target but inside a container target's 0.5-CPU budget as its
    neighbour: the two peaks are measured and stored apart (key and label peak_cpu_limit)."""
    inside = FakePlatform("vm", [])
    inside.budget = _Budget("50000 100000")
    free = FakePlatform("vm", [])
    peaks = StoredPeaks(store, RUN, lambda *a: None)
    ctx = RunContext(params={})
    a = peaks.get(inside, Rated(), {"rate": 0}, ctx)
    b = peaks.get(free, Rated(), {"rate": 0}, ctx)
    assert a.cell_id != b.cell_id and Rated.runs == 2
    limits = [r.labels.get("peak_cpu_limit") for r in store.cells(RUN) if r.scenario == SCENARIO]
    assert limits == ["cpu quota 50000 100000", ""]
    ran_out = {
        json.loads(r["labels_json"]).get("cpu_budget_throttled") for r in store.sample_rows(RUN)
    }
    assert ran_out == {"5/10 periods", None}  # said inside the budget only, over its cell
    again = StoredPeaks(store, RUN, lambda *a: None)  # --resume reads both back
    assert again.get(inside, Rated(), {"rate": 0}, ctx) == a
    assert again.get(free, Rated(), {"rate": 0}, ctx) == b and Rated.runs == 2


def test_figures_keep_a_platforms_peaks_under_two_limits_apart():
    from virtbench.analysis.colocation_steps import sweep_points

    def row(limit, value):
        labels = {"step": 0, "file_size_kb": 1, "offered_rate": 100.0, "peak_cpu_limit": limit}
        return {
            "metric": "reply_rate",
            "role": "target",
            "platform": "vm",
            "test_case": "httperf-sweep",
            "scenario": SCENARIO,
            "labels": labels,
            "value": value,
            "valid": 1,
        }

    keys = sweep_points([row("cpu quota 50000 100000", 800.0), row("none", 1600.0)], x="offered")
    assert {k[2] for k in keys} == {"solo-peak", "solo-peak (cpu quota 50000 100000)"}
    assert sorted(pts[0].mean for pts in keys.values()) == [800.0, 1600.0]  # not pooled


class _OwnQuota(FakePlatform):
    """An environment with its own CFS quota (cpu_budget = "own": no shared budget), in a
    cgroup directory the weights placement lifts it in (platforms/cpu_weight.lifted_quota)."""

    def __init__(self, name, cgroup_dir, quota="50000"):
        super().__init__(name, [])
        cgroup_dir.mkdir(parents=True, exist_ok=True)
        (cgroup_dir / "cpu.cfs_quota_us").write_text(quota + "\n")
        (cgroup_dir / "cpu.cfs_period_us").write_text("100000\n")
        (cgroup_dir / "cpu.shares").write_text("1024\n")
        self.dir = cgroup_dir

    def accounting(self):
        return Accounting(cgroups={"cpu": str(self.dir)})

    def cpu_weight(self, shares):
        return contextlib.nullcontext(f"cpu.shares={shares}")


class Quotaed(Rated):
    """Unlimited, it serves as much as its environment's quota lets it: 1000 ops/s a CPU."""

    def run(self, platform, ctx):
        type(self).runs += 1
        if not ctx.params["rate"]:
            quota = int((platform.dir / "cpu.cfs_quota_us").read_text())
            return [self.sample("ops", 1000.0 * (quota / 100_000 if quota > 0 else 1))]
        return [self.sample("ops", float(ctx.params["rate"]))]


def test_a_peak_under_its_own_quota_is_not_the_peak_with_the_quota_lifted(store, tmp_path):
    """cpu_budget = "own": a load=PCT cell measures the peak under the environment's own
    0.5-CPU quota, a weights cell (one shared CPU) with the quota lifted. Sharing one key made
    the first the second's denominator: a weights cell at load=50 offered 250, not 500."""
    n = iter(range(100))

    @contextlib.contextmanager
    def new_platform(spec, role):
        yield _OwnQuota(spec.name, tmp_path / f"cg{next(n)}")

    Quotaed.runs = 0
    peaks = StoredPeaks(store, RUN, lambda *a: None)
    target = _OwnQuota("native", tmp_path / "target")
    spec = {"native": PlatformSpec("native", "native")}

    def cell(scenario):
        env = ScenarioEnv(
            target, Quotaed(), RunContext(params={"rate": 0}), new_platform, solo_peaks=peaks
        )
        env = replace(env, platforms=spec)
        return {s.role: s for s in registry.parse(scenario).run(env) if s.metric == "ops"}

    capped = cell("identical:load=50")
    assert capped["target"].value == 250 and capped["target"].labels["solo_peak"] == 500
    lifted = cell("weights:1:1:1:load=50")
    assert lifted["target"].value == 500 and lifted["target"].labels["solo_peak"] == 1000
    assert (target.dir / "cpu.cfs_quota_us").read_text().strip() == "50000"  # put back
    rows = [r for r in store.cells(RUN) if r.scenario == SCENARIO]
    assert [r.labels["peak_cpu_limit"] for r in rows] == ["cpu quota 50000 100000", ""]
    again = StoredPeaks(store, RUN, lambda *a: None)  # --resume reads both back by key
    ctx = RunContext(params={})
    assert again.get(target, Quotaed(), {"rate": 0}, ctx).value == 500
    with lifted_quota(target):
        assert again.get(target, Quotaed(), {"rate": 0}, ctx).value == 1000


def test_an_unlimited_own_cgroup_keeps_the_limit_empty_and_a_budget_wins(store, tmp_path):
    """Stored labels of shared-budget runs are unchanged: no quota reads "", and inside a
    budget (where its own group has none) the budget's quota is the limit."""
    free = _OwnQuota("c", tmp_path / "free", quota="-1")
    assert cpu_limit(free) == ""
    inside = _OwnQuota("c", tmp_path / "inside", quota="-1")
    inside.budget = _Budget("50000 100000")
    assert cpu_limit(inside) == "cpu quota 50000 100000"
