"""A ratio says whether its 95% interval decides it: the suite tables' ratio cell, the
terminal summary and the geomean table mark "undecided" when the interval includes 1.0."""

from types import SimpleNamespace

from virtbench.analysis.groups import GroupKey
from virtbench.analysis.normalize import Comparison, decision
from virtbench.analysis.scores import GeoMean
from virtbench.report.core import results, scores


def comparison(ratio, low, high) -> Comparison:
    key = GroupKey("crun", "network", "iperf3-tcp", "solo", "target", "throughput")
    return Comparison(key, key, ratio, None, None, True, low, high)


def test_decision_by_the_interval():
    assert decision(1.02, 1.3) == "better"
    assert decision(0.7, 0.98) == "worse"
    assert decision(0.9, 1.1) == "undecided"
    assert decision(0.9, 1.0) == "undecided"  # touching 1 does not exclude it
    assert decision(None, None) == "no CI"
    assert comparison(1.2, 0.95, 1.5).decision == "undecided"


def cell(c: Comparison):
    data = SimpleNamespace(baseline="native", comparisons={c.key: c})
    return results.ratio_cells(data, SimpleNamespace(key=c.key))[0]


def test_ratio_cell_marks_undecided_and_colours_only_decided():
    td = cell(comparison(0.85, 0.4, 1.8))
    assert "undecided" in str(td.content) and td.cls == "num "
    td = cell(comparison(0.85, 0.8, 0.9))
    assert "undecided" not in str(td.content) and "worse" in td.cls
    td = cell(comparison(1.2, 1.1, 1.3))
    assert "undecided" not in str(td.content) and "good" in td.cls
    assert "no CI" in str(cell(comparison(0.85, None, None)).content)


def test_terminal_summary_says_undecided():
    assert results.md_ratio(comparison(0.845, 0.2, 3.0)) == "(×0.845, undecided)"
    assert results.md_ratio(comparison(0.845, 0.8, 0.9)) == "(×0.845)"
    assert results.md_ratio(comparison(0.845, None, None)) == "(×0.845, no CI)"


def test_geomean_ci_says_undecided():
    g = GeoMean("all", "crun", "solo", 1.004, 0.97, 1.04, 3, 0.9, 1.1)
    assert scores._geo_ci(g) == "[0.970–1.040, undecided]"
    g = GeoMean("all", "gvisor", "solo", 0.5, 0.4, 0.6, 3, 0.3, 0.7)
    assert scores._geo_ci(g) == "[0.400–0.600]"
