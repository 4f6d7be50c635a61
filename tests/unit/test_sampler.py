"""The cell's one sampler: CPU of every watched role; detail, host and kept points only inside
a window; roles a window brought in leave with it. Ticks are driven by hand (no thread)."""

import os
import time

from tests.unit.fakes import FakePlatform
from virtbench.metrics.sampler import HOST_ROLE, Sampler
from virtbench.platforms.base import Accounting


class CgroupPlatform(FakePlatform):
    """An environment whose cgroup is a directory we write: cpu.stat and our own process."""

    def __init__(self, name, cgroup_dir):
        super().__init__(name, [])
        self.dir = cgroup_dir
        cgroup_dir.mkdir()
        (cgroup_dir / "cgroup.threads").write_text(f"{os.getpid()}\n")
        self.use(0)

    def use(self, usec):
        (self.dir / "cpu.stat").write_text(f"usage_usec {usec}\nuser_usec 0\n")

    def accounting(self):
        return Accounting(cgroups={"unified": str(self.dir)})


def _roles_metrics(points):
    return {(role, metric) for metric, _t, _v, _unit, role in points}


def test_cpu_for_watched_roles_detail_only_in_a_window(tmp_path):
    target = CgroupPlatform("target", tmp_path / "t")
    neighbour = CgroupPlatform("n", tmp_path / "n")
    points = []
    s = Sampler(lambda *a: points.append(a))
    s.add("target", target)
    s.tick()  # first reading: nothing to compare with yet
    target.use(50_000)
    s.tick()
    assert _roles_metrics(points) == {("target", "cpu_util")}
    assert points[0][2] > 0 and points[0][3] == "%"

    points.clear()
    with s.window({"target": target, "neighbour-1": neighbour}) as window:
        target.use(100_000)
        neighbour.use(20_000)
        s.tick()
        time.sleep(0.05)  # /proc/stat counts in clock ticks: let the host's counters move
        s.tick()
    seen = _roles_metrics(points)
    assert {("target", "cpu_util"), ("neighbour-1", "cpu_util")} <= seen
    assert ("target", "exe_per_s") in seen and ("neighbour-1", "sched_run_pct") in seen
    assert any(role == HOST_ROLE for role, _m in seen)
    summary = window.summary()
    assert summary[("target", "cpu_util")].n == 2 and summary[("target", "cpu_util")].unit == "%"
    assert ("neighbour-1", "cpu_util") in summary

    points.clear()
    s.tick()  # the window closed: the neighbour left with it, the target is back to its CPU
    assert _roles_metrics(points) == {("target", "cpu_util")}
    assert window.summary()[("target", "cpu_util")].n == 2


def test_a_role_added_during_a_window_joins_it(tmp_path):
    target = CgroupPlatform("target", tmp_path / "t")
    late = CgroupPlatform("late", tmp_path / "l")
    points = []
    s = Sampler(lambda *a: points.append(a))
    with s.window({"target": target}) as window:
        s.add("neighbour-1", late)  # a start-up storm newcomer
        s.tick()
        late.use(10_000)
        s.tick()
    assert ("neighbour-1", "cpu_util") in window.summary()
    points.clear()
    s.tick()
    assert points == []  # both roles came with the window and left with it
