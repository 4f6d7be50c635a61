"""A store written by the old code (schema v1, tests/data/runs/v1) reads the same today.

The CLI opens a copy (which migrates it) and must print byte-identical exports and Markdown
summaries; the report must also render with no workload, scenario or platform module.
"""

from __future__ import annotations

import csv
import io
import json
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from click.testing import CliRunner

from virtbench.cli import cli
from virtbench.store import schema
from virtbench.store.db import Store

GOLDEN = Path(__file__).parents[1] / "data" / "runs" / "v1"
RUNS = sorted(p.stem for p in GOLDEN.glob("*.jsonl"))


@pytest.fixture(scope="module")
def results_dir(tmp_path_factory) -> Path:
    d = tmp_path_factory.mktemp("golden-v1")
    shutil.copy(GOLDEN / "virtbench.db", d / "virtbench.db")
    return d


def _cli(*args: str) -> str:
    out = CliRunner().invoke(cli, list(args))
    assert out.exit_code == 0, out.output
    return out.output


def test_golden_store_is_migrated_once(results_dir):
    assert len(RUNS) == 3
    st = Store.open_existing(results_dir)
    row = st.conn.execute("SELECT version FROM schema_version").fetchall()
    assert row == [(schema.CURRENT,)]
    for run_id in RUNS:
        d = st.description(run_id)
        assert d.primary_metrics() and d.labels and d.suites
    st.close()


@pytest.mark.parametrize("run_id", RUNS)
def test_export_is_byte_identical(results_dir, run_id):
    text = _cli("results", "--run", run_id, "--format", "jsonl", "--results-dir", str(results_dir))
    assert text == (GOLDEN / f"{run_id}.jsonl").read_text()


@pytest.mark.parametrize("run_id", RUNS)
def test_csv_keeps_the_v1_columns_first_then_one_per_dimension(results_dir, run_id):
    """The v1 CSV's columns, byte for byte, come first; the dimension columns follow, each
    holding what the row's labels say."""
    text = _cli("results", "--run", run_id, "--format", "csv", "--results-dir", str(results_dir))
    got = list(csv.reader(io.StringIO(text)))
    old = list(csv.reader(io.StringIO((GOLDEN / f"{run_id}.csv").read_text())))
    width = len(old[0])
    assert [r[:width] for r in got] == old
    dims = got[0][width:]
    assert dims and dims == sorted(dims)
    if run_id == RUNS[0]:  # the suites run: memory block sizes, fio buffered vs O_DIRECT
        assert {"direct", "block_size_bytes"} <= set(dims)
    labels_at = old[0].index("labels")
    for row in got[1:]:
        labels = json.loads(row[labels_at])
        for name, cell in zip(dims, row[width:], strict=True):
            want = labels.get(name)
            assert cell == (
                "" if want is None else want if isinstance(want, str) else json.dumps(want)
            )


@pytest.mark.parametrize("run_id", RUNS)
def test_markdown_summary_is_byte_identical(results_dir, tmp_path, run_id):
    out = tmp_path / "r.html"
    text = _cli("report", run_id, "--results-dir", str(results_dir), "--output", str(out))
    summary, _, path = text.rpartition("HTML report: ")
    assert summary == (GOLDEN / f"{run_id}.md").read_text()
    assert out.exists()


# Renders every golden run (HTML and Markdown) in a fresh interpreter where importing a
# workload, scenario or platform module fails.
BLOCKED = textwrap.dedent(
    """
    import importlib.abc, sys
    from pathlib import Path

    BLOCKED = ("virtbench.workloads", "virtbench.scenarios", "virtbench.platforms")

    tried = []

    class Blocker(importlib.abc.MetaPathFinder):
        def find_spec(self, name, path=None, target=None):
            if name.startswith(BLOCKED):
                tried.append(name)  # recorded: an `except ImportError` must not hide it
                raise ImportError(f"the report imported {name}")
            return None

    sys.meta_path.insert(0, Blocker())
    from virtbench.report import build
    from virtbench.store.db import Store

    results, golden = Path(sys.argv[1]), Path(sys.argv[2])
    store = Store.open_existing(results)
    for run in store.runs():
        html, md = build.render(store, run["run_id"])
        assert 'class="section-error"' not in html, run
        assert md + "\\n" == (golden / (run["run_id"] + ".md")).read_text(), run
    print("ok", *tried, *sorted(m for m in sys.modules if m.startswith(BLOCKED)))
    """
)


def test_report_reads_the_store_without_workload_modules(results_dir):
    src = Path(__file__).parents[2] / "src"  # this tree first, as the test run itself
    out = subprocess.run(
        [sys.executable, "-c", BLOCKED, str(results_dir), str(GOLDEN)],
        capture_output=True,
        text=True,
        env={"PYTHONPATH": str(src), "PATH": "/usr/bin:/bin"},
        timeout=120,
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "ok"
