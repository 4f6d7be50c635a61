"""The CLI's habits (issue 39): -h/-V/-q/-v, one --format family, pipes that close early,
no Python repr in listings, descriptions of campaigns, one images listing."""

from __future__ import annotations

import csv
import io
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from virtbench.cli import cli

SRC = Path(__file__).parents[2] / "src"
GOLDEN = Path(__file__).parents[1] / "data" / "runs" / "v1"
RUN = "20261123-200639-9740"  # the suites run: memory sizes, fio buffered vs O_DIRECT


@pytest.fixture
def results_dir(tmp_path: Path) -> Path:
    shutil.copy(GOLDEN / "virtbench.db", tmp_path / "virtbench.db")
    return tmp_path


def _ok(*args: str) -> str:
    out = CliRunner().invoke(cli, list(args))
    assert out.exit_code == 0, out.output
    return out.output


def test_short_help_and_version() -> None:
    assert "Usage:" in _ok("-h")
    assert "-h, --help" in _ok("run", "-h")  # inherited by every subcommand
    assert "Usage:" in _ok("fleet", "show", "-h")
    assert _ok("-V").startswith("virtbench, version ")


def test_quiet_and_verbose_exclude_each_other() -> None:
    out = CliRunner().invoke(cli, ["-q", "-v", "list", "suites"])
    assert out.exit_code == 2 and "exclude each other" in out.output


def test_verbose_prints_the_commands_run() -> None:
    from virtbench import cli_output

    seen: list[str] = []
    cli_output.trace_commands(seen.append)
    try:
        subprocess.run(["true", "a b"], check=True)
    finally:
        cli_output.trace_commands(None)
    subprocess.run(["true"], check=True)  # after: not traced
    assert seen == ["+ true 'a b'"]


@pytest.mark.parametrize("fmt", ["md", "json", "jsonl", "csv", "tsv", "table"])
def test_every_listing_takes_the_format_family(fmt: str) -> None:
    text = _ok("list", "scenarios", "--format", fmt)
    if fmt == "json":
        assert json.loads(text)[0]["scenario"]
    elif fmt == "jsonl":
        assert all(json.loads(line)["scenario"] for line in text.splitlines())
    elif fmt == "csv":
        assert next(csv.reader(io.StringIO(text))) == ["scenario", "description"]
    elif fmt == "tsv":
        assert text.splitlines()[0] == "scenario\tdescription"
    else:  # md, and table: its old name
        assert text.splitlines()[:2] == ["| scenario | description |", "| --- | --- |"]


def test_unknown_format_names_the_allowed_ones() -> None:
    out = CliRunner().invoke(cli, ["list", "suites", "--format", "xml"])
    assert out.exit_code == 2
    assert "'md', 'json', 'jsonl', 'csv', 'tsv'" in out.output


def test_list_platforms_has_no_python_none() -> None:
    rows = json.loads(_ok("list", "platforms", "--format", "json"))
    text = json.dumps(rows)
    assert "None" not in text
    container = next(r for r in rows if r["platform"] == "container")
    assert "cpu_weight=unset" in container["options"]


def test_list_campaigns_has_one_line_descriptions() -> None:
    rows = json.loads(_ok("list", "campaigns", "--format", "json"))
    quick = next(r for r in rows if r["campaign"] == "quick")
    assert quick["description"].startswith("native vs an OCI container")
    assert quick["file"].endswith("quick.toml")
    assert all("\n" not in r["description"] for r in rows)


@pytest.mark.parametrize("fmt", ["md", "json", "jsonl", "csv", "tsv"])
def test_results_in_every_format(results_dir: Path, fmt: str) -> None:
    text = _ok("results", "--run", RUN, "--results-dir", str(results_dir), "--format", fmt)
    jsonl = _ok("results", "--run", RUN, "--results-dir", str(results_dir))
    n = len(jsonl.splitlines())
    if fmt == "json":
        assert [json.dumps(r) for r in json.loads(text)] == jsonl.splitlines()
    elif fmt == "jsonl":
        assert text == jsonl
    elif fmt == "md":
        assert len(text.splitlines()) == n + 2 and text.startswith("| run_id | cell_id |")
    else:
        sep = "," if fmt == "csv" else "\t"
        rows = list(csv.reader(io.StringIO(text), delimiter=sep))
        assert len(rows) == n + 1 and "direct" in rows[0] and "block_size_bytes" in rows[0]


