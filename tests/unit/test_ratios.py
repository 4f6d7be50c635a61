"""One ratio method (analysis/ratios.py): paired over rounds, Welch across runs, one verdict
vocabulary, Holm over a family, and suite scores whose interval comes from the rounds."""

from __future__ import annotations

import math

import pytest

from virtbench.analysis import ratios
from virtbench.analysis.groups import Group, GroupKey
from virtbench.analysis.normalize import against_baseline
from virtbench.analysis.ratios import FASTER, SAME, SLOWER, UNDECIDED, Ratio
from virtbench.analysis.scores import geomeans
from virtbench.analysis.stats import summarize


def rounds(*values: float) -> dict[int, float]:
    return dict(enumerate(values, 1))


def group(platform: str, tc: str, values: list[float], suite: str = "cpu") -> Group:
    g = Group(GroupKey(platform, suite, tc, "solo", "target", "m"), "x/s", True, True)
    g.values = list(values)
    g.repetitions = list(range(1, len(values) + 1))
    g.summary = summarize(g.values)
    return g


def test_a_burst_in_one_round_shifts_both_sides_and_the_paired_ratio_stays_decided():
    # round 3 was disturbed: both platforms lost 30% in it; the platform costs 5% throughout
    base = rounds(1000, 1002, 700, 998, 1001)
    x = rounds(950, 952, 665, 948, 951)
    paired = ratios.ratio(x, base, paired=True)
    unpaired = ratios.ratio(x, base, paired=False)
    assert paired.paired and paired.n == 5
    assert paired.value == pytest.approx(0.95, abs=1e-3)
    assert paired.high < 0.96  # the burst cancels within its round
    assert unpaired.low < 0.8 and unpaired.high > 1.1  # unpaired, it swamps the 5%
    assert ratios.judge(paired).outcome == SLOWER
    assert ratios.judge(unpaired).outcome == UNDECIDED


def test_a_burst_that_hits_one_side_of_one_round_widens_the_interval():
    # A/A: the same platform twice, a burst in round 2 on one side only
    base = rounds(1000, 1001, 999, 1000, 1002)
    twin = rounds(1001, 700, 1000, 999, 1001)
    r = ratios.ratio(twin, base, paired=True)
    v = ratios.judge(r)
    assert v.outcome == UNDECIDED and r.low < 0.8 and r.high > 1.0


def test_same_when_the_interval_lies_within_the_floor():
    r = ratios.ratio(rounds(1000, 1003, 998, 1001), rounds(1001, 1002, 999, 1000), True)
    assert ratios.judge(r).outcome == SAME
    assert ratios.judge(r, floor=0.0001).outcome == UNDECIDED  # a tiny floor: not shown same


def test_faster_needs_the_whole_interval_beyond_the_floor():
    r = ratios.ratio(rounds(1100, 1102, 1098, 1101), rounds(1000, 1001, 999, 1000), True)
    assert ratios.judge(r).outcome == FASTER
    assert ratios.judge(r, floor=0.2).outcome == SAME  # +10% inside a 20% floor
    # +3% with a CI reaching inside the 2% floor: a change, but not called
    r = ratios.ratio(rounds(1030, 1045, 1015, 1030), rounds(1000, 1000, 1000, 1000), True)
    assert r.low < 1.02 < r.value
    assert ratios.judge(r).outcome == UNDECIDED


def test_lower_is_better_is_inverted_before_judging():
    r = ratios.ratio(rounds(11, 11.1, 10.9), rounds(10, 10.05, 9.95), True)  # latency up 10%
    o = r.oriented(higher_is_better=False)
    assert o.value == pytest.approx(1 / r.value) and o.low == pytest.approx(1 / r.high)
    assert ratios.judge(o).outcome == SLOWER


def test_too_few_rounds_have_no_interval():
    r = ratios.ratio(rounds(5.0), rounds(4.0, 4.1), True)
    assert r.low is None and not r.paired
    assert "too few" in ratios.judge(r).reason


def test_no_ratio_of_a_non_positive_mean():
    assert ratios.ratio(rounds(0.0, 1.0), rounds(1.0, 1.0), True) is None


