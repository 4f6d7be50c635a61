"""`virtbench run --platforms/--suites/--test-cases`, `--dry-run` and `[n/N]` progress lines."""

from __future__ import annotations

import contextlib
import json
import shutil
import statistics
from dataclasses import asdict
from pathlib import Path

import pytest
from click.testing import CliRunner

from virtbench.campaign import expand, loader, select
from virtbench.cli import cli
from virtbench.errors import VirtbenchError
from virtbench.runner import locks
from virtbench.runner import run as runner_run
from virtbench.runner.plan import duration_text

CAMPAIGN = """
[campaign]
name = "sel"
description = "two platforms, two suites"
repetitions = 2
warmup = 1
scenarios = ["solo"]

[[platforms]]
name = "native"
type = "native"

[[platforms]]
name = "crun"
type = "container"

[suites.cpu]
test_cases = ["sysbench-cpu-1t", "stress-ng-cpu-matrixprod"]

[suites.memory]
test_cases = ["mbw"]
"""
GOLDEN = Path(__file__).parents[1] / "data" / "runs" / "v1"


@pytest.fixture
def campaign_file(tmp_path: Path) -> Path:
    f = tmp_path / "sel.toml"
    f.write_text(CAMPAIGN)
    return f


def test_filters_keep_only_the_chosen_cells() -> None:
    c = select.apply(
        loader.parse(CAMPAIGN, "sel.toml"),
        {"platforms": ["crun"], "suites": ["cpu"], "test_cases": None},
    )
    cells = expand.expand(c)
    assert {(x.platform.name, x.suite) for x in cells} == {("crun", "cpu")}
    assert len(cells) == 4  # 2 test cases x 2 repetitions
    assert c.settings.baseline == "crun"  # the baseline left out: the first chosen
    # stored with the run's settings, so a --resume rebuilds the same cells
    assert asdict(c.settings)["selection"] == {"platforms": ["crun"], "suites": ["cpu"]}


def test_test_case_filter() -> None:
    c = select.apply(loader.parse(CAMPAIGN, "sel.toml"), {"test_cases": ["mbw"], "platforms": None})
    assert {x.test_case for x in expand.expand(c)} == {"mbw"}


@pytest.mark.parametrize(
    ("option", "value", "listed"),
    [
        ("--platforms", "native,kvm", "native, crun"),
        ("--suites", "disk", "cpu, memory"),
        ("--test-cases", "fio-rand-read", "sysbench-cpu-1t, stress-ng-cpu-matrixprod, mbw"),
    ],
)
def test_unknown_names_are_refused_listing_the_campaigns(
    campaign_file: Path, tmp_path: Path, option: str, value: str, listed: str
) -> None:
    res = tmp_path / "results"
    out = CliRunner().invoke(
        cli, ["run", str(campaign_file), option, value, "--results-dir", str(res)]
    )
    assert isinstance(out.exception, select.SelectionError), out.output  # exit 2, no traceback
    said = str(out.exception)
    assert f"{option}: {value.split(',')[-1]} not in" in said
    # the campaign's names (their order is the loader's)
    assert set(said.split("it has: ")[1].split(", ")) == set(listed.split(", "))
    assert not res.exists()


def test_dry_run_without_history_measures_and_creates_nothing(
    campaign_file: Path, tmp_path: Path
) -> None:
    res = tmp_path / "results"
    out = CliRunner().invoke(
        cli, ["run", str(campaign_file), "--dry-run", "--results-dir", str(res), "--suites", "cpu"]
    )
    assert out.exit_code == 0, out.output
    lines = out.output.splitlines()
    assert "8 cells" in lines[0]
    assert "native\tcpu\tsolo\t4\tno history" in lines
    assert "crun\tcpu\tsolo\t4\tno history" in lines
    assert lines[-1] == "total\t\t\t8\tno history"
    assert not res.exists()


def test_dry_run_estimates_from_past_cells(campaign_file: Path, tmp_path: Path) -> None:
    from virtbench.store.db import Store

    shutil.copy(GOLDEN / "virtbench.db", tmp_path / "virtbench.db")
    st = Store.open_existing(tmp_path)
    past = st.cell_durations()[("native", "sysbench-cpu-1t")]
    st.close()
    out = CliRunner().invoke(
        cli,
        ["run", str(campaign_file), "--dry-run", "--store", str(tmp_path / "virtbench.db")]
        + ["--platforms", "native", "--test-cases", "sysbench-cpu-1t"],
    )
    assert out.exit_code == 0, out.output
    row = out.output.splitlines()[2].split("\t")
    # 2 repetitions + 1 warm-up, each the median past cell
    assert row == ["native", "cpu", "solo", "2", duration_text(3 * statistics.median(past))]


def test_selection_cannot_go_with_resume(tmp_path: Path) -> None:
    out = CliRunner().invoke(cli, ["run", "--resume", "x", "--platforms", "native"])
    assert isinstance(out.exception, VirtbenchError) and "go with a CAMPAIGN" in str(out.exception)


def test_each_cell_line_says_n_of_n_and_the_eta(campaign_file, tmp_path, monkeypatch) -> None:
    """Piped (no terminal, so no live bar), each finished cell is one whole line."""
    from virtbench.results import Sample
    from virtbench.runner.cell import Outcome

    monkeypatch.setattr(locks, "HOST_RUNS_DIR", tmp_path / "host-runs")
    monkeypatch.setattr(runner_run.Runner, "_preflight", lambda *a: None)
    monkeypatch.setattr(runner_run.Runner, "_warmup", lambda *a: None)
    monkeypatch.setattr(runner_run.Runner, "_context", lambda *a: None)
    fake = type("Pl", (), {"labels": lambda self: {}, "cpu_budget": lambda self: None})()
    monkeypatch.setattr(runner_run, "provisioned", lambda *a: contextlib.nullcontext(fake))
    monkeypatch.setattr(
        runner_run.budget_mod, "for_target", lambda *a: contextlib.nullcontext(None)
    )
    monkeypatch.setattr(
        runner_run,
        "measure",
        lambda *a: Outcome("ok", [Sample("events_per_s", 5.0, "events/s", True)], [], None, 0.1),
    )
    out = CliRunner().invoke(
        cli,
        ["run", str(campaign_file), "--results-dir", str(tmp_path / "r"), "--no-report"]
        + ["--platforms", "native", "--test-cases", "sysbench-cpu-1t"],
    )
    assert out.exit_code == 0, out.output
    lines = [ln for ln in out.output.splitlines() if "✓" in ln]
    assert lines[0].startswith("[1/2] ✓ native sysbench-cpu-1t solo #1: 5 events/s")
    assert "ETA " in lines[0]
    assert lines[1].startswith("[2/2] ✓ native sysbench-cpu-1t solo #2") and "ETA" not in lines[1]
    assert "seed None" not in out.output
    settings = json.loads(
        __import__("sqlite3")
        .connect(tmp_path / "r" / "virtbench.db")
        .execute("SELECT settings_json FROM runs")
        .fetchone()[0]
    )
    assert settings["selection"] == {"platforms": ["native"], "test_cases": ["sysbench-cpu-1t"]}
