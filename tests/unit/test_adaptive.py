"""Adaptive repetitions (issue 13 item 1): the stopping rule over sample lists, the campaign
keys, the extra rounds' order, and a run driven by a fake cell runner (stop reasons stored,
invalid samples not counted, resume continues)."""

from __future__ import annotations

import pytest
from click.testing import CliRunner

from virtbench.campaign import expand, loader, rounds
from virtbench.campaign.model import Adaptive
from virtbench.cli import cli
from virtbench.errors import CampaignError
from virtbench.results import Sample
from virtbench.runner import adaptive, locks
from virtbench.runner import run as runner_run
from virtbench.runner.cell import Outcome

PLAN = Adaptive(precision_pct=1.0, min_repetitions=3, max_repetitions=10, budget_s=100.0)
TIGHT = [100.0, 100.2, 99.9, 100.1]  # ±0.2%
LOOSE = [90.0, 110.0, 95.0, 105.0]  # ±10%


# --- the rule -------------------------------------------------------------------------------
def test_precision_is_the_student_t_half_width_in_percent_of_the_mean():
    # n = 3, mean 100, stdev 1: t(0.975, 2) = 4.303 -> 4.303 / sqrt(3) = 2.484 %
    assert adaptive.precision_pct([99.0, 100.0, 101.0]) == pytest.approx(2.4841, abs=1e-3)
    assert adaptive.precision_pct([5.0]) is None  # one sample: no CI
    assert adaptive.precision_pct([]) is None
    assert adaptive.precision_pct([7.0, 7.0, 7.0]) == 0.0
    assert adaptive.precision_pct([-1.0, 1.0]) is None  # mean 0: no relative precision


def test_stops_when_every_group_is_precise():
    d = adaptive.decide(PLAN, "t", 4, {"a solo": TIGHT, "b solo": TIGHT}, 10.0)
    assert d.reason == adaptive.PRECISION and d.stopped
    assert "precision reached" in d.text(PLAN)


def test_goes_on_while_one_group_is_not_precise_and_names_it():
    d = adaptive.decide(PLAN, "t", 4, {"a solo": TIGHT, "b solo": LOOSE}, 10.0)
    assert d.reason is None and d.worst == "b solo"
    assert d.needed is not None and d.needed > 4
    assert "one more round" in d.text(PLAN) and "b solo" in d.text(PLAN)


def test_never_stops_before_the_minimum():
    d = adaptive.decide(PLAN, "t", 2, {"a solo": [100.0, 100.0]}, 1.0)
    assert d.reason is None


def test_max_repetitions_caps_and_says_what_precision_would_need():
    d = adaptive.decide(PLAN, "t", 10, {"a solo": LOOSE}, 10.0)
    assert d.reason == adaptive.MAX_REPETITIONS
    text = d.text(PLAN)
    assert "max_repetitions (10)" in text and "needs about" in text


def test_budget_stops_before_a_round_that_would_exceed_it():
    # 4 rounds took 80 s: a fifth (20 s) would reach 100 s -> still within
    assert adaptive.decide(PLAN, "t", 4, {"a": LOOSE}, 80.0).reason is None
    # 4 rounds took 81 s: a fifth would take it past 100 s
    d = adaptive.decide(PLAN, "t", 4, {"a": LOOSE}, 81.0)
    assert d.reason == adaptive.BUDGET and "budget_s (100 s)" in d.text(PLAN)


def test_precision_wins_over_a_cap_reached_at_the_same_time():
    assert adaptive.decide(PLAN, "t", 10, {"a": TIGHT}, 1000.0).reason == adaptive.PRECISION


def test_a_group_without_valid_samples_is_never_precise():
    d = adaptive.decide(PLAN, "t", 3, {"a solo": TIGHT, "b solo": []}, 1.0)
    assert d.reason is None and d.worst == "b solo" and d.worst_pct is None


