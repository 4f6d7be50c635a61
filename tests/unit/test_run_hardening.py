"""Issue 16 items 4-6 without root: exit statuses of an interrupted run, the interrupted and
lost states, one runner per run and one measuring run per host."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from click.testing import CliRunner

from virtbench.cli import cli
from virtbench.platforms.base import PlatformSpec
from virtbench.runner import locks, states
from virtbench.runner import run as runner_run
from virtbench.store.db import Store
from virtbench.store.description import RunDescription

TINY = """
[campaign]
name = "tiny"
repetitions = 2
warmup = 0
scenarios = ["solo"]

[[platforms]]
name = "native"
type = "native"

[suites.cpu]
test_cases = ["sysbench-cpu-1t"]
"""


@pytest.fixture
def host_runs(tmp_path, monkeypatch) -> Path:
    runs = tmp_path / "host-runs"
    monkeypatch.setattr(locks, "HOST_RUNS_DIR", runs)
    monkeypatch.setattr(runner_run.Runner, "_preflight", lambda *a: None)
    return runs


def _interrupting(signum: int | None):
    """A _run_cells that starts the first cell, then is interrupted by `signum` (None:
    Ctrl-C's KeyboardInterrupt) while it measures."""

    def run_cells(self, run_id, campaign, all_cells, todo):
        self.store.start_cell(f"{run_id}/{todo[0].seq:04d}")
        if signum is None:
            raise KeyboardInterrupt
        raise runner_run._Interrupted(signum)

    return run_cells


@pytest.mark.parametrize(("signum", "code"), [(None, 130), (signal.SIGTERM, 143)])
def test_interrupted_run_exits_128_plus_signal_and_marks_the_cell(
    tmp_path, monkeypatch, host_runs, signum, code
):
    monkeypatch.setattr(runner_run.Runner, "_run_cells", _interrupting(signum))
    campaign = tmp_path / "tiny.toml"
    campaign.write_text(TINY)
    res = tmp_path / "res"
    out = CliRunner().invoke(cli, ["run", str(campaign), "--results-dir", str(res), "--no-report"])
    assert out.exit_code == code, out.output
    store = Store.open_existing(res)
    run_id = store.resolve_run("latest")
    assert store.run(run_id)["status"] == "interrupted"
    first = store.cells(run_id)[0]
    assert first.status == "interrupted" and first.finished_at is not None


def test_run_help_documents_exit_statuses():
    out = CliRunner().invoke(cli, ["run", "--help"])
    assert "Exit status" in out.output
    for code in ("130", "143"):
        assert code in out.output


def _stale_store(res: Path) -> tuple[Store, str]:
    """A run left `running` with a `running` cell, as a SIGKILLed runner leaves it."""
    store = Store.in_dir(res)
    store.create_run(
        "20240101-000000-dead",
        "tiny",
        "t.toml",
        TINY,
        None,
        {},
        {},
        "test",
        description=RunDescription(),
    )
    store.add_cells(
        [
            ("20240101-000000-dead/0000", "20240101-000000-dead", 0, "native", "{}", "cpu",
             "sysbench-cpu-1t", "solo", 1, "{}"),
            ("20240101-000000-dead/0001", "20240101-000000-dead", 1, "native", "{}", "cpu",
             "sysbench-cpu-1t", "solo", 2, "{}"),
        ]
    )  # fmt: skip
    store.start_cell("20240101-000000-dead/0000")
    return store, "20240101-000000-dead"


def test_run_whose_runner_is_gone_is_listed_and_stored_as_lost(tmp_path):
    res = tmp_path / "res"
    store, run_id = _stale_store(res)
    before = time.time()
    out = CliRunner().invoke(cli, ["results", "--list", "--results-dir", str(res)])
    assert out.exit_code == 0
    assert out.output.split("\t")[2] == "lost"
    assert store.run(run_id)["status"] == "lost"
    assert store.run(run_id)["finished_at"] >= before  # when it was found lost
    assert [c.status for c in store.cells(run_id)] == ["lost", "pending"]


def test_results_of_an_incomplete_run_says_so_on_stderr(tmp_path):
    res = tmp_path / "res"
    _stale_store(res)
    out = CliRunner().invoke(cli, ["results", "--results-dir", str(res)])
    assert out.exit_code == 0
    assert out.stdout == ""  # no samples: the export itself is unchanged
    assert "incomplete: lost" in out.stderr and "0 of 2 cells finished" in out.stderr


def test_held_run_stays_running(tmp_path):
    res = tmp_path / "res"
    store, run_id = _stale_store(res)
    with locks.hold_run(res, run_id):
        states.settle_lost(store, res)
        assert store.run(run_id)["status"] == "running"
        assert states.run_holder(res, run_id) == str(os.getpid())
        note = states.incomplete(store, res, run_id)
        assert note is not None and "still running" in note
    states.settle_lost(store, res)
    assert store.run(run_id)["status"] == "lost"


def _holder(args: str) -> subprocess.Popen:
    """Another process holding a lock (flock is per process here, as between runners)."""
    code = f"import sys, time; from virtbench.runner import locks\nwith {args}:\n"
    code += "    print('held', flush=True); time.sleep(30)\n"
    env = os.environ | {"PYTHONPATH": str(Path(__file__).parents[2] / "src")}
    proc = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, env=env)
    assert proc.stdout is not None and proc.stdout.readline() == b"held\n"
    return proc


