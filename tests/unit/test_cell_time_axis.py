"""A workload's series share the cell's time axis with the cell's sampler (runner/cell.py)."""

from __future__ import annotations

import time

from tests.unit.fakes import FakePlatform
from virtbench.runner.cell import measure
from virtbench.workloads.base import RunContext


def test_the_workload_gets_the_samplers_origin_so_its_series_line_up():
    seen = {}

    def body(ctx, sampler):
        # a neighbour VM booting first: the workload starts well after the cell did
        time.sleep(0.3)
        seen["t0"], seen["sampler_t0"] = ctx.t0, sampler.t0
        ctx.series("reply_rate.1KB", time.monotonic() - ctx.t0, 1.0, "req/s", "target")
        return []

    out = measure(FakePlatform("target", []), RunContext(params={}), body)
    assert seen["t0"] == seen["sampler_t0"]
    (t,) = [p[2] for p in out.series if p[1] == "reply_rate.1KB"]
    assert t >= 0.3  # on the cell's axis, not the workload's own (which would read ~0)
