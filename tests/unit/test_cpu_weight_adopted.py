"""A weight given through a vb- group the environment's processes join (native without a cpu
group of its own: RT group scheduling dropped it) must move them in the cpu hierarchy only:
its own group keeps accounting them (cpuacct, memory), which is where the sampler reads the
environment's cpu_util and mem_mib during the weights cell."""

import os
import time
from pathlib import Path

from tests.unit.fakes import FakePlatform
from virtbench.platforms import cpu_weight
from virtbench.platforms.base import Accounting


class _Layout:
    version = "v1"

    def __init__(self, root: Path) -> None:
        self.root = root

    def parent_dirs(self):
        return {c: self.root / c / "virtbench" for c in ("cpu", "cpuacct", "memory", "pids")}


class _Group:
    """A -w group in every v1 hierarchy, as Cgroup.create makes it, in a temporary tree."""

    made: list["_Group"] = []

    def __init__(self, root: Path) -> None:
        self.layout = _Layout(root)
        self.dirs = {c: d / "vb-test-w" for c, d in self.layout.parent_dirs().items()}
        for d in self.dirs.values():
            d.mkdir(parents=True)
            (d / "cgroup.procs").write_text("")
        (root / "cpu" / "cgroup.procs").write_text("")
        self.destroyed = False

    def paths(self):
        return {c: str(d) for c, d in self.dirs.items()}

    def add_pid(self, pid: int) -> None:
        for d in self.dirs.values():
            (d / "cgroup.procs").write_text(str(pid))

    def pids(self):
        text = (self.dirs["pids"] / "cgroup.procs").read_text().split()
        return [int(x) for x in text]

    def destroy(self):
        self.destroyed = True


class _Native(FakePlatform):
    def accounting(self):
        # its own group: cpuacct and memory, no cpu (dropped for RT group scheduling)
        return Accounting(pids=[os.getpid()], cgroups={"cpuacct": "/x", "memory": "/y"})


def test_adopted_processes_move_in_the_cpu_hierarchy_only(tmp_path, monkeypatch):
    groups = []

    def create(name, cpu_weight=None):
        g = _Group(tmp_path)
        groups.append(g)
        return g

    monkeypatch.setattr(cpu_weight.Cgroup, "create", staticmethod(create))
    with cpu_weight.weighted(_Native("n", []), 4096, "its own cgroup") as what:
        (g,) = groups
        deadline = time.monotonic() + 5
        while not (g.dirs["cpu"] / "cgroup.procs").read_text() and time.monotonic() < deadline:
            time.sleep(0.01)
        assert "vb- cgroup" in what
        assert (g.dirs["cpu"] / "cgroup.procs").read_text().strip() == str(os.getpid())
        # cpuacct, memory, pids: still its own group's
        for c in ("cpuacct", "memory", "pids"):
            assert (g.dirs[c] / "cgroup.procs").read_text() == ""
    # given back in the cpu hierarchy (where they came from), then the group goes
    assert (tmp_path / "cpu" / "cgroup.procs").read_text().strip() == str(os.getpid())
    assert g.destroyed
