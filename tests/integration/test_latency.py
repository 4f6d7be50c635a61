"""Latency suite on the real host: probes, cyclictest, antagonists, quantum (about 40 s)."""

from __future__ import annotations

import filecmp
import subprocess
from pathlib import Path

import pytest

from virtbench import probes_build
from virtbench.campaign import loader
from virtbench.platforms.base import Platform, PlatformSpec
from virtbench.platforms.native import NativePlatform
from virtbench.runner.run import Runner
from virtbench.scenarios import quantum
from virtbench.store.db import Store
from virtbench.workloads.base import RunContext
from virtbench.workloads.latency import Cyclictest, ThreadSwitch2, Tick

pytestmark = pytest.mark.integration


def _params(cls, **over):
    return {k: p.default for k, p in cls.params.items()} | over


@pytest.fixture
def native():
    with NativePlatform(PlatformSpec("native", "native"), "vb-itest") as p:
        yield p


def test_tick_switch_cyclictest_on_the_host(native):
    series = []
    ctx = RunContext(
        params=_params(Tick, duration=1.0), timeout=60, series=lambda *a: series.append(a)
    )
    by = {s.metric: s for s in Tick().run(native, ctx)}
    assert by["max_us"].labels["realtime"] is True
    assert 40 < by["min_us"].value <= by["median_us"].value <= by["max_us"].value
    assert any(a[0] == "tick_max_us" for a in series)
    ctx = RunContext(params=_params(ThreadSwitch2, switches=5000), timeout=60)
    sw = {s.metric: s for s in ThreadSwitch2().run(native, ctx)}
    assert sw["max_us"].labels["threads"] == 2 and sw["min_us"].value > 0
    ctx = RunContext(params=_params(Cyclictest, duration=1.0), timeout=60)
    ct = {s.metric: s for s in Cyclictest().run(native, ctx)}
    assert ct["max_us"].value >= ct["min_us"].value > 0


def test_bad_cpu_and_zero_duration_are_refused():
    tick = probes_build.probe_path("tick")
    r = subprocess.run([tick, "--cpu", "1000"], capture_output=True, text=True)
    assert r.returncode == 2 and "allowed" in r.stderr
    r = subprocess.run([tick, "--duration", "0"], capture_output=True, text=True)
    assert r.returncode == 2 and "--duration" in r.stderr


def test_portable_put_file_copies_through_exec(native, tmp_path):
    src = probes_build.probe_path("load")
    dest = Platform.put_file(native, src, str(tmp_path / "vb-load"))  # the exec/base64 path
    assert filecmp.cmp(src, dest, shallow=False)
    assert Path(dest).stat().st_mode & 0o111


def _leftover_loads() -> list[str]:
    out = subprocess.run(["pgrep", "-a", "-f", "vb-load"], capture_output=True, text=True)
    return [line for line in out.stdout.splitlines() if "pgrep" not in line]


def test_antagonist_campaign_with_quantum_restores_everything(tmp_path):
    before = Path("/proc/sys/kernel/sched_rr_timeslice_ms").read_text()
    text = """
[campaign]
name = "itest-rt"
repetitions = 1
warmup = 0
cell_timeout = 120
scenarios = ["pinned", "antagonist:cpu-load:same-cpu:quantum=4ms", "antagonist:memory-load:free:1"]
[suites.latency]
test_cases = ["tick"]
duration = 1.0
"""
    runner = Runner(tmp_path)
    run_id = runner.start(loader.parse(text, "itest.toml"))
    store = Store.in_dir(tmp_path)
    cells = store.cells(run_id)
    assert [c.status for c in cells] == ["ok"] * 3, [c.error for c in cells]
    rows = store.sample_rows(run_id)
    roles = {(r["scenario"], r["role"]) for r in rows}
    assert ("antagonist:memory-load:free:1", "neighbour-1") in roles
    q = [r for r in rows if "quantum" in r["scenario"] and r["role"] == "target"]
    assert q and '"quantum_knob"' in q[0]["labels_json"]
    assert Path("/proc/sys/kernel/sched_rr_timeslice_ms").read_text() == before
    assert not quantum.STATE_FILE.exists()
    assert not _leftover_loads()
