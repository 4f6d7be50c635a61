"""CLI behaviour that needs no root: failed commands create nothing; listings for pipes."""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner

from virtbench.cli import cli


def test_invalid_campaign_creates_no_results_dir(tmp_path: Path) -> None:
    bad = tmp_path / "bad.toml"
    bad.write_text('[campaign]\nname = "x"\nrepetitions = "many"\n')
    results = tmp_path / "results"
    out = CliRunner().invoke(cli, ["run", str(bad), "--results-dir", str(results)])
    assert out.exit_code != 0
    assert not results.exists()


def test_resume_of_unknown_run_creates_no_store(tmp_path: Path) -> None:
    results = tmp_path / "results"
    out = CliRunner().invoke(cli, ["run", "--resume", "nope", "--results-dir", str(results)])
    assert out.exit_code != 0
    assert "no results store" in str(out.exception) + out.output
    assert not (results / "virtbench.db").exists()


def test_report_output_in_missing_directory_is_an_error(tmp_path: Path) -> None:
    target = tmp_path / "missing" / "dir" / "x.html"
    out = CliRunner().invoke(
        cli, ["report", "--results-dir", str(tmp_path), "--output", str(target)]
    )
    assert out.exit_code != 0
    assert "does not exist" in str(out.exception)
    assert not (tmp_path / "missing").exists()


def test_list_without_terminal_prints_whole_rows() -> None:
    out = CliRunner().invoke(cli, ["list", "scenarios"])
    assert out.exit_code == 0
    lines = out.output.splitlines()
    assert lines[0] == "scenario\tdescription"
    assert all("│" not in line and "┃" not in line for line in lines)
    assert any(line.startswith("weights:A:B:C") and "\t" in line for line in lines)


def test_list_json() -> None:
    out = CliRunner().invoke(cli, ["list", "workloads", "--format", "json"])
    assert out.exit_code == 0
    rows = json.loads(out.output)
    assert {"test case", "suite", "description"} <= set(rows[0])
    assert any(r["test case"] == "sysbench-cpu-1t" for r in rows)
