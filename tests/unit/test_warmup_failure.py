"""A failed warm-up is said and stored with the cells it was meant to warm (runner/run.py):
they are still measured, but a user reading them sees they ran on a target whose warm-up
failed (the run log, the cell label `warmup.failed`, the report's run section, the export)."""

from __future__ import annotations

import io
import json
from contextlib import contextmanager

import pytest
from rich.console import Console

from tests.unit.fakes import FakePlatform
from virtbench import export
from virtbench.campaign import loader
from virtbench.errors import WorkloadError
from virtbench.report.core.run import run_section
from virtbench.report.data import ReportData
from virtbench.results import Sample
from virtbench.runner import locks
from virtbench.runner import run as runner_run
from virtbench.runner.cell import Outcome
from virtbench.scenarios.colocation import IdleNeighbours
from virtbench.scenarios.solo import Solo
from virtbench.workloads.base import RunContext

CAMPAIGN = """
[campaign]
name = "warm"
repetitions = 2
warmup = 1
{scope}
scenarios = ["solo", "idle-neighbours:1"]

[[platforms]]
name = "native"
type = "native"

[suites.cpu]
test_cases = ["sysbench-cpu-1t"]
"""


@pytest.fixture
def fake_cells(tmp_path, monkeypatch):
    """Cells measure nothing; every scenario run (only warm-ups reach it) raises."""
    monkeypatch.setattr(locks, "HOST_RUNS_DIR", tmp_path / "host-runs")
    monkeypatch.setattr(runner_run.Runner, "_preflight", lambda *a: None)
    monkeypatch.setattr(runner_run.Runner, "_context", lambda *a: RunContext(params={}))
    monkeypatch.setattr(runner_run.Runner, "_scenario_env", lambda *a, **k: None)

    @contextmanager
    def provisioned(spec, budget=None):
        yield FakePlatform(spec.name, [])

    monkeypatch.setattr(runner_run, "provisioned", provisioned)
    warmups: list[str] = []

    def failing(self, env):
        warmups.append(self.kind)
        raise WorkloadError("sysbench: exited 1: connection timed out")

    monkeypatch.setattr(Solo, "run", failing)
    monkeypatch.setattr(IdleNeighbours, "run", failing)
    ok = Outcome("ok", [Sample("events_per_s", 1.0, "ev/s", True)], [], None, 0.1)
    monkeypatch.setattr(runner_run, "measure", lambda *a: ok)
    return warmups


def _run(tmp_path, scope: str) -> tuple[runner_run.Runner, str, str]:
    log = io.StringIO()
    runner = runner_run.Runner(tmp_path / "res", Console(file=log, width=300))
    run_id = runner.start(loader.parse(CAMPAIGN.format(scope=scope), "w.toml"))
    return runner, run_id, log.getvalue()


@pytest.mark.parametrize(
    ("scope", "warmups"),
    [('warmup_scope = "platform"', ["solo"]), ("", ["solo", "idle-neighbours"])],
)
def test_failed_warmup_labels_every_cell_it_served_and_is_said(
    tmp_path, fake_cells, scope, warmups
):
    runner, run_id, log = _run(tmp_path, scope)
    assert fake_cells == warmups  # one warm-up per key, as before
    cells = runner.store.cells(run_id)
    assert len(cells) == 4
    for c in cells:  # measured anyway, and labelled
        assert c.status == "ok"
        assert c.labels["warmup"] == {"failed": "sysbench: exited 1: connection timed out"}
    assert log.count("warm-up failed") == len(warmups)
    assert log.count("after a failed warm-up") == 4
    assert "connection timed out" in log

    section = run_section(ReportData.load(runner.store, run_id))
    assert "Warm-ups that failed" in str(section.html)
    assert "native sysbench-cpu-1t, cells 0–3: sysbench: exited 1" in section.markdown
    rec = next(export.records(runner.store, run_id))
    assert rec["labels"]["warmup"]["failed"].startswith("sysbench: exited 1")


def test_a_warmup_that_works_labels_nothing(tmp_path, fake_cells, monkeypatch):
    monkeypatch.setattr(Solo, "run", lambda self, env: [])
    monkeypatch.setattr(IdleNeighbours, "run", lambda self, env: [])
    runner, run_id, log = _run(tmp_path, "")
    assert all("warmup" not in c.labels for c in runner.store.cells(run_id))
    assert "warm-up" not in log
    assert "Warm-ups" not in run_section(ReportData.load(runner.store, run_id)).markdown
    assert "warmup" not in json.dumps(next(export.records(runner.store, run_id))["labels"])
