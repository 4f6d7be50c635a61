"""The `container` platform's options (also those of a container inside a VM): schema for
campaigns, parsed once into ContainerOptions."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ... import cgroups, parsing
from ...parsing import ParseError
from ..options import OptionError, OptionReader, PlatformOptions, Schema
from . import gvisor_build, runtimes, spec
from .instance import NETWORK_MODES
from .storage import STORAGE_MODES

RT_MAX_US = 1_000_000  # the kernel's default rt period; the runtime cannot exceed the period

SCHEMA: Schema = {
    "runtime": ("crun", runtimes.RUNTIMES, "OCI runtime, or the podman or docker engine"),
    "storage": ("overlay", STORAGE_MODES, "data path in the overlay layer or a volume"),
    "network": ("host", NETWORK_MODES, "host netns, veth on vb-br0, or bridge + DNAT"),
    "cpu_weight": (None, None, "cpu.shares scale 2..262144 (default 1024; seeds 256)"),
    "cpu_quota_us": (None, None, "CFS quota per period in µs (e.g. 50000 = half a CPU)"),
    "cpu_period_us": (None, None, "CFS period in µs (default 100000)"),
    "cpuset": (None, None, "CPUs the container may use: [0] or '0-1'"),
    "memory_limit": (None, None, "memory limit: bytes or '512M'"),
    "pids_max": (None, None, "maximum number of tasks"),
    "publish_port_offset": (20000, None, "nat: host port = container port + offset"),
    "rt_runtime_us": (
        cgroups.RT_AUTO,
        None,
        "real-time µs per 1 s period for SCHED_FIFO inside (v1 RT group scheduling); "
        "auto: what is free",
    ),
    "rt_period_us": (
        None,
        None,
        "rt period in µs for rt_runtime_us (1000..1000000; default: the host's)",
    ),
}
# appended (keeps the schema's order for existing campaigns' help and labels)
SCHEMA["docker_nat"] = (
    None,
    None,
    "docker with network nat: -p through the userland docker-proxy or iptables DNAT "
    "(a dockerd setting; default userland-proxy, Docker's)",
)
DOCKER_NATS = ("userland-proxy", "iptables")
SCHEMA["runsc"] = (
    None,
    None,
    'runtime runsc: the gVisor build: "debian" (default, Debian\'s package), "pinned" or a'
    " gvisor.dev/gvisor Go version, built from its Go module (platforms/container/gvisor_build)",
)


@dataclass(frozen=True)
class ContainerOptions(PlatformOptions):
    runtime: str
    storage: str
    network: str
    resources: spec.Resources  # cgroup limits, as the OCI config wants them
    publish_port_offset: int
    rt_runtime_us: int | str  # µs, or cgroups.RT_AUTO
    rt_period_us: int | None  # None: the host's rt period
    docker_nat: str | None  # runtime docker, network nat: how -p is served
    runsc: str  # runtime runsc: gvisor_build.DEBIAN or a Go module version

    schema = SCHEMA

    @classmethod
    def read(cls, r: OptionReader) -> dict[str, Any]:
        return {
            "runtime": r.values["runtime"],
            "storage": r.values["storage"],
            "network": r.values["network"],
            "resources": _resources(r),
            "publish_port_offset": r.get("publish_port_offset", _ints(0, 65534)),
            "rt_runtime_us": r.get("rt_runtime_us", rt_runtime_opt),
            "rt_period_us": r.get("rt_period_us", rt_period_opt),
            "docker_nat": _docker_nat(r),
            "runsc": _runsc(r),
        }


def _runsc(r: OptionReader) -> str:
    value = r.values.get("runsc")
    try:
        build = gvisor_build.resolve(value)
    except ValueError:
        r.problem("runsc", "is not a gVisor build", gvisor_build.ALLOWED)
        return gvisor_build.DEBIAN
    if build != gvisor_build.DEBIAN and r.values["runtime"] != "runsc":
        r.problem("runsc", "applies only to gVisor", 'runtime = "runsc"')
    return build


def _docker_nat(r: OptionReader) -> str | None:
    value = r.values.get("docker_nat")
    if value is None:
        return None
    if value not in DOCKER_NATS:
        r.problem("docker_nat", "is not allowed", ", ".join(DOCKER_NATS))
        return None
    if r.values["runtime"] != "docker" or r.values["network"] != "nat":
        r.problem(
            "docker_nat",
            "applies only to a Docker container with published ports",
            'runtime = "docker" with network = "nat"',
        )
        return None
    return value


def _ints(lo: int, hi: int):
    return lambda v: parsing.integer(v, lo, hi)


def _resources(r: OptionReader) -> spec.Resources:
    res = spec.Resources()
    res.cpu_weight = r.get("cpu_weight", _ints(2, 262144))
    res.cpu_quota_us = r.get("cpu_quota_us", _ints(1000, 10**9))
    if res.cpu_quota_us is not None:
        res.cpu_period_us = 100_000
    res.cpu_period_us = r.get("cpu_period_us", _ints(1000, 1_000_000)) or res.cpu_period_us
    res.cpuset_cpus = r.get("cpuset", _host_cpuset)
    res.memory_limit_bytes = r.get("memory_limit", parsing.size_bytes)
    res.pids_max = r.get("pids_max", _ints(1, 4_194_304))
    return res


def resources_from(options: dict[str, Any]) -> spec.Resources:
    """cgroup limits from options as written; OptionError names the first bad one."""
    r = OptionReader(options)
    res = _resources(r)
    r.raise_first()
    return res


def host_cpus() -> list[int]:
    """CPUs online on this host (a cpuset may only name these)."""
    try:
        return parsing.cpu_list(Path("/sys/devices/system/cpu/online").read_text().strip())
    except (OSError, ParseError):
        return list(range(os.cpu_count() or 1))


def _host_cpuset(value: Any) -> list[int]:
    cpus = sorted(set(parsing.cpu_list(value)))
    online = host_cpus()
    bad = [c for c in cpus if c not in online]
    if bad:
        raise ParseError(value, f"names CPUs {bad} this host does not have", _cpu_range(online))
    return cpus


def _cpu_range(cpus: list[int]) -> str:
    return f"{cpus[0]}..{cpus[-1]}" if cpus == list(range(cpus[0], cpus[-1] + 1)) else str(cpus)


def _option(key: str, parse, value: Any) -> Any:
    try:
        return parse(value)
    except ParseError as exc:
        raise OptionError(key, value, exc.problem, exc.allowed) from None


def parse_size(key: str, value: Any) -> int:
    """Bytes from an int or a string like '512M', '2G', '1.5GiB'."""
    return _option(key, parsing.size_bytes, value)


def parse_cpus(key: str, value: Any) -> list[int]:
    """CPU list from [0, 1] or '0-1,3', sorted, each CPU once."""
    return sorted(set(_option(key, parsing.cpu_list, value)))


def rt_runtime_opt(value: Any) -> int | str:
    if value == cgroups.RT_AUTO:
        return value
    allowed = f'"auto" or 0..{RT_MAX_US}'
    try:
        return parsing.integer(value, 0, RT_MAX_US)
    except ParseError as exc:
        neither = exc.problem == parsing.NOT_INTEGER  # not "auto" either
        raise ParseError(value, "is not allowed" if neither else exc.problem, allowed) from None


def rt_period_opt(value: Any) -> int:
    return parsing.integer(value, 1000, RT_MAX_US)
