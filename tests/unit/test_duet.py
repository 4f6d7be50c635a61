"""Duet runs (`order = "duet"`, issue 36 item 4): pairs, CPU sets, refusals, the barrier."""

from __future__ import annotations

import json
import os
import time
from contextlib import contextmanager

import pytest

from virtbench.campaign import duet, expand, loader, rounds
from virtbench.errors import CampaignError
from virtbench.runner import describe, locks
from virtbench.runner import duet as duet_run
from virtbench.runner import run as runner_run

BASE = """
[campaign]
repetitions = 4
order = "duet"
{extra}
[[platforms]]
name = "native"
type = "native"
[[platforms]]
name = "crun"
type = "container"
{more}
[suites.cpu]
test_cases = ["sysbench-cpu-1t", "sysbench-cpu-all"]
{suites}
"""


def parse(extra="", more="", suites=""):
    return loader.parse(BASE.format(extra=extra, more=more, suites=suites), "d.toml")


@pytest.fixture(autouse=True)
def two_cpus(monkeypatch):
    """The host's usable CPUs as the loader sees them (this machine may have more or fewer)."""
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: {0, 1, 2, 3})


def test_pairs_share_their_round_and_swap_disjoint_sets_every_round():
    c = parse()
    cells = expand.expand(c, seed=3)
    pairs = rounds.duet_pairs(cells)
    assert len(pairs) == 4 * 2  # rounds x test cases
    for a, b in pairs:
        assert (a.platform.name, b.platform.name) == ("native", "crun")
        assert a.repetition == b.repetition and a.test_case == b.test_case
        assert a.duet.partner == "crun" and b.duet.partner == "native"
        assert not set(a.duet.cpus) & set(b.duet.cpus)
    sets = {a.repetition: a.duet.cpus for a, _b in pairs}
    assert sets == {1: (0, 1), 2: (2, 3), 3: (0, 1), 4: (2, 3)}  # swapped every round
    assert {c.round_position for c in cells} == {None}


def test_named_sets_and_the_default_halves():
    c = parse(extra="duet_cpus = [[3], [2]]")
    assert c.settings.duet_cpus == [[3], [2]]
    assert parse().settings.duet_cpus == [[0, 1], [2, 3]]
    assert duet.default_sets([0, 1, 2, 3, 4]) == [[0, 1], [2, 3]]  # equal halves


def test_the_context_pins_each_cell_to_its_set(tmp_path):
    c = parse()
    runner = runner_run.Runner(tmp_path / "res")
    for cell in expand.expand(c, seed=1)[:4]:
        assert runner._context(cell, c).cpus == list(cell.duet.cpus)


def test_adaptive_rounds_and_a_resume_give_the_same_pairs():
    c = parse()
    extra = expand.extra_round(c, {"sysbench-cpu-1t": 5}, 16, seed=1)
    assert [(x.seq, x.platform.name, x.duet.cpu_set) for x in extra] == [
        (16, "native", 0),
        (17, "crun", 1),
    ]
    cells = expand.expand(c, seed=1) + extra
    stored = [(x.seq, x.platform.name, x.test_case, x.scenario, x.repetition) for x in cells]
    assert [x.duet for x in expand.rebuild(parse(), stored)] == [x.duet for x in cells]


@pytest.mark.parametrize(
    ("extra", "more", "suites", "key", "fragment"),
    [
        ("", '[[platforms]]\nname = "c2"\ntype = "container"\n', "", "platforms", "exactly two"),
        ("", "", "", None, None),  # the valid campaign, for contrast
        ('scenarios = ["solo", "idle-neighbours:1"]', "", "", "campaign.scenarios", "idle-n"),
        ("duet_cpus = [[0, 1], [1]]", "", "", "campaign.duet_cpus", "disjoint"),
        ("duet_cpus = [[0], [1, 2]]", "", "", "campaign.duet_cpus", "as many CPUs"),
        ("duet_cpus = [[0]]", "", "", "campaign.duet_cpus", "two CPU lists"),
        ("duet_cpus = [[0], [7]]", "", "", "campaign.duet_cpus[1]", "7"),
        ("target_cpus = [0]", "", "", "campaign.target_cpus", "duet_cpus"),
        (
            "",
            "",
            '[suites.network]\ntest_cases = ["iperf3-tcp"]',
            "suites.network.test_cases",
            "iperf3",
        ),
    ],
)
def test_refusals_name_the_key(extra, more, suites, key, fragment):
    if key is None:
        parse(extra, more, suites)
        return
    with pytest.raises(CampaignError) as err:
        parse(extra, more, suites)
    assert err.value.key == key and fragment in str(err.value)


@pytest.mark.parametrize(
    ("platform", "key"),
    [
        ('type = "vm"', "platforms[1].type"),
        ('type = "container"\nruntime = "runsc"', "platforms[1].runtime"),
    ],
)
def test_platforms_a_cpu_set_cannot_hold_are_refused(platform, key):
    text = BASE.format(extra="", more="", suites="").replace('type = "container"', platform)
    with pytest.raises(CampaignError) as err:
        loader.parse(text, "d.toml")
    assert err.value.key == key and "duet" in str(err.value)


def test_one_cpu_cannot_make_disjoint_sets(monkeypatch):
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: {0})
    with pytest.raises(CampaignError) as err:
        parse()
    assert err.value.key == "campaign.order" and "1 usable CPU" in str(err.value)


