"""Disk suite (fio) parsers against real outputs captured on the development machine."""

from __future__ import annotations

from pathlib import Path

import pytest

from virtbench.campaign import loader
from virtbench.directio import HONOURED, cached
from virtbench.drivers.fio import fio_job_figures, fio_json
from virtbench.errors import CampaignError, WorkloadError
from virtbench.platforms.base import ExecResult
from virtbench.workloads.base import RunContext
from virtbench.workloads.disk import (
    IOZONE_PHASES,
    FioIozone,
    FioRandRead,
    FioRandWrite,
    FioSeqRead,
    FioSeqWrite,
)

from .fakes import FakePlatform as _Fake

DATA = Path(__file__).parent.parent / "data" / "fio"


def read(name: str) -> str:
    return (DATA / name).read_text()


def ctx(workload, **params) -> RunContext:
    return RunContext(params={k: p.default for k, p in workload.params.items()} | params)


def ok(stdout: str) -> ExecResult:
    return ExecResult(["fio"], 0, stdout, "", 1.0)


def by_metric(samples):
    return {s.metric: s for s in samples}


def test_seq_read_direct():
    w = FioSeqRead()
    s = by_metric(w.parse_run(ok(read("seq-read-direct1.json")), ctx(w), 1, "ext2/ext3", HONOURED))
    assert s["bandwidth_mib_s"].value == pytest.approx(836804768 / 2**20)
    assert s["iops"].value == pytest.approx(798.039216)
    assert s["clat_mean_us"].value == pytest.approx(19877.778826781)
    assert s["clat_p99_us"].value == pytest.approx(26869.760)
    assert s["clat_p99_us"].unit == "us" and not s["clat_p99_us"].higher_is_better
    assert s["bandwidth_mib_s"].labels == {
        "direct": 1,
        "rw": "read",
        "bs": "1M",
        "iodepth": 16,
        "ioengine": "libaio",
        "size_mib": 256,
        "fs_type": "ext2/ext3",
        "direct_honoured": True,
        "direct_io": "honoured",
        "io_pattern": "read 1M",
    }
    assert all("invalid" not in x.labels for x in s.values())
    assert w.primary().name == "bandwidth_mib_s"


def test_seq_write_buffered():
    w = FioSeqWrite()
    s = by_metric(w.parse_run(ok(read("seq-write-direct0.json")), ctx(w), 0, "ext2/ext3", HONOURED))
    assert s["bandwidth_mib_s"].value == pytest.approx(2675387716 / 2**20)
    assert s["iops"].value == pytest.approx(2551.448551)
    assert s["bandwidth_mib_s"].labels["direct"] == 0
    assert "direct_honoured" not in s["bandwidth_mib_s"].labels


def test_rand_read_and_write():
    r = FioRandRead()
    s = by_metric(r.parse_run(ok(read("rand-read-direct1.json")), ctx(r), 1, "xfs", HONOURED))
    assert s["iops"].value == pytest.approx(42209.580838)
    assert s["clat_mean_us"].value == pytest.approx(362.486749421)
    assert s["clat_p99_us"].value == pytest.approx(3719.168)
    assert r.primary().name == "iops"
    s = by_metric(r.parse_run(ok(read("rand-read-direct0.json")), ctx(r), 0, "xfs", HONOURED))
    assert s["iops"].value == pytest.approx(12421.578422)
    w = FioRandWrite()
    s = by_metric(w.parse_run(ok(read("rand-write-direct0.json")), ctx(w), 0, "xfs", HONOURED))
    assert s["iops"].value == pytest.approx(105283.716284)
    assert s["clat_p99_us"].value == pytest.approx(321.536)


def test_direct_not_honoured_is_flagged_not_dropped():
    w = FioRandRead()
    why = "the workdir's filesystem (tmpfs) keeps files in memory"
    samples = w.parse_run(ok(read("rand-read-direct1.json")), ctx(w), 1, "tmpfs", cached(why))
    assert len(samples) == 4
    for s in samples:
        assert s.labels["direct_honoured"] is False
        assert s.labels["direct_io"] == "cached:" + why
        assert s.labels["invalid"] == f"O_DIRECT not honoured: {why}; not a disk figure"
    assert by_metric(samples)["iops"].value == pytest.approx(42209.580838)


def test_direct_einval_gives_invalid_samples():
    # real fio output: O_DIRECT with a 1000-byte block size on ext4 fails with EINVAL
    res = ExecResult(
        ["fio"],
        1,
        read("rand-read-direct1-einval.stdout"),
        read("rand-read-direct1-einval.stderr"),
        1.0,
    )
    w = FioRandRead()
    samples = w.parse_run(res, ctx(w), 1, "overlayfs", HONOURED)
    assert [s.metric for s in samples] == [m.name for m in w.metrics]
    for s in samples:
        assert s.value == 0.0 and s.labels["direct"] == 1
        assert s.labels["invalid"].startswith("O_DIRECT refused on overlayfs (EINVAL): fio:")


