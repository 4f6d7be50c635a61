"""bench/campaign_runtime.py: the per-(platform, scenario) cell times a campaign header quotes."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import virtbench

sys.path.append(str(Path(__file__).resolve().parents[2] / "bench"))  # last: shadows nothing
import campaign_runtime as rt  # noqa: E402
from _campaign import CellTime  # noqa: E402


def test_a_cell_cut_short_by_an_interrupt_is_not_in_the_mean_cell_time():
    rows = [
        CellTime("vm", "solo", 1, "ok", 120.0),
        CellTime("vm", "solo", 2, "ok", 120.0),
        CellTime("vm", "solo", 3, "interrupted", 10.0),  # Ctrl-C 10 s into the cell
        CellTime("vm", "solo", 4, "lost", 3.0),  # its runner was killed
        CellTime("vm", "solo", 5, "pending", None),
    ]
    (line,) = rt.summary(rows)
    assert "2 cell(s)" in line and "120.0 s ± 0.0" in line, line


def test_failed_and_timed_out_cells_are_cell_time():
    rows = [CellTime("vm", "solo", 1, "ok", 100.0), CellTime("vm", "solo", 2, "timeout", 300.0)]
    (line,) = rt.summary(rows)
    assert "2 cell(s)" in line and " 200.0 s" in line, line


def _git(repo: Path, *args: str) -> str:
    out = subprocess.run(["git", "-C", str(repo), *args], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    return out.stdout.strip()


def test_a_piece_names_the_code_its_run_imports_and_says_when_it_was_changed(tmp_path, monkeypatch):
    # the virtbench a piece's run imports (PYTHONPATH, else the venv's editable install) may
    # live in another tree than this script, and may carry uncommitted changes
    repo = tmp_path / "tree"
    pkg = repo / "src" / "virtbench"
    pkg.mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    _git(repo, "init", "-q")
    _git(repo, "add", ".")
    _git(repo, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "-m", "x")
    monkeypatch.setattr(virtbench, "__file__", str(pkg / "__init__.py"))
    head = _git(repo, "rev-parse", "--short", "HEAD")
    assert rt._code_version() == head
    (pkg / "__init__.py").write_text("changed = True\n")
    assert rt._code_version() == head + "-dirty"