def test_both_platforms_must_run_the_same_test_cases():
    text = BASE.format(extra="", more="", suites='[suites.memory]\ntest_cases = ["mbw"]')
    text = text.replace('type = "container"', 'type = "container"\nsuites = ["cpu"]')
    with pytest.raises(CampaignError) as err:
        loader.parse(text, "d.toml")
    assert err.value.key == "platforms[1].suites"


def test_duet_cpus_need_the_duet_order():
    text = BASE.format(extra="duet_cpus = [[0], [1]]", more="", suites="")
    with pytest.raises(CampaignError) as err:
        loader.parse(text.replace('"duet"', '"interleaved"'), "d.toml")
    assert err.value.key == "campaign.duet_cpus"


def test_the_barrier_starts_both_sides_together():
    t0 = time.time()
    late = [lambda: time.sleep(0.3) or "slow", lambda: time.sleep(0.1) or "fast"]
    out = duet_run.together(late)
    (r1, s1, e1, x1), (r2, s2, e2, x2) = out
    assert (r1, r2, x1, x2) == ("slow", "fast", None, None)
    assert abs(s1 - s2) < 0.05 and s1 >= t0
    assert duet_run.overlap((s2, e2), (s1, e1)) > 0.95
    assert duet_run.overlap((0.0, 10.0), (5.0, 20.0)) == 0.5
    assert duet_run.overlap((0.0, 10.0), (11.0, 20.0)) == 0.0


@pytest.fixture
def fake_cells(tmp_path, monkeypatch):
    """Stand-in platforms and measurements for run_pairs: each cell sleeps 0.2 s, records the
    CPUs its context pinned it to, and appends (platform, repetition) to the list returned."""
    from virtbench.results import Sample
    from virtbench.runner.cell import Outcome

    monkeypatch.setattr(locks, "HOST_RUNS_DIR", tmp_path / "host-runs")
    monkeypatch.setattr(runner_run.Runner, "_preflight", lambda *a: None)

    class Fake:
        def __init__(self, spec):
            self.spec = spec

        def labels(self):
            return {}

        def cpu_budget(self):
            return None

    @contextmanager
    def fake_provisioned(spec, budget=None):
        yield Fake(spec)

    monkeypatch.setattr(runner_run, "provisioned", fake_provisioned)
    monkeypatch.setattr(runner_run.Runner, "_warmup", lambda *a: None)
    measured: list[tuple[str, int]] = []

    def fake_measure(self, platform, wcls, cell, campaign):
        ctx = self._context(cell, campaign)
        time.sleep(0.2)
        measured.append((cell.platform.name, cell.repetition))
        s = Sample("events_per_s", 100.0, "events/s", True)
        s.labels["pinned"] = ",".join(map(str, ctx.cpus))
        throttled = type("T", (), {"budget": None, "labels": lambda self: {}})()
        return Outcome("ok", [s], [], None, 0.2), ctx, throttled

    monkeypatch.setattr(runner_run.Runner, "_measure_cell", fake_measure)
    return measured


def test_a_pair_runs_its_cells_at_once_labelled_with_set_and_partner(tmp_path, fake_cells):
    """run_pairs with stand-in platforms and measurements: both cells of a round overlap in
    time, each measured on its set, each sample labelled; the store sees both committed."""
    runner = runner_run.Runner(tmp_path / "res")
    run_id = runner.start(parse())
    rows = runner.store.sample_rows(run_id)
    assert len(rows) == 4 * 2 * 2  # rounds x test cases x platforms, every cell committed
    by_round: dict[tuple[int, str], list[dict]] = {}
    for r in rows:
        by_round.setdefault((r["repetition"], r["test_case"]), []).append(
            json.loads(r["labels_json"])
        )
    for (_rep, _tc), (one, two) in by_round.items():
        d1, d2 = one[rounds.DUET_LABEL], two[rounds.DUET_LABEL]
        assert {d1["partner"], d2["partner"]} == {"native", "crun"}
        assert {d1["cpus"], d2["cpus"]} == {"0,1", "2,3"}
        assert one["pinned"] == d1["cpus"] and two["pinned"] == d2["cpus"]
        assert d1["start"] < d2["end"] and d2["start"] < d1["end"]  # they overlapped
        assert d1["overlap"] > 0.5 and d1["partner_status"] == "ok"
    assert all(c.status == "ok" for c in runner.store.cells(run_id))


def test_a_resumed_pair_measures_its_stored_cell_again_as_an_unstored_partner(tmp_path, fake_cells):
    c = parse()
    runner = runner_run.Runner(tmp_path / "res")
    cells = expand.expand(c, seed=1)
    run_id = "r1"
    runner.store.create_run(
        run_id, c.name, c.file, c.text, 1, {}, {}, "test", description=describe.describe([])
    )
    runner._add_cells(run_id, cells)
    todo = [cells[1]]  # crun's cell of round 1's first pair; native's is stored
    duet_run.run_pairs(runner, run_id, c, cells, todo)
    assert sorted(fake_cells) == [("crun", 1), ("native", 1)]  # both ran, at once
    rows = runner.store.sample_rows(run_id)
    assert [(r["platform"], r["repetition"]) for r in rows] == [("crun", 1)]  # one stored
    assert json.loads(rows[0]["labels_json"])["duet"]["partner_status"] == "ok"
