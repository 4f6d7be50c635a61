"""A cell that fails or times out keeps what it measured before (runner/cell.py), flagged
invalid: the store marks those samples valid = 0, the statistics leave them out and the
report lists them with the reason."""

from __future__ import annotations

from tests.unit.fakes import FakePlatform
from virtbench.analysis import groups
from virtbench.errors import WorkloadError
from virtbench.results import Sample
from virtbench.runner.cell import measure
from virtbench.store.db import Store
from virtbench.store.description import RunDescription
from virtbench.workloads.base import RunContext


def _failing(samples: list[Sample], message: str):
    def body(ctx, sampler):
        raise WorkloadError(message, samples=samples)

    return body


def _partial() -> list[Sample]:
    return [
        Sample("reply_rate", 900.0, "req/s", True, labels={"step": 0}),
        Sample(
            "reply_rate", 50.0, "req/s", True, labels={"step": 1, "invalid": "client saturated"}
        ),
    ]


def test_partial_samples_of_a_failed_cell_are_kept_and_flagged():
    msg = "web: the server exited (code 1) mid-run; samples so far are kept\nmore detail"
    out = measure(FakePlatform("target", []), RunContext(params={}), _failing(_partial(), msg))
    assert out.status == "failed"
    assert len(out.samples) == 2  # nothing measured is lost
    first, second = out.samples
    assert first.labels["invalid"] == (
        "cell failed: web: the server exited (code 1) mid-run; samples so far are kept"
    )
    assert second.labels["invalid"] == "client saturated"  # its own reason stays


def test_flagged_partial_samples_are_stored_invalid_and_left_out_of_the_statistics(tmp_path):
    out = measure(
        FakePlatform("target", []), RunContext(params={}), _failing(_partial(), "wrk died")
    )
    store = Store.in_dir(tmp_path)
    store.create_run("r", "c", "c.toml", "", None, {}, {}, "t", description=RunDescription())
    store.add_cells([("r/0000", "r", 0, "native", "{}", "web", "wrk", "solo", 1, "{}")])
    store.finish_cell("r", "r/0000", out.status, out.samples, out.series, out.error)
    rows = store.sample_rows("r")
    assert [r["valid"] for r in rows] == [0, 0]
    assert rows[0]["invalid_reason"] == "cell failed: wrk died"
    built = groups.build(rows, RunDescription())
    assert all(g.values == [] for g in built)
    assert sum(g.n_invalid for g in built) == 2


def test_a_later_storm_scene_failing_leaves_the_finished_sizes_valid(monkeypatch):
    """Review: one start-up storm per size makes each size its own experiment (neighbours
    provisioned, storm, torn down). A 70 kB scene refused by the memory check flagged the
    finished 1 kB scene's results 'cell failed: need about 1600 MiB ...' and left them out
    of every statistic; they stay valid, labelled with what failed after them."""
    from tests.unit.test_colocation_scenarios import refuse_second_scene, sizes_env
    from virtbench.scenarios import registry

    refuse_second_scene(monkeypatch)
    env = sizes_env()
    out = measure(env.target, env.ctx, lambda c, s: registry.parse("startup:1:native:0").run(env))
    assert out.status == "failed"
    ops = [s for s in out.samples if s.metric == "ops"]
    assert [s.labels["file_size_kb"] for s in ops] == [1]
    assert "invalid" not in ops[0].labels
    assert ops[0].labels["later_scene_failed"].startswith("need about 1600 MiB")
