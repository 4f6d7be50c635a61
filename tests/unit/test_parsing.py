"""The shared value parsers, and options/scenarios parsed once (no host changes)."""

import dataclasses

import pytest

from virtbench import parsing
from virtbench.campaign import expand, loader
from virtbench.parsing import ParseError
from virtbench.platforms import registry
from virtbench.platforms.base import PlatformSpec
from virtbench.platforms.container.options import ContainerOptions
from virtbench.platforms.container.platform import ContainerPlatform


def test_integers_within_bounds():
    assert parsing.integer(3, 1, 4) == 3
    assert parsing.integer("3", 1, 4, text=True) == 3
    for bad, problem in ((True, parsing.NOT_INTEGER), ("3", parsing.NOT_INTEGER), (5, "range")):
        with pytest.raises(ParseError, match=problem) as err:
            parsing.integer(bad, 1, 4)
        assert err.value.allowed == "1..4"


def test_numbers_are_finite():
    assert parsing.number("0.5", 0, above=True) == 0.5
    for bad in ("0", "nan", "inf", "x"):
        with pytest.raises(ParseError):
            parsing.number(bad, 0, above=True)


def test_cpu_lists():
    assert parsing.cpu_list("0-2,5") == [0, 1, 2, 5]
    assert parsing.cpu_list([1, 0]) == [1, 0]  # order kept (vCPU pinning)
    with pytest.raises(ParseError, match="not a CPU list"):
        parsing.cpu_list([])
    with pytest.raises(ParseError, match="not a CPU of this host") as err:
        parsing.cpu_list([0, 7, 9], available=[0, 1])
    assert err.value.value == 7


def test_key_values():
    assert parsing.key_values(["a", "k=v"], ("k",)) == (["a"], {"k": "v"})
    with pytest.raises(ParseError, match="not an option"):
        parsing.key_values(["x=1"], ("k",))
    with pytest.raises(ParseError, match="after options"):
        parsing.key_values(["k=1", "a"], options_last=True)


def test_sizes_and_durations():
    assert parsing.size_bytes("2G") == 2 << 30
    assert parsing.duration_ns("30ms") == 30_000_000
    with pytest.raises(ParseError, match="positive duration"):
        parsing.duration_ns("0s")


def test_a_spec_is_parsed_once_and_anew_when_replaced():
    spec = PlatformSpec("c", "container", {"cpu_weight": 256, "memory_limit": "64M"})
    opts = spec.parsed(ContainerOptions)
    assert opts.resources.cpu_weight == 256 and opts.resources.memory_limit_bytes == 64 << 20
    assert spec.parsed(ContainerOptions) is opts
    assert ContainerPlatform(spec, "vb-x").opts is opts
    other = dataclasses.replace(spec, options={"cpu_weight": 512})
    assert other.parsed(ContainerOptions).resources.cpu_weight == 512


def test_the_loader_parses_platforms_and_scenarios_once():
    c = loader.parse(
        '[campaign]\nscenarios = ["solo", "identical:load=50"]\nrepetitions = 2\n'
        '[[platforms]]\ntype = "container"\ncpuset = "0"\n[suites.cpu]\n'
        'test_cases = ["sysbench-cpu-1t"]\n',
        "c.toml",
    )
    assert c.platforms[0].parsed(ContainerOptions).resources.cpuset_cpus == [0]
    cells = expand.expand(c)
    assert [x.scenario for x in cells] == ["solo", "solo"] + ["identical:load=50"] * 2
    assert cells[2].parsed_scenario is cells[3].parsed_scenario is c.scenarios[1]
    assert cells[2].parsed_scenario.load == 50


def test_the_registry_picks_the_class_inside_a_host():
    spec = PlatformSpec("c", "container")
    assert type(registry.create(spec, "vb-x")) is ContainerPlatform
    assert type(registry.create(spec, "vb-y", host=object())).__name__ == "StackedContainer"
