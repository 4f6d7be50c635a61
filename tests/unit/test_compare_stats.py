"""analysis/compare.py on small, hand-checked cases."""

from __future__ import annotations

import random

import pytest

from virtbench.analysis import compare as cmp
from virtbench.analysis.groups import Group, GroupKey
from virtbench.analysis.stats import summarize, t_critical


def group(values, platform="p", hib=True, unit="events/s", metric="m", primary=True, **key):
    k = {"suite": "cpu", "test_case": "t", "scenario": "solo", "role": "target"} | key
    g = Group(
        GroupKey(platform, k["suite"], k["test_case"], k["scenario"], k["role"], metric),
        unit,
        hib,
        primary,
    )
    g.values = [float(v) for v in values]
    g.summary = summarize(g.values)
    return g


def test_exact_permutation_p_for_3_vs_3_is_the_hand_count():
    # 20 ways to split {1..6} into two threes; |mean diff| = |21 - 2·sum(A)| / 3
    # fully separated: only {1,2,3} and its mirror {4,5,6} are as extreme -> 2/20
    r = cmp.permutation_test([1, 2, 3], [4, 5, 6])
    assert r.exact and r.p == pytest.approx(2 / 20) and r.min_p == pytest.approx(0.1)
    # observed sum(A) = 7: as extreme are sums <= 7 or >= 14: {1,2,3} {1,2,4} {3,5,6} {4,5,6}
    r = cmp.permutation_test([1, 2, 4], [3, 5, 6])
    assert r.p == pytest.approx(4 / 20)


def test_permutation_identical_and_monte_carlo():
    assert cmp.permutation_test([5, 5, 5], [5, 5, 5]).p == 1.0
    a, b = list(range(10)), list(range(100, 110))  # C(20,10) > 10000 splits: Monte Carlo
    r = cmp.permutation_test(a, b)
    assert not r.exact and r.p == pytest.approx(1 / 10001)
    overlap = cmp.permutation_test(list(range(10)), [x + 2.5 for x in range(10)], seed=7)
    assert overlap == cmp.permutation_test(list(range(10)), [x + 2.5 for x in range(10)], seed=7)
    assert 0.01 < overlap.p < 0.2


def test_mann_whitney_u_and_ties():
    u, r = cmp.mann_whitney([1, 2, 3], [4, 5, 6])
    assert u == 0 and r.p == pytest.approx(0.1)
    assert cmp.midranks([10, 20, 20, 30]) == [1, 2.5, 2.5, 4]
    u, _ = cmp.mann_whitney([20, 30], [10, 20])  # pairs A > B: 20>10, 30>10, 30>20; 20=20 half
    assert u == 3.5


def test_fieller_bounds_solve_its_equation():
    a, b = summarize([9, 10, 11]), summarize([18, 20, 22])
    low, high = cmp.fieller(a, b)
    assert low < 2.0 < high
    va, vb = a.stdev**2 / a.n, b.stdev**2 / b.n
    t2 = t_critical(4) ** 2  # Welch df of [vb, 2²·va] = [4/3, 4/3] with 2 and 2 df: 4
    for r in (low, high):
        assert (b.mean - r * a.mean) ** 2 == pytest.approx(t2 * (vb + r * r * va))
    assert cmp.fieller(summarize([0.1, 5, 9.9]), b) is None  # A's mean not told from 0


def test_identical_samples_are_same():
    o = cmp.judge(group([100, 101, 99, 100]), group([100, 101, 99, 100]))
    assert o.verdict == cmp.SAME
    assert cmp.judge(group([7, 7, 7]), group([7, 7, 7])).verdict == cmp.SAME


def test_clearly_separated_higher_is_better():
    a, b = group([100, 101, 99, 100, 100.5]), group([110, 111, 109, 110, 110.5])
    o = cmp.judge(a, b)
    assert o.verdict == cmp.FASTER and o.permutation.p < 0.05
    assert o.ratio == pytest.approx(1.0998, abs=1e-3)
    assert cmp.judge(b, a).verdict == cmp.SLOWER


def test_lower_is_better_direction_and_mann_whitney():
    a = group([50, 51, 49, 50, 50.5], hib=False, unit="us")
    b = group([40, 41, 39, 40, 40.5], hib=False, unit="us")
    o = cmp.judge(a, b)  # B's latency is lower: faster
    assert o.verdict == cmp.FASTER and o.mann_whitney_p is not None and o.mann_whitney_p < 0.05
    assert cmp.judge(b, a).verdict == cmp.SLOWER
    # lower-is-better but not a time: no Mann-Whitney
    o = cmp.judge(group([5, 6, 5], hib=False, unit="%"), group([5, 6, 5], hib=False, unit="%"))
    assert o.mann_whitney_p is None


def test_too_few_samples_is_ambiguous():
    o = cmp.judge(group([100, 101]), group([200, 201, 202]))
    assert o.verdict == cmp.AMBIGUOUS and "too few" in o.reason


def test_3_vs_3_cannot_be_significant():
    o = cmp.judge(group([100, 101, 99]), group([120, 121, 119]))
    assert o.verdict == cmp.AMBIGUOUS and "cannot go below p=0.1" in o.reason


