"""Parsers of the latency suite against real outputs captured on the development host."""

from pathlib import Path

import pytest

from virtbench.drivers.cyclictest import parse_cyclictest, percentile_rank, value_at_rank
from virtbench.drivers.probe import (
    EXIT_NOPERM,
    EXIT_USAGE,
    load_json,
    modes,
    parse_probe,
    probe_failure,
)
from virtbench.errors import WorkloadError
from virtbench.platforms.base import ExecResult
from virtbench.workloads import antagonists
from virtbench.workloads.base import RunContext
from virtbench.workloads.latency import Cyclictest, ThreadSwitch2, Tick

DATA = Path(__file__).parent.parent / "data"


def read(rel: str) -> str:
    return (DATA / rel).read_text()


def test_tick_probe_output_parses_with_consistent_stats():
    r = parse_probe(read("tick/host-fifo-2s.json"), "tick")
    s = r.stats_us
    assert s["min"] <= s["median"] <= s["p99"] <= s["p9999"] <= s["max"]
    assert 50 < s["min"] < 80  # the ~65 µs busy loop
    assert r.labels["clock"] == "tsc" and r.labels["realtime"] is True
    assert r.labels["policy"] == "fifo" and r.labels["priority"] == 99
    assert "invalid" not in r.labels and "warning" not in r.labels
    bins = r.data["histogram"]["bins"]
    assert sum(b[2] for b in bins) == r.data["samples"]


def test_tick_samples_series_and_second_mode():
    series = []
    ctx = RunContext(params={}, series=lambda *a: series.append(a))
    r = parse_probe(read("tick/host-fifo-2s.json"), "tick")
    samples = Tick().to_samples(r.data, r.stats_us, r.labels, ctx)
    by = {s.metric: s for s in samples}
    assert by["max_us"].value == pytest.approx(r.stats_us["max"])
    assert "histogram_ns" in by["max_us"].labels  # only on the headline sample
    assert "histogram_ns" not in by["median_us"].labels
    assert by["disturbed_per_s"].value > 0
    assert 0 < by["tick_delay_us"].value < 100
    metrics = {a[0] for a in series}
    assert metrics == {"tick_max_us", "tick_min_us", "tick_head_us"}
    ts = [a[1] for a in series if a[0] == "tick_max_us"]
    assert ts == sorted(ts) and ts[-1] < 2.5


def test_monotonic_raw_fallback_is_labelled():
    r = parse_probe(read("tick/host-monotonic-raw-1s.json"), "tick")
    assert r.labels["clock"] == "monotonic_raw"
    assert "CLOCK_MONOTONIC_RAW" in r.labels["clock_fallback"]


def test_unprivileged_run_is_labelled_not_dropped():
    r = parse_probe(read("tick/unprivileged-allowed.json"), "tick")
    assert r.labels["realtime"] is False and r.labels["policy"] == "other"
    assert "not real-time" in r.labels["warning"]
    assert "invalid" not in r.labels


def test_refused_rt_gives_clear_message_with_the_option():
    err = probe_failure("tick", EXIT_NOPERM, read("tick/unprivileged-refused.stderr"))
    assert "Operation not permitted" in str(err)
    assert "allow_unprivileged = true" in str(err)


def test_bad_cpu_message_names_allowed_cpus():
    err = probe_failure("tick", EXIT_USAGE, read("tick/bad-cpu.stderr"))
    assert "CPU 7" in str(err) and "allowed" in str(err)


def test_switch_outputs():
    two = parse_probe(read("switch/host-2.json"), "switch")
    many = parse_probe(read("switch/host-1000.json"), "switch")
    assert two.data["threads"] == 2 and many.data["threads"] == 1000
    assert two.data["self_yields"] == 0
    assert 0 < two.stats_us["min"] <= two.stats_us["median"] <= two.stats_us["max"]
    # 1000 threads no longer fit the caches: the typical switch is slower than with 2
    assert many.stats_us["median"] > two.stats_us["median"]
    samples = ThreadSwitch2().stat_samples(two.stats_us, two.labels)
    assert samples[0].metric == "max_us" and samples[0].higher_is_better is False