def test_second_runner_of_a_run_is_refused_naming_the_holder(tmp_path):
    proc = _holder(f"locks.hold_run({str(tmp_path)!r}, 'r1')")
    try:
        with pytest.raises(locks.RunHeld, match=f"pid {proc.pid}"), locks.hold_run(tmp_path, "r1"):
            pass
    finally:
        proc.kill()
        proc.wait()
    with locks.hold_run(tmp_path, "r1"):  # the killed holder's lock died with it
        pass


def test_resume_of_a_held_run_is_refused(tmp_path, host_runs):
    res = tmp_path / "res"
    _, run_id = _stale_store(res)
    proc = _holder(f"locks.hold_run({str(res)!r}, {run_id!r})")
    try:
        out = CliRunner().invoke(cli, ["run", "--resume", run_id, "--results-dir", str(res)])
    finally:
        proc.kill()
        proc.wait()
    assert isinstance(out.exception, locks.RunHeld)  # a VirtbenchError: exit status 2
    assert f"pid {proc.pid}" in str(out.exception)


def test_second_measuring_run_on_the_host_is_refused_unless_allowed(tmp_path):
    runs = tmp_path / "runs"
    proc = _holder(f"locks.hold_host(False, locks.Path({str(runs)!r}))")
    try:
        assert locks.other_runners(runs) == [str(proc.pid)]
        with pytest.raises(locks.RunHeld, match=str(proc.pid)), locks.hold_host(False, runs):
            pass
        with locks.hold_host(True, runs):
            assert locks.other_runners(runs) == [str(proc.pid)]
    finally:
        proc.kill()
        proc.wait()
    assert locks.other_runners(runs) == []
    assert not (runs / f"{proc.pid}.lock").exists()  # a dead run's file is swept


def test_samples_of_overlapping_runs_are_labelled(tmp_path, monkeypatch, host_runs):
    from virtbench.results import Sample
    from virtbench.runner.cell import Outcome

    monkeypatch.setattr(locks, "other_runners", lambda *a: ["4242"])
    monkeypatch.setattr(
        runner_run, "measure", lambda *a: Outcome("ok", [Sample("m", 1.0, "u", True)], [], None, 0)
    )
    runner = runner_run.Runner(tmp_path / "res")
    store, run_id = _stale_store(tmp_path / "res")
    committed = []
    monkeypatch.setattr(runner, "_commit", lambda r, c, out, labels: committed.append(out))
    monkeypatch.setattr(runner, "_print", lambda *a: None)
    cell = type(
        "C",
        (),
        {"seq": 1, "params": {}, "parsed_scenario": None, "platform": None, "round_position": None},
    )
    cell.platform = PlatformSpec("native", "native")
    cell.test_case, cell.scenario, cell.repetition = "sysbench-cpu-1t", "solo", 1
    platform = type("Pl", (), {"labels": lambda self: {}, "cpu_budget": lambda self: None})()
    campaign = type(
        "Ca", (), {"settings": type("S", (), {"cpu_budget": "shared", "disturbed": "exclude"})}
    )
    monkeypatch.setattr(runner, "_context", lambda *a: None)
    runner._run_cell(run_id, platform, None, cell, campaign)
    assert committed[0].samples[0].labels["overlapped_runs"] == "4242"
