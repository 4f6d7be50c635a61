"""Weights cells put every environment on one shared CPU and the load generators elsewhere."""

import contextlib

import pytest

from tests.unit.fakes import FakePlatform
from tests.unit.test_colocation_scenarios import FakeWorkload
from virtbench.cgroups.budget import CpuBudget
from virtbench.errors import VirtbenchError
from virtbench.platforms.base import PlatformSpec
from virtbench.scenarios import registry
from virtbench.scenarios.base import ScenarioEnv
from virtbench.scenarios.colocation_placement import backlog_connections, shared_cpu
from virtbench.workloads.base import Param, RunContext

NATIVE = PlatformSpec("native", "native")
VM = PlatformSpec("vm", "vm", {"vcpu_pin": [0]})


def test_highest_cpu_shared_clients_on_the_others():
    p = shared_cpu({"target": NATIVE, "neighbour-1": NATIVE}, "weights:1:1:4", cpus=[0, 1])
    assert (p.cpu, p.client_cpus) == (1, [0])
    assert p.labels() == {"placement": "shared-cpu", "env_cpus": [1], "client_cpus": [0]}


def test_a_client_hosts_cpus_are_its_own_not_this_hosts():
    specs = {"target": NATIVE, "neighbour-1": NATIVE}
    p = shared_cpu(specs, "w", client_cpus=[1], cpus=[0, 1], client_host=True)
    assert (p.cpu, p.client_cpus) == (1, [1])  # CPU 1 there is not the shared CPU 1 here
    assert p.labels()["clients_on"] == "client host" and "placement_note" not in p.labels()
    assert shared_cpu(specs, "w", cpus=[0, 1], client_host=True).client_cpus is None


def test_campaign_target_and_client_cpus_are_honoured():
    specs = {"target": NATIVE, "neighbour-1": VM}  # a VM's vcpu_pin yields to the cell's CPUs
    p = shared_cpu(specs, "w", target_cpus=[2, 3], client_cpus=[0, 2], cpus=[0, 1, 2, 3])
    assert (p.cpu, p.client_cpus) == (2, [0])  # the shared CPU is never a client CPU


def test_requested_cpu_and_a_cpu_nobody_shares():
    specs = {"target": NATIVE, "neighbour-1": NATIVE}
    assert shared_cpu(specs, "w", requested=0, cpus=[0, 1]).cpu == 0
    with pytest.raises(VirtbenchError, match=r"cpu=3 is not a CPU every .* allowed: 0, 1"):
        shared_cpu(specs, "w", requested=3, cpus=[0, 1])


def test_container_cpusets_narrow_the_choice_or_refuse():
    c0 = PlatformSpec("c0", "container", {"cpuset": [0]})
    c01 = PlatformSpec("c01", "container", {"cpuset": "0-1"})
    assert shared_cpu({"target": c0, "neighbour-1": c01}, "w", cpus=[0, 1]).cpu == 0
    c1 = PlatformSpec("c1", "container", {"cpuset": [1]})
    with pytest.raises(
        VirtbenchError,
        match=r"scenario 'weights:1:4:1': .* none in common: target may run on CPUs \[0\] "
        r"\(platform 'c0' option cpuset = \[0\]\); neighbour-1 may run on CPUs \[1\]",
    ):
        shared_cpu({"target": c0, "neighbour-1": c1}, "weights:1:4:1", cpus=[0, 1])


def test_container_in_vm_follows_its_vm_and_a_guest_quota_is_refused():
    guest = PlatformSpec("c@vm", "container", {"cpuset": [0]}, host=PlatformSpec("vm", "vm"))
    # its cpuset names the guest's CPU 0, not the host's: the VM may go anywhere
    assert shared_cpu({"target": guest, "neighbour-1": guest}, "w", cpus=[0, 1]).cpu == 1
    capped = PlatformSpec("cq", "container", {"cpu_quota_us": 50000}, host=guest.host)
    with pytest.raises(VirtbenchError, match=r"neighbour-1 .* cpu_quota_us = 50000 inside"):
        shared_cpu({"target": guest, "neighbour-1": capped}, "w", cpus=[0, 1])


def test_one_cpu_host_shares_it_with_the_clients_and_says_so():
    p = shared_cpu({"target": NATIVE, "neighbour-1": NATIVE}, "w", cpus=[0])
    assert (p.cpu, p.client_cpus) == (0, [0])
    assert "shared CPU too" in p.labels()["placement_note"]


def test_bad_cpu_option_names_the_allowed_ones():
    with pytest.raises(ValueError, match=r"scenario 'weights': cpu=99: .* allowed"):
        registry.parse("weights:1:1:4:cpu=99")


class WeightedFake(FakePlatform):
    def cpu_weight(self, shares):
        self.log.append(f"weight {self.name} {shares}")
        return contextlib.nullcontext(f"cpu.shares={shares}")


