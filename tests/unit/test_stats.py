import math
import statistics

import pytest

from virtbench.analysis import groups as groups_mod
from virtbench.analysis.normalize import against_baseline, compare, overhead_from_ratio
from virtbench.analysis.stats import betainc, summarize, t_cdf, t_critical, t_quantile, welch_df
from virtbench.store.description import (
    ALL_TEST_CASES,
    DIMENSION,
    LabelRole,
    MetricInfo,
    RunDescription,
)

UNDESCRIBED = RunDescription()

# Two-sided 95% critical values of Student's t from printed tables.
T_TABLE = {
    1: 12.706,
    2: 4.303,
    3: 3.182,
    4: 2.776,
    5: 2.571,
    6: 2.447,
    9: 2.262,
    10: 2.228,
    19: 2.093,
    29: 2.045,
    30: 2.042,
    60: 2.000,
    120: 1.980,
}


@pytest.mark.parametrize(("df", "expected"), sorted(T_TABLE.items()))
def test_t_critical_matches_table(df, expected):
    assert t_critical(df) == pytest.approx(expected, abs=6e-4)


def test_t_quantile_other_levels_and_limits():
    assert t_quantile(0.995, 5) == pytest.approx(4.032, abs=1e-3)
    assert t_quantile(0.9, 10) == pytest.approx(1.372, abs=1e-3)
    assert t_quantile(0.9995, 1) == pytest.approx(636.62, abs=0.01)
    assert t_quantile(0.05, 7) == pytest.approx(-1.895, abs=1e-3)
    assert t_quantile(0.5, 3) == 0.0
    assert t_critical(1e7) == pytest.approx(1.959964, abs=1e-5)  # the normal limit
    # fractional df (Welch) lies between its integer neighbours
    assert t_critical(2) > t_critical(2.5) > t_critical(3)


def test_t_cdf_and_betainc():
    assert t_cdf(0.0, 4) == pytest.approx(0.5)
    assert t_cdf(1.0, 1) == pytest.approx(0.75)  # Cauchy: 1/2 + atan(1)/pi
    assert betainc(1.0, 1.0, 0.3) == pytest.approx(0.3)
    assert betainc(2.0, 3.0, 0.4) == pytest.approx(0.5248)  # by hand: 1 - Σ binomial terms
    with pytest.raises(ValueError):
        t_quantile(1.5, 3)


def test_summarize_by_hand():
    s = summarize([10.0, 12.0, 14.0])
    assert (s.n, s.mean, s.median, s.stdev) == (3, 12.0, 12.0, 2.0)
    assert s.cv == pytest.approx(2.0 / 12.0)
    # t(0.975, 2) * 2 / sqrt(3) = 4.3027 * 1.1547
    assert s.ci_half == pytest.approx(4.302653 * 2.0 / math.sqrt(3), rel=1e-6)
    assert s.ci_low == pytest.approx(12.0 - s.ci_half)
    assert s.noisy  # CV 16.7% > 10%
    quiet = summarize([100.0, 101.0, 99.0, 100.0])
    assert not quiet.noisy and quiet.median == 100.0


def test_summarize_small_samples_have_no_spread():
    assert summarize([]).mean is None
    one = summarize([5.0])
    assert one.mean == 5.0 and one.stdev is None and one.ci_half is None and one.cv is None


def test_welch_df():
    # equal variances and df: 2*df
    assert welch_df([1.0, 1.0], [4, 4]) == pytest.approx(8.0)
    assert welch_df([1.0], [0]) is None


def _row(platform, value, rep, metric="ops", hib=1, valid=1, labels=None, cell=None, **kw):
    return {
        "platform": platform,
        "suite": kw.get("suite", "cpu"),
        "test_case": kw.get("test_case", "t1"),
        "scenario": "solo",
        "role": "target",
        "metric": metric,
        "value": value,
        "unit": "u",
        "higher_is_better": hib,
        "repetition": rep,
        "valid": valid,
        "invalid_reason": None if valid else "saturated",
        "labels": labels or {},
        "cell_id": cell or f"{platform}/{rep}",
    }


