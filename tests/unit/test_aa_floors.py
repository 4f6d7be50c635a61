"""A/A floors: `aa = true` measures the baseline twice, its floors judge the other platforms;
`calibrate --aa` keeps them for later runs, in a state directory only root can use."""

from __future__ import annotations

import os
import time

import pytest

from virtbench import hostfloors, statedir
from virtbench.analysis import floors, ratios
from virtbench.analysis.groups import Group, GroupKey
from virtbench.analysis.normalize import against_baseline
from virtbench.analysis.stats import summarize
from virtbench.campaign import loader
from virtbench.errors import CampaignError, VirtbenchError
from virtbench.runner.run import calibrated_floors

CAMPAIGN = """
[campaign]
name = "x"
aa = {aa}
[[platforms]]
name = "native"
type = "native"
[[platforms]]
name = "container"
type = "container"
[suites.cpu]
test_cases = ["sysbench-cpu-1t"]
"""


def group(platform: str, values: list[float], tc: str = "t") -> Group:
    g = Group(GroupKey(platform, "cpu", tc, "solo", "target", "m"), "x/s", True, True)
    g.values, g.repetitions = list(values), list(range(1, len(values) + 1))
    g.summary = summarize(g.values)
    return g


def test_aa_adds_the_baseline_twin_right_after_it():
    c = loader.parse(CAMPAIGN.format(aa="true"), "c.toml")
    assert [p.name for p in c.platforms] == ["native", "native-aa", "container"]
    twin = c.platforms[1]
    assert (twin.type, twin.options) == ("native", c.platforms[0].options)
    assert [p.name for p in loader.parse(CAMPAIGN.format(aa="false"), "c.toml").platforms] == [
        "native",
        "container",
    ]


def test_aa_refuses_a_platform_already_named_like_the_twin():
    text = CAMPAIGN.format(aa="true") + '[[platforms]]\nname = "native-aa"\ntype = "native"\n'
    with pytest.raises(CampaignError, match="native-aa"):
        loader.parse(text, "c.toml")


def test_aa_only_keeps_the_baseline_and_its_twin():
    c = loader.aa_only(loader.parse(CAMPAIGN.format(aa="false"), "c.toml"), 4)
    assert [p.name for p in c.platforms] == ["native", "native-aa"]
    assert (c.settings.order, c.settings.repetitions, c.settings.aa) == ("interleaved", 4, True)


def test_floor_from_the_twin_judges_the_others():
    # A/A spread about ±4%: a 3% container difference is inside the noise, not "slower"
    gs = [
        group("native", [1000, 1040, 980, 1010, 990]),
        group("native-aa", [1030, 1000, 1010, 970, 1020]),
        group("container", [970, 1010, 950, 980, 960]),
    ]
    measured = floors.from_aa(gs, "native")
    (floor,) = measured.values()
    assert floor > 0.03
    floor_of = floors.floor_function(gs, "native", {})
    assert floor_of(gs[2].key) == (floor, "A/A in this run")
    assert floor_of(gs[1].key) == (ratios.DEFAULT_FLOOR, "")  # the twin: not its own floor
    comps = against_baseline(gs, "native", floor_of)
    c = comps[gs[2].key]
    assert c.verdict.floor == floor and "A/A in this run" in c.verdict.reason
    assert c.decision != ratios.SLOWER


def test_a_calibrated_floor_is_used_when_the_run_has_no_twin():
    gs = [group("native", [1000, 1001, 999]), group("container", [990, 991, 989])]
    fact = floors.to_host_fact(
        {floors.test_id(gs[1].key): 0.015}, "20261129-000000-abcd", "2026-11-29"
    )
    floor_of = floors.floor_function(gs, "native", {floors.HOST_FACT: fact})
    value, source = floor_of(gs[1].key)
    assert value == 0.015 and "20261129-000000-abcd" in source
    # a fact of another shape is ignored, not an error
    assert floors.floor_function(gs, "native", {floors.HOST_FACT: {"floors": [{}]}})(gs[1].key) == (
        ratios.DEFAULT_FLOOR,
        "",
    )


def test_floors_never_go_below_the_minimum():
    gs = [group("native", [1000, 1000, 1000.1]), group("native-aa", [1000, 1000, 1000.1])]
    assert list(floors.from_aa(gs, "native").values()) == [floors.MIN_FLOOR]


def test_hostfloors_round_trip_in_a_private_directory(tmp_path, monkeypatch):
    monkeypatch.setenv(statedir.ENV, str(tmp_path))
    assert hostfloors.load() is None
    fact = {"run_id": "r", "measured": "now", "measured_at": time.time(), "floors": []}
    path = hostfloors.save(fact)
    assert hostfloors.load() == fact
    assert oct(os.stat(path.parent).st_mode & 0o777) == "0o700"
    assert calibrated_floors(print) == {floors.HOST_FACT: fact}


def test_stale_floors_are_not_used(tmp_path, monkeypatch):
    monkeypatch.setenv(statedir.ENV, str(tmp_path))
    old = time.time() - hostfloors.MAX_AGE_S - 10
    hostfloors.save({"run_id": "r", "measured": "long ago", "measured_at": old, "floors": []})
    said = []
    assert calibrated_floors(said.append) == {} and "older than" in said[0]


def test_a_planted_state_directory_is_refused(tmp_path, monkeypatch):
    monkeypatch.setenv(statedir.ENV, str(tmp_path))
    (tmp_path / "elsewhere").mkdir()
    os.symlink(tmp_path / "elsewhere", tmp_path / "aa")
    with pytest.raises(VirtbenchError, match="symbolic link"):
        hostfloors.save({"floors": []})
    said = []
    assert calibrated_floors(said.append) == {} and "not used" in said[0]
    os.unlink(tmp_path / "aa")
    (tmp_path / "aa").mkdir(mode=0o777)
    os.chmod(tmp_path / "aa", 0o777)
    with pytest.raises(VirtbenchError, match="mode 0?777"):
        hostfloors.load()