def test_threshold_decides_a_small_real_change():
    a = group([100.0, 100.01, 99.99, 100.0, 100.005])
    b = group([101.0, 101.01, 100.99, 101.0, 101.005])  # +1%, tiny noise
    assert cmp.judge(a, b).verdict == cmp.SAME  # CI within ±2%
    assert cmp.judge(a, b, cmp.Settings(threshold=0.005)).verdict == cmp.FASTER


def test_ci_straddling_the_floor_is_ambiguous():
    a = group([100, 100.2, 99.8, 100.1, 99.9])
    b = group([101, 103.5, 102, 100.5, 103])  # about +2%: the CI reaches both sides of 2%
    o = cmp.judge(a, b)
    assert o.verdict == cmp.AMBIGUOUS and "reaches" in o.reason


def test_noise_floor_does_not_call_a_change_smaller_than_the_noise():
    rng = random.Random(1)
    a = group([rng.gauss(100, 10) for _ in range(60)])
    b = group([rng.gauss(105, 10) for _ in range(60)])
    o = cmp.judge(a, b)
    assert o.floor > 0.08  # the pooled CV, not the 2% threshold
    assert o.verdict not in (cmp.FASTER, cmp.SLOWER)


def test_pair_matches_primary_target_groups_and_skips_solo_peaks():
    a = [
        group([1, 2, 3], platform="native"),
        group([1, 2, 3], platform="native", metric="other", primary=False),
        group([1, 2, 3], platform="native", role="client"),
        group([1, 2, 3], platform="native", scenario="solo-peak"),
        group([1, 2, 3], platform="native", test_case="only-a"),
    ]
    b = [group([1, 2, 3], platform="container"), group([1, 2, 3], platform="native")]
    p = cmp.pair(a, b, "native", "container")
    assert [(x.key.platform, y.key.platform) for x, y in p.pairs] == [("native", "container")]
    assert [g.key.test_case for g in p.only_a] == ["only-a"]
    same = cmp.pair(a, b)  # by platform name
    assert [(x.key.platform, y.key.platform) for x, y in same.pairs] == [("native", "native")]
    assert [g.key.platform for g in same.only_b] == ["container"]
    assert len(cmp.pair(a, b, "native", "container", all_metrics=True).pairs) == 1


def _run_groups(sizes_values: dict[int, list[float]]):
    """One run's groups of test case t (file_size_kb declared a dimension), one cell per
    sample, as groups.build makes them from stored rows."""
    from virtbench.analysis import groups as groups_mod
    from virtbench.store.description import DIMENSION, LabelRole, MetricInfo, RunDescription

    described = RunDescription(
        (MetricInfo("web", "t", "req_per_s", "req/s", True, True),),
        (LabelRole("t", "file_size_kb", DIMENSION),),
    )
    rows = [
        {
            "platform": "native",
            "suite": "web",
            "test_case": "t",
            "scenario": "solo",
            "role": "target",
            "metric": "req_per_s",
            "value": v,
            "unit": "req/s",
            "higher_is_better": 1,
            "repetition": rep,
            "valid": 1,
            "labels": {"file_size_kb": kb},
            "cell_id": f"{kb}/{rep}",
        }
        for kb, values in sizes_values.items()
        for rep, v in enumerate(values, 1)
    ]
    return groups_mod.build(rows, described)


def test_runs_at_two_values_of_a_constant_dimension_are_not_paired():
    # A served 1 KB files, B 50 KB: in each run the size is constant, so it is no part of
    # the groups' dims, but the two are different tests, not B "slower" than A
    a = _run_groups({1: [10_000.0, 10_100.0, 9_900.0, 10_050.0]})
    b = _run_groups({50: [1_000.0, 1_010.0, 990.0, 1_005.0]})
    outcomes, pairing = cmp.compare_groups(a, b)
    assert outcomes == []
    assert len(pairing.only_a) == 1 and len(pairing.only_b) == 1


def test_a_constant_dimension_pairs_with_the_same_value_swept_in_the_other_run():
    a = _run_groups({1: [100.0, 101.0, 99.0], 50: [10.0, 10.1, 9.9]})  # dims file_size_kb
    b = _run_groups({50: [10.0, 10.1, 9.9]})  # constant: no dims
    outcomes, pairing = cmp.compare_groups(a, b)
    assert [dict(o.dims) for o in outcomes] == [{"file_size_kb": 50}]
    assert [o.b.mean for o in outcomes] == [pytest.approx(10.0)]
    assert [dict(g.key.dims) for g in pairing.only_a] == [{"file_size_kb": 1}]


def test_a_run_stored_before_a_dimension_label_existed_still_pairs():
    new = _run_groups({50: [10.0, 10.1, 9.9]})  # carries file_size_kb (constant)
    old = _run_groups({50: [10.0, 10.1, 9.9]})
    for g in old:  # as stored by a version that did not label the size yet
        g.labels.pop("file_size_kb")
    outcomes, _ = cmp.compare_groups(old, new)
    assert len(outcomes) == 1
