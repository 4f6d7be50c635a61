"""`--resume` runs exactly the stored cells that did not finish, each into its own row: a
resume under code that expands the stored campaign into other cells (a test case added to or
removed from a suite, a parameter's default changed) must not attach samples to the wrong
row or pool two parameter sets."""

from __future__ import annotations

import dataclasses

import pytest

from virtbench.campaign import loader
from virtbench.errors import VirtbenchError
from virtbench.results import Sample
from virtbench.runner import locks
from virtbench.runner import run as runner_run
from virtbench.runner.cell import Outcome
from virtbench.workloads import registry

CAMPAIGN = """
[campaign]
name = "all-cpu"
repetitions = 1
warmup = 0

[[platforms]]
name = "a"
type = "native"

[suites.cpu]
"""


@pytest.fixture
def fake_run(tmp_path, monkeypatch):
    """Cells 'measure' without running anything; returns the (seq, test case) run."""
    monkeypatch.setattr(locks, "HOST_RUNS_DIR", tmp_path / "host-runs")
    monkeypatch.setattr(runner_run.Runner, "_preflight", lambda *a: None)
    ran: list[tuple[int, str]] = []

    def install(stop_after: int | None = None):
        def run_cells(self, run_id, campaign, all_cells, todo):
            for cell in todo:
                if stop_after is not None and len(ran) >= stop_after:
                    raise KeyboardInterrupt
                ran.append((cell.seq, cell.test_case))
                s = Sample("m", 1.0, "x", True, labels={"test_case": cell.test_case})
                self.store.start_cell(f"{run_id}/{cell.seq:04d}")
                labels = {"params": cell.params}
                self._commit(run_id, cell, Outcome("ok", [s], [], None, 0.0), labels)

        monkeypatch.setattr(runner_run.Runner, "_run_cells", run_cells)
        return ran

    return install


def _interrupted_run(tmp_path, fake_run) -> tuple[runner_run.Runner, str]:
    fake_run(stop_after=2)
    runner = runner_run.Runner(tmp_path / "res")
    run_id = runner.start(loader.parse(CAMPAIGN, "c.toml"))
    assert runner.store.run(run_id)["status"] == "interrupted"
    return runner, run_id


def test_resume_with_a_test_case_gone_from_the_suite_refuses(tmp_path, fake_run, monkeypatch):
    runner, run_id = _interrupted_run(tmp_path, fake_run)
    first = runner.store.cells(run_id)[0].test_case
    monkeypatch.delitem(registry.WORKLOADS, first)  # the resuming code no longer has it
    ran = fake_run()
    ran.clear()
    with pytest.raises(VirtbenchError, match="expands"):
        runner_run.Runner(tmp_path / "res").resume(run_id)
    assert ran == []
    # every stored sample is still in the row of the test case that measured it
    for row in runner.store.sample_rows(run_id):
        assert row["test_case"] in row["labels_json"]


def test_resume_with_a_changed_parameter_default_refuses(tmp_path, fake_run, monkeypatch):
    runner, run_id = _interrupted_run(tmp_path, fake_run)
    cls = registry.WORKLOADS["sysbench-cpu-1t"]
    params = dict(cls.params)
    params["max_prime"] = dataclasses.replace(params["max_prime"], default=30000)
    monkeypatch.setattr(cls, "params", params)
    ran = fake_run()
    ran.clear()
    with pytest.raises(VirtbenchError, match="max_prime"):
        runner_run.Runner(tmp_path / "res").resume(run_id)
    assert ran == []


def test_resume_under_the_same_code_runs_exactly_the_rest(tmp_path, fake_run):
    runner, run_id = _interrupted_run(tmp_path, fake_run)
    stored = runner.store.cells(run_id)
    ran = fake_run()
    ran.clear()
    runner_run.Runner(tmp_path / "res").resume(run_id)
    assert ran == [(c.seq, c.test_case) for c in stored[2:]]
    assert all(c.status == "ok" for c in runner.store.cells(run_id))
