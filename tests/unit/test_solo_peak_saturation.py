"""A solo peak whose sweep never saturated is no peak (run 20261127-054853-d90a: a wrk probe
that read far too low scaled vm-virtio's 4 KB sweep to 134 req/s, every step was served in
full, and 134 req/s became the 100 % of every 4 KB pair where the solo cell served ~1,277):
its peak_throughput is stored invalid, and it is measured once more at once, with a fresh
capacity probe and a top rate of at least twice the first sweep's."""

import pytest

from tests.unit.fakes import FakePlatform
from virtbench.drivers import sweep
from virtbench.errors import WorkloadError
from virtbench.runner.peaks import StoredPeaks
from virtbench.store.db import Store
from virtbench.store.description import RunDescription
from virtbench.workloads.base import RunContext
from virtbench.workloads.web import HttperfSweep, SweepState

RUN = "20240101-000000-abcd"


class FakeSweep(HttperfSweep):
    """The real sweep loop, headline and plan; a server that serves up to `serves` req/s
    and a capacity probe that reads each of `probes` in turn."""

    serves = 1277.0
    probes: list[float] = []
    probed = 0
    offered: list[list[float]] = []  # the rates of each run

    @property
    def driver(self):  # its own fake httperf side: step() below
        return self

    def run(self, platform, ctx):
        samples: list = []
        type(self).offered.append([])
        for size in self.sizes(ctx):
            self.sweep_one(SweepState(None, size, ctx, samples, 0.0, 1024, platform))
        return samples

    def capacity(self, st):
        cls = type(self)
        value = cls.probes[min(cls.probed, len(cls.probes) - 1)]
        cls.probed += 1
        st.samples.append(self.sample("capacity_probe", value, file_size_kb=st.size))
        return value

    def step(self, st, index, rate, duration=None, phase=None, clients=None):
        type(self).offered[-1].append(rate)
        served = min(rate, self.serves * (1 - 0.02 * max(0, rate / self.serves - 1)))
        labels = {"step": index, "offered_rate": round(rate, 1), "file_size_kb": st.size}
        st.samples.append(self.sample("reply_rate", served, **labels))
        return sweep.StepResult(index, rate, served, 0, 100)

    def check_alive(self, *a):
        pass


def _params(**over):
    # the retry path, with no extension past max_fraction (its own tests below)
    base = {k: p.default for k, p in HttperfSweep.params.items()} | {"file_sizes": [4]}
    return base | {"extend_fraction": 0} | over


def _sweep(probe: float, **over) -> list:
    FakeSweep.probes, FakeSweep.probed = [probe], 0
    return FakeSweep().run(None, RunContext(params=_params(**over)))


def _head(samples, metric="peak_throughput"):
    return next(s for s in samples if s.metric == metric)


def test_a_sweep_that_ran_out_of_steps_served_in_full_is_no_peak():
    samples = _sweep(89.4)  # 1.5 x 89.4 = 134 req/s at the top: all served
    assert _head(samples, "steps").labels["stopped"] == "max-steps"
    assert "invalid" not in _head(samples).labels  # an ordinary sweep is stored as it was
    top = FakeSweep.unsaturated(samples)
    assert top == pytest.approx(134.1)
    why = _head(samples).labels["invalid"]
    assert why.startswith("sweep never saturated: its top step, 134 req/s offered,")
    assert "served in full" in why and "capacity probe (wrk, 89 req/s)" in why
    assert _head(samples, "peak_offered_rate").labels["invalid"] == why


class TwoStalledProbes(FakeSweep):
    """Both probes stalled: the first, higher, set the scale (labelled probe_used)."""

    def capacity(self, st):
        used = self.sample("capacity_probe", 89.4, file_size_kb=st.size, probe_used=True)
        st.samples += [used, self.sample("capacity_probe", 50.0, file_size_kb=st.size)]
        return used.value


def test_the_unsaturated_verdict_names_the_probe_that_set_the_scale():
    samples = TwoStalledProbes().run(None, RunContext(params=_params()))
    assert FakeSweep.unsaturated(samples) == pytest.approx(134.1)
    why = _head(samples).labels["invalid"]
    assert "capacity probe (wrk, 89 req/s)" in why  # not the last one read (50)


def test_a_saturated_sweep_is_a_peak():
    # the probe read near the truth: the sweep fell after its peak and stopped there
    samples = _sweep(1000.0)
    assert _head(samples, "steps").labels["stopped"] == "falling"
    assert FakeSweep.unsaturated(samples) is None
    assert "invalid" not in _head(samples).labels
    # out of steps, but its top step was not served in full: saturated at the top
    samples = _sweep(900.0, max_fraction=1.6, fall_steps=10)
    assert _head(samples, "steps").labels["stopped"] == "max-steps"
    assert FakeSweep.unsaturated(samples) is None


