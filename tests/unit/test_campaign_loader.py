import pytest

from virtbench.campaign import expand, loader
from virtbench.errors import CampaignError

GOOD = """
[campaign]
name = "t"
repetitions = 2
order = "random"
seed = 7
scenarios = ["solo"]

[[platforms]]
name = "native"
type = "native"

[suites.cpu]
test_cases = ["sysbench-cpu-1t"]
duration = 2
"""


def parse(text: str):
    return loader.parse(text, "c.toml")


def test_good_campaign_expands_to_cells():
    c = parse(GOOD)
    assert c.settings.repetitions == 2 and c.settings.baseline == "native"
    cells = expand.expand(c, seed=c.settings.seed)
    assert [(x.test_case, x.repetition) for x in cells] in (
        [("sysbench-cpu-1t", 1), ("sysbench-cpu-1t", 2)],
        [("sysbench-cpu-1t", 2), ("sysbench-cpu-1t", 1)],
    )
    assert cells[0].params["duration"] == 2
    # the same seed gives the same order: resume relies on it
    again = expand.expand(c, seed=7)
    assert [x.key() for x in again] == [x.key() for x in cells]


def test_builtin_default_campaign_loads():
    c = loader.load(None)
    assert c.name == "quick" and c.tests


@pytest.mark.parametrize(
    ("text", "key", "fragment"),
    [
        ("[campaign]\nrepetitons = 2\n[suites.cpu]\n", "campaign.repetitons", "unknown key"),
        ("[campaign]\nrepetitions = 0\n[suites.cpu]\n", "campaign.repetitions", "between 1"),
        ("[campaign]\nrepetitions = 'x'\n[suites.cpu]\n", "campaign.repetitions", "integer"),
        ("[campaign]\norder = 'zigzag'\n[suites.cpu]\n", "campaign.order", "random"),
        ("[[platforms]]\ntype = 'mainframe'\n[suites.cpu]\n", "platforms[0].type", "native"),
        ("[suites.gpu]\n", "suites.gpu", "unknown suite"),
        ("[suites.cpu]\ntest_cases = ['nope']\n", "suites.cpu.test_cases", "sysbench-cpu-1t"),
        ("[suites.cpu]\nduration = -1\n", "suites.cpu.duration", ">="),
        ("[suites.cpu]\nbogus = 1\n", "suites.cpu.bogus", "unknown parameter"),
        ("[campaign]\nscenarios = ['meteor']\n[suites.cpu]\n", "campaign.scenarios", "solo"),
        ("[campaign]\nbaseline = 'vm'\n[suites.cpu]\n", "campaign.baseline", "native"),
        ("[campaign]\ntarget_cpus = [999]\n[suites.cpu]\n", "campaign.target_cpus", "999"),
        ("[campaign\n", "(syntax)", "TOML"),
        ("", "suites", "required"),
    ],
)
def test_bad_input_names_file_key_and_allowed(text, key, fragment):
    with pytest.raises(CampaignError) as err:
        parse(text)
    msg = str(err.value)
    assert msg.startswith("c.toml: key '" + key + "'"), msg
    assert fragment in msg, msg


def test_unknown_campaign_file_lists_builtins():
    with pytest.raises(CampaignError) as err:
        loader.load("does-not-exist.toml")
    assert "quick" in str(err.value)


INTERLEAVED = """
[campaign]
repetitions = 2
order = "interleaved"

[[platforms]]
name = "a"
type = "native"

[[platforms]]
name = "b"
type = "native"

[suites.cpu]
test_cases = ["sysbench-cpu-1t"]
"""


def test_interleaved_order_visits_every_platform_each_round():
    cells = expand.expand(parse(INTERLEAVED))
    assert [(x.platform.name, x.repetition) for x in cells] == [
        ("a", 1),
        ("b", 1),
        ("a", 2),
        ("b", 2),
    ]
