"""RT throttling windows told from other delays, on probe outputs captured on the development
host (sched_rt_runtime_us 950000 of 1000000: a busy SCHED_FIFO/RR task stalls ~50 ms per
second, each stall ending at the period boundary)."""

import json
from pathlib import Path

import pytest

from virtbench.drivers.probe import (
    ThrottleBudget,
    classify_throttling,
    events_of,
    parse_probe,
    stats_without,
)
from virtbench.workloads.base import RunContext
from virtbench.workloads.latency import ThreadSwitch2, Tick, throttle_budgets

DATA = Path(__file__).parent.parent / "data"
HOST = ThrottleBudget("kernel.sched_rt_runtime_us", 950000, 1000000)


def load(rel: str) -> dict:
    return json.loads((DATA / rel).read_text())


def classify(data: dict, budgets=(HOST,)):
    return classify_throttling(events_of(data), list(budgets), data["duration_s"] * 1e9)


def test_throttling_windows_are_found_and_left_out_of_the_maximum():
    data = load("tick/host-throttled-3s.json")
    assert data["stats_ns"]["max"] > 40e6  # the raw maximum is a throttling stall
    th = classify(data)
    assert th.budget == HOST and th.count == 3 and th.anchors >= 2
    assert all(40e6 < x <= 52.5e6 for x in th.excluded_ns)  # the stall, 5% allowance
    stats = stats_without(data, th)
    assert stats["max"] < 5000  # µs: what the host did besides throttling
    assert stats["p9999"] <= stats["max"] and stats["p999"] <= stats["p9999"]
    assert stats["min"] == pytest.approx(data["stats_ns"]["min"] / 1000)


def test_no_budget_or_another_period_finds_no_windows():
    data = load("tick/host-throttled-3s.json")
    assert classify(data, []).budget is None
    assert classify(data, [ThrottleBudget("other", 90000, 100000)]).count == 0


def test_competitor_quanta_stay_latency_with_throttling_removed():
    """SCHED_RR competitor at the target's priority: gaps of one quantum (30 ms, 1 ms
    rounded up to the 4 ms tick) stay; the throttling part of a gap is removed."""
    q30, q1 = load("tick/host-rr-30ms-quantum-3s.json"), load("tick/host-rr-1ms-quantum-3s.json")
    m30 = stats_without(q30, classify(q30))["max"]
    m1 = stats_without(q1, classify(q1))["max"]
    assert 28000 < m30 < 40000  # one 30 ms quantum (32 ms in 4 ms ticks)
    assert m1 < m30 / 2  # the paper's order: a short quantum gives a short maximum


def test_short_switch_run_without_throttling_is_unchanged():
    data = load("switch/host-2-events.json")
    th = classify(data)
    assert th.budget is None
    assert stats_without(data, th)["max"] == pytest.approx(data["stats_ns"]["max"] / 1000)


def test_tick_samples_label_and_count_throttling():
    series = []
    ctx = RunContext(params={}, series=lambda *a: series.append(a))
    r = parse_probe((DATA / "tick/host-throttled-3s.json").read_text(), "tick")
    labels = {**r.labels, "rt_runtime_period_us": "950000/1000000"}
    by = {s.metric: s for s in Tick().to_samples(r.data, r.stats_us, labels, ctx)}
    assert by["max_us"].value < 5000 and by["raw_max_us"].value > 40000
    assert by["rt_throttle_windows"].value == 3
    assert 120 < by["rt_throttle_total_ms"].value < 150
    assert by["max_us"].labels["rt_throttling"] == "excluded"
    assert "950000/1000000" in by["max_us"].labels["rt_throttle_source"]
    assert "p999_us" in by
    stalls = [a for a in series if a[0] == "tick_throttle_us"]
    assert len(stalls) == 3
    assert max(a[2] for a in series if a[0] == "tick_max_us") < 5000  # the figure too


def test_budget_labels_innermost_first_and_unlimited_ignored():
    budgets = throttle_budgets(
        {"rt_runtime_period_us": "950000/1000000", "rt_group_runtime_period_us": "45238/95238"}
    )
    assert [b.period_us for b in budgets] == [95238, 1000000]
    assert throttle_budgets({"rt_runtime_period_us": "-1/1000000"}) == []


def test_switch_samples_without_events_are_unclassified():
    r = parse_probe((DATA / "switch/host-2.json").read_text(), "switch")
    out, th = ThreadSwitch2().samples_without_throttling(r.data, r.stats_us, r.labels)
    assert th is None and "not classified" in out[0].labels["rt_throttling"]


def test_windows_that_drift_are_still_recognised():
    """With three normal tasks starving on the probe's CPU the stall windows recurred every
    ~1004 ms (the fair server's deferred windows), not at a fixed phase of 1 s."""
    data = load("tick/host-fair-server-drift-3s.json")
    th = classify(data)
    assert th.count == 3
    assert stats_without(data, th)["max"] < 5000


def test_two_anchors_at_one_boundary_do_not_break_the_period():
    """Two long gaps ending within one boundary's slack (a competitor's quantum, then the
    stall) once divided by zero periods."""
    events = [(0.90e9, 45e6), (0.948e9, 1e6), (1.9e9, 48e6), (1.947e9, 1.5e6), (2.9e9, 48e6)]
    events += [(0.903e9, 42e6)]
    th = classify_throttling(events, [HOST], 3e9)
    assert th.budget == HOST and th.count >= 3
