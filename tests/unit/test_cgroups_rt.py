"""Real-time bandwidth budget on a v1 cpu hierarchy (a fake tree of plain files)."""

from pathlib import Path

import pytest

from tests.unit.fake_rt import rt_group, rt_layout, rt_runtime
from virtbench import cgroups
from virtbench.errors import PlatformError


@pytest.fixture
def layout(tmp_path, monkeypatch):
    return rt_layout(tmp_path, monkeypatch)


def test_auto_takes_the_free_share_parent_first(layout):
    parent = layout.v1_mounts["cpu"] / cgroups.PARENT
    cg = cgroups.Cgroup.create("vb-rt1", rt_runtime_us=cgroups.RT_AUTO, layout=layout)
    assert (cg.rt_runtime_us, cg.rt_period_us) == (950_000, 1_000_000)
    assert rt_runtime(parent) == 950_000 and rt_runtime(parent / "vb-rt1") == 950_000
    # nothing is left for a second group: it gets 0 (SCHED_FIFO will say EPERM there)
    assert cgroups.Cgroup.create("vb-rt2", rt_runtime_us="auto", layout=layout).rt_runtime_us == 0


def test_other_root_children_and_siblings_count(layout):
    root = layout.v1_mounts["cpu"]
    rt_group(root / "system", 100_000, period=500_000)  # 20% held outside virtbench
    cg = cgroups.Cgroup.create("vb-rt1", rt_runtime_us=300_000, layout=layout)
    assert cg.rt_runtime_us == 300_000
    assert cgroups.rt_free(root / cgroups.PARENT, 1_000_000) == 950_000 - 200_000 - 300_000


def test_explicit_request_beyond_the_free_share_names_what_is_allowed(layout):
    cgroups.Cgroup.create("vb-rt1", rt_runtime_us=900_000, layout=layout)
    with pytest.raises(PlatformError, match=r"only 50000 of every 1000000 µs is free"):
        cgroups.Cgroup("vb-rt2", layout).set_rt_runtime(100_000)


def test_release_lowers_the_parent_to_what_remains(layout):
    parent = layout.v1_mounts["cpu"] / cgroups.PARENT
    cgroups.Cgroup.create("vb-rt1", rt_runtime_us=600_000, layout=layout)
    cgroups.Cgroup.create("vb-rt2", rt_runtime_us=200_000, layout=layout)
    assert rt_runtime(parent) == 800_000
    for f in (parent / "vb-rt1").iterdir():  # a real rmdir drops the files with the group
        f.unlink()
    (parent / "vb-rt1").rmdir()
    cgroups.release_rt(layout)
    assert rt_runtime(parent) == 200_000


def test_not_applicable_without_rt_group_scheduling(tmp_path):
    v2 = cgroups.Layout("v2", v2_root=tmp_path)
    assert cgroups.rt_layout(v2) is None
    v1 = cgroups.Layout("v1", v1_mounts={"cpu": tmp_path}, v1_others=[])
    assert cgroups.rt_layout(v1) is None  # no cpu.rt_runtime_us: kernel without RT groups
    assert cgroups.Cgroup("vb-x", v1).set_rt_runtime("auto") is None


def test_hybrid_unified_mount_is_cleaned_too():
    # real lines from this host's /proc/self/mountinfo (v1 + empty cgroup2 at unified)
    text = (
        "32 31 0:29 / /sys/fs/cgroup/cpu rw,relatime - cgroup cgroup rw,cpu\n"
        "41 31 0:38 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw\n"
    )
    assert cgroups.hybrid_v2_mounts(text) == [Path("/sys/fs/cgroup/unified")]
    assert cgroups.hybrid_v2_mounts(text.splitlines()[0]) == []