def test_fio_failures_raise():
    w = FioRandRead()
    bad = ExecResult(["fio"], 1, "", "fio: failed to open /x: No space left on device\n", 1.0)
    with pytest.raises(WorkloadError, match="exited 1"):
        w.parse_run(bad, ctx(w), 0, "ext2/ext3", HONOURED)
    with pytest.raises(WorkloadError, match="no JSON"):
        fio_json("fio: some error\n", "t")
    with pytest.raises(WorkloadError, match="does not parse"):
        fio_json(read("rand-read-direct1.json")[:500], "t")
    doc = fio_json(read("rand-read-direct1.json"), "t")
    del doc["jobs"][0]["read"]["clat_ns"]
    with pytest.raises(WorkloadError, match="lacks 'clat_ns'"):
        fio_job_figures(doc, "read", "t")
    timed_out = ExecResult(["fio"], -9, "", "", 30.0, timed_out=True)
    with pytest.raises(WorkloadError, match="timed out"):
        w.parse_run(timed_out, ctx(w), 1, "ext2/ext3", HONOURED)


def test_einval_stdout_json_is_found_after_error_lines():
    doc = fio_json(read("rand-read-direct1-einval.stdout"), "t")
    assert doc["jobs"][0]["error"] == 22


class FakePlatform:
    workdir = "/wd/"

    def __init__(self, fio_out: str, fs: str = "ext2/ext3", direct_io: str = HONOURED) -> None:
        self.fio_out, self.fs, self.direct = fio_out, fs, direct_io
        self.calls: list[list[str]] = []

    def exec(self, argv, *, cpus=None, timeout=None, env=None):
        self.calls.append(list(argv))
        out = {"fio": self.fio_out, "stat": self.fs + "\n"}.get(argv[0], "")
        return ExecResult(list(argv), 0, out, "", 0.1)

    def direct_io(self) -> str:
        return self.direct


def test_run_both_modes_in_workdir_and_delete_file():
    p = FakePlatform(read("rand-read-direct1.json"))
    w = FioRandRead()
    samples = w.run(p, ctx(w, size_mib=64, runtime=2))
    assert sorted({s.labels["direct"] for s in samples}) == [0, 1]
    fio_calls = [c for c in p.calls if c[0] == "fio"]
    assert [c[6] for c in fio_calls] == ["--direct=1", "--direct=0"]
    assert fio_calls[0][2].startswith("--filename=/wd/vb-fio-")
    assert "--size=64M" in fio_calls[0] and "--runtime=2" in fio_calls[0]
    assert "--time_based" in fio_calls[0] and "--output-format=json" in fio_calls[0]
    scratch = fio_calls[0][2].removeprefix("--filename=").rsplit("/", 1)[0]
    assert p.calls[-1] == ["rm", "-rf", "--", scratch]


def test_run_on_platform_without_direct_io():
    p = FakePlatform(read("rand-read-direct1.json"), fs="overlay", direct_io=cached("a cache"))
    w = FioRandRead()
    samples = w.run(p, ctx(w, direct=[1]))
    assert all(s.labels["invalid"].startswith("O_DIRECT not honoured: a cache") for s in samples)


def test_a_memory_workdir_is_cached_whatever_the_platform_says():
    p = FakePlatform(read("rand-read-direct1.json"), fs="tmpfs")
    w = FioRandRead()
    samples = w.run(p, ctx(w, direct=[1, 0]))
    direct = [s for s in samples if s.labels["direct"] == 1]
    assert direct and all("(tmpfs) keeps files in memory" in s.labels["invalid"] for s in direct)
    assert all("invalid" not in s.labels for s in samples if s.labels["direct"] == 0)


def test_campaign_validates_direct():
    base = '[campaign]\nname="t"\n[suites.disk]\ntest_cases=["fio-rand-read"]\n'
    c = loader.parse(base + "direct=[1]\nruntime=2\n", "t.toml")
    assert c.tests[0].params["direct"] == [1] and c.tests[0].params["size_mib"] == 256
    with pytest.raises(CampaignError, match="direct.*must be <= 1"):
        loader.parse(base + "direct=[2]\n", "t.toml")
    with pytest.raises(CampaignError, match="direct.*must be a list"):
        loader.parse(base + "direct=1\n", "t.toml")
    with pytest.raises(CampaignError, match="ioengine.*allowed: libaio, psync, io_uring"):
        loader.parse(base + "ioengine='posixaio'\n", "t.toml")


class _FioHost(_Fake):
    """Answers fio with a captured JSON (read or write section), everything else with 0."""

    def exec(self, argv, *, cpus=None, timeout=None, env=None):
        self.log.append(argv)
        if argv[0] == "fio":
            rw = next(a for a in argv if a.startswith("--rw=")).split("=")[1]
            name = "seq-read-direct1.json" if "read" in rw else "seq-write-direct0.json"
            return ok(read(name))
        return ExecResult(argv, 0, "ext2/ext3\n" if argv[0] == "stat" else "", "", 0.0)


