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


# issue 16: each of these ended in a traceback, a hang or a failure only when the run started
SUITE = '[suites.cpu]\ntest_cases = ["sysbench-cpu-1t"]\n'
VM_AND = '[[platforms]]\nname = "v"\ntype = "vm"\n'


@pytest.mark.parametrize(
    ("text", "key", "fragment"),
    [
        ('[[platforms]]\ntype = ["native"]\n' + SUITE, "platforms[0].type", "unknown platform"),
        ("[[platforms]]\ntype = {a = 1}\n" + SUITE, "platforms[0].type", "unknown platform"),
        ("[campaign]\ncell_timeout = inf\n" + SUITE, "campaign.cell_timeout", "inf"),
        ("[campaign]\ncell_timeout = nan\n" + SUITE, "campaign.cell_timeout", "nan"),
        (
            '[[platforms]]\nname = "a"\ntype = "container"\nhost = "b"\n'
            '[[platforms]]\nname = "b"\ntype = "container"\nhost = "a"\n' + SUITE,
            "platforms[0].host",
            "inside another platform",
        ),
        (
            '[[platforms]]\nname = "n"\ntype = "native"\n'
            '[[platforms]]\nname = "v"\ntype = "vm"\nhost = "n"\n' + SUITE,
            "platforms[1].host",
            "a 'vm' platform cannot run inside another platform",
        ),
        (
            '[[platforms]]\nname = "a"\ntype = "container"\n'
            '[[platforms]]\nname = "b"\ntype = "container"\nhost = "a"\n' + SUITE,
            "platforms[1].host",
            "runs only inside a vm",
        ),
        (
            VM_AND + '[[platforms]]\nname = "c"\ntype = "container"\nhost = "v"\n'
            '[[platforms]]\nname = "cc"\ntype = "container"\nhost = "c"\n' + SUITE,
            "platforms[2].host",
            "runs only inside a vm",
        ),
        (
            '[[platforms]]\ntype = "native"\nworkdir = ["/tmp"]\n' + SUITE,
            "platforms[0].workdir",
            "absolute",
        ),
        ('[suites.memory]\nblock_sizes_kib = ["abc"]\n', "suites.memory.block_sizes_kib", "'abc'"),
        ("[suites.memory]\nblock_sizes_kib = []\n", "suites.memory.block_sizes_kib", "empty"),
        ("[suites.memory]\nblock_sizes_kib = [1.5]\n", "suites.memory.block_sizes_kib", "1.5"),
        (
            '[suites.latency]\ntest_cases = ["tick"]\nloop_us = nan\n',
            "suites.latency.loop_us",
            "finite",
        ),
        ("[campaign]\ntarget_cpus = []\n" + SUITE, "campaign.target_cpus", "at least one CPU"),
        ("[campaign]\nclient_cpus = []\n" + SUITE, "campaign.client_cpus", "at least one CPU"),
        ("[campaign]\ntarget_cpus = [4096]\n" + SUITE, "campaign.target_cpus", "this host"),
        ('[campaign]\nclient_cpus = "0-x"\n' + SUITE, "campaign.client_cpus", "'0-1,3'"),
        (
            '[[platforms]]\nname = "a\\u0000b"\ntype = "native"\n' + SUITE,
            "platforms[0].name",
            "control",
        ),
        ('[campaign]\nname = "\\u001b[2J"\n' + SUITE, "campaign.name", "control"),
        ('[campaign]\nscenarios = ["solo\\u202e"]\n' + SUITE, "campaign.scenarios", "control"),
        (
            '[[platforms]]\ntype = "container"\nmemory_limit = "9999999T"\n' + SUITE,
            "platforms[0].memory_limit",
            "too large",
        ),
        (
            '[campaign]\nscenarios = ["antagonist:memory-load:mb=1e20"]\n' + SUITE,
            "campaign.scenarios",
            "mb=",
        ),
        ("[suites.cpu]\ntest_cases = []\n", "suites.cpu.test_cases", "empty"),
    ],
)
def test_bad_input_caught_at_load(text, key, fragment):
    with pytest.raises(CampaignError) as err:
        parse(text)
    msg = str(err.value)
    assert msg.startswith("c.toml: key '" + key + "'"), msg
    assert fragment in msg, msg
    assert msg.isprintable(), msg  # a NUL or ESC is never printed raw


def test_a_control_character_in_a_key_is_escaped():
    with pytest.raises(CampaignError) as err:
        parse('[campaign]\n"a\\u0000b" = 1\n' + SUITE)
    assert "campaign.a\\x00b" in str(err.value) and "\x00" not in str(err.value)


def test_description_may_have_lines():
    assert "\n" in parse('[campaign]\ndescription = """two\nlines"""\n' + SUITE).description


def test_latin1_campaign_file_names_the_byte_and_line(tmp_path):
    path = tmp_path / "l1.toml"
    path.write_bytes(b'[campaign]\nname = "caf\xe9"\n' + SUITE.encode())
    with pytest.raises(CampaignError) as err:
        loader.load(str(path))
    assert str(err.value).startswith(f"{path}: key '(encoding)': is not UTF-8: byte 0xe9 on line 2")


