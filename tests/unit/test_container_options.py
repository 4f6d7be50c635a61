"""Container options are checked when the campaign loads: file, key, value, allowed range."""

import pytest

from virtbench.campaign import loader
from virtbench.errors import CampaignError
from virtbench.platforms.base import Platform
from virtbench.platforms.container import options as co
from virtbench.platforms.container import platform as cp
from virtbench.platforms.container.spec import Resources


def _campaign(option_lines: str) -> str:
    return f'[[platforms]]\ntype = "container"\n{option_lines}\n[suites.cpu]\n'


@pytest.mark.parametrize(
    ("line", "key", "allowed"),
    [
        ("cpu_weight = 1", "cpu_weight", "2..262144"),
        ("cpu_weight = 300000", "cpu_weight", "2..262144"),
        ('cpu_weight = "big"', "cpu_weight", "2..262144"),
        ("cpu_quota_us = 10", "cpu_quota_us", "1000..1000000000"),
        ("cpu_period_us = 2000000", "cpu_period_us", "1000..1000000"),
        ("cpuset = [0, 4096]", "cpuset", "0.."),
        ('cpuset = "zero"', "cpuset", "[0, 1] or '0-1,3'"),
        ('memory_limit = "512Q"', "memory_limit", "'512M'"),
        ("memory_limit = 0", "memory_limit", "'512M'"),
        ("pids_max = 0", "pids_max", "1..4194304"),
        ("pids_max = true", "pids_max", "1..4194304"),
        ("publish_port_offset = 70000", "publish_port_offset", "0..65534"),
        ("rt_runtime_us = 2000000", "rt_runtime_us", '"auto" or 0..1000000'),
        ('rt_runtime_us = "max"', "rt_runtime_us", '"auto" or 0..1000000'),
    ],
)
def test_bad_option_rejected_at_load(line, key, allowed):
    with pytest.raises(CampaignError) as err:
        loader.parse(_campaign(line), "c.toml")
    msg = str(err.value)
    assert msg.startswith(f"c.toml: key 'platforms[0].{key}'")
    assert "got " + repr(loader.tomllib.loads(line)[key]) in msg
    assert allowed in msg.split("allowed: ", 1)[1]


def test_good_options_load():
    c = loader.parse(
        _campaign(
            'cpu_weight = 256\ncpu_quota_us = 50000\ncpu_period_us = 100000\ncpuset = "0"\n'
            'memory_limit = "1.5G"\npids_max = 100\npublish_port_offset = 0\n'
            'rt_runtime_us = "auto"'
        ),
        "c.toml",
    )
    assert c.platforms[0].options["memory_limit"] == "1.5G"


def test_problems_are_all_reported_by_the_hook():
    problems = cp.ContainerPlatform.validate_options({"cpu_weight": 1, "pids_max": -1})
    assert [k for k, _p, _a in problems] == ["cpu_weight", "pids_max"]
    assert cp.ContainerPlatform.validate_options({"runtime": "crun"}) == []


def test_default_hook_accepts_everything():
    assert Platform.validate_options({"anything": object()}) == []


def test_sizes_and_cpu_lists():
    assert co.parse_size("m", "512M") == 512 << 20
    assert co.parse_size("m", "1.5GiB") == 3 << 29
    assert co.parse_cpus("c", "0-1,3") == [0, 1, 3]
    assert co.rt_runtime_opt("auto") == "auto"
    assert co.rt_runtime_opt(950000) == 950000


def test_realtime_in_oci_resources():
    cpu = Resources(realtime_runtime_us=950000, realtime_period_us=1000000).to_oci()["cpu"]
    assert cpu == {"realtimeRuntime": 950000, "realtimePeriod": 1000000}
    assert "cpu" not in Resources().to_oci()