def test_forecast_of_repetitions_needed():
    assert adaptive.repetitions_needed([7.0, 7.0], 1.0) == 2
    n = adaptive.repetitions_needed(LOOSE, 1.0)
    assert n is not None and adaptive.precision_pct(LOOSE * (n // 4 + 1)) < 1.5


# --- campaign keys --------------------------------------------------------------------------
SUITE = '[suites.cpu]\ntest_cases = ["sysbench-cpu-1t"]\n'


def parse(campaign: str):
    return loader.parse("[campaign]\n" + campaign + "\n" + SUITE, "c.toml")


def test_auto_with_defaults_and_with_keys():
    s = parse('repetitions = "auto"').settings
    assert s.adaptive == Adaptive() and s.repetitions == Adaptive().min_repetitions
    s = parse(
        'repetitions = "auto"\nprecision_pct = 0.5\nmin_repetitions = 4\n'
        "max_repetitions = 12\nbudget_s = 90"
    ).settings
    assert s.adaptive == Adaptive(0.5, 4, 12, 90.0) and s.repetitions == 4
    assert parse("repetitions = 5").settings.adaptive is None


@pytest.mark.parametrize(
    ("campaign", "key", "fragment"),
    [
        ('repetitions = "often"', "campaign.repetitions", '"auto"'),
        ("precision_pct = 1.0", "campaign.precision_pct", 'only with repetitions = "auto"'),
        ('repetitions = "auto"\nprecision_pct = 0', "campaign.precision_pct", "> 0"),
        ('repetitions = "auto"\nprecision_pct = nan', "campaign.precision_pct", "> 0"),
        ('repetitions = "auto"\nprecision_pct = "1"', "campaign.precision_pct", "a number"),
        ('repetitions = "auto"\nmin_repetitions = 1', "campaign.min_repetitions", "between 2"),
        (
            'repetitions = "auto"\nmin_repetitions = 5\nmax_repetitions = 4',
            "campaign.max_repetitions",
            ">= min_repetitions (5)",
        ),
        ('repetitions = "auto"\nbudget_s = -1', "campaign.budget_s", "> 0"),
        ('repetitions = "auto"\nbudget_s = inf', "campaign.budget_s", "> 0"),
    ],
)
def test_bad_adaptive_keys_name_file_and_key(campaign, key, fragment):
    with pytest.raises(CampaignError) as err:
        parse(campaign)
    msg = str(err.value)
    assert msg.startswith(f"c.toml: key '{key}'") and fragment in msg, msg


def test_min_above_the_default_maximum_raises_the_maximum():
    assert parse('repetitions = "auto"\nmin_repetitions = 40').settings.adaptive == Adaptive(
        1.0, 40, 40, 600.0
    )


# --- extra rounds ---------------------------------------------------------------------------
TWO = """
[campaign]
repetitions = "auto"
order = "{order}"
warmup = 0

[[platforms]]
name = "a"
type = "native"

[[platforms]]
name = "b"
type = "native"

[suites.cpu]
test_cases = ["sysbench-cpu-1t", "sysbench-cpu-all"]
"""


@pytest.mark.parametrize("order", ["sequential", "random", "interleaved"])
def test_an_extra_round_visits_every_platform_in_turn_numbered_after_the_run(order):
    c = loader.parse(TWO.format(order=order), "c.toml")
    cells = expand.extra_round(c, {"sysbench-cpu-all": 4}, 17, seed=3)
    assert [(x.seq, x.platform.name, x.test_case, x.repetition) for x in cells] == [
        (17, "a", "sysbench-cpu-all", 4),
        (18, "b", "sysbench-cpu-all", 4),
    ]
    both = expand.extra_round(c, {"sysbench-cpu-1t": 4, "sysbench-cpu-all": 4}, 0, seed=3)
    assert [x.platform.name for x in both] == ["a", "a", "b", "b"]


# --- a run with a fake cell runner ----------------------------------------------------------
@pytest.fixture
def fake_run(tmp_path, monkeypatch):
    """A Runner whose cells 'measure' values(platform, test case, repetition) -> value
    (None: an invalid sample) without running anything."""
    monkeypatch.setattr(locks, "HOST_RUNS_DIR", tmp_path / "host-runs")
    monkeypatch.setattr(runner_run.Runner, "_preflight", lambda *a: None)
    ran: list[tuple[str, str, int]] = []

    def install(values, stop_after: int | None = None):
        def run_cells(self, run_id, campaign, all_cells, todo):
            for cell in todo:
                if stop_after is not None and len(ran) >= stop_after:
                    raise KeyboardInterrupt
                ran.append((cell.platform.name, cell.test_case, cell.repetition))
                v = values(cell.platform.name, cell.test_case, cell.repetition)
                s = Sample("events_per_s", 1.0 if v is None else v, "events/s", True)
                if v is None:
                    s.labels["invalid"] = "load generator CPU saturated (test)"
                self.store.start_cell(f"{run_id}/{cell.seq:04d}")
                self._commit(run_id, cell, Outcome("ok", [s], [], None, 0.0), {})

        monkeypatch.setattr(runner_run.Runner, "_run_cells", run_cells)
        return ran

    return install


def _campaign(extra: str = "", order: str = "interleaved"):
    text = TWO.format(order=order).replace('test_cases = ["sysbench-cpu-1t", ', "test_cases = [")
    text = text.replace('repetitions = "auto"', 'repetitions = "auto"\n' + extra)
    return loader.parse(text, "c.toml")


def test_run_stops_on_precision_and_stores_why(tmp_path, fake_run):
    ran = fake_run(lambda p, tc, rep: 100.0 + 0.01 * rep)
    runner = runner_run.Runner(tmp_path / "res")
    run_id = runner.start(_campaign())
    assert len(ran) == 2 * 3  # the minimum, then precise
    (stop,) = runner.store.run_stops(run_id)
    assert stop.reason == adaptive.PRECISION and stop.repetitions == 3
    assert runner.store.run(run_id)["status"] == "finished"


def test_noisy_platform_gets_rounds_until_the_cap_and_rounds_alternate(tmp_path, fake_run):
    noisy = {1: 80.0, 2: 120.0, 3: 90.0, 4: 110.0, 5: 85.0, 6: 115.0}
    ran = fake_run(lambda p, tc, rep: noisy[rep] if p == "b" else 100.0)
    runner = runner_run.Runner(tmp_path / "res")
    run_id = runner.start(_campaign("max_repetitions = 5"))
    # interleaved: every round visits both platforms, extra rounds too, in the round's order
    assert [r for _p, _tc, r in ran] == [r for r in range(1, 6) for _ in (1, 2)]
    assert all({p for p, _tc, r in ran if r == rep} == {"a", "b"} for rep in range(1, 6))
    seed = runner.store.run(run_id)["seed"]
    assert seed is not None  # recorded: the order of the extra rounds came from it
    for rep in range(1, 6):
        assert [p for p, _tc, r in ran if r == rep] == [
            s.name for s in rounds.platform_order(_campaign().platforms, seed, rep)
        ]
    (stop,) = runner.store.run_stops(run_id)
    assert stop.reason == adaptive.MAX_REPETITIONS and stop.worst_group == "b solo"
    seqs = [c.seq for c in runner.store.cells(run_id)]
    assert seqs == list(range(10))  # appended with new numbers
    out = CliRunner().invoke(cli, ["results", "--results-dir", str(tmp_path / "res")])
    assert "stopped at max_repetitions (5)" in out.stderr


def test_invalid_samples_do_not_count_toward_precision(tmp_path, fake_run):
    # platform b is precise in value but every sample is invalid: it never reaches the target
    fake_run(lambda p, tc, rep: None if p == "b" else 100.0)
    runner = runner_run.Runner(tmp_path / "res")
    run_id = runner.start(_campaign("max_repetitions = 4"))
    (stop,) = runner.store.run_stops(run_id)
    assert stop.reason == adaptive.MAX_REPETITIONS and stop.worst_group == "b solo"


def test_repetitions_auto_on_the_command_line_and_a_number_overrides(tmp_path, fake_run):
    ran = fake_run(lambda p, tc, rep: 100.0)
    fixed = loader.parse(TWO.format(order="sequential").replace('"auto"', "2"), "c.toml")
    runner = runner_run.Runner(tmp_path / "res")
    run_id = runner.start(fixed, "auto")
    assert {s.reason for s in runner.store.run_stops(run_id)} == {adaptive.PRECISION}
    ran.clear()
    run_id = runner.start(_campaign(), 2)
    assert len(ran) == 4 and runner.store.run_stops(run_id) == []


def test_resume_continues_an_adaptive_run(tmp_path, fake_run):
    noisy = {1: 80.0, 2: 120.0, 3: 90.0, 4: 110.0, 5: 85.0, 6: 115.0}
    values = lambda p, tc, rep: noisy[rep] if p == "b" else 100.0  # noqa: E731
    fake_run(values, stop_after=7)  # in the first extra round, after a's cell
    runner = runner_run.Runner(tmp_path / "res")
    run_id = runner.start(_campaign("max_repetitions = 5"))
    assert runner.store.run(run_id)["status"] == "interrupted"
    ran = fake_run(values)
    ran.clear()
    runner_run.Runner(tmp_path / "res").resume(run_id)
    # the rest of round 4, then round 5, each in the order the run's seed gives its round
    seed = runner.store.run(run_id)["seed"]
    order = {
        r: [s.name for s in rounds.platform_order(_campaign().platforms, seed, r)] for r in (4, 5)
    }
    assert ran == [(order[4][1], "sysbench-cpu-all", 4)] + [
        (p, "sysbench-cpu-all", 5) for p in order[5]
    ]
    (stop,) = runner.store.run_stops(run_id)
    assert stop.reason == adaptive.MAX_REPETITIONS and stop.repetitions == 5


def test_a_disturbed_round_does_not_stop_a_test_case_early(tmp_path, fake_run):
    # b's round 2 was disturbed (invalid): after 3 rounds it has 2 valid values, close enough
    # for a ±1% CI with n = 2; the plan asked for 3 measured repetitions, so a 4th round runs
    ran = fake_run(lambda p, tc, rep: None if (p, rep) == ("b", 2) else 100.0 + 0.01 * rep)
    runner = runner_run.Runner(tmp_path / "res")
    run_id = runner.start(_campaign())
    assert len(ran) == 2 * 4
    (stop,) = runner.store.run_stops(run_id)
    assert stop.reason == adaptive.PRECISION and stop.repetitions == 4
