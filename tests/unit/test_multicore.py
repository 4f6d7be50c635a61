"""The multicore suite: thread sweeps, efficiency, both directions (seed 004 Table 2)."""

from __future__ import annotations

from pathlib import Path

import pytest

from virtbench.errors import WorkloadError
from virtbench.platforms.base import ExecResult
from virtbench.suites import SUITES
from virtbench.workloads import registry
from virtbench.workloads.base import RunContext
from virtbench.workloads.multicore import (
    MulticoreStressNgMatrixprod,
    MulticoreSysbenchCpu,
    MulticoreSysbenchCpuTime,
    MulticoreSysbenchMemory,
    default_threads,
)

DATA = Path(__file__).parent.parent / "data"


class Scripted:
    """exec answers by the tool inside the watchdog's argv; records each tool argv."""

    workdir = "/wd"

    def __init__(self, answer, cpus: int = 2) -> None:
        self.answer, self.cpus, self.tools = answer, cpus, []

    def exec(self, argv, *, cpus=None, timeout=None, env=None):
        if argv == ["nproc"]:
            return ExecResult(argv, 0, f"{self.cpus}\n", "", 0.0)
        tool = argv[5:] if "vb-watch" in argv else argv  # unwrap the stall watchdog
        self.tools.append(tool)
        return ExecResult(list(argv), 0, self.answer(tool), "", 0.1)


def ctx(w, **params) -> RunContext:
    return RunContext(params={k: p.default for k, p in w.params.items()} | params, timeout=60)


def threads_of(argv: list[str]) -> int:
    return int(next(a for a in argv if a.startswith("--threads=")).split("=")[1])


def test_default_thread_counts_pass_saturation():
    assert default_threads(1) == [1, 2]
    assert default_threads(2) == [1, 2, 4]
    assert default_threads(6) == [1, 2, 4, 6, 8]


def test_sysbench_cpu_rates_and_efficiency():
    texts = {1: "cpu-1t.txt", 2: "cpu-2t.txt"}
    p = Scripted(lambda a: (DATA / "sysbench" / texts[min(threads_of(a), 2)]).read_text())
    w = MulticoreSysbenchCpu()
    samples = w.run(p, ctx(w))
    rate = {s.labels["threads"]: s.value for s in samples if s.metric == "events_per_s"}
    eff = {s.labels["threads"]: s.value for s in samples if s.metric == "efficiency"}
    assert rate == {1: 1208.55, 2: 2131.70, 4: 2131.70}  # nproc = 2: 1, 2, 4 threads
    assert eff[1] == 1.0 and eff[2] == pytest.approx(2131.70 / 2 / 1208.55)
    assert eff[4] == pytest.approx(2131.70 / 4 / 1208.55)  # past saturation: the fall
    assert [threads_of(a) for a in p.tools] == [1, 2, 4]
    p.tools.clear()
    w.run(p, ctx(w, threads=[0, 3]))  # 0: the default counts, here with 3 added
    assert [threads_of(a) for a in p.tools] == [1, 2, 3, 4]
    assert "threads" in w.dimension_labels and w.suite == "multicore"


def test_fixed_job_time_is_lower_is_better_and_efficiency_inverts():
    texts = {1: "cpu-events400-1t.txt", 2: "cpu-events400-2t.txt"}
    p = Scripted(lambda a: (DATA / "sysbench" / texts[threads_of(a)]).read_text())
    w = MulticoreSysbenchCpuTime()
    samples = w.run(p, ctx(w, threads=[2, 1], events=400))
    t = {s.labels["threads"]: s for s in samples if s.metric == "elapsed_s"}
    assert (t[1].value, t[2].value, t[1].higher_is_better) == (0.3417, 0.1744, False)
    assert "--events=400" in p.tools[0] and "--time=0" in p.tools[0]
    eff = {s.labels["threads"]: s.value for s in samples if s.metric == "efficiency"}
    assert eff[2] == pytest.approx(0.3417 / (2 * 0.1744))
    short = w.run(p, ctx(w, threads=[1], events=500))  # the capture did only 400 events
    assert short[0].labels["invalid"] == "only 400 of 500 events done"
    assert [s.metric for s in short] == ["elapsed_s"]  # no valid 1-thread point: no efficiency


def test_memory_and_stress_ng_points():
    p = Scripted(lambda a: (DATA / "sysbench/memory-read-64m-2t.txt").read_text())
    w = MulticoreSysbenchMemory()
    (s, e) = w.run(p, ctx(w, threads=[1]))
    assert (s.value, s.labels["threads"], e.value) == (7792.11, 1, 1.0)
    assert "--memory-block-size=16384K" in p.tools[0]
    yaml = (DATA / "stress-ng/cpu-matrixprod-1.yaml").read_text()
    p = Scripted(lambda a: yaml if a[0] == "cat" else "")
    w = MulticoreStressNgMatrixprod()
    samples = w.run(p, ctx(w, threads=[1, 2]))
    runs = [a for a in p.tools if a[0] == "stress-ng"]
    assert [a[2] for a in runs] == ["1", "2"] and samples[0].value == pytest.approx(970.512522)


def test_bad_threads_and_registration():
    w = MulticoreSysbenchCpu()
    with pytest.raises(WorkloadError, match="threads must be integers"):
        w.run(Scripted(lambda a: ""), ctx(w, threads=[-1]))
    names = {c.name for c in registry.by_suite("multicore")}
    assert len(names) == 4 and "multicore" in SUITES
