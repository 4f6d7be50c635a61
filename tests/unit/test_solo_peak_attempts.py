"""A solo peak that never saturated, or failed, is measured again; what ends it (review 74)."""

import pytest

from tests.unit.fakes import FakePlatform
from tests.unit.test_solo_peak_saturation import RUN, FakeSweep, _params
from virtbench.errors import WorkloadError
from virtbench.runner.peaks import StoredPeaks
from virtbench.store.db import Store
from virtbench.store.description import RunDescription
from virtbench.workloads.base import RunContext


@pytest.fixture
def store(tmp_path):
    FakeSweep.offered = []
    st = Store.in_dir(tmp_path)
    st.create_run(RUN, "t", "x.toml", "", 1, {}, {}, "0", description=RunDescription())
    return st


def test_absolute_sweep_below_capacity_still_gives_load_pct_a_peak(store, monkeypatch):
    """tests/integration/test_network_web.py::test_many_neighbours_at_ten_percent_of_solo_peak:
    native, mode=absolute, 400 + 400 req/s, max_steps=2. Native serves far more than 1,600, so
    both attempts (400/800, then 800/1600) are served in full: the peak raises and the many:2
    cell fails with no samples (the test's `set(offered) == {...}` fails)."""
    monkeypatch.setattr(FakeSweep, "serves", 20_000.0)
    params = _params(mode="absolute", rate_start=400, rate_step=400, max_steps=2)
    peaks = StoredPeaks(store, RUN, lambda *a: None)
    peak = peaks.get(FakePlatform("native", []), FakeSweep(), params, RunContext(params={}))
    assert peak.value > 0  # FAILS: WorkloadError 'sweep never saturated ... 1,600 req/s'


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
    assert peak.value > 0  # FAILS: the flake is the last attempt