def test_switch_unprivileged_counts_self_yields():
    r = parse_probe(read("switch/unprivileged-2.json"), "switch")
    assert r.labels["realtime"] is False
    assert r.data["self_yields"] >= 0


def test_no_json_is_a_workload_error():
    with pytest.raises(WorkloadError, match="no JSON"):
        load_json("Segmentation fault\n", "tick")


def test_modes_finds_second_mode_on_synthetic_histogram():
    # 98% at 65 µs, 2% hit by a tick 8 µs later (seed 001 Fig. 6: 68 vs 76 µs)
    bins = [[65000.0, 65100.0, 9800], [73000.0, 73100.0, 200]]
    m = modes(bins)
    assert m.main_us == pytest.approx(65.5)
    assert m.second_us == pytest.approx(73.5)
    assert m.delay_us == pytest.approx(8.0)
    assert m.disturbed == 200 and m.total == 10000


def test_modes_without_second_mode():
    m = modes([[65000.0, 65100.0, 100]])
    assert m.second_us is None and m.delay_us is None and m.disturbed == 0


def test_cyclictest_json():
    r = parse_cyclictest(read("cyclictest/host-2s.json"))
    assert 1900 <= r.labels["cycles"] <= 2000 and r.labels["threads"] == 1
    assert r.labels["rt_tests_version"] == "2.40"
    samples = Cyclictest().to_samples(read("cyclictest/host-2s.json"))
    by = {s.metric: s.value for s in samples}
    assert by["min_us"] <= by["avg_us"] <= by["max_us"]
    assert by["p99_us"] <= by["max_us"]


def test_cyclictest_garbage():
    with pytest.raises(WorkloadError, match="cyclictest"):
        parse_cyclictest("not json")


def test_rank_helpers():
    hist = {10: 98, 20: 1}
    assert percentile_rank(100, 99) == 99
    assert value_at_rank(hist, 98) == 10.0
    assert value_at_rank(hist, 99) == 20.0
    assert value_at_rank(hist, 100) is None  # the 100th sample overflowed the histogram


def _res(stdout: str = "", stderr: str = "") -> ExecResult:
    return ExecResult(["x"], 0, stdout, stderr, 1.0)


def test_antagonist_reports():
    cpu = antagonists.get("cpu-load").samples(_res(read("load/cpu.json")), "neighbour-1")
    assert cpu[0].metric == "antagonist_loops_per_s" and cpu[0].value > 0
    assert cpu[0].role == "neighbour-1"
    mem = antagonists.get("memory-load").samples(_res(read("load/mem.json")), "neighbour-2")
    assert mem[0].unit == "MB/s" and mem[0].value > 100
    sng = antagonists.get("stress-ng-cache").samples(
        _res(stderr=read("load/stress-ng-cache.stderr")), "neighbour-1"
    )
    assert sng[0].metric == "antagonist_bogo_ops_per_s" and sng[0].value > 0
    dead = antagonists.get("cpu-load").samples(_res("killed"), "neighbour-1")
    assert "invalid" in dead[0].labels


def test_antagonist_names():
    assert antagonists.get("stress-ng-matrix").tools() == ("stress-ng",)
    with pytest.raises(ValueError, match="allowed: cpu-load, memory-load"):
        antagonists.get("gpu-load")
    with pytest.raises(ValueError):
        antagonists.get("stress-ng-Bad;rm")


def test_real_non_invariant_tsc_in_a_tcg_guest_falls_back():
    # captured inside a QEMU TCG guest: CPUID does not advertise an invariant TSC
    r = parse_probe(read("tick/tcg-guest-1s.json"), "tick")
    assert r.data["clock"]["cpuid_invariant"] is False
    assert r.labels["clock"] == "monotonic_raw" and r.labels["tsc_invariant"] is False
    assert "TSC not invariant" in r.labels["clock_fallback"]
    assert r.stats_us["min"] > 0
    sw = parse_probe(read("switch/tcg-guest-2.json"), "switch")
    assert sw.labels["clock"] == "monotonic_raw" and sw.data["samples"] > 0