def test_fifo_campaign_file_is_refused_without_blocking(tmp_path):
    import os
    import threading

    fifo = tmp_path / "c.toml"
    os.mkfifo(fifo)
    errors: list[Exception] = []
    t = threading.Thread(target=lambda: errors.append(_load_error(str(fifo))), daemon=True)
    t.start()
    t.join(10)
    if t.is_alive():  # unblock the reader before failing
        with open(fifo, "w"):
            pass
        pytest.fail("loading a FIFO blocks")
    assert "is a FIFO, not a regular file" in str(errors[0])


def _load_error(path: str) -> Exception | None:
    try:
        loader.load(path)
    except Exception as exc:
        return exc
    return None


SELECTED = """
[campaign]
name = "matrix"
order = "ORDER"
repetitions = 2
[[platforms]]
name = "metal.local"
type = "native"
[[platforms]]
name = "metal.mnt"
type = "container"
storage = "volume"
suites = ["disk"]
[suites.cpu]
test_cases = ["sysbench-cpu-1t"]
[suites.disk]
test_cases = ["fio-seq-read"]
"""


@pytest.mark.parametrize("order", ["sequential", "interleaved", "random"])
def test_a_platform_runs_only_the_suites_it_names(order):
    """Seed 004's Table 2: each configuration runs a selection of the suites."""
    c = parse(SELECTED.replace("ORDER", order))
    cells = expand.expand(c, seed=1)
    assert {(x.platform.name, x.suite) for x in cells} == {
        ("metal.local", "cpu"),
        ("metal.local", "disk"),
        ("metal.mnt", "disk"),
    }
    assert len(cells) == 6
    # adaptive rounds keep the selection
    extra = expand.extra_round(c, {"sysbench-cpu-1t": 3, "fio-seq-read": 3}, 100, 1)
    assert ("metal.mnt", "cpu") not in {(x.platform.name, x.suite) for x in extra}


@pytest.mark.parametrize(
    ("value", "problem"),
    [
        ('["memory"]', "is not a suite of this campaign"),
        ('"disk"', "must be a list of suite names"),
        ('["disk", 1]', "must be a list of suite names"),
    ],
)
def test_a_platforms_suites_must_be_suites_of_the_campaign(value, problem):
    text = SELECTED.replace("ORDER", "sequential").replace('suites = ["disk"]', f"suites = {value}")
    with pytest.raises(CampaignError, match=problem) as e:
        parse(text)
    assert "platforms[1].suites" in str(e.value) and "cpu, disk" in str(e.value)


NEIGHBOUR_ONLY = """
[campaign]
name = "one-target"
order = "sequential"
repetitions = 2
scenarios = ["solo", "heterogeneous:bystander"]
[[platforms]]
name = "guest"
type = "vm"
suites = []
[[platforms]]
name = "in-guest"
type = "container"
host = "guest"
[[platforms]]
name = "bystander"
type = "native"
suites = []
[suites.web]
test_cases = ["httperf-sweep"]
"""


def test_suites_empty_makes_a_platform_only_a_host_or_a_neighbour():
    """Re-measuring one platform's cells beside the same hosts and neighbours."""
    c = parse(NEIGHBOUR_ONLY)
    cells = expand.expand(c)
    assert {x.platform.name for x in cells} == {"in-guest"}
    assert [x.scenario for x in cells] == ["solo"] * 2 + ["heterogeneous:bystander"] * 2
    assert cells[0].platform.host is not None and cells[0].platform.host.name == "guest"


def test_a_platform_with_no_suites_that_nothing_uses_is_refused():
    text = NEIGHBOUR_ONLY.replace('"heterogeneous:bystander"', '"identical"')
    with pytest.raises(CampaignError, match="no platform's host and no scenario's neighbour") as e:
        parse(text)
    assert "platforms[2].suites" in str(e.value) and "allowed: guest" in str(e.value)


def test_a_campaign_where_every_platform_has_no_suites_is_refused():
    text = NEIGHBOUR_ONLY.replace('host = "guest"\n', 'host = "guest"\nsuites = []\n')
    with pytest.raises(CampaignError, match="nothing to run"):
        parse(text)


def test_client_cpus_are_a_list_or_ranges_and_a_client_hosts_own_with_client_host():
    assert parse('[campaign]\nclient_cpus = "0"\n' + SUITE).settings.client_cpus == [0]
    remote = '[campaign]\nclient_host = "load1"\nclient_cpus = "0-63"\n' + SUITE
    assert parse(remote).settings.client_cpus == list(range(64))  # not this host's CPUs


def test_cpu_budget_defaults_to_shared_and_takes_own():
    assert parse(GOOD).settings.cpu_budget == "shared"
    own = GOOD.replace("seed = 7\n", 'seed = 7\ncpu_budget = "own"\n')
    assert parse(own).settings.cpu_budget == "own"


@pytest.mark.parametrize("value", ['"pooled"', "1", '["shared"]'])
def test_bad_cpu_budget_names_file_key_and_allowed_values(value):
    bad = GOOD.replace("seed = 7\n", f"seed = 7\ncpu_budget = {value}\n")
    with pytest.raises(CampaignError) as e:
        parse(bad)
    msg = str(e.value)
    assert msg.startswith("c.toml: key 'campaign.cpu_budget'")
    assert "allowed: shared, own" in msg
