"""cgroups.py path and value logic against fake v1/v2 trees (real files come from the host)."""

from pathlib import Path

import pytest

from virtbench import cgroups
from virtbench.cgroups import Cgroup, Layout
from virtbench.errors import PlatformError

DATA = Path(__file__).parent.parent / "data" / "cgroups"


def test_parse_v1_mounts_hybrid_host():
    mounts = cgroups.parse_v1_mounts((DATA / "mountinfo-hybrid-v1.txt").read_text())
    assert mounts["cpu"] == Path("/sys/fs/cgroup/cpu")
    assert mounts["cpuacct"] == Path("/sys/fs/cgroup/cpuacct")
    assert mounts["pids"] == Path("/sys/fs/cgroup/pids")
    assert "unified" not in mounts  # the empty cgroup2 of hybrid mode is not a v1 controller


def test_parse_v1_mounts_comounted():
    text = (
        "30 25 0:26 / /sys/fs/cgroup/cpu,cpuacct rw - cgroup cgroup rw,cpu,cpuacct\n"
        "31 25 0:27 / /sys/fs/cgroup/cpuset rw - cgroup cgroup rw,cpuset\n"
        "32 25 0:28 / /sys/fs/cgroup/unified rw - cgroup2 cgroup2 rw\n"
    )
    mounts = cgroups.parse_v1_mounts(text)
    assert mounts["cpu"] == mounts["cpuacct"] == Path("/sys/fs/cgroup/cpu,cpuacct")
    assert mounts["cpuset"] == Path("/sys/fs/cgroup/cpuset")


@pytest.mark.parametrize(
    "shares,weight", [(2, 1), (256, 10), (1024, 39), (262144, 10000), (1, 1), (10**9, 10000)]
)
def test_shares_to_weight(shares, weight):
    assert cgroups.shares_to_weight(shares) == weight


def test_parse_kv_real_cpu_stat():
    stat = cgroups.parse_kv((DATA / "v1-cpu.stat").read_text())
    assert {"nr_periods", "nr_throttled", "throttled_time"} <= set(stat)


def _fake_v1(tmp_path: Path) -> Layout:
    mounts = {c: tmp_path / c for c in cgroups.V1_CONTROLLERS}
    for d in mounts.values():
        d.mkdir()
    (tmp_path / "cpuset" / "cpuset.cpus").write_text("0-1\n")
    (tmp_path / "cpuset" / "cpuset.mems").write_text("0\n")
    # the kernel creates these files in a new cpuset group, empty
    (tmp_path / "cpuset" / "virtbench").mkdir()
    for f in ("cpuset.cpus", "cpuset.mems"):
        (tmp_path / "cpuset" / "virtbench" / f).write_text("")
    return Layout("v1", v1_mounts=mounts, v1_others=[tmp_path / "devices"])


def test_v1_create_writes_limits(tmp_path):
    layout = _fake_v1(tmp_path)
    cg = Cgroup.create(
        "vb-test",
        cpu_weight=256,
        cpu_quota_us=50000,
        cpu_period_us=100000,
        cpuset_cpus=[1, 0, 1],
        memory_limit_bytes=1 << 30,
        pids_max=64,
        layout=layout,
    )
    v = tmp_path
    assert (v / "cpu/virtbench/vb-test/cpu.shares").read_text() == "256"
    assert (v / "cpu/virtbench/vb-test/cpu.cfs_quota_us").read_text() == "50000"
    assert (v / "cpu/virtbench/vb-test/cpu.cfs_period_us").read_text() == "100000"
    assert (v / "cpuset/virtbench/vb-test/cpuset.cpus").read_text() == "0,1"
    assert (v / "cpuset/virtbench/cpuset.cpus").read_text() == "0-1"  # inherited from root
    assert (v / "memory/virtbench/vb-test/memory.limit_in_bytes").read_text() == str(1 << 30)
    assert (v / "pids/virtbench/vb-test/pids.max").read_text() == "64"
    assert cg.paths()["cpuacct"] == str(v / "cpuacct/virtbench/vb-test")
    assert set(cg.paths()) == set(cgroups.V1_CONTROLLERS)


def test_v1_accounting_reads(tmp_path):
    layout = _fake_v1(tmp_path)
    cg = Cgroup.create("vb-acct", layout=layout)
    d = tmp_path / "cpuacct/virtbench/vb-acct"
    (d / "cpuacct.usage").write_text("2500000000\n")
    (tmp_path / "cpu/virtbench/vb-acct/cpu.stat").write_text((DATA / "v1-cpu.stat").read_text())
    (tmp_path / "pids/virtbench/vb-acct/cgroup.procs").write_text("12\n7\n")
    nested = tmp_path / "pids/virtbench/vb-acct/sub"
    nested.mkdir()
    (nested / "cgroup.procs").write_text("99\n")
    assert cg.cpu_usage_s() == 2.5
    assert cg.cpu_stat()["nr_throttled"] == 0
    assert cg.pids() == [7, 12, 99]
    assert cgroups.leftovers(layout) == ["vb-acct"]


