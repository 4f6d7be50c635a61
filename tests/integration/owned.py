"""What one in-process `virtbench run` created, so a test checks only its own leftovers.

Other engineers' runs create and remove vb- cgroups, QEMU processes and taps on this host at
the same time, so "no vb- object exists afterwards" is not a test of our run. Instead we record
the instance names the runner hands out, the cgroups created through `Cgroup.create`, and the
process groups started through `subprocess.Popen`, and after the run look for those only.
"""

from __future__ import annotations

import contextlib
import os
import subprocess
from pathlib import Path

import pytest

from virtbench import cgroups, hostnet
from virtbench.platforms.vm import cleaner as vm_cleaner
from virtbench.runner import run as runner_run


def _pgid(pid_dir: Path) -> int | None:
    """Process group of a live process (None for zombies: dead, only waiting to be reaped)."""
    try:
        stat = (pid_dir / "stat").read_text()
    except OSError:
        return None
    # 'pid (comm) state ppid pgrp ...': comm may hold spaces, so split after the last ')'
    state, _ppid, pgrp = stat.rsplit(")", 1)[1].split()[:3]
    return None if state in "ZX" else int(pgrp)


class Owned:
    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.instances: list[str] = []
        self.cgroups: list[str] = []
        self.pids: set[int] = set()
        real_name, real_create, real_popen = (
            runner_run.instance_name,
            cgroups.Cgroup.create.__func__,  # type: ignore[attr-defined]
            subprocess.Popen,
        )
        owned = self

        def instance_name() -> str:
            name = real_name()
            owned.instances.append(name)
            return name

        def create(cls, name, *args, **kwargs):
            owned.cgroups.append(name)
            return real_create(cls, name, *args, **kwargs)

        class Popen(real_popen):  # type: ignore[misc, valid-type]
            def __init__(self, *args, **kwargs):
                super().__init__(*args, **kwargs)
                owned.pids.add(self.pid)

        monkeypatch.setattr(runner_run, "instance_name", instance_name)
        monkeypatch.setattr(cgroups.Cgroup, "create", classmethod(create))
        monkeypatch.setattr(subprocess, "Popen", Popen)

    def leftovers(self) -> list[str]:
        """Everything this run created that still exists."""
        left: list[str] = []
        names = set(self.instances)
        ours = names | set(self.cgroups)
        # a platform's groups are named after its instance, sometimes with a suffix
        left += [
            f"cgroup {g}"
            for g in cgroups.leftovers()
            if g in ours or g.split("-")[1] in _tokens(names)
        ]
        left += [
            f"qemu {pid} ({n})" for pid, n in vm_cleaner.leftover_qemus().items() if n in names
        ]
        for owner in names:
            with contextlib.suppress(Exception):
                left += [f"link {link}" for link in hostnet._owned_links(owner)]
        me = os.getpid()
        for d in Path("/proc").iterdir():
            if d.name.isdigit() and int(d.name) != me and _pgid(d) in self.pids:
                left.append(f"process {d.name} in process group {_pgid(d)}")
        return left


def _tokens(names: set[str]) -> set[str]:
    return {n.split("-")[1] for n in names if n.count("-") >= 1}
