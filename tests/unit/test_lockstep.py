"""Lockstep pair scenarios (issue 12): a shared schedule of each environment's own solo peak,
every step started and ended together, each step judged on its own window."""

from __future__ import annotations

import threading
import time
from types import SimpleNamespace

import pytest

from virtbench.drivers import sweep
from virtbench.scenarios import rates
from virtbench.scenarios.peaks import Peak
from virtbench.workloads.web import HttperfSweep


def test_schedule_is_the_same_shares_of_each_peak():
    # seed 000: both servers at 10 %, 20 % ... 100 % of their own full load
    assert sweep.schedule(1000, 0.1, 0.1, 1.0) == [100.0 * k for k in range(1, 11)]
    assert sweep.schedule(250, 0.1, 0.1, 1.0)[-1] == 250.0
    assert len(sweep.schedule(5101, 0.2, 0.2, 1.2)) == 6


def _run(lock: sweep.Lockstep, name: str, durations: list[float], out: dict) -> None:
    party = lock.party(name)
    verdicts = []
    for d in durations:
        party.begin()
        time.sleep(d)
        verdicts.append(party.end())
    out[name] = verdicts
    lock.abort()  # done: as the engine does when a workload returns


def test_steps_start_together_and_only_the_unshared_step_is_invalid():
    lock = sweep.Lockstep(["target", "neighbour-1"], 0.95, 0.05, timeout_s=10)
    out: dict = {}
    # step 1 of the target runs 0.3 s past the neighbour's: only that one is not shared
    a = threading.Thread(target=_run, args=(lock, "target", [0.1, 0.4, 0.1], out))
    b = threading.Thread(target=_run, args=(lock, "neighbour-1", [0.1, 0.1, 0.1], out))
    for th in (a, b):
        th.start()
    for th in (a, b):
        th.join()
    assert out["neighbour-1"] == [None, None, None]
    assert out["target"][0] is None and out["target"][2] is None
    assert "not shared" in out["target"][1] and "neighbour-1" in out["target"][1]
    starts = [lock.windows[1][p][0] for p in ("target", "neighbour-1")]
    assert abs(starts[0] - starts[1]) < 0.05  # the barrier started both at once


def test_a_party_that_stops_leaves_the_others_steps_unshared():
    lock = sweep.Lockstep(["target", "neighbour-1"], 0.95, 0.05, timeout_s=10)
    out: dict = {}
    a = threading.Thread(target=_run, args=(lock, "target", [0.05, 0.05, 0.05], out))
    b = threading.Thread(target=_run, args=(lock, "neighbour-1", [0.05], out))
    for th in (a, b):
        th.start()
    for th in (a, b):
        th.join(timeout=5)
    assert out["target"][0] is None
    assert all(v and "not shared" in v for v in out["target"][1:])


def test_a_partner_that_served_nothing_leaves_the_step_alone():
    """A neighbour whose server died (a VM's stalled NIC) ran its windows in step, but the
    target's steps were not co-located: they are invalid, the neighbour's own are not."""
    lock = sweep.Lockstep(["target", "neighbour-1"], 0.95, 0.05, timeout_s=10)
    out: dict = {}

    def party(name, served):
        p, verdicts = lock.party(name), []
        for ok in served:
            p.begin()
            time.sleep(0.05)
            verdicts.append(p.end(served=ok))
        out[name] = verdicts

    a = threading.Thread(target=party, args=("target", [True, True, True]))
    b = threading.Thread(target=party, args=("neighbour-1", [True, False, None]))
    for th in (a, b):
        th.start()
    for th in (a, b):
        th.join(timeout=5)
    assert out["target"][0] is None and out["target"][2] is None  # None: not known, no verdict
    assert out["target"][1] == "step window not shared: neighbour-1 served nothing in it"
    assert out["neighbour-1"] == [None, None, None]


class _Peaks:
    def __init__(self, by_size: dict[int, float]) -> None:
        self.by_size, self.asked = by_size, []

    def get(self, platform, workload, params, ctx):
        self.asked.append(params)
        return Peak(self.by_size[params["file_sizes"][0]], f"cell-{params['file_sizes'][0]}")


def test_apply_schedule_takes_one_solo_peak_per_size():
    params = {"file_sizes": [1, 50], "start_fraction": 0.1, "step_fraction": 0.1}
    params |= {"max_fraction": 1.0, "rate": 0.0}
    peaks = _Peaks({1: 14336.0, 50: 5101.0})
    env = SimpleNamespace(workload=HttperfSweep(), solo_peaks=peaks, ctx=None)
    out, by_size = rates.apply_schedule(env, SimpleNamespace(name="c"), params)
    assert out["schedule"]["1"][0] == pytest.approx(1433.6)
    assert out["schedule"]["50"][-1] == pytest.approx(5101.0)
    assert {k: p.value for k, p in by_size.items()} == {"1": 14336.0, "50": 5101.0}
    # each peak is a solo run of one size, without a rate limit or a schedule
    assert [p["file_sizes"] for p in peaks.asked] == [[1], [50]]
    assert all("schedule" not in p and p["rate"] == 0.0 for p in peaks.asked)


def test_each_ended_step_labels_its_index_the_same_for_every_party():
    lock = sweep.Lockstep(["target", "neighbour-1"], 0.95, 0.05, timeout_s=10)
    seen: dict[str, list[dict]] = {}

    def run(name: str) -> None:
        party = lock.party(name)
        for _ in range(3):
            party.begin()
            party.end()
            seen.setdefault(name, []).append(party.labels())

    threads = [threading.Thread(target=run, args=(n,)) for n in lock.names]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    steps = [{"lockstep_step": k} for k in range(3)]
    assert seen == {"target": steps, "neighbour-1": steps}
