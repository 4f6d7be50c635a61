"""The report's CPU weights view (report/suites/colocation/weights.py): per served point,
each configuration's throughput per environment, the CPU split and an honest verdict."""

from __future__ import annotations

import re
from types import SimpleNamespace

from virtbench.report.suites.colocation import weights
from virtbench.runner.describe import describe

PRIMARY = {"wrk-max": "requests_per_s"}


def _row(scenario, role, metric, value, size, rep, w, **extra):
    labels = {"file_size_kb": size, "connections": 32, "scenario_kind": "weights", "weights": w}
    return {
        "platform": "container",
        "test_case": "wrk-max",
        "scenario": scenario,
        "role": role,
        "metric": metric,
        "value": value,
        "valid": True,
        "repetition": rep,
        "cell_id": f"{scenario}/{rep}",
        "labels": labels | extra,
        "unit": "",
    }


def _cell(scenario, w, size, rep, rps, cpu):
    """One weights cell at one size: throughput and cpu_util summaries of both roles."""
    out = []
    for role, r, c in zip(("target", "neighbour-1"), rps, cpu, strict=True):
        # the throughput names its network path, the CPU summary does not: still one point
        out.append(_row(scenario, role, "requests_per_s", r, size, rep, w, net_path="bridge"))
        out.append(_row(scenario, role, "cpu_util", c, size, rep, w, stdev=1.0, cov=0.1))
    return out


def _data(rows):
    return SimpleNamespace(
        samples=rows, series=[], platforms=["container"], description=describe(["wrk-max"])
    )


def _table(html_text: str) -> list[list[str]]:
    rows = re.findall(r"<tr>(.*?)</tr>", html_text, re.S)
    return [
        [re.sub("<.*?>", "", c) for c in re.findall(r"<t[hd][^>]*>(.*?)</t[hd]>", r)] for r in rows
    ]


HEAVY_T = {"host": 1.0, "target": 4.0, "neighbour-1": 1.0}
HEAVY_N = {"host": 1.0, "target": 1.0, "neighbour-1": 4.0}


def test_one_chart_per_size_and_verdicts_follow_the_measured_split():
    rows = []
    for rep in (1, 2):
        # 70 KB: the weights acted (CPU 40:10, throughput 4:1); 1 KB: they did not
        rows += _cell("weights:1:4:1", HEAVY_T, 70, rep, (2200, 560), (40.0, 10.0))
        rows += _cell("weights:1:1:4", HEAVY_N, 70, rep, (640, 2100), (10.0, 40.0))
        rows += _cell("weights:1:4:1", HEAVY_T, 1, rep, (7650 + rep, 7600), (24.8, 24.0))
        rows += _cell("weights:1:1:4", HEAVY_N, 1, rep, (7300, 7400), (24.0, 25.0))
    charts, table = weights.weight_views(_data(rows), PRIMARY)
    assert len(charts) == 2  # 1 KB and 70 KB apart, never one mean of both
    assert "· 1 KB" in charts[0] and "· 70 KB" in charts[1]  # by size, not as text
    assert any("1 KB" in c for c in charts) and any("70 KB" in c for c in charts)
    by = {(r[0].split(" · ")[2], r[1]): r for r in _table(table)[1:]}
    big = by["70 KB", "weights:1:4:1"]
    assert big[5].startswith("×3.93") and big[6] == "40.0 : 10.0" and big[7].startswith("×4.00")
    assert "target (heavier) served ≥ 1.1x more in 2 of 2" in big[8]
    assert "neighbour-1 (heavier) served" in by["70 KB", "weights:1:1:4"][8]
    small = by["1 KB", "weights:1:4:1"]
    # 0.7 % more in both repetitions is not "served more": the CPU split says why
    assert small[8].startswith("weights did not act")
    assert by["1 KB", "weights:1:1:4"][8].startswith("weights did not act")


def test_invalid_throughput_is_left_out_and_equal_weights_say_so():
    rows = _cell(
        "weights:2:1:1",
        {"host": 2.0, "target": 1.0, "neighbour-1": 1.0},
        1,
        1,
        (900, 880),
        (30, 30),
    )
    rows += _cell("weights:1:4:1", HEAVY_T, 1, 1, (5000, 1000), (40, 10))
    bad = _cell("weights:1:4:1", HEAVY_T, 1, 2, (100, 9000), (40, 10))
    for r in bad:
        r["valid"] = r["metric"] != "requests_per_s"
    charts, table = weights.weight_views(_data(rows + bad), PRIMARY)
    by = {r[1]: r for r in _table(table)[1:]}
    assert by["weights:2:1:1"][8] == "equal weights"
    assert by["weights:1:4:1"][2] == "5000 (n=1)"  # the invalid repetition is not averaged in
    assert by["weights:1:4:1"][8].endswith("in 1 of 1")


def test_a_lighter_side_that_served_nothing_counts_as_the_heavier_winning():
    rows = _cell("weights:1:4:1", HEAVY_T, 1, 1, (5000, 1000), (40, 10))
    rows += _cell("weights:1:4:1", HEAVY_T, 1, 2, (5200, 0), (48, 2))
    rows += _cell("weights:1:4:1", HEAVY_T, 1, 3, (0, 0), (0, 0))  # nothing to compare
    _charts, table = weights.weight_views(_data(rows), PRIMARY)
    row = _table(table)[1]
    assert row[5] == "×∞ [5.00–∞]"
    assert row[8].endswith("served ≥ 1.1x more in 2 of 2")


def test_a_point_no_solo_served_says_so_in_the_vs_solo_column():
    from virtbench.analysis.colocation import CellStats
    from virtbench.report.suites.colocation import _vs_solo

    st = CellStats("container", "wrk-max", "weights:1:4:1", "requests_per_s", "req/s", True,
                   12000.0, 0.01, 2, 0)  # fmt: skip
    assert _vs_solo(st) == "– (no solo at this point)"
    st.solo_mean, st.normalized = 14000.0, 12000.0 / 14000.0
    assert _vs_solo(st) == "0.857"
    st.n, st.solo_mean, st.normalized = 0, None, None  # nothing valid: just a dash
    assert _vs_solo(st) == "–"
