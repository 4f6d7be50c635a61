"""Antagonist/pinned scenario grammar, placement and quantum helpers (no host changes)."""

from contextlib import contextmanager

import pytest

from virtbench import parsing
from virtbench.errors import VirtbenchError
from virtbench.platforms.base import ExecResult, PlatformSpec, Process
from virtbench.scenarios import quantum as q
from virtbench.scenarios import registry
from virtbench.scenarios.base import ScenarioEnv
from virtbench.scenarios.neighbours import NeighbourPlan, Neighbours
from virtbench.scenarios.placement import place
from virtbench.workloads.base import RunContext


@pytest.mark.parametrize(
    "text, placement, k",
    [
        ("antagonist:cpu-load", "same-cpu", 1),
        ("antagonist:memory-load:free:3", "free", 3),
        ("antagonist:cpu-load:affinity:2:cpu=0", "affinity", 2),
        ("antagonist:stress-ng-cache:same-cpu:quantum=1ms", "same-cpu", 1),
        ("antagonist:memory-load:free:1:mb=64", "free", 1),
    ],
)
def test_antagonist_grammar(text, placement, k):
    s = registry.parse(text)
    assert (s.placement, s.k) == (placement, k)


@pytest.mark.parametrize(
    "text, message",
    [
        ("antagonist", "needs a load"),
        ("antagonist:gpu-load", "allowed: cpu-load, memory-load"),
        ("antagonist:cpu-load:sideways", "free, affinity, same-cpu"),
        ("antagonist:cpu-load:0", "count 1..64"),
        ("antagonist:cpu-load:cpu=4096", "not a CPU of this host"),
        ("antagonist:cpu-load:quantum=0ms", "positive duration"),
        ("antagonist:cpu-load:quantum=fast", "units: ns, us, ms, s"),
        ("antagonist:cpu-load:knob=auto", "needs quantum"),
        ("antagonist:cpu-load:quantum=1ms:knob=credit", "base_slice"),
        ("antagonist:cpu-load:on=xen", "unknown platform type"),
        ("antagonist:cpu-load:mb=-1", "positive"),
        ("antagonist:cpu-load:color=red", "allowed: cpu, on, quantum"),
        ("antagonist:cpu-load:cpu=0:cpu=1", "given twice"),
        ("pinned:3", "usage"),
    ],
)
def test_bad_scenarios_name_what_is_allowed(text, message):
    with pytest.raises(ValueError, match=message):
        registry.parse(text)


def test_placements():
    cpus = [0, 1, 2, 3]
    assert place("free", 2, cpus=cpus).neighbours == [None, None]
    same = place("same-cpu", 2, cpus=cpus)
    assert same.target == [3] and same.neighbours == [[3], [3]]
    aff = place("affinity", 3, target_cpu=1, cpus=cpus)
    assert aff.target == [1] and aff.neighbours == [[0], [2], [3]]
    assert place("affinity", 1, campaign_cpus=[2], cpus=cpus).target == [2]
    with pytest.raises(VirtbenchError, match="needs a CPU besides"):
        place("affinity", 1, cpus=[0])


def test_split_options():
    assert parsing.key_values(["free", "2", "cpu=1"]) == (["free", "2"], {"cpu": "1"})


def test_durations():
    assert parsing.duration_ns("1ms") == 1_000_000
    assert parsing.duration_ns("750us") == 750_000
    assert parsing.duration_ns("0.5s") == 500_000_000


def test_quantum_sets_and_restores(tmp_path, monkeypatch):
    knob = tmp_path / "sched_rr_timeslice_ms"
    knob.write_text("100\n")
    monkeypatch.setattr(q, "STATE_DIR", tmp_path / "run")
    monkeypatch.setattr(q, "STATE_FILE", tmp_path / "run" / "vb-quantum.json")
    monkeypatch.setattr(q.cleanup, "OWNERS_DIR", tmp_path / "owners")
    monkeypatch.setattr(
        q, "_candidates", lambda knob_, mounted: iter([("rr_timeslice", knob, "ms", "rr")])
    )
    with q.quantum(30_000_000) as s:
        assert knob.read_text() == "30"
        assert s.policy_hint == "rr" and s.labels()["quantum_old"] == "100 ms"
        assert q.STATE_FILE.exists()
    assert knob.read_text() == "100"
    assert not q.STATE_FILE.exists()


def test_quantum_without_any_knob_is_a_clear_error(tmp_path, monkeypatch):
    monkeypatch.setattr(q, "STATE_DIR", tmp_path / "run")
    monkeypatch.setattr(q, "STATE_FILE", tmp_path / "run" / "vb-quantum.json")
    monkeypatch.setattr(q.cleanup, "OWNERS_DIR", tmp_path / "owners")
    monkeypatch.setattr(
        q, "_candidates", lambda knob_, mounted: iter([("base_slice", tmp_path / "no", "ns", None)])
    )
    with pytest.raises(VirtbenchError, match="no scheduler quantum knob"), q.quantum(1_000_000):
        pass


class _FakeProc(Process):
    def __init__(self, dies: bool = False) -> None:
        self.dies, self.stopped = dies, False

    @property
    def pid(self):
        return 1

    def poll(self):
        return 1 if self.dies else None

    def stop(self, timeout: float = 5.0) -> ExecResult:
        self.stopped = True
        return ExecResult(["x"], 0, '{"rate_per_s": 1}', "", 1.0)


class _FakePlatform:
    name = "fake"

    def __init__(self, dies: bool) -> None:
        self.dies, self.procs = dies, []

    def spawn(self, argv, *, cpus=None, env=None):
        p = _FakeProc(self.dies)
        self.procs.append((argv, cpus, p))
        return p


def _env(platforms, torn):
    @contextmanager
    def new_platform(spec, role):
        p = _FakePlatform(dies=role == "neighbour-dies")
        platforms.append(p)
        try:
            yield p
        finally:
            torn.append(role)

    return ScenarioEnv(
        target=None, workload=None, ctx=RunContext(params={}), new_platform=new_platform
    )


def test_neighbours_start_pin_stop_and_tear_down():
    platforms, torn = [], []
    spec = PlatformSpec("native", "native")
    plans = [NeighbourPlan(f"neighbour-{i}", spec, lambda p: ["load"], [i]) for i in (1, 2)]
    with Neighbours(_env(platforms, torn), plans, settle_s=0) as group:
        group.check_alive()
    assert [p.procs[0][1] for p in platforms] == [[1], [2]]
    assert all(p.procs[0][2].stopped for p in platforms)
    assert torn == ["neighbour-2", "neighbour-1"]
    assert [n.result.stdout for n in group.finished] == ['{"rate_per_s": 1}'] * 2


def test_neighbour_dying_at_start_fails_and_cleans_up():
    platforms, torn = [], []
    spec = PlatformSpec("native", "native")
    plans = [
        NeighbourPlan("neighbour-1", spec, lambda p: ["load"]),
        NeighbourPlan("neighbour-dies", spec, lambda p: ["load"]),
    ]
    from virtbench.errors import WorkloadError

    with (
        pytest.raises(WorkloadError, match="exited early"),
        Neighbours(_env(platforms, torn), plans, settle_s=0),
    ):
        pass
    assert sorted(torn) == ["neighbour-1", "neighbour-dies"]
