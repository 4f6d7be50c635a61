"""bench/campaign_runtime.py: the per-(platform, scenario) cell times a campaign header quotes."""

from __future__ import annotations

import sys
from pathlib import Path

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
