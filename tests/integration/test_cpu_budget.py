"""A shared CPU budget for real (cgroups/budget.py): two CPU-bound crun containers of a
platform with `cpu_quota_us = 50000` made inside one budget by the runner's `provisioned`
divide half a CPU between them, instead of getting half a CPU each; everything goes at the
end. Short (a few seconds); the bound is a share of cgroup CPU time, not a speed."""

import time
from pathlib import Path

import pytest

from virtbench import cgroups
from virtbench.cgroups import CpuBudget
from virtbench.platforms.base import PlatformSpec
from virtbench.runner.run import provisioned

pytestmark = pytest.mark.integration

SPIN = ["sh", "-c", "while :; do :; done"]
SPEC = PlatformSpec("con", "container", {"cpu_quota_us": 50000})


def _cpu_line(pid: int) -> str:
    for line in Path(f"/proc/{pid}/cgroup").read_text().splitlines():
        _, ctrls, path = line.split(":", 2)
        v1 = "cpu" in ctrls.split(",")
        if v1 or (ctrls == "" and cgroups.version() == "v2"):  # v1 cpu hierarchy, or v2's
            return path
    raise AssertionError(f"no cpu cgroup for {pid}")


def test_two_containers_divide_one_budget():
    budget = CpuBudget.create(50_000, 100_000)
    try:
        with provisioned(SPEC, budget) as a, provisioned(SPEC, budget) as b:
            for p in (a, b):
                acct = p.accounting()
                assert budget.holds(acct.cgroups)
                own = Path(acct.cgroups.get("cpu") or acct.cgroups["unified"])
                # no quota of its own: the budget is its quota
                if (own / "cpu.cfs_quota_us").exists():
                    assert (own / "cpu.cfs_quota_us").read_text().strip() == "-1"
                else:
                    assert (own / "cpu.max").read_text().split()[0] == "max"
                # the container's own processes really run there (crun honoured cgroupsPath)
                init = acct.extra["init_pid"]
                assert _cpu_line(init).endswith(f"/virtbench/{budget.name}/{p.instance}")
            assert budget.members() == sorted([a.instance, b.instance])
            said = a.labels()
            assert (said["cpu_budget"], said["cpu_budget_quota_us"]) == ("shared", 50000)
            hogs = [p.spawn(SPIN) for p in (a, b)]
            time.sleep(0.5)
            groups = [cgroups.Cgroup.attach(budget.child(p.instance)) for p in (a, b)]
            c0, t0 = [g.cpu_usage_s() for g in groups], time.monotonic()
            count = cgroups.ThrottleCount(budget)
            time.sleep(2.0)
            c1, t1 = [g.cpu_usage_s() for g in groups], time.monotonic()
            ran_out = count.labels()["cpu_budget_throttled"]  # "N/M periods"
            for h in hogs:
                h.stop(timeout=2)
        used = [(y - x) / (t1 - t0) for x, y in zip(c0, c1, strict=True)]
        throttled, periods = map(int, ran_out.split()[0].split("/"))
        print(f"CPU/s in one 0.5-CPU budget: {used[0]:.3f} + {used[1]:.3f}; throttled {throttled}")
        # together at most the budget's half CPU (+ slack for the period edges), where own
        # quotas would have given 0.5 each (1.0 together)
        assert sum(used) < 0.6, f"CPU/s {used}: the pair was not held to one budget"
        assert all(u > 0.1 for u in used), f"CPU/s {used}: both should have run"
        assert 0 < throttled <= periods, ran_out  # the budget is what ran out
        assert not budget.members()  # both gone with their platforms
    finally:
        budget.destroy()
    assert budget.name not in cgroups.leftovers()
