"""Solo-peak cells are references for load=PCT: never a co-location scenario of their own."""

from __future__ import annotations

from virtbench.analysis.colocation import cell_stats
from virtbench.results import SOLO_PEAK_SCENARIO


def _row(scenario: str, value: float, rep: int = 1) -> dict:
    return {
        "platform": "native",
        "test_case": "httperf-sweep",
        "scenario": scenario,
        "role": "target",
        "repetition": rep,
        "metric": "throughput",
        "value": value,
        "unit": "req/s",
        "higher_is_better": 1,
        "valid": 1,
        "labels_json": "{}",
    }


def test_solo_peak_cells_are_not_colocation_scenarios() -> None:
    rows = [_row("solo", 100.0), _row("many:2", 50.0), _row(SOLO_PEAK_SCENARIO, 120.0)]
    stats = cell_stats(rows, {"httperf-sweep": "throughput"})
    assert {s.scenario for s in stats} == {"solo", "many:2"}