def test_the_retry_widens_the_sweep_to_twice_its_top_step():
    samples = _sweep(89.4, min_top_rate=268.2)
    assert FakeSweep.offered[-1][-1] == pytest.approx(268.2)
    assert len(FakeSweep.offered[-1]) == 15  # the same fractions, scaled
    # a probe that already reaches past it is kept as it is
    _sweep(1000.0, min_top_rate=268.2)
    assert FakeSweep.offered[-1][0] == pytest.approx(100)
    assert samples


@pytest.fixture
def store(tmp_path):
    FakeSweep.offered = []
    st = Store.in_dir(tmp_path)
    st.create_run(RUN, "t", "x.toml", "", 1, {}, {}, "0", description=RunDescription())
    return st


def _get(peaks):
    params = _params()
    return peaks.get(FakePlatform("vm-virtio", []), FakeSweep(), params, RunContext(params={}))


def test_an_unsaturated_solo_peak_is_stored_invalid_and_measured_again_probing_again(store):
    FakeSweep.probes, FakeSweep.probed = [89.4, 1000.0], 0
    peak = _get(StoredPeaks(store, RUN, lambda *a: None))
    assert FakeSweep.probed == 2  # the retry probed again: a stalled probe is not reused
    assert peak.value == pytest.approx(1277.0, rel=0.01) and peak.cell_id == f"{RUN}/0001"
    first, second = store.cells(RUN)
    assert (first.status, second.status) == ("failed", "ok")
    assert "sweep never saturated" in first.error and "134 req/s offered" in first.error
    rows = [r for r in store.sample_rows(RUN) if r["cell_id"] == first.cell_id]
    head = next(r for r in rows if r["metric"] == "peak_throughput")
    assert head["valid"] == 0 and "never saturated" in head["invalid_reason"]
    # the retry's params are the peak's (its key on --resume); what widened it is a label
    assert second.labels["params"] == _params() and second.labels["min_top_rate"] == 268.2
    assert _get(StoredPeaks(store, RUN, lambda *a: None)) == peak  # read back on resume


def test_twice_unsaturated_is_kept_as_a_lower_bound_not_a_failed_cell(store):
    # a widened sweep that still tops out served in full: its top is what is known, kept and
    # said (failing it failed every cell that needed the peak: review 74, an absolute sweep
    # topping out below the server in tests/integration/test_network_web.py)
    FakeSweep.probes, FakeSweep.probed = [10.0], 0  # 15 and then 30 req/s at the top
    peak = _get(StoredPeaks(store, RUN, lambda *a: None))
    assert peak.value == pytest.approx(30.0, rel=0.01)
    first, second = store.cells(RUN)
    assert (first.status, second.status) == ("failed", "ok")
    assert FakeSweep.offered[1][-1] == pytest.approx(30.0)
    assert "never saturated" in second.labels["peak_lower_bound"]
    rows = [r for r in store.sample_rows(RUN) if r["cell_id"] == second.cell_id]
    head = next(r for r in rows if r["metric"] == "peak_throughput")
    assert head["valid"] == 1 and "never saturated" in head["labels_json"]


def test_absolute_sweep_below_capacity_still_gives_load_pct_a_peak(store, monkeypatch):
    """tests/integration/test_network_web.py::test_many_neighbours_at_ten_percent_of_solo_peak:
    native, mode=absolute, 400 + 400 req/s, max_steps=2. Native serves far more than 1,600, so
    both attempts (400/800, then 800/1600) are served in full: the peak raises and the many:2
    cell fails with no samples (the test's `set(offered) == {...}` fails)."""
    monkeypatch.setattr(FakeSweep, "serves", 20_000.0)
    params = _params(mode="absolute", rate_start=400, rate_step=400, max_steps=2)
    peaks = StoredPeaks(store, RUN, lambda *a: None)
    peak = peaks.get(FakePlatform("native", []), FakeSweep(), params, RunContext(params={}))
    assert peak.value > 0  # failed the peak before: 'sweep never saturated ... 1,600 req/s'


class FlakyRetry(FakeSweep):
    """The first run is unsaturated (low probe); the second (the retry) fails once, as a fresh
    TCG guest's sweep can (the reason the retry was added)."""

    runs = 0

    def run(self, platform, ctx):
        type(self).runs += 1
        if type(self).runs == 2:
            raise WorkloadError("httperf-sweep: guest NIC stalled")
        return super().run(platform, ctx)