def test_groups_exclude_invalid_but_count_them():
    rows = [_row("native", v, i) for i, v in enumerate([10.0, 12.0, 14.0])]
    rows.append(_row("native", 999.0, 3, valid=0))
    (g,) = groups_mod.build(
        rows, RunDescription((MetricInfo("cpu", "t1", "ops", "u", True, True),))
    )
    assert g.summary.n == 3 and g.summary.mean == 12.0
    assert g.n_invalid == 1 and g.invalid[0].reason == "saturated"
    assert g.primary


def test_groups_split_by_dimension_labels():
    rows = []
    for rep in range(2):
        for bs in (4096, 65536):
            # 'threads' is constant: it must not split; block_size_bytes varies in a cell
            rows.append(
                _row("native", bs / 1000 + rep, rep, labels={"block_size_bytes": bs, "threads": 1})
            )
    gs = groups_mod.build(rows, UNDESCRIBED)
    assert [g.key.dims for g in gs] == [
        (("block_size_bytes", 4096),),
        (("block_size_bytes", 65536),),
    ]
    assert all(g.summary.n == 2 for g in gs)


def test_ratio_orientation_and_overhead():
    hib = groups_mod.build(
        [_row("native", v, i) for i, v in enumerate([100.0, 100.0])]
        + [_row("vm", v, i) for i, v in enumerate([90.0, 90.0])],
        UNDESCRIBED,
    )
    comps = against_baseline(hib, "native")
    vm = next(c for k, c in comps.items() if k.platform == "vm")
    assert vm.ratio == pytest.approx(0.9)
    assert vm.overhead_pct == pytest.approx(10.0)
    assert comps[hib[0].key].ratio == 1.0  # baseline vs itself
    lib = groups_mod.build(
        [_row("native", v, i, hib=0) for i, v in enumerate([100.0, 100.0])]
        + [_row("vm", v, i, hib=0) for i, v in enumerate([110.0, 110.0])],
        UNDESCRIBED,
    )
    vm = next(c for k, c in against_baseline(lib, "native").items() if k.platform == "vm")
    assert vm.ratio == pytest.approx(100 / 110)  # < 1: worse
    assert vm.overhead_pct == pytest.approx(10.0)
    assert overhead_from_ratio(1.0, True) == 0.0


def test_ratio_ci_paired_over_rounds():
    gs = groups_mod.build(
        [_row("native", v, i) for i, v in enumerate([98.0, 100.0, 102.0])]
        + [_row("vm", v, i) for i, v in enumerate([88.0, 90.0, 92.0])],
        UNDESCRIBED,
    )
    base, vm = gs
    c = compare(vm, base)
    d = [math.log(88 / 98), math.log(90 / 100), math.log(92 / 102)]
    sd = statistics.stdev(d)
    assert c.estimate.paired and c.estimate.n == 3
    assert c.ratio == pytest.approx(90 / 100)  # the ratio of the means the table shows
    half = t_critical(2) * sd / math.sqrt(3)
    assert math.log(c.ratio_high / c.ratio) == pytest.approx(half)
    lo, hi = c.overhead_range
    assert lo < c.overhead_pct < hi


def test_constant_declared_dimensions_do_not_show_and_scoped_ones_apply():
    described = RunDescription(
        labels=(LabelRole(ALL_TEST_CASES, "direct", DIMENSION), LabelRole("t1", "mode", DIMENSION))
    )
    rows = [_row("native", 1.0, r, labels={"direct": 1, "mode": m}) for r in (0, 1) for m in "ab"]
    for r in rows:
        r["cell_id"] = f"c{r['repetition']}{r['labels']['mode']}"  # one sample per cell
    gs = groups_mod.build(rows, described)
    # 'direct' is declared globally but constant: no split; 'mode' is scoped to t1
    assert [g.key.dims for g in gs] == [(("mode", "a"),), (("mode", "b"),)]
    other = [dict(r, test_case="t2") for r in rows]
    assert len(groups_mod.build(other, described)) == 1  # the scope does not leak