class CpusWorkload(FakeWorkload):
    def run(self, platform, ctx):
        return [self.sample("ops", 1.0, cpus=ctx.cpus, clients=ctx.client_cpus)]


def test_weights_cell_runs_everyone_on_the_shared_cpu_and_labels_every_sample():
    log: list[str] = []

    @contextlib.contextmanager
    def new_platform(spec, role):
        yield WeightedFake(spec.name, log)

    env = ScenarioEnv(
        WeightedFake("native", log),
        CpusWorkload(),
        RunContext(params={"rate": 0, "size_kb": 1}),
        new_platform,
        platforms={"native": NATIVE},
    )
    scen = registry.parse("weights:1:4:1")
    p = shared_cpu({"target": NATIVE, "neighbour-1": NATIVE}, "w")  # this host's choice
    samples = scen.run(env)
    ops = {s.role: s.labels for s in samples if s.metric == "ops"}
    assert set(ops) == {"target", "neighbour-1"}
    for labels in ops.values():
        assert labels["cpus"] == [p.cpu] and labels["clients"] == p.client_cpus
    assert all(s.labels["placement"] == "shared-cpu" for s in samples)
    assert "weight native 4096" in log and "weight native 1024" in log


def test_clients_anywhere_keeps_the_campaigns_client_cpus():
    specs = {"target": NATIVE, "neighbour-1": NATIVE}
    p = shared_cpu(specs, "w", cpus=[0, 1], clients="all")
    assert (p.cpu, p.client_cpus) == (1, None)
    assert "shared CPU too" in p.labels()["placement_note"]
    assert registry.parse("weights:1:1:4:clients=all").clients == "all"
    with pytest.raises(ValueError, match=r"clients=some: allowed: other, all"):
        registry.parse("weights:1:1:4:clients=some")


class ConnsWorkload(FakeWorkload):
    params = {"connections": Param(32)}
    rate_param = None


def _budget(quota_us: int, period_us: int = 100_000) -> CpuBudget:
    return CpuBudget(None, quota_us, period_us)  # type: ignore[arg-type]  # no cgroup needed


def test_a_bursting_budget_needs_a_backlog_that_fills_a_burst():
    assert backlog_connections(_budget(50_000), 32) == 1000
    assert backlog_connections(_budget(50_000), 4096) is None  # deep enough already
    assert backlog_connections(_budget(100_000), 32) is None  # a whole CPU: no bursts
    assert backlog_connections(None, 32) is None
    assert backlog_connections(_budget(50_000), None) is None  # open loop: no connections
    assert backlog_connections(_budget(990_000, 1_000_000), 32) == 10_000  # capped


def test_weights_cell_in_a_bursting_budget_raises_both_clients_connections_and_says_so():
    env = ScenarioEnv(
        FakePlatform("native", []),
        ConnsWorkload(),
        RunContext(params={"connections": 32}),
        None,  # type: ignore[arg-type]
        platforms={"native": NATIVE},
        budget=_budget(50_000),
    )
    scen = registry.parse("weights:1:4:1")
    assert [p.params for p in scen.plans(env)] == [{"connections": 1000}] * 2
    assert scen.labels(env)["backlog_connections"].startswith("32 -> 1000 per client")
    env.budget = _budget(100_000)
    assert [p.params for p in scen.plans(env)] == [{}, {}]
    assert "backlog_connections" not in scen.labels(env)


def test_placement_asks_the_platform_type_which_cpus_and_quota(monkeypatch):
    """Which CPUs an environment may use and whether a guest quota caps it are questions of
    its platform type (Platform.pinnable_cpus / guest_cpu_quota), not switches on its name."""
    from virtbench.platforms import registry as platform_registry
    from virtbench.platforms.base import Platform

    class Odd(Platform):
        kind = "odd"

        @classmethod
        def pinnable_cpus(cls, spec, cpus):
            return [c for c in cpus if c % 2], "odd CPUs only"

        @classmethod
        def guest_cpu_quota(cls, spec):
            return 7000 if spec.host is not None else None

    monkeypatch.setitem(platform_registry.PLATFORMS, "odd", Odd)
    with pytest.raises(
        VirtbenchError, match="cpu=2 is not a CPU every environment may use; allowed: 1, 3$"
    ):
        shared_cpu(
            {"target": PlatformSpec("o", "odd"), "neighbour-1": PlatformSpec("n", "native")},
            "weights",
            requested=2,
            cpus=[0, 1, 2, 3],
        )
    guest = PlatformSpec("o", "odd", host=PlatformSpec("v", "vm"))
    with pytest.raises(VirtbenchError, match="cpu_quota_us = 7000 inside its VM 'v'"):
        shared_cpu({"target": guest}, "weights", cpus=[0, 1])
