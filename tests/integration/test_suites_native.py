"""Run each cpu, memory and disk test case once, for real, on the native platform, with tiny
parameters (about 30 s in all). Checks shapes and sanity, never timing thresholds."""

from __future__ import annotations

import math
import os
from pathlib import Path

import pytest

from virtbench.platforms.base import PlatformSpec
from virtbench.platforms.native import NativePlatform
from virtbench.tools import require
from virtbench.workloads import registry
from virtbench.workloads.base import RunContext

pytestmark = pytest.mark.integration

TINY = {
    "sysbench-cpu-1t": {"duration": 1},
    "sysbench-cpu-all": {"duration": 1},
    "stress-ng-cpu-matrixprod": {"duration": 1},
    "stress-ng-cpu-int64": {"duration": 1, "workers": 0},
    "stress-ng-qsort": {"duration": 1},
    "hpcc-linpack": {"n": 500},
    "hpcc-linpack-sweep": {"orders": [200, 400]},
    "mbw": {"array_mib": 16, "iterations": 3},
    "sysbench-memory-sweep": {"block_sizes_kib": [4, 4096], "ops": "both"},
    "fio-seq-read": {"size_mib": 16, "runtime": 1},
    "fio-seq-write": {"size_mib": 16, "runtime": 1},
    "fio-rand-read": {"size_mib": 16, "runtime": 1},
    "fio-rand-write": {"size_mib": 16, "runtime": 1},
    "fio-iozone": {"size_mib": 16, "runtime": 1},
}


@pytest.fixture(scope="module")
def native(tmp_path_factory):
    root = tmp_path_factory.mktemp("vb-suites")
    with NativePlatform(PlatformSpec("native", "native", {"workdir": str(root)}), "vb-it") as p:
        yield p
    assert not (root / "vb-it").exists()


def test_every_new_test_case_is_exercised():
    names = {w.name for s in ("cpu", "memory", "disk") for w in registry.by_suite(s)}
    assert names == set(TINY)


@pytest.mark.parametrize("name", sorted(TINY))
def test_runs_once_on_native(native, name):
    wcls = registry.load_all()[name]
    require(wcls.tools, needed_by=name)
    params = {k: p.default for k, p in wcls.params.items()} | TINY[name]
    samples = wcls().run(native, RunContext(params=params, timeout=120))
    assert samples
    metrics = {m.name for m in wcls.metrics}
    for s in samples:
        assert s.metric in metrics and s.unit
        assert math.isfinite(s.value)
        assert s.value > 0 or s.labels.get("invalid"), s
    assert any(s.metric == wcls.primary().name for s in samples)
    # the workload leaves nothing behind in the workdir
    assert os.listdir(Path(native.workdir)) == []
    if name == "sysbench-memory-sweep":
        points = {(s.labels["op"], s.labels["block_size_bytes"]) for s in samples}
        assert points == {("read", 4096), ("read", 4 << 20), ("write", 4096), ("write", 4 << 20)}
    if name == "fio-iozone":  # six phases x two modes x four metrics
        phases = [s.labels["phase"] for s in samples if s.metric == "bandwidth_mib_s"]
        assert phases == ["write", "rewrite", "read", "reread", "random-read", "random-write"] * 2
        assert len(samples) == 48 and not any(s.labels.get("invalid") for s in samples)
    elif name.startswith("fio-"):
        assert sorted({s.labels["direct"] for s in samples}) == [0, 1]
        assert len(samples) == 8
        direct = [s for s in samples if s.labels["direct"] == 1]
        assert all(s.labels["direct_honoured"] == (s.labels["fs_type"] != "tmpfs") for s in direct)
    if name == "hpcc-linpack-sweep":  # one HPL figure per matrix order, in order
        gflops = [s for s in samples if s.metric == "hpl_gflops"]
        assert [s.labels["order"] for s in gflops] == [200, 400]
    if name == "hpcc-linpack":
        assert {s.metric for s in samples} == metrics
        assert all(s.labels["n"] == 500 for s in samples)
