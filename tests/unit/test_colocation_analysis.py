"""Derived co-location metrics against hand-computed values (seed 003's own examples)."""

import json

import pytest

from virtbench.analysis import colocation as c


def test_normalized_and_degradation():
    # seed 003 Table 2: 1 kB, (1,0) 1070 req/s vs (4,3) 999 req/s -> 6.6 % degradation
    assert c.normalized(999, 1070) == pytest.approx(0.93364, abs=1e-5)
    assert c.degradation_pct(999, 1070) == pytest.approx(6.6355, abs=1e-3)
    # lower is better: 11 ms vs 10 ms solo is 10 % worse
    assert c.degradation_pct(11, 10, higher_is_better=False) == pytest.approx(10.0)
    with pytest.raises(ValueError):
        c.normalized(1, 0)


def test_aggregated_ratio_seed003_fig20():
    # Dom1 661 req/s of a 1070 solo peak (0.62) + 70 kB at 0.68 of its peak -> 1.30
    assert c.aggregated_ratio([661, 0.68 * 165], [1070, 165]) == pytest.approx(1.2977, abs=1e-4)
    assert c.aggregated([480, 487]) == 967


def test_jain():
    assert c.jain([480, 487]) == pytest.approx(967**2 / (2 * (480**2 + 487**2)))
    assert c.jain([5, 5, 5]) == 1.0
    assert c.jain([1, 0, 0, 0]) == 0.25
    assert c.jain([0, 0]) == 1.0


def test_cov():
    assert c.cov([2, 4, 4, 4, 5, 5, 7, 9]) == pytest.approx(2.13809 / 5, abs=1e-5)
    assert c.cov([1]) is None


def _row(platform, scenario, role, rep, value, valid=1, env_platform=None):
    labels = {"env_platform": env_platform} if env_platform else {}
    return {
        "platform": platform,
        "test_case": "web",
        "scenario": scenario,
        "role": role,
        "repetition": rep,
        "metric": "req_per_s",
        "value": value,
        "unit": "req/s",
        "higher_is_better": 1,
        "valid": valid,
        "labels_json": json.dumps(labels),
    }


def test_cell_stats_and_matrix():
    rows = [
        _row("native", "solo", "target", 1, 1000),
        _row("native", "solo", "target", 2, 1100),
        _row("vm", "solo", "target", 1, 200),
        _row("native", "identical", "target", 1, 500),
        _row("native", "identical", "neighbour-1", 1, 400),
        _row("native", "identical", "target", 2, 600, valid=0),
        _row("native", "heterogeneous:vm", "target", 1, 840),
        _row("native", "heterogeneous:vm", "neighbour-1", 1, 100, env_platform="vm"),
        _row("native", "identical", "client", 1, 99999),  # clients are not environments
    ]
    stats = {s.scenario: s for s in c.cell_stats(rows, {"web": "req_per_s"})}
    ident = stats["identical"]
    assert ident.solo_mean == 1050
    assert ident.target_mean == 500 and ident.n == 1 and ident.invalid == 1
    assert ident.degradation_pct == pytest.approx(100 * (1 - 500 / 1050))
    assert ident.aggregated == 900
    assert ident.jain == pytest.approx(900**2 / (2 * (500**2 + 400**2)))
    assert ident.aggregated_ratio == pytest.approx(500 / 1050 + 400 / 1050)
    het = stats["heterogeneous:vm"]
    # the neighbour is normalized by the vm's own solo value, the target by native's
    assert het.aggregated_ratio == pytest.approx(840 / 1050 + 100 / 200)
    assert het.environments == 2
    m = c.interference_matrix(list(stats.values()))
    assert m["native"]["web | heterogeneous:vm"] == pytest.approx(20.0)
    assert "web | solo" not in m["native"]