def test_a_flake_after_an_unsaturated_attempt_gets_a_retry(store):
    """colocation-web (max_fraction 1.0, fall_steps 10): nearly every first peak sweep is
    unsaturated, so the one retry is spent on widening; a flake in it now fails every cell
    (all 7 sizes of a schedule) that needed the peak, where before it ran."""
    FlakyRetry.probes, FlakyRetry.probed, FlakyRetry.runs = [1000.0], 0, 0
    params = _params(max_fraction=1.0, fall_steps=10)
    peaks = StoredPeaks(store, RUN, lambda *a: None)
    peak = peaks.get(FakePlatform("vm-virtio", []), FlakyRetry(), params, RunContext(params={}))
    assert peak.value > 0  # failed before: the flake was the last attempt


def test_a_sweep_served_in_full_at_its_top_goes_on_until_the_server_saturates():
    """A quota'd container served 1.5x, then 2x, its wrk probe at 30 KB under httperf
    (27 Nov 2026): a sweep stopping at the probe read a lower bound as its peak."""
    # the plan tops at 900; the server serves 1,277
    samples = _sweep(600.0, extend_fraction=3.0, fall_steps=10)
    offered = FakeSweep.offered[-1]
    assert offered[14] == pytest.approx(900)  # the plan, then the same 60 req/s steps
    assert offered[15] == pytest.approx(960) and offered[-3] == pytest.approx(1320)
    # two steps in a row not served in full (1,380 and 1,440): the end
    assert offered[-2:] == pytest.approx([1380, 1440])
    assert _head(samples, "steps").labels["stopped"] == "saturated"
    assert _head(samples).value == pytest.approx(1277 * (1 - 0.02 * (1320 / 1277 - 1)))
    assert FakeSweep.unsaturated(samples) is None


def test_the_extension_stops_at_its_reach_and_the_peak_stays_a_lower_bound():
    samples = _sweep(89.4, extend_fraction=3.0, max_steps=100)
    assert FakeSweep.offered[-1][-1] == pytest.approx(3 * 89.4)
    assert len(FakeSweep.offered[-1]) == 30
    assert _head(samples, "steps").labels["stopped"] == "max-steps"
    assert FakeSweep.unsaturated(samples) == pytest.approx(268.2)
    # and within max_steps (30 by default: 3.0 x the probe at 10 % steps)
    _sweep(89.4, extend_fraction=5.0, max_steps=20)
    assert len(FakeSweep.offered[-1]) == 20


def test_no_extension_when_the_top_step_was_not_served_in_full_or_it_is_off():
    _sweep(900.0, max_fraction=1.6, fall_steps=10, extend_fraction=3.0)
    assert FakeSweep.offered[-1][-1] == pytest.approx(1440)  # the plan's top: not served
    _sweep(89.4, extend_fraction=1.5)  # at or below max_fraction: off
    assert FakeSweep.offered[-1][-1] == pytest.approx(134.1)
    params = {"mode": "absolute", "rate_start": 10, "rate_step": 10, "max_steps": 5}
    _sweep(89.4, extend_fraction=3.0, **params)  # absolute mode: max_steps is the user's
    assert FakeSweep.offered[-1] == pytest.approx([10, 20, 30, 40, 50])


def test_a_widened_retry_extends_in_its_own_scale():
    _sweep(89.4, min_top_rate=268.2, extend_fraction=3.0, max_steps=100)
    offered = FakeSweep.offered[-1]
    assert offered[14] == pytest.approx(268.2)  # the widened plan's top (1.5 x 2 x 89.4)
    assert offered[-1] == pytest.approx(536.4)  # its reach: 3/1.5 of that top
    assert offered[15] - offered[14] == pytest.approx(offered[1] - offered[0])


def test_extension_rates_continue_the_plan():
    plan = sweep.capacity_plan(100.0, 0.1, 0.1, 1.0)
    assert sweep.extension(plan, 150.0, 30) == pytest.approx([110, 120, 130, 140, 150])
    assert sweep.extension(plan, 150.0, 12) == pytest.approx([110, 120])
    assert sweep.extension(plan, 100.0, 30) == []


class OneDip(FakeSweep):
    """Step 16 served 94 % (the host's noise, as 95.0 % at 1.1x the probe on 27 Nov)."""

    def step(self, st, index, rate, duration=None, phase=None, clients=None):
        out = super().step(st, index, rate, duration, phase, clients)
        if index == 16:
            out.throughput = 0.94 * rate
        return out


def test_one_step_short_of_its_rate_does_not_end_the_extension():
    OneDip.probes, OneDip.probed = [600.0], 0
    samples = OneDip().run(None, RunContext(params=_params(extend_fraction=3.0, fall_steps=10)))
    assert FakeSweep.offered[-1][-1] == pytest.approx(1440)  # went on past the dip at 1,020
    assert _head(samples, "steps").labels["stopped"] == "saturated"
