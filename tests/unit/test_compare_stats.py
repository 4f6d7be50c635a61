"""analysis/compare.py on small, hand-checked cases."""

from __future__ import annotations

import random

import pytest

from virtbench.analysis import compare as cmp
from virtbench.analysis.groups import Group, GroupKey
from virtbench.analysis.stats import summarize


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


def judge(a, b, settings=cmp.Settings(), paired=False):
    (o,) = cmp.judge_all([(a, b)], settings, paired)
    return o


def test_identical_samples_are_same():
    o = judge(group([100, 101, 99, 100]), group([100, 101, 99, 100]))
    assert o.verdict == cmp.SAME
    assert judge(group([7, 7, 7]), group([7, 7, 7])).verdict == cmp.SAME


def test_clearly_separated_higher_is_better():
    a, b = group([100, 101, 99, 100, 100.5]), group([110, 111, 109, 110, 110.5])
    o = judge(a, b)
    assert o.verdict == cmp.FASTER and o.p < 0.05
    assert o.ratio == pytest.approx(1.0998, abs=1e-3)
    assert judge(b, a).verdict == cmp.SLOWER


def test_lower_is_better_direction():
    a = group([50, 51, 49, 50, 50.5], hib=False, unit="us")
    b = group([40, 41, 39, 40, 40.5], hib=False, unit="us")
    o = judge(a, b)  # B's latency is lower: faster
    assert o.verdict == cmp.FASTER and o.ratio < 1  # the ratio is shown raw: B/A
    assert judge(b, a).verdict == cmp.SLOWER


def test_too_few_samples_is_undecided():
    o = judge(group([100]), group([200, 201, 202]))
    assert o.verdict == cmp.UNDECIDED and "too few" in o.reason


def test_threshold_decides_a_small_real_change():
    a = group([100.0, 100.01, 99.99, 100.0, 100.005])
    b = group([101.0, 101.01, 100.99, 101.0, 101.005])  # +1%, tiny noise
    assert judge(a, b).verdict == cmp.SAME  # CI within ±2%
    assert judge(a, b, cmp.Settings(threshold=0.005)).verdict == cmp.FASTER


def test_ci_straddling_the_floor_is_undecided():
    a = group([100, 100.2, 99.8, 100.1, 99.9])
    b = group([101, 103.5, 102, 100.5, 103])  # about +2%: the CI reaches both sides of 2%
    o = judge(a, b)
    assert o.verdict == cmp.UNDECIDED and "not shown beyond" in o.reason


def test_noise_does_not_call_a_change_smaller_than_the_noise():
    rng = random.Random(1)
    a = group([rng.gauss(100, 10) for _ in range(8)])
    b = group([rng.gauss(103, 10) for _ in range(8)])
    assert judge(a, b).verdict == cmp.UNDECIDED


def test_one_run_pairs_rounds_two_runs_do_not():
    a = group([1000, 1002, 700, 998, 1001])  # round 3 disturbed on both sides
    b = group([950, 952, 665, 948, 951])
    for g in (a, b):
        g.repetitions = [1, 2, 3, 4, 5]
    assert judge(a, b, paired=True).verdict == cmp.SLOWER
    o = judge(a, b, paired=False)
    assert o.verdict == cmp.UNDECIDED and "Welch" in o.method


def test_holm_over_the_compared_test_cases():
    a1, b1 = group([100, 100, 100.1], test_case="t1"), group([104, 106, 105], test_case="t1")
    alone = judge(a1, b1, paired=True)
    assert alone.verdict == cmp.FASTER
    noise = [
        (group([100, 101, 99], test_case=f"n{i}"), group([100, 99, 101], test_case=f"n{i}"))
        for i in range(15)
    ]
    outcomes = cmp.judge_all([(a1, b1), *noise], paired=True)
    assert outcomes[0].p_holm > alone.p and outcomes[0].verdict == cmp.UNDECIDED


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
