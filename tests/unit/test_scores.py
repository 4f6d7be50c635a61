import math

import pytest

from virtbench.analysis import groups as groups_mod
from virtbench.analysis.normalize import against_baseline
from virtbench.analysis.scores import geomeans, seed004, seed004_scores
from virtbench.store.description import RunDescription

CONFIGS = ["metal.local", "metal.mnt", "metal.aufs", "vm.local", "vm.mnt", "vm.aufs"]
# Seed 004, Tables 5 and 6: raw averages (in brackets in the paper) of the disk suite, and the
# test scores printed for them. Normalization is over all six configurations.
PAPER = """
AIO-Stress HIB 2637.12 2430.07 2336.56 2239.05 2094.9 1969.52 | 1.00 .92 .89 .85 .79 .75
SQLite LIB 524.31 463.31 448.47 136.46 144.8 144.39 | 1.00 .88 .86 .26 .28 .28
FS-Mark HIB 15.67 18.43 18.43 46.03 44.87 44.97 | .34 .40 .40 1.00 .97 .98
Dbench1 HIB 39.22 41.72 43.72 301.23 295.08 272.4 | .13 .14 .15 1.00 .98 .90
Dbench2 HIB 66.93 72.27 69.34 508.15 472.84 428.83 | .13 .14 .14 1.00 .93 .84
Dbench3 HIB 67.5 72.43 58.63 244.02 194.63 196.13 | .28 .30 .24 1.00 .80 .80
Dbench4 HIB 9.68 10.76 10.5 26.55 25.51 25.24 | .36 .41 .40 1.00 .96 .95
IOzone1 HIB 8059.31 7780.49 3032.21 7559.72 7714.91 5569.87 | 1.00 .97 .38 .94 .96 .69
IOzone2 HIB 69.02 111.48 110.45 115.35 114.35 112.72 | .60 .97 .96 1.00 .99 .98
TIO1 HIB 13595.01 13453.36 11330.63 12390.95 12157.88 11076.75 | 1.00 .99 .83 .91 .89 .81
TIO2 HIB 0.55 0.53 0.59 1.17 1.3 1.24 | .42 .41 .45 .90 1.00 .95
CB1 HIB 487.95 548.2 388.47 360.75 356.42 336.42 | .89 1.00 .71 .66 .65 .61
CB2 HIB 261.22 274.74 154.23 199.35 208.75 166.58 | .95 1.00 .56 .73 .76 .61
CB3 HIB 1460.93 1343.32 533.12 1825.35 1367.49 1389.03 | .80 .74 .29 1.00 .75 .76
Unpacking LIB 8.61 8.61 8.95 9.64 9.52 9.69 | .89 .89 .92 .99 .98 1.00
PostMark HIB 5208.0 5282.0 3178.0 4716.0 4746.0 3807.0 | .99 1.00 .60 .89 .90 .72
Gzip LIB 12.85 12.93 13.05 13.66 13.63 13.69 | .94 .94 .95 1.00 1.00 1.00
Apache HIB 29040.6 25830.51 23352.62 22259.71 19492.16 17089.18 | 1.00 .89 .80 .77 .67 .59
"""
PAPER_TOTALS = [7.06, 7.57, 5.07, 11.4, 10.74, 9.66]


def _paper():
    means, hib, printed = {}, {}, {}
    for line in PAPER.strip().splitlines():
        raw, scores = line.split("|")
        name, order, *vals = raw.split()
        means[name] = dict(zip(CONFIGS, map(float, vals), strict=True))
        hib[name] = order == "HIB"
        printed[name] = dict(zip(CONFIGS, map(float, scores.split()), strict=True))
    return means, hib, printed


def test_seed004_reproduces_paper_disk_tables():
    means, hib, printed = _paper()
    scores, totals = seed004_scores(means, hib)
    for test, per_config in printed.items():
        for cfg, expected in per_config.items():
            # the paper prints two decimals
            assert scores[(test, cfg)] == pytest.approx(expected, abs=0.0051), (test, cfg)
    for cfg, expected in zip(CONFIGS, PAPER_TOTALS, strict=True):
        # formula (2) on the printed (rounded) scores gives the printed totals exactly ...
        # (every printed row already has its max at 1.00, so renormalizing is the identity)
        _, from_printed = seed004_scores(printed, hib)
        assert from_printed[cfg].total == pytest.approx(expected, abs=0.0051), cfg
        # ... and on the raw averages differs from them only by that rounding
        assert totals[cfg].total == pytest.approx(expected, abs=0.03), cfg
        assert totals[cfg].n_tests == 18 and totals[cfg].missing == []