def test_results_list_in_a_format(results_dir: Path) -> None:
    rows = json.loads(
        _ok("results", "--list", "--results-dir", str(results_dir), "--format", "json")
    )
    assert {r["run"] for r in rows} >= {RUN} and rows[0]["status"]


def _closed_reader(args: list[str], cwd: Path) -> subprocess.CompletedProcess:
    """Run virtbench with its stdout a pipe whose reader is already gone (`| head -0`)."""
    env = {**os.environ, "PYTHONPATH": str(SRC)}
    r, w = os.pipe()
    os.close(r)
    try:
        return subprocess.run(
            [sys.executable, "-c", "from virtbench.cli import main; main()", *args],
            stdout=w,
            stderr=subprocess.PIPE,
            text=True,
            cwd=cwd,
            env=env,
            timeout=120,
        )
    finally:
        os.close(w)


@pytest.mark.parametrize(
    "args", [["list", "workloads"], ["results", "--run", RUN, "--results-dir", "."]]
)
def test_a_reader_that_goes_away_is_no_error(results_dir: Path, args: list[str]) -> None:
    done = _closed_reader(args, results_dir)
    assert done.returncode == 0, done.stderr
    assert "Traceback" not in done.stderr and "Exception" not in done.stderr


def test_report_of_a_store_file_goes_beside_it(results_dir: Path, tmp_path_factory) -> None:
    elsewhere = tmp_path_factory.mktemp("cwd")
    store = results_dir / "virtbench.db"
    old = Path.cwd()
    os.chdir(elsewhere)
    try:
        out = _ok("report", RUN, "--store", str(store))
    finally:
        os.chdir(old)
    assert (results_dir / "reports" / f"{RUN}.html").is_file()
    assert not (elsewhere / "results").exists()
    assert str(results_dir / "reports") in out


def test_quiet_leaves_only_the_results(results_dir: Path, tmp_path: Path) -> None:
    html = tmp_path / "r.html"
    loud = _ok("report", RUN, "--results-dir", str(results_dir), "--output", str(html))
    quiet = _ok("-q", "report", RUN, "--results-dir", str(results_dir), "--output", str(html))
    assert "HTML report:" in loud and "HTML report:" not in quiet
    assert quiet.strip() and quiet in loud  # the Markdown summary itself is kept


def test_doctor_rows(monkeypatch) -> None:
    from virtbench import doctor

    monkeypatch.setattr(
        doctor,
        "checks",
        lambda: [
            doctor.Check("root", "ok", "running as root", ""),
            doctor.Check("fio", "missing", "not found", "apt-get install fio"),
        ],
    )
    rows = [json.loads(line) for line in _ok("doctor", "--format", "jsonl").splitlines()]
    assert rows[1] == {
        "check": "fio",
        "status": "missing",
        "detail": "not found",
        "fix": "apt-get install fio",
    }
    assert _ok("doctor").splitlines()[0] == "✓ root: running as root"


def test_images_status_is_not_offered_twice() -> None:
    text = _ok("images", "-h")
    assert "list" in text and "status" not in text.split("Commands:")[1]
    assert "Usage:" in _ok("images", "status", "-h")  # still there for old scripts


def test_compare_rows_in_csv(results_dir: Path) -> None:
    out = _ok(
        "compare",
        RUN,
        "--platforms",
        "native",
        "container",
        "--results-dir",
        str(results_dir),
        "--format",
        "csv",
    )
    rows = list(csv.DictReader(io.StringIO(out)))
    assert rows and {"test_case", "verdict", "a_mean", "b_mean", "ratio"} <= set(rows[0])