def test_across_runs_rounds_do_not_pair_and_welch_is_used():
    r = ratios.ratio(rounds(10, 11, 12), rounds(10, 11, 12, 13), paired=False)
    assert not r.paired and r.df is not None and r.df < 5


def test_holm_step_down():
    assert ratios.holm([0.01, 0.04, None, 0.03]) == pytest.approx([0.03, 0.06, None, 0.06])
    assert ratios.holm([]) == []


def test_holm_turns_one_lucky_case_of_many_undecided():
    # one of 16 A/A test cases: p just under 0.05 alone
    r = ratios.ratio(rounds(1040, 1060, 1050), rounds(1000, 1000, 1001), True)
    assert r.p < 0.05
    assert ratios.judge(r, floor=0.01).outcome == FASTER
    adjusted = ratios.holm([r.p] + [0.9] * 15)[0]
    assert ratios.judge(r, floor=0.01, p_adjusted=adjusted).outcome == UNDECIDED


def test_suite_score_interval_comes_from_the_rounds():
    """Two test cases hit by the same round's burst on the container side only: summing
    their variances as independent made the score 'decided' (issue 36); per round, the
    burst is one bad round and the score is undecided."""
    base = {"a": [1000, 1000, 1001, 999, 1000], "b": [500, 501, 500, 499, 500]}
    cont = {"a": [1000, 1001, 700, 999, 1000], "b": [500, 500, 350, 500, 501]}
    gs = [group("native", tc, v) for tc, v in base.items()]
    gs += [group("crun", tc, v) for tc, v in cont.items()]
    comps = against_baseline(gs, "native")
    (score,) = [g for g in geomeans(gs, comps, "native") if g.suite == "cpu"]
    assert score.low < 0.9 and score.high > 1.0
    assert score.decision == UNDECIDED


def test_suite_score_of_a_real_cost_is_decided():
    base = {"a": [1000, 1002, 998, 1001], "b": [500, 501, 499, 500]}
    cont = {"a": [900, 903, 897, 901], "b": [450, 451, 449, 450]}
    gs = [group("native", tc, v) for tc, v in base.items()]
    gs += [group("crun", tc, v) for tc, v in cont.items()]
    comps = against_baseline(gs, "native")
    (score,) = geomeans(gs, comps, "native")
    assert score.value == pytest.approx(0.9, abs=1e-3) and score.decision == SLOWER
    assert score.verdict.floor == pytest.approx(0.02)


def test_weighted_without_shared_rounds_adds_half_widths():
    a = Ratio(1.0, 0.9, 1.1, 0.5, 3, False, n_x=3, n_b=3)
    b = Ratio(1.0, 0.8, 1.25, 0.5, 3, False, n_x=3, n_b=3)
    est, note = ratios.weighted([(0.5, a), (0.5, b)])
    half = 0.5 * math.log(1.1 / 0.9) / 2 + 0.5 * math.log(1.25 / 0.8) / 2
    assert est.high == pytest.approx(math.exp(half)) and "correlation" in note


def test_a_score_no_test_case_supports_is_undecided():
    """A memory score 'slower' over every round while each test case alone is undecided
    (measured: bench/verdict_fpr.py seed 1, crun memory 0.941 [0.920-0.962], all of its six
    test cases undecided, on a host with bursts): not called."""
    swing = [0.1, -0.1, 0.12, -0.12, 0.01]  # each round: one case up, the other down
    base = {"a": [1000.0] * 5, "b": [500.0] * 5}
    cont = {
        "a": [1000 * math.exp(-0.06 + x) for x in swing],
        "b": [500 * math.exp(-0.06 - x + 0.005 * i) for i, x in enumerate(swing)],
    }
    gs = [group("native", tc, v, suite="memory") for tc, v in base.items()]
    gs += [group("crun", tc, v, suite="memory") for tc, v in cont.items()]
    comps = against_baseline(gs, "native")
    assert {c.decision for k, c in comps.items() if k.platform == "crun"} == {UNDECIDED}
    (score,) = geomeans(gs, comps, "native")
    assert score.high < 0.98  # every round below 1: the interval alone would say slower
    assert score.decision == UNDECIDED and "no test case" in score.verdict.reason
