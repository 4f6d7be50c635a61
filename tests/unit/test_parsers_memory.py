"""Memory suite parsers against real outputs captured on the development machine (tests/data)."""

from __future__ import annotations

from pathlib import Path

import pytest

from virtbench.campaign import loader
from virtbench.drivers.mbw import parse as parse_mbw
from virtbench.drivers.sysbench import parse_memory as parse_sysbench_memory
from virtbench.errors import CampaignError, WorkloadError
from virtbench.platforms.base import ExecResult
from virtbench.workloads.base import RunContext
from virtbench.workloads.memory import (
    DEFAULT_SWEEP_KIB,
    Mbw,
    SysbenchMemorySweep,
)

DATA = Path(__file__).parent.parent / "data"


def read(rel: str) -> str:
    return (DATA / rel).read_text()


def ctx(workload, **params) -> RunContext:
    return RunContext(params={k: p.default for k, p in workload.params.items()} | params)


def test_mbw_parse():
    w = Mbw()
    res = ExecResult(["mbw"], 0, read("mbw/mbw-256mib-n10.txt"), "", 1.0)
    samples = w.parse(res, ctx(w))
    by = {s.labels["method"]: s for s in samples}
    assert set(by) == {"memcpy", "dumb", "mcblock"}
    assert by["memcpy"].value == pytest.approx(3979.103)
    assert by["dumb"].value == pytest.approx(3619.418)
    assert by["mcblock"].value == pytest.approx(4687.366)
    assert by["memcpy"].unit == "MiB/s" and by["memcpy"].higher_is_better
    assert by["memcpy"].labels == {"method": "memcpy", "array_mib": 256, "iterations": 10}


def test_mbw_runs_and_malformed():
    parsed = parse_mbw(read("mbw/mbw-256mib-n10.txt"), "t")
    assert len(parsed["memcpy"]["runs"]) == 10 and parsed["memcpy"]["mib"] == 256.0
    with pytest.raises(WorkloadError, match="no 'Method"):
        parse_mbw("Error: no array size given!\n", "t")
    no_avg = "\n".join(ln for ln in read("mbw/mbw-256mib-n10.txt").splitlines() if "AVG" not in ln)
    with pytest.raises(WorkloadError, match="no AVG line"):
        parse_mbw(no_avg, "t")


def test_mbw_infinite_rate_flagged():
    line = "AVG\tMethod: MEMCPY\tElapsed: 0.00000\tMiB: 1.00000\tCopy: inf MiB/s\n"
    w = Mbw()
    (s,) = w.parse(ExecResult(["mbw"], 0, "0" + line[3:] + line, "", 0.1), ctx(w))
    assert s.value == 0.0 and "array too small" in s.labels["invalid"]


def test_mbw_command():
    w = Mbw()
    assert w.command(ctx(w, iterations=3, array_mib=64), None) == [
        "mbw",
        "-q",
        "-n",
        "3",
        "-t0",
        "-t1",
        "-t2",
        "64",
    ]


def test_sysbench_memory_parse():
    r = parse_sysbench_memory(read("sysbench/memory-write-4k.txt"), "t")
    assert r == {"mib": 5996.15, "mib_s": 5976.04, "time_s": 1.0028, "events": 1535015.0}
    r = parse_sysbench_memory(read("sysbench/memory-read-64m-2t.txt"), "t")
    assert r["mib_s"] == 7792.11 and r["events"] == 123
    with pytest.raises(WorkloadError, match="MiB transferred"):
        parse_sysbench_memory("FATAL: Invalid value for memory-block-size\n", "t")


def test_sweep_point_sample_labels():
    w = SysbenchMemorySweep()
    s = w.point_sample(read("sysbench/memory-write-4k.txt"), ctx(w), 4, "write")
    assert s.metric == "bandwidth_mib_s" and s.value == 5976.04
    assert s.labels == {"block_size_bytes": 4096, "op": "write", "access": "seq", "threads": 1}
    few = read("sysbench/memory-read-64m-2t.txt").replace("events:              123", "events: 7")
    s = w.point_sample(few, ctx(w, threads=2), 65536, "read")
    assert s.value == 7792.11 and "raise point_time" in s.labels["invalid"]


class FakePlatform:
    workdir = "/wd"

    def __init__(self, stdout: str) -> None:
        self.stdout = stdout
        self.calls: list[list[str]] = []

    def exec(self, argv, *, cpus=None, timeout=None, env=None):
        self.calls.append(list(argv))
        return ExecResult(list(argv), 0, self.stdout, "", 0.1)


def test_sweep_runs_every_point():
    w = SysbenchMemorySweep()
    p = FakePlatform(read("sysbench/memory-write-4k.txt"))
    samples = w.run(p, ctx(w, block_sizes_kib=[1, 64, 65536], ops="both", point_time=2))
    assert [(s.labels["op"], s.labels["block_size_bytes"]) for s in samples] == [
        ("read", 1024),
        ("read", 65536),
        ("read", 67108864),
        ("write", 1024),
        ("write", 65536),
        ("write", 67108864),
    ]
    assert p.calls[0] == [
        "sysbench",
        "memory",
        "--threads=1",
        "--memory-block-size=1K",
        "--memory-total-size=100T",
        "--memory-oper=read",
        "--memory-access-mode=seq",
        "--time=2",
        "run",
    ]
    with pytest.raises(WorkloadError, match="whole KiB"):
        w.run(p, ctx(w, block_sizes_kib=[1.5]))


def test_default_sweep_covers_1k_to_64m():
    assert DEFAULT_SWEEP_KIB[0] == 1 and DEFAULT_SWEEP_KIB[-1] == 64 * 1024
    assert len(DEFAULT_SWEEP_KIB) * 2 * SysbenchMemorySweep.params["point_time"].default < 40


def test_campaign_validates_memory_params():
    base = '[campaign]\nname="t"\n[suites.memory]\ntest_cases=["sysbench-memory-sweep"]\n'
    c = loader.parse(base + "block_sizes_kib=[4, 1024]\nops='read'\n", "t.toml")
    assert c.tests[0].params["block_sizes_kib"] == [4, 1024]
    with pytest.raises(CampaignError, match="ops.*allowed: read, write, both"):
        loader.parse(base + "ops='copy'\n", "t.toml")
    with pytest.raises(CampaignError, match="block_sizes_kib.*must be >= 1"):
        loader.parse(base + "block_sizes_kib=[0]\n", "t.toml")
