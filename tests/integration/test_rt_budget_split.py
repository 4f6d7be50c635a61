"""A container target beside a SCHED_RR antagonist container (quantum scenario) on a host with
RT group scheduling: both get a share of the real-time budget, the target's is given back
afterwards, and the samples say what was granted (about 15 s)."""

import pytest

from virtbench import cgroups
from virtbench.platforms.base import PlatformSpec
from virtbench.platforms.container.platform import ContainerPlatform
from virtbench.runner.run import _neighbour
from virtbench.scenarios import quantum, registry, rt_budget
from virtbench.scenarios.base import ScenarioEnv
from virtbench.workloads.base import RunContext
from virtbench.workloads.latency import Tick

pytestmark = pytest.mark.integration


@pytest.mark.skipif(not cgroups.rt_supported(), reason="no RT group scheduling on this host")
def test_quantum_antagonist_container_shares_the_rt_budget():
    target = ContainerPlatform(PlatformSpec("container", "container"), "vb-itsplit")
    w = Tick()
    params = {k: v.default for k, v in w.params.items()} | {"duration": 1.0}
    with target:
        before = target.rt_budget()
        if not before or before[0] == 0:
            pytest.skip("other virtbench groups hold the host's whole real-time budget")
        scenario = registry.parse("antagonist:cpu-load:same-cpu:quantum=1ms:knob=rr_timeslice")
        env = ScenarioEnv(target, w, RunContext(params=params, timeout=120), _neighbour)
        samples = scenario.run(env)
        assert target.rt_budget() == before  # given back after the antagonist left
    top = next(s for s in samples if s.role == "target" and s.metric == "max_us")
    n = next(s for s in samples if s.role == "neighbour-1")
    assert top.labels.get("invalid") is None and n.labels.get("invalid") is None
    assert top.labels["policy"] == "rr" and n.labels["policy"] == "rr"
    share, period = top.labels["rt_budget_us"], top.labels["rt_budget_period_us"]
    assert top.labels["rt_budget_split"] == 2 and 0 < share < before[0]
    assert period == rt_budget.TARGET_PERIOD_US  # the target's share on a short period
    theirs = top.labels["rt_budget_neighbour_period_us"]
    assert n.labels["rt_budget_period_us"] == theirs > period
    assert abs(n.labels["rt_budget_us"] / theirs - share / period) < 1e-3  # equal shares
    assert "vb-itsplit" not in cgroups.leftovers() and not quantum.STATE_FILE.exists()
