"""`virtbench compare` end to end on stored runs (no measurement): the golden v1 store and a
small synthetic one."""

from __future__ import annotations

import json
import shutil
import sqlite3
from pathlib import Path

import pytest
from click.testing import CliRunner

from virtbench.analysis.compare import VERDICTS
from virtbench.cli import EXIT_NOT_COMPARABLE, EXIT_REGRESSION, cli
from virtbench.errors import VirtbenchError
from virtbench.results import Sample
from virtbench.store.db import DB_NAME, Store
from virtbench.store.description import MetricInfo, RunDescription

GOLDEN = Path(__file__).parent.parent / "data" / "runs" / "v1" / DB_NAME
SUITES_RUN = "20261123-200639-9740"
HOST = {
    "cpu_model": "Test CPU",
    "kernel": "6.1.0",
    "governor": "performance",
    "turbo": "off",
    "smt": "off",
    "microcode": "0x1",
    "virtualization": "none",
    "tool_versions": {"sysbench": "1.0.20"},
    "tools_used": {"sysbench-cpu-1t": ["sysbench"]},
}


@pytest.fixture
def golden(tmp_path: Path) -> Path:
    shutil.copy(GOLDEN, tmp_path / DB_NAME)
    return tmp_path


def invoke(*args: str):
    return CliRunner().invoke(cli, ["compare", *args])


def test_two_platforms_of_the_golden_run(golden: Path) -> None:
    out = invoke(
        SUITES_RUN,
        "--platforms",
        "native",
        "container",
        "--results-dir",
        str(golden),
        "--format",
        "json",
    )
    assert out.exit_code == 0, out.output
    doc = json.loads(out.stdout)
    assert doc["a"]["platform"] == "native" and doc["b"]["platform"] == "container"
    assert doc["fingerprint"] is None and doc["comparable"]  # one run: one host
    assert doc["method"]["alpha"] == 0.05 and doc["method"]["threshold_pct"] == 2.0
    results = doc["results"]
    assert results and all(r["verdict"] in VERDICTS for r in results)
    assert sum(doc["counts"].values()) == len(results)
    first = results[0]
    for key in ("test_case", "metric", "dims", "ratio", "ratio_ci", "p_holm", "reason"):
        assert key in first
    assert {r["platform_a"] for r in results} == {"native"}
    # two repetitions per side: nothing can be decided
    assert {r["verdict"] for r in results} == {"undecided"}


def test_golden_markdown_and_html(golden: Path) -> None:
    page = golden / "cmp.html"
    out = invoke(
        SUITES_RUN,
        "--platforms",
        "native",
        "container",
        "--results-dir",
        str(golden),
        "--html",
        str(page),
    )
    assert out.exit_code == 0, out.output
    assert "| test case |" in out.stdout and "sysbench-cpu-1t" in out.stdout
    html = page.read_text()
    assert html.startswith("<!DOCTYPE html>") and "sysbench-cpu-1t" in html and "undecided" in html


def test_bad_input_is_a_user_error(golden: Path) -> None:
    out = invoke(SUITES_RUN, "--results-dir", str(golden))
    assert isinstance(out.exception, VirtbenchError) and out.exception.exit_code == 2
    out = invoke(SUITES_RUN, "--platforms", "native", "vm", "--results-dir", str(golden))
    assert isinstance(out.exception, VirtbenchError) and "no platform 'vm'" in str(out.exception)


def _set_host(db: Path, run_id: str, **changes) -> None:
    conn = sqlite3.connect(db)
    host = json.loads(
        conn.execute("SELECT host_json FROM runs WHERE run_id = ?", (run_id,)).fetchone()[0]
    )
    conn.execute(
        "UPDATE runs SET host_json = ? WHERE run_id = ?", (json.dumps(host | changes), run_id)
    )
    conn.commit()
    conn.close()


def test_another_hosts_run_warns_or_is_refused(golden: Path, tmp_path: Path) -> None:
    other = tmp_path / "other"
    other.mkdir()
    shutil.copy(GOLDEN, other / DB_NAME)
    _set_host(other / DB_NAME, SUITES_RUN, kernel="6.12.0", thp="always")
    args = [SUITES_RUN, SUITES_RUN, "--results-dir", str(golden), "--store-b", str(other)]
    out = invoke(*args, "--format", "json")
    assert out.exit_code == 0
    assert "kernel" in out.stderr and "warning" in out.stderr
    doc = json.loads(out.stdout)
    assert not doc["comparable"]
    diffs = {d["key"]: d["matters"] for d in doc["fingerprint"]["differences"]}
    assert diffs == {"kernel": True, "thp": False}
    assert "microcode: unknown in A and B" in doc["fingerprint"]["unknown"]  # v1 runs lack it
    assert len(doc["results"]) > 10  # every platform matched by name
    out = invoke(*args, "--strict")
    assert out.exit_code == EXIT_NOT_COMPARABLE
    assert "6.1" in out.stderr and "refused" in out.stderr and not out.stdout


def _run(store: Store, run_id: str, values: dict[str, list[float]]) -> None:
    """A run of sysbench-cpu-1t with the given values per platform."""
    metric = MetricInfo("cpu", "sysbench-cpu-1t", "events_per_s", "events/s", True, True)
    store.create_run(
        run_id,
        "synthetic",
        "x.toml",
        "",
        1,
        HOST,
        {},
        "0.1.0",
        description=RunDescription((metric,)),
    )
    seq = 0
    for platform, vals in values.items():
        for rep, v in enumerate(vals, 1):
            cell = f"{run_id}/{seq:04d}"
            spec = json.dumps({"name": platform, "type": "native", "options": {}})
            store.add_cells(
                [(cell, run_id, seq, platform, spec, "cpu", "sysbench-cpu-1t", "solo", rep, "{}")]
            )
            store.finish_cell(
                run_id, cell, "done", [Sample("events_per_s", v, "events/s", True)], []
            )
            seq += 1


def test_regression_exit_status(tmp_path: Path) -> None:
    store = Store.in_dir(tmp_path)
    _run(store, "r1", {"native": [1000, 1001, 999, 1000, 1000.5]})
    _run(store, "r2", {"native": [900, 901, 899, 900, 900.5]})
    store.close()
    base = ["--results-dir", str(tmp_path)]
    out = invoke("r1", "r2", *base)
    assert out.exit_code == 0 and "slower" in out.stdout
    assert invoke("r1", "r2", *base, "--fail-on-regression").exit_code == EXIT_REGRESSION
    assert invoke("r2", "r1", *base, "--fail-on-regression").exit_code == 0  # faster
    out = invoke("r1", "r2", *base, "--threshold", "20", "--format", "json")
    assert [r["verdict"] for r in json.loads(out.stdout)["results"]] == ["same"]  # -10% < 20%


def test_help_documents_exit_statuses() -> None:
    out = CliRunner().invoke(cli, ["compare", "--help"])
    assert "--fail-on-regression" in out.output and "Exit status" in out.output
