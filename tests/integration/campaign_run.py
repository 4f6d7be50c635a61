"""Run a campaign text in-process through the CLI and read its samples back (jsonl export)."""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner

from virtbench.cli import cli


def run_rows(tmp_path: Path, campaign: str) -> list[dict]:
    """`virtbench run` the campaign into tmp_path (exit 0 asserted), then its exported rows."""
    f = tmp_path / "c.toml"
    f.write_text(campaign)
    runner = CliRunner()
    res = runner.invoke(cli, ["run", str(f), "--results-dir", str(tmp_path), "--no-report"])
    assert res.exit_code == 0, res.output
    out = runner.invoke(
        cli, ["results", "--run", "latest", "--results-dir", str(tmp_path), "--format", "jsonl"]
    )
    return [json.loads(line) for line in out.output.splitlines() if line.strip()]
