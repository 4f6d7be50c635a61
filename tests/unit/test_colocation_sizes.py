"""`different:SIZE` beside a target that serves several file sizes (the papers' size lists)."""

from tests.unit.test_colocation_scenarios import FakeWorkload, _env
from virtbench.scenarios import registry
from virtbench.workloads.base import Param, RunContext


class SizesWorkload(FakeWorkload):
    params = {"rate": Param(0), "file_sizes": Param([1])}
    rate_param, size_param = "rate", "file_sizes"

    def run(self, platform, ctx):
        return [self.sample("ops", 1.0, sizes=list(ctx.params["file_sizes"]))]


def test_neighbour_serves_its_size_once_beside_each_target_size():
    env = _env([])
    env.workload = SizesWorkload()
    env.ctx = RunContext(params={"rate": 0, "file_sizes": [1, 4, 10]})
    samples = registry.parse("different:100").run(env)
    sizes = {s.role: s.labels["sizes"] for s in samples if s.metric == "ops"}
    # as long as the target's three runs, so neither measures alone
    assert sizes == {"target": [1, 4, 10], "neighbour-1": [100, 100, 100]}