def test_seed004_lib_uses_max_and_subtracts():
    scores, totals = seed004_scores(
        {"hib": {"a": 10.0, "b": 5.0}, "lib": {"a": 2.0, "b": 4.0}},
        {"hib": True, "lib": False},
        {"hib": {"a": 1.0, "b": 0.5}, "lib": {"a": 0.2, "b": 0.4}},
    )
    assert scores[("lib", "a")] == 0.5 and scores[("lib", "b")] == 1.0
    assert totals["a"].total == pytest.approx(1.0 - 0.5)
    assert totals["b"].total == pytest.approx(0.5 - 1.0)
    assert totals["a"].ci_half == pytest.approx(math.hypot(0.1, 0.05))


def _rows(platform, test_case, values, suite="cpu", hib=1, dims=None):
    return [
        {
            "platform": platform,
            "suite": suite,
            "test_case": test_case,
            "scenario": "solo",
            "role": "target",
            "metric": "m",
            "value": v,
            "unit": "u",
            "higher_is_better": hib,
            "repetition": i,
            "valid": 1,
            "invalid_reason": None,
            "labels": dims or {},
            "cell_id": f"{platform}/{test_case}/{i}",
        }
        for i, v in enumerate(values)
    ]


def test_seed004_from_groups_reports_missing_tests():
    rows = (
        _rows("native", "a", [10, 10])
        + _rows("vm", "a", [8, 8])
        + _rows("native", "b", [4, 4], hib=0)
    )
    (suite,) = seed004(groups_mod.build(rows, RunDescription()))
    assert suite.totals[("native", "solo")].total == pytest.approx(1.0 - 1.0)
    assert suite.totals[("vm", "solo")].total == pytest.approx(0.8)
    assert suite.totals[("vm", "solo")].missing == ["b"]


def test_geomean_of_ratios():
    rows = (
        _rows("native", "a", [100, 100])
        + _rows("vm", "a", [50, 50])
        + _rows("native", "b", [10, 10], hib=0)
        + _rows("vm", "b", [5, 5], hib=0)  # lower is better: twice as good
        + _rows("native", "c", [1, 1], suite="disk")
        + _rows("vm", "c", [0.5, 0.5], suite="disk")
    )
    gs = groups_mod.build(rows, RunDescription())
    res = {(g.suite, g.platform): g for g in geomeans(gs, against_baseline(gs, "native"), "native")}
    cpu = res[("cpu", "vm")]
    assert cpu.value == pytest.approx(math.sqrt(0.5 * 2.0))
    assert (cpu.ratio_min, cpu.ratio_max, cpu.n_tests) == pytest.approx((0.5, 2.0, 2))
    # zero spread: the CI collapses onto the value
    assert cpu.low == pytest.approx(cpu.value) and cpu.high == pytest.approx(cpu.value)
    # overall: each suite weighs one half -> sqrt(1.0 * 0.5)
    assert res[("all", "vm")].value == pytest.approx(math.sqrt(0.5))
    assert ("cpu", "native") not in res


def test_geomean_sweep_counts_as_one_test_case_and_has_ci():
    rows = _rows("native", "a", [100, 102, 98]) + _rows("vm", "a", [80, 84, 76])
    for bs, r in ((4096, 1.0), (65536, 0.5), (1048576, 0.25)):
        d = {"block_size_bytes": bs}
        rows += _rows("native", "sweep", [10, 10.2, 9.8], dims=d)
        rows += _rows("vm", "sweep", [10 * r, 10.2 * r, 9.8 * r], dims=d)
    gs = groups_mod.build(rows, RunDescription())
    (g,) = geomeans(gs, against_baseline(gs, "native"), "native")
    # 'a' weighs 1/2, each sweep point 1/6
    expected = math.exp(0.5 * math.log(0.8) + (math.log(1.0) + math.log(0.5) + math.log(0.25)) / 6)
    assert g.value == pytest.approx(expected, rel=1e-3)
    assert g.low < g.value < g.high and g.n_tests == 2


def test_geomean_lists_test_cases_without_a_valid_ratio():
    rows = _rows("native", "a", [10, 10]) + _rows("vm", "a", [5, 5]) + _rows("native", "b", [3, 3])
    bad = _rows("vm", "b", [0.0, 0.0])
    for r in bad:  # every vm sample of 'b' is invalid
        r["valid"], r["invalid_reason"] = 0, "too few ops"
    gs = groups_mod.build(rows + bad, RunDescription())
    (g,) = geomeans(gs, against_baseline(gs, "native"), "native")
    assert g.value == pytest.approx(0.5) and g.n_tests == 1 and g.missing == ["b"]
    only_bad = groups_mod.build(_rows("native", "b", [3, 3]) + bad, RunDescription())
    (none,) = geomeans(only_bad, against_baseline(only_bad, "native"), "native")
    assert none.value is None and none.overhead_pct is None and none.missing == ["b"]
