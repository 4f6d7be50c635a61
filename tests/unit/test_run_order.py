"""Interleaved rounds in a randomized, balanced platform order (issue 36 item 2)."""

from __future__ import annotations

from collections import Counter

import pytest

from virtbench.campaign import expand, loader, rounds
from virtbench.runner import describe, locks
from virtbench.runner import run as runner_run
from virtbench.store.description import IGNORED

CAMPAIGN = """
[campaign]
repetitions = {reps}
order = "{order}"
{extra}
[[platforms]]
name = "a"
type = "native"
[[platforms]]
name = "b"
type = "native"
{more}
[suites.cpu]
test_cases = ["sysbench-cpu-1t", "sysbench-cpu-all"]
"""
THIRD = '[[platforms]]\nname = "c"\ntype = "native"\n'


def parse(reps=4, order="interleaved", extra="", more=""):
    text = CAMPAIGN.format(reps=reps, order=order, extra=extra, more=more)
    return loader.parse(text, "c.toml")


def firsts(cells):
    """repetition -> the platform that ran first in it."""
    out: dict[int, str] = {}
    for c in cells:
        out.setdefault(c.repetition, c.platform.name)
    return out


@pytest.mark.parametrize("more", ["", THIRD])
def test_every_platform_runs_first_equally_often(more):
    c = parse(reps=60, more=more)
    cells = expand.expand(c, seed=11)
    n = len(c.platforms)
    counts = Counter(firsts(cells).values())
    # balanced in blocks of n rounds: exactly 60 / n firsts each (the file's order had a: 60)
    assert counts == {p.name: 60 // n for p in c.platforms}
    # and every platform in every position equally often
    pos = Counter((x.platform.name, x.round_position) for x in cells if x.test_case.endswith("1t"))
    assert set(pos.values()) == {60 // n}


def test_the_order_changes_between_rounds_and_is_not_a_fixed_alternation():
    c = parse(reps=40)
    seq = [firsts(expand.expand(c, seed=s)) for s in (1, 2)]
    orders = ["".join(v for _, v in sorted(f.items())) for f in seq]
    assert all(o.count("a") == 20 for o in orders)
    assert orders[0] != orders[1]  # the seed decides
    assert orders[0] not in ("ab" * 20, "ba" * 20)


def test_same_seed_same_order_and_every_sample_knows_its_position():
    c = parse(reps=6)
    one = expand.expand(c, seed=5)
    two = expand.expand(parse(reps=6), seed=5)
    assert [(x.platform.name, x.test_case, x.repetition) for x in one] == [
        (x.platform.name, x.test_case, x.repetition) for x in two
    ]
    for x in one:  # a round is one platform's cells, then the other's
        first = firsts(one)[x.repetition]
        assert x.round_position == (1 if x.platform.name == first else 2)


def test_an_adaptive_extra_round_follows_the_same_rule():
    c = parse(reps=3)
    for rep in range(4, 12):
        cells = expand.extra_round(c, {"sysbench-cpu-1t": rep, "sysbench-cpu-all": rep}, 50, 9)
        want = [p.name for p in rounds.platform_order(c.platforms, 9, rep)]
        assert [x.platform.name for x in cells][::2] == want
        assert [x.round_position for x in cells] == [1, 1, 2, 2]
    got = [expand.extra_round(c, {"sysbench-cpu-1t": r}, 0, 9)[0].platform.name for r in (5, 6)]
    assert sorted(got) == ["a", "b"]  # a block of two rounds: each first once


def test_resume_rebuilds_the_same_order_and_positions():
    c = parse(reps=5)
    cells = expand.expand(c, seed=21)
    extra = expand.extra_round(c, {"sysbench-cpu-1t": 6}, len(cells), 21)
    stored = [
        (x.seq, x.platform.name, x.test_case, x.scenario, x.repetition) for x in cells + extra
    ]
    again = expand.rebuild(parse(reps=5), stored)
    assert [x.round_position for x in again] == [x.round_position for x in cells + extra]
    # a fixed run resumes from the expansion: same seed, same cells
    assert [x.key() for x in expand.expand(parse(reps=5), seed=21)] == [x.key() for x in cells]


def test_sequential_repetitions_are_no_round():
    cells = expand.expand(parse(reps=3, order="sequential"))
    assert {x.round_position for x in cells} == {None}


def test_a_run_without_a_seed_keeps_the_file_order():
    """Runs stored before rounds were randomized recorded no seed: they still resume."""
    cells = expand.expand(parse(reps=4))
    assert list(firsts(cells).values()) == ["a"] * 4


@pytest.mark.parametrize("order", ["interleaved", "random"])
def test_the_run_records_the_seed_it_drew(tmp_path, monkeypatch, order):
    monkeypatch.setattr(locks, "HOST_RUNS_DIR", tmp_path / "host-runs")
    monkeypatch.setattr(runner_run.Runner, "_preflight", lambda *a: None)
    seen = []
    monkeypatch.setattr(
        runner_run.Runner, "_run_cells", lambda self, r, c, all_cells, todo: seen.extend(todo)
    )
    runner = runner_run.Runner(tmp_path / "res")
    run_id = runner.start(parse(reps=6, order=order))
    seed = runner.store.run(run_id)["seed"]
    assert seed is not None
    assert [x.key() for x in seen] == [
        x.key() for x in expand.expand(parse(reps=6, order=order), seed=seed)
    ]


def test_position_and_duet_labels_never_split_a_group():
    d = describe.describe(["sysbench-cpu-1t"])
    ignored = d.labels_of(IGNORED, "sysbench-cpu-1t")
    assert {rounds.ROUND_POSITION_LABEL, rounds.DUET_LABEL} <= ignored
