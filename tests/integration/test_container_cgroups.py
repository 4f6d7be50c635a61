"""Real cgroups on this host (v1 here, v2 elsewhere): create, move a process, account, destroy."""

import subprocess
import time

import pytest

from virtbench import cgroups, cleanup
from virtbench.cgroups import Cgroup
from virtbench.cgroups.group import claim_name

pytestmark = pytest.mark.integration


def test_cgroup_lifecycle_real():
    cg = Cgroup.create("vb-itest-cg", cpu_weight=512, pids_max=50, memory_limit_bytes=256 << 20)
    proc = subprocess.Popen(["sh", "-c", "while :; do :; done"])
    try:
        cg.add_pid(proc.pid)
        time.sleep(0.5)
        assert cg.pids() == [proc.pid]
        assert cg.cpu_usage_s() > 0.05
        assert "nr_throttled" in cg.cpu_stat()
        assert "usage_bytes" in cg.memory_stat()
        assert "vb-itest-cg" in cgroups.leftovers()
    finally:
        cg.destroy()
        proc.wait(timeout=5)
    assert proc.returncode == -9  # destroy kills what is left inside
    assert not cg.exists()
    assert "vb-itest-cg" not in cgroups.leftovers()
    cg.destroy()  # idempotent


def test_cleaner_removes_leftover():
    """A leftover is a group whose claim names a process that is gone (a SIGKILLed run):
    cleanup removes it (and ends what runs in it); a live owner's group is left alone."""
    cg = Cgroup.create("vb-itest-leak")
    proc = subprocess.Popen(["sleep", "60"])
    cg.add_pid(proc.pid)
    assert not any("vb-itest-leak" in r for r in cgroups.clean())  # its owner (we) is alive
    gone = subprocess.Popen(["true"])
    gone.wait()
    name = cleanup.OWNERS_DIR / claim_name("vb-itest-leak")
    name.write_text(f"{gone.pid} 0\n")  # as a SIGKILLed run's claim: its process is gone
    removed = cgroups.clean()
    proc.wait(timeout=5)
    assert any("vb-itest-leak" in r for r in removed)
    assert not cg.exists()
