"""bench/sched_at_peak.py: the target's scheduler metrics at each cell's best-served step."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.append(str(Path(__file__).resolve().parents[2] / "bench"))  # last: shadows nothing
import sched_at_peak  # noqa: E402


def row(cell: str, scenario: str, step: int, metric: str, value: float, **labels) -> dict:
    return {
        "cell_id": cell,
        "platform": labels.pop("platform", "vm"),
        "scenario": scenario,
        "role": labels.pop("role", "target"),
        "metric": metric,
        "value": value,
        "labels": {"step": step, "file_size_kb": 1, **labels},
    }


def test_each_cells_peak_step_is_read_and_cells_are_averaged():
    rows = [
        row("a", "solo", 0, "reply_rate", 500.0),
        row("a", "solo", 0, "exe_per_s", 1.0),
        row("a", "solo", 1, "reply_rate", 900.0),  # a's peak
        row("a", "solo", 1, "exe_per_s", 7000.0),
        row("a", "solo", 2, "reply_rate", 300.0),  # past the peak: the fall
        row("a", "solo", 2, "exe_per_s", 2.0),
        row("b", "solo", 0, "reply_rate", 800.0),  # b's only step
        row("b", "solo", 0, "exe_per_s", 9000.0),
        row("b", "solo", 0, "exe_per_s", 5.0, role="neighbour-1"),  # not the target's
        row("c", "identical", 0, "reply_rate", 1.0),  # a scenario not asked for
    ]
    table = sched_at_peak.at_peaks(rows, {"solo"})
    assert set(table) == {("vm", "solo", 1)}
    assert table["vm", "solo", 1]["reply_rate"] == [900.0, 800.0]
    assert table["vm", "solo", 1]["exe_per_s"] == [7000.0, 9000.0]


def test_two_target_platforms_are_kept_apart():
    rows = [
        row("a", "solo", 0, "reply_rate", 500.0, platform="vm-float"),
        row("b", "solo", 0, "reply_rate", 700.0, platform="vm-pinned"),
    ]
    table = sched_at_peak.at_peaks(rows, {"solo"})
    assert table["vm-float", "solo", 1]["reply_rate"] == [500.0]
    assert table["vm-pinned", "solo", 1]["reply_rate"] == [700.0]


def test_the_budget_throttling_at_the_peak_step_is_kept():
    rows = [
        row("a", "idle", 0, "reply_rate", 10.0, cpu_budget_throttled="1/2 periods"),
        row("a", "idle", 1, "reply_rate", 20.0, cpu_budget_throttled="3/4 periods"),
    ]
    assert sched_at_peak.at_peaks(rows, {"idle"})["vm", "idle", 1]["throttled"] == ["3/4 periods"]