def test_v1_quota_unlimited(tmp_path):
    cg = Cgroup.create("vb-q", layout=_fake_v1(tmp_path))
    cg.set_cpu_quota(None)
    assert (tmp_path / "cpu/virtbench/vb-q/cpu.cfs_quota_us").read_text() == "-1"


def _fake_v2(tmp_path: Path) -> Layout:
    (tmp_path / "cgroup.controllers").write_text("cpuset cpu io memory hugetlb pids\n")
    (tmp_path / "cgroup.subtree_control").write_text("memory\n")
    return Layout("v2", v2_root=tmp_path)


def test_v2_create_writes_limits(tmp_path):
    layout = _fake_v2(tmp_path)
    cg = Cgroup.create(
        "vb-two",
        cpu_weight=1024,
        cpu_quota_us=25000,
        cpuset_cpus=[1],
        memory_limit_bytes=512 << 20,
        pids_max=100,
        layout=layout,
    )
    d = tmp_path / "virtbench" / "vb-two"
    assert (d / "cpu.weight").read_text() == "39"
    assert (d / "cpu.max").read_text() == "25000 100000"
    assert (d / "cpuset.cpus").read_text() == "1"
    assert (d / "memory.max").read_text() == str(512 << 20)
    assert (d / "pids.max").read_text() == "100"
    # controllers delegated from the root (the fake file keeps only the last write)
    assert (tmp_path / "cgroup.subtree_control").read_text() == "+cpu +cpuset +io +pids"
    assert cg.paths() == {"unified": str(d)}
    cg.set_cpu_weight(256)
    assert (d / "cpu.weight").read_text() == "10"
    cg.set_cpu_quota(None, 50000)
    assert (d / "cpu.max").read_text() == "max 50000"


def test_v2_accounting_reads(tmp_path):
    cg = Cgroup.create("vb-acc2", layout=_fake_v2(tmp_path))
    d = tmp_path / "virtbench" / "vb-acc2"
    (d / "cpu.stat").write_text(
        "usage_usec 1500000\nuser_usec 1000000\nsystem_usec 500000\n"
        "nr_periods 10\nnr_throttled 3\nthrottled_usec 4000\n"
    )
    (d / "memory.events").write_text("low 0\nhigh 0\nmax 2\noom 1\noom_kill 1\n")
    (d / "memory.current").write_text("4096\n")
    assert cg.cpu_usage_s() == 1.5
    assert cg.cpu_stat()["nr_throttled"] == 3
    assert cg.memory_stat() == {"oom_kills": 1, "usage_bytes": 4096}


def test_bad_weight_and_name(tmp_path):
    cg = Cgroup.create("vb-w", layout=_fake_v2(tmp_path))
    with pytest.raises(PlatformError, match="2..262144"):
        cg.set_cpu_weight(1)
    with pytest.raises(ValueError, match="vb-"):
        Cgroup("nope", _fake_v2(tmp_path))


def test_parent_weight_follows_child_count(tmp_path):
    layout = _fake_v1(tmp_path)
    Cgroup.create("vb-a", layout=layout)
    Cgroup.create("vb-b", layout=layout)
    assert (tmp_path / "cpu/virtbench/cpu.shares").read_text() == "2048"
    layout2 = _fake_v2(tmp_path / "v2" if (tmp_path / "v2").mkdir() is None else tmp_path)
    Cgroup.create("vb-c", layout=layout2)
    assert (tmp_path / "v2/virtbench/cpu.weight").read_text() == "100"


class _CountingBudget:
    """CpuBudget.throttled()'s surface: cpu.stat counters that move between reads."""

    def __init__(self, reads: list[dict[str, int]]) -> None:
        self.reads = reads

    def throttled(self) -> dict[str, int]:
        return self.reads.pop(0)

    def weight(self) -> str:
        return ""


def test_throttle_count_is_the_change_between_making_and_reading():
    budget = _CountingBudget(
        [{"nr_periods": 100, "nr_throttled": 40}, {"nr_periods": 130, "nr_throttled": 52}]
    )
    assert cgroups.ThrottleCount(budget).labels() == {  # type: ignore[arg-type]
        "cpu_budget_throttled": "12/30 periods"
    }
    assert cgroups.ThrottleCount(None).labels() == {}  # no budget: nothing said
    # a group whose cpu.stat could not be read says nothing rather than "0/0"
    assert cgroups.ThrottleCount(_CountingBudget([{}])).labels() == {}  # type: ignore[arg-type]