def test_iozone_runs_the_phases_in_order_on_one_file_per_direct_mode():
    log: list[list[str]] = []
    w = FioIozone()
    samples = w.run(_FioHost("native", log), ctx(w, direct=[0, 1]))
    fio_runs = [a for a in log if a[0] == "fio"]
    phases = [p.name for p in IOZONE_PHASES]
    assert phases == ["write", "rewrite", "read", "reread", "random-read", "random-write"]
    assert len(fio_runs) == 12
    assert [a for a in fio_runs[0] if a.startswith(("--rw", "--bs", "--direct"))] == [
        "--rw=write",
        "--bs=1M",
        "--direct=0",
    ]
    assert "--rw=randwrite" in fio_runs[11] and "--direct=1" in fio_runs[11]
    # IOzone's timing: one pass over the file, synchronous I/O, not a time-based loop
    assert all("--time_based" not in a and "--ioengine=psync" in a for a in fio_runs)
    assert all("--iodepth=1" in a and "--invalidate=0" in a for a in fio_runs)
    # a new file for each mode's first write: removed before it
    rm_before = [i for i, a in enumerate(log) if a[:2] == ["rm", "-f"]]
    assert len(rm_before) == 2 and log[rm_before[1] + 1] == fio_runs[6]
    bw = [s for s in samples if s.metric == "bandwidth_mib_s"]
    assert [(s.labels["direct"], s.labels["phase"]) for s in bw] == [
        (d, p) for d in (0, 1) for p in phases
    ]
    assert "rw" not in bw[0].labels and bw[4].labels["bs"] == "4k"
    assert w.primary().name == "bandwidth_mib_s" and "phase" in w.dimension_labels


def test_single_job_cases_stay_time_based():
    w = FioSeqRead()
    argv = w.argv(ctx(w), "/x/fio.dat", 1)
    assert "--time_based" in argv and "--rw=read" in argv
    assert not any(a.startswith("--invalidate") for a in argv)


def _opts(argv: list[str]) -> set[str]:
    return {a for a in argv if a.startswith(("--ramp_time", "--end_fsync", "--pre_read"))}


def test_time_based_jobs_ramp_first_and_ramp_zero_leaves_the_old_argv():
    w = FioRandRead()
    argv = w.argv(ctx(w), "/x/fio.dat", 1)
    assert "--ramp_time=1" in argv and "--time_based" in argv
    old = w.argv(ctx(w, ramp_time=0, pre_read=0), "/x/fio.dat", 1)
    # ramp_time=0 gives the argv of before issue 13; the new option only comes last
    assert old == argv[:-1] and argv[-1] == "--ramp_time=1"


def test_buffered_seq_write_is_one_pass_timed_until_fsync():
    w = FioSeqWrite()
    buffered = w.argv(ctx(w), "/x/fio.dat", 0)
    # a ramp inside one pass would leave the pass's start out of its figure
    assert _opts(buffered) == {"--end_fsync=1"} and "--time_based" not in buffered
    direct = w.argv(ctx(w), "/x/fio.dat", 1)
    assert _opts(direct) == {"--ramp_time=1"} and "--time_based" in direct
    cache = w.argv(ctx(w, end_fsync=0), "/x/fio.dat", 0)
    assert _opts(cache) == {"--ramp_time=1"} and "--time_based" in cache


def test_buffered_rand_read_pre_reads_the_file_only_when_buffered():
    w = FioRandRead()
    assert "--pre_read=1" in w.argv(ctx(w), "/x/fio.dat", 0)
    assert "--pre_read=1" not in w.argv(ctx(w), "/x/fio.dat", 1)
    assert "--pre_read=1" not in w.argv(ctx(w, pre_read=0), "/x/fio.dat", 0)
    # the write cases have no pre_read, the read cases no end_fsync
    assert "pre_read" not in FioSeqWrite.params and "end_fsync" not in FioRandRead.params


def test_iozone_phases_take_no_ramp():
    w = FioIozone()
    assert "ramp_time" not in w.params
    assert all(_opts(w.argv(ctx(w), "/x/f", d, ph)) == set() for d in (0, 1) for ph in w.jobs())


def test_campaign_keys_of_issue_13_are_optional_and_checked():
    base = '[campaign]\nname="t"\n[suites.disk]\ntest_cases=["fio-seq-write","fio-rand-read"]\n'
    c = loader.parse(base, "t.toml")  # a campaign written before them still loads
    assert [t.params["ramp_time"] for t in c.tests] == [1, 1]
    c = loader.parse(base + "ramp_time=0\nend_fsync=0\npre_read=0\n", "t.toml")
    assert c.tests[0].params["end_fsync"] == 0 and c.tests[1].params["pre_read"] == 0
    with pytest.raises(CampaignError, match="end_fsync.*must be <= 1"):
        loader.parse(base + "end_fsync=2\n", "t.toml")
    with pytest.raises(CampaignError, match="ramp_time"):
        loader.parse(base + "ramp_time=-1\n", "t.toml")
    with pytest.raises(CampaignError, match="ramp_time.*unknown parameter"):
        loader.parse(
            base.replace('"fio-seq-write","fio-rand-read"', '"fio-iozone"') + "ramp_time=1\n",
            "t.toml",
        )
